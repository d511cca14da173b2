// The MSR fixture: a sparse file with 8-byte values at the MSR offsets, read
// through the same MsrDevice code as /dev/cpu/N/msr.
#include "msr_device.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace raplbench {
namespace {

class MsrFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/raplbench-msr-XXXXXX";
    int fd = mkstemp(tmpl);
    ASSERT_GE(fd, 0);
    path_ = tmpl;
    // values as a real part reports them: ESU 14 in the unit MSR, counters
    const std::pair<uint32_t, uint64_t> values[] = {
        {0x606, 0x000A0E03}, {0x611, 0x8A2B3C4D}, {0x639, 0x01234567},
        {0xC001029B, 0xFFFFFFF0}};
    for (auto [addr, value] : values)
      ASSERT_EQ(pwrite(fd, &value, sizeof(value), off_t(addr)), ssize_t(sizeof(value)));
    close(fd);
  }
  void TearDown() override { unlink(path_.c_str()); }
  std::string path_;
};

TEST_F(MsrFixture, ReadsValuesAtMsrOffsets) {
  int err = 0;
  std::optional<MsrDevice> dev = MsrDevice::open(path_, &err);
  ASSERT_TRUE(dev.has_value()) << err;
  uint64_t v = 0;
  EXPECT_EQ(dev->read(0x611, &v), 0);
  EXPECT_EQ(v, 0x8A2B3C4Du);
  EXPECT_EQ(dev->read(0x606, &v), 0);
  EXPECT_EQ((v >> 8) & 0x1F, 14u);  // energy status unit bits 12:8
  EXPECT_EQ(dev->read(0xC001029B, &v), 0);
  EXPECT_EQ(v, 0xFFFFFFF0u);
  EXPECT_EQ(dev->read(0x619, &v), 0);  // a hole of the sparse file reads as zero
  EXPECT_EQ(v, 0u);
}

TEST_F(MsrFixture, ReadBeyondTheFileIsAnError) {
  int err = 0;
  std::optional<MsrDevice> dev = MsrDevice::open(path_, &err);
  ASSERT_TRUE(dev.has_value());
  uint64_t v;
  EXPECT_EQ(dev->read(0xC0010300, &v), EIO);  // short read, like a faulting rdmsr
}

TEST(MsrDevice, MissingDeviceSaysWhatToLoad) {
  int err = 0;
  EXPECT_FALSE(MsrDevice::open("/nonexistent/cpu/0/msr", &err).has_value());
  EXPECT_EQ(err, ENOENT);
  std::string why = msr_error_reason(err, "/dev/cpu/0/msr", 0x611);
  EXPECT_NE(why.find("modprobe msr"), std::string::npos) << why;
  EXPECT_NE(msr_error_reason(EIO, "/dev/cpu/0/msr", 0x641).find("rdmsr 0x641 faults"),
            std::string::npos);
  EXPECT_NE(msr_error_reason(EPERM, "/dev/cpu/0/msr", 0x611).find("CAP_SYS_RAWIO"),
            std::string::npos);
}

TEST(MsrDevice, VendorAddressLists) {
  std::vector<std::string> intel, amd;
  for (const RaplMsr& m : rapl_energy_msrs(CpuVendor::Intel)) intel.push_back(msr_hex(m.addr));
  for (const RaplMsr& m : rapl_energy_msrs(CpuVendor::Amd)) amd.push_back(msr_hex(m.addr));
  EXPECT_EQ(intel, (std::vector<std::string>{"0x611", "0x639", "0x641", "0x619", "0x64d"}));
  EXPECT_EQ(amd, (std::vector<std::string>{"0xc001029a", "0xc001029b"}));
  EXPECT_TRUE(rapl_energy_msrs(CpuVendor::Other).empty());
}

}  // namespace
}  // namespace raplbench

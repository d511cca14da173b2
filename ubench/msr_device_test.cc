// The MSR fixture: a sparse file with 8-byte values at the MSR offsets, read
// through the same MsrDevice code as /dev/cpu/N/msr.
#include "msr_device.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>

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
  void write_msr(uint32_t addr, uint64_t value) {
    int fd = ::open(path_.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(pwrite(fd, &value, sizeof(value), off_t(addr)), ssize_t(sizeof(value)));
    close(fd);
  }
  std::optional<std::vector<CounterVerdict>> judge(std::chrono::nanoseconds window,
                                                   std::string* error) {
    int err = 0;
    std::optional<MsrDevice> dev = MsrDevice::open(path_, &err);
    if (!dev) {
      *error = "cannot open the fixture";
      return std::nullopt;
    }
    return judge_msrs(*dev, 0, {{0x611, "PKG"}, {0x639, "PP0"}}, *rapl_unit_msr(CpuVendor::Intel),
                      error, window);
  }
  std::string path_;
};

// The fixture's values never change: a VM whose RAPL MSRs read a constant.
TEST_F(MsrFixture, StaticMsrsAreFrozen) {
  std::string error;
  auto v = judge(std::chrono::milliseconds(5), &error);
  ASSERT_TRUE(v) << error;
  ASSERT_EQ(v->size(), 2u);
  EXPECT_EQ((*v)[0].counter, "MSR 0x611 on CPU 0");
  EXPECT_EQ((*v)[0].liveness, Liveness::Frozen);
  EXPECT_EQ((*v)[0].note.rfind("MSR 0x611 on CPU 0: did not change in ", 0), 0u) << (*v)[0].note;
  EXPECT_EQ((*v)[1].liveness, Liveness::Frozen);
}

TEST_F(MsrFixture, AnAdvancingMsrIsLive) {
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (uint64_t v = 1; !stop; ++v) {
      write_msr(0x611, v);
      write_msr(0x639, v * 3);
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
  });
  std::string error;
  auto v = judge(std::chrono::seconds(60), &error);  // stops once both moved
  stop = true;
  writer.join();
  ASSERT_TRUE(v) << error;
  EXPECT_EQ(worst_of(*v).liveness, Liveness::Live);
}

TEST_F(MsrFixture, AZeroUnitMsrIsNoUnit) {
  write_msr(0x606, 0);
  std::string error;
  auto v = judge(std::chrono::seconds(60), &error);  // no probe: returns at once
  ASSERT_TRUE(v) << error;
  EXPECT_EQ((*v)[0].liveness, Liveness::NoUnit);
  EXPECT_EQ((*v)[0].note, "MSR 0x611 on CPU 0: energy unit MSR 0x606 reads 0x0: not RAPL, no energy unit");
  RowVerdict row = worst_of(*v);
  EXPECT_EQ(row.liveness, Liveness::NoUnit);
  EXPECT_NE(row.note.find("; MSR 0x639 on CPU 0: "), std::string::npos) << row.note;
}

TEST_F(MsrFixture, AnEnergyUnitOfOneJouleIsNoUnit) {
  write_msr(0x606, 0x000A0003);  // power and time units set, ESU (bits 12:8) 0
  std::string error;
  auto v = judge(std::chrono::seconds(60), &error);
  ASSERT_TRUE(v) << error;
  EXPECT_EQ((*v)[0].liveness, Liveness::NoUnit);
  EXPECT_NE((*v)[0].note.find("reads 0xa0003: its energy status unit (bits 12:8) is 0"),
            std::string::npos) << (*v)[0].note;
}

TEST(MsrDevice, UnitPlausibility) {
  EXPECT_EQ(msr_unit_problem(0x606, 0x000A0E03), "");  // ESU 14: 61 µJ per count
  EXPECT_EQ(msr_unit_problem(0xC0010299, 0x000A1003), "");  // AMD, ESU 16
  EXPECT_NE(msr_unit_problem(0x606, 0), "");
  EXPECT_NE(msr_unit_problem(0xC0010299, 0x000A0003), "");
  EXPECT_EQ(rapl_unit_msr(CpuVendor::Amd)->addr, 0xC0010299u);
  EXPECT_FALSE(rapl_unit_msr(CpuVendor::Other).has_value());
}

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

// The reasons word for word: rbench (rbench/src/error.rs, discovery/msr.rs)
// says the same of the same situation, and a test compares the manifests.
TEST(MsrDevice, ReasonsAreWordForWordRbenchs) {
  EXPECT_EQ(msr_error_reason(ENOENT, "/dev/cpu/0/msr", 0),
            "/dev/cpu/0/msr missing: load the msr module (modprobe msr; kernel needs "
            "CONFIG_X86_MSR)");
  EXPECT_EQ(msr_error_reason(EPERM, "/dev/cpu/0/msr", 0),
            "/dev/cpu/0/msr: Operation not permitted: needs root with CAP_SYS_RAWIO (and no "
            "kernel lockdown)");
  EXPECT_EQ(msr_error_reason(EIO, "/dev/cpu/0/msr", 0x641),
            "rdmsr 0x641 faults on this CPU (EIO): this model does not implement it");
  EXPECT_EQ(msr_error_reason(ENXIO, "/dev/cpu/3/msr", 0), "/dev/cpu/3/msr: CPU offline (ENXIO)");
  EXPECT_EQ(cpuid_unusable_reason("/nonexistent/0/cpuid"),
            "/nonexistent/0/cpuid: missing too (load the cpuid module: modprobe cpuid)");
}

TEST(MsrDevice, AnUnreadableCpuidStandInSaysWhy) {
  const std::string path = ::testing::TempDir() + "ubench-cpuid-0400";
  { std::ofstream(path) << "x"; }
  ASSERT_EQ(chmod(path.c_str(), 0), 0);
  const std::string why = cpuid_unusable_reason(path);
  std::remove(path.c_str());
  if (geteuid() == 0) {
    EXPECT_EQ(why, "");  // root opens it anyway
  } else {
    // the cpuid device asks no capability, only its file mode: say whose it is
    EXPECT_EQ(why, path + ": Permission denied" + kCpuidDeviceIsRoots);
  }
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

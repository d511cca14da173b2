// Discovery on a fixture tree that copies a real powercap layout: symlinks in
// class/powercap to zone directories nested under devices/virtual/powercap.
#include "powercap_zones.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

namespace raplbench {
namespace {

const std::string kRoot = std::string(RAPLBENCH_TESTDATA) + "/sys/class/powercap";

TEST(PowercapZones, FindsEveryZoneInNaturalOrderAndSkipsControlTypes) {
  std::vector<PowercapZone> zones = discover_powercap_zones(kRoot);
  std::vector<std::string> ids;
  for (const auto& z : zones) ids.push_back(z.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"intel-rapl:0", "intel-rapl:0:0", "intel-rapl:0:1",
                                           "intel-rapl:1", "intel-rapl-mmio:0"}));
}

TEST(PowercapZones, ReadsNameRangeAndPackage) {
  std::vector<PowercapZone> zones = discover_powercap_zones(kRoot);
  ASSERT_EQ(zones.size(), 5u);
  const PowercapZone& pkg = zones[0];
  EXPECT_FALSE(pkg.mmio);
  EXPECT_EQ(pkg.name, "package-0");
  EXPECT_EQ(pkg.energy_path, kRoot + "/intel-rapl:0/energy_uj");
  EXPECT_EQ(pkg.max_energy_range_uj, 262143328850u);
  EXPECT_EQ(pkg.package, 0);
  EXPECT_EQ(zones[1].name, "core");
  EXPECT_EQ(zones[1].package, 0);  // a subzone belongs to its parent's package
  EXPECT_EQ(zones[2].name, "uncore");
  const PowercapZone& psys = zones[3];
  EXPECT_EQ(psys.name, "psys");
  EXPECT_FALSE(psys.package.has_value());  // psys is platform-wide
  const PowercapZone& mmio = zones[4];
  EXPECT_TRUE(mmio.mmio);
  EXPECT_EQ(mmio.name, "package-0");
}

TEST(PowercapZones, MissingRootMeansNoZones) {
  EXPECT_TRUE(discover_powercap_zones("/nonexistent/powercap").empty());
}

TEST(PowercapZones, ParsesEnergyText) {
  uint64_t v = 0;
  EXPECT_TRUE(parse_energy_uj("72834517023\n", 12, &v));
  EXPECT_EQ(v, 72834517023u);
  EXPECT_TRUE(parse_energy_uj("0", 1, &v));
  EXPECT_EQ(v, 0u);
  EXPECT_FALSE(parse_energy_uj("", 0, &v));
  EXPECT_FALSE(parse_energy_uj("\n", 1, &v));
  EXPECT_FALSE(parse_energy_uj("12a4\n", 5, &v));
  EXPECT_FALSE(parse_energy_uj("-5\n", 3, &v));
  EXPECT_FALSE(parse_energy_uj("99999999999999999999999\n", 24, &v));  // > 2^64
}

// The fixture's files never change: a VM whose RAPL reads a constant.
TEST(PowercapLiveness, StaticFilesAreFrozen) {
  std::vector<PowercapZone> zones = discover_powercap_zones(kRoot);
  std::string error;
  auto verdicts = judge_powercap_zones(zones, &error, std::chrono::milliseconds(5));
  ASSERT_TRUE(verdicts) << error;
  ASSERT_EQ(verdicts->size(), zones.size());
  for (const CounterVerdict& v : *verdicts) EXPECT_EQ(v.liveness, Liveness::Frozen) << v.counter;
  RowVerdict row = worst_of({(*verdicts)[0]});
  EXPECT_EQ(row.liveness, Liveness::Frozen);
  EXPECT_EQ(row.note.rfind("intel-rapl:0/energy_uj: did not change in ", 0), 0u) << row.note;
}

// A copy of the fixture whose energy_uj files a thread keeps rewriting
// (write and rename, so a reader never sees half a number).
class RewrittenPowercap : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/raplbench-powercap-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    namespace fs = std::filesystem;
    fs::copy(std::string(RAPLBENCH_TESTDATA) + "/sys", dir_ + "/sys",
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    zones_ = discover_powercap_zones(dir_ + "/sys/class/powercap");
    ASSERT_EQ(zones_.size(), 5u);
    writer_ = std::thread([this] {
      for (uint64_t uj = 1000; !stop_; uj += 61) {
        for (const PowercapZone& z : zones_) {
          std::ofstream(z.energy_path + ".new") << uj << "\n";
          std::rename((z.energy_path + ".new").c_str(), z.energy_path.c_str());
        }
        std::this_thread::sleep_for(std::chrono::microseconds(500));
      }
    });
  }
  void TearDown() override {
    stop_ = true;
    if (writer_.joinable()) writer_.join();
    std::filesystem::remove_all(dir_);
  }
  std::string dir_;
  std::vector<PowercapZone> zones_;
  std::atomic<bool> stop_{false};
  std::thread writer_;
};

TEST_F(RewrittenPowercap, ACounterThatAdvancesIsLive) {
  std::string error;
  // a long window it never needs: the probe stops once every zone has moved
  auto verdicts = judge_powercap_zones(zones_, &error, std::chrono::seconds(60));
  ASSERT_TRUE(verdicts) << error;
  for (const CounterVerdict& v : *verdicts) EXPECT_EQ(v.liveness, Liveness::Live) << v.note;
  EXPECT_EQ(worst_of(*verdicts).liveness, Liveness::Live);
  EXPECT_EQ(worst_of(*verdicts).note, "");
}

// Word for word rbench's reasons (rbench/src/error.rs): a test compares the
// manifests of both harnesses.
TEST(PowercapZones, UnreadableReasonsSayWhatToDo) {
  EXPECT_EQ(powercap_unreadable_reason(kRoot + "/intel-rapl:0/energy_uj"), "");
  EXPECT_EQ(powercap_unreadable_reason("/nonexistent/energy_uj"),
            "/nonexistent/energy_uj: No such file or directory");
  std::string dir = ::testing::TempDir() + "ubench-powercap-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  const std::pair<std::string, std::string> denied[] = {
      {"energy_uj",
       ": permission denied: energy_uj is readable by root only since Linux 5.10 "
       "(CVE-2020-8694); run as root or grant read access with a udev rule"},
      {"rx_bytes", ": Permission denied"}};
  for (const auto& [name, words] : denied) {
    const std::string path = dir + "/" + name;
    { std::ofstream(path) << "1\n"; }
    ASSERT_EQ(chmod(path.c_str(), 0), 0);
    const std::string why = powercap_unreadable_reason(path);
    std::remove(path.c_str());
    if (geteuid() == 0)
      EXPECT_EQ(why, "") << name;  // root reads it anyway
    else
      EXPECT_EQ(why, path + words) << name;
  }
  rmdir(dir.c_str());
}

// The energy_uj advice is for energy_uj files only: the lo rx_bytes
// stand-in, denied, says its errno alone (root or not: no file is opened).
TEST(PowercapZones, OnlyAnEnergyUjFileGetsTheRootOnlyAdvice) {
  const std::string advice =
      ": permission denied: energy_uj is readable by root only since Linux 5.10 "
      "(CVE-2020-8694); run as root or grant read access with a udev rule";
  EXPECT_EQ(powercap_open_error("/sys/class/powercap/intel-rapl:0/energy_uj", EACCES),
            "/sys/class/powercap/intel-rapl:0/energy_uj" + advice);
  EXPECT_EQ(powercap_open_error("/sys/class/powercap/intel-rapl:0/energy_uj", EPERM),
            "/sys/class/powercap/intel-rapl:0/energy_uj" + advice);
  EXPECT_EQ(powercap_open_error("/sys/class/net/lo/statistics/rx_bytes", EACCES),
            "/sys/class/net/lo/statistics/rx_bytes: Permission denied");
  EXPECT_EQ(powercap_open_error("/sys/class/net/lo/statistics/rx_bytes", EPERM),
            "/sys/class/net/lo/statistics/rx_bytes: Operation not permitted");
  EXPECT_EQ(powercap_open_error("/x/not_energy_uj", EACCES), "/x/not_energy_uj: Permission denied");
  EXPECT_EQ(powercap_open_error("/x/energy_uj", ENOENT), "/x/energy_uj: No such file or directory");
}

TEST(PowercapLiveness, AnUnreadableZoneIsNoVerdict) {
  PowercapZone gone;
  gone.id = "intel-rapl:9";
  gone.energy_path = "/nonexistent/intel-rapl:9/energy_uj";
  std::string error;
  EXPECT_FALSE(judge_powercap_zones({gone}, &error, std::chrono::milliseconds(5)).has_value());
  EXPECT_NE(error.find("/nonexistent/intel-rapl:9/energy_uj"), std::string::npos) << error;
}

}  // namespace
}  // namespace raplbench

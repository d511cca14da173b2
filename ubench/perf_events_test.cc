// PMU discovery on a fixture copy of /sys/bus/event_source/devices.
#include "perf_events.h"

#include <gtest/gtest.h>

namespace raplbench {
namespace {

const std::string kRoot = std::string(RAPLBENCH_TESTDATA) + "/sys/bus/event_source/devices";

TEST(PerfEvents, DiscoversRaplEventsWithScaleAndCpumask) {
  PmuEvents power = discover_pmu_events("power", "energy-", kRoot);
  ASSERT_TRUE(power.missing.empty()) << power.missing;
  std::vector<std::string> names;
  for (const auto& e : power.events) names.push_back(e.name);
  EXPECT_EQ(names, (std::vector<std::string>{"power/energy-cores/", "power/energy-gpu/",
                                             "power/energy-pkg/", "power/energy-psys/",
                                             "power/energy-ram/"}));
  const PerfEventSpec& pkg = power.events[2];
  EXPECT_EQ(pkg.type, 23u);
  EXPECT_EQ(pkg.config, 0x02u);
  EXPECT_DOUBLE_EQ(pkg.scale, 2.3283064365386962890625e-10);  // 2^-32 J
  EXPECT_EQ(pkg.unit, "Joules");
  EXPECT_EQ(pkg.cpus, (std::vector<int>{0}));
}

TEST(PerfEvents, MissingPmuSaysSo) {
  PmuEvents none = discover_pmu_events("nope", "", kRoot);
  EXPECT_TRUE(none.events.empty());
  EXPECT_NE(none.missing.find("no 'nope' PMU"), std::string::npos) << none.missing;
}

TEST(PerfEvents, EncodesTermsThroughFormatRanges) {
  const std::string split = kRoot + "/split/format";
  // event bits 0-3 and 8-11, umask 4-7
  EXPECT_EQ(encode_config("event=0x12", split), std::optional<uint64_t>(0x0102));
  EXPECT_EQ(encode_config("event=0x1,umask=0x3", split), std::optional<uint64_t>(0x31));
  EXPECT_FALSE(encode_config("bogus=1", split).has_value());
  EXPECT_FALSE(encode_config("event=zz", split).has_value());
}

TEST(PerfEvents, Labels) {
  PmuEvents power = discover_pmu_events("power", "energy-", kRoot);
  EXPECT_EQ(events_label({power.events[2]}), "power/energy-pkg/");
  EXPECT_EQ(events_label({power.events[2], power.events[4]}), "power/{energy-pkg,energy-ram}/");
}

}  // namespace
}  // namespace raplbench

// Discovery on a fixture tree that copies a real powercap layout: symlinks in
// class/powercap to zone directories nested under devices/virtual/powercap.
#include "powercap_zones.h"

#include <gtest/gtest.h>

#include <cstring>

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

}  // namespace
}  // namespace raplbench

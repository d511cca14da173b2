// Path "powercap"'s texts where there is no zone (ubench/paths/powercap.h),
// word for word rbench's: a test compares the manifests of both harnesses.
#include "paths/powercap.h"

#include <gtest/gtest.h>

#include <cerrno>

#include "powercap_zones.h"

namespace raplbench {
namespace {

const std::string kNoZone =
    "no powercap zone under /sys/class/powercap (no RAPL here, or the intel_rapl_msr driver is "
    "not loaded: modprobe intel_rapl_msr)";

TEST(PowercapPath, TheStandInSaysWhyAndWhatIsMeasuredInstead) {
  EXPECT_EQ(powercap_no_zone_reason("/sys/class/powercap"), kNoZone);
  EXPECT_EQ(powercap_stand_in_text("/sys/class/powercap"),
            kNoZone +
                ": measured the live sysfs counter /sys/class/net/lo/statistics/rx_bytes through "
                "the same kernfs read route (without the MSR read and IPI that energy_uj costs)");
}

// A denied stand-in says its errno alone, not the energy_uj advice.
TEST(PowercapPath, ADeniedStandInGivesItsErrnoAlone) {
  EXPECT_EQ(powercap_stand_in_unreadable("/sys/class/powercap",
                                         powercap_open_error(kPowercapStandInFile, EACCES)),
            kNoZone +
                "; stand-in /sys/class/net/lo/statistics/rx_bytes unreadable too: "
                "/sys/class/net/lo/statistics/rx_bytes: Permission denied");
}

}  // namespace
}  // namespace raplbench

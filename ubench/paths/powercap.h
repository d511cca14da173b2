// powercap.h - the texts of path "powercap" (ubench/paths/powercap.cc) where
// this machine has no powercap zone, declared here so that
// ubench/paths/powercap_test.cc can pin them. rbench says the same words
// (no_zone_reason and stand_in_text in rbench/src/powercap/mod.rs).
#pragma once

#include <string>

namespace raplbench {

// What is read where there is no zone: a live sysfs counter, read through
// the same kernfs route as energy_uj.
inline constexpr const char* kPowercapStandInFile = "/sys/class/net/lo/statistics/rx_bytes";

// "no powercap zone under <root> (no RAPL here, or the intel_rapl_msr driver
// is not loaded: modprobe intel_rapl_msr)"
std::string powercap_no_zone_reason(const std::string& root);

// The stand_in of the rows that read kPowercapStandInFile instead:
// "<no zone reason>: measured the live sysfs counter <file> through the same
// kernfs read route (without the MSR read and IPI that energy_uj costs)"
std::string powercap_stand_in_text(const std::string& root);

// The reason of the unavailable rows when the stand-in cannot be read
// either; `why` is powercap_unreadable_reason(kPowercapStandInFile):
// "<no zone reason>; stand-in <file> unreadable too: <why>"
std::string powercap_stand_in_unreadable(const std::string& root, const std::string& why);

}  // namespace raplbench

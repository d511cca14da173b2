// roots.h - where ubench looks for the kernel's files. Each root is the real
// path unless its environment variable names a fixture tree instead (a test
// hook: rbench reads the same variables, so both harnesses can be planned on
// the same fixtures, e.g. ubench/testdata/two-packages/sys/...). Unset or
// empty: the real path.
#pragma once

#include <string>

namespace raplbench {

// $RAPLBENCH_POWERCAP_ROOT, else /sys/class/powercap: the powercap zones.
std::string powercap_root();

// $RAPLBENCH_DEV_CPU_ROOT, else /dev/cpu: <root>/<N>/msr and <root>/<N>/cpuid.
std::string dev_cpu_root();

// $RAPLBENCH_PMU_ROOT, else /sys/bus/event_source/devices: the perf PMUs.
std::string pmu_root();

// $RAPLBENCH_CPU_ROOT, else /sys/devices/system/cpu: `online` and
// cpu<N>/topology/physical_package_id, which decide the placements.
std::string cpu_root();

}  // namespace raplbench

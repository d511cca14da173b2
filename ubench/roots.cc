// roots.cc - see roots.h.
#include "roots.h"

#include <cstdlib>

namespace raplbench {
namespace {

std::string env_or(const char* var, const char* real) {
  const char* env = std::getenv(var);
  return env && *env ? env : real;
}

}  // namespace

std::string powercap_root() { return env_or("RAPLBENCH_POWERCAP_ROOT", "/sys/class/powercap"); }

std::string dev_cpu_root() { return env_or("RAPLBENCH_DEV_CPU_ROOT", "/dev/cpu"); }

std::string pmu_root() { return env_or("RAPLBENCH_PMU_ROOT", "/sys/bus/event_source/devices"); }

std::string cpu_root() { return env_or("RAPLBENCH_CPU_ROOT", "/sys/devices/system/cpu"); }

}  // namespace raplbench

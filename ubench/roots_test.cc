// The fixture roots: each environment variable replaces its real path,
// unset or empty leaves the real one, and the code that reads the kernel's
// files follows them.
#include "roots.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "cpu.h"
#include "msr_device.h"

namespace raplbench {
namespace {

// Sets `var` for the life of the object, then restores what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* var, const char* value) : var_(var) {
    if (const char* old = getenv(var)) old_ = old;
    setenv(var, value, 1);
  }
  ~ScopedEnv() {
    if (old_.empty())
      unsetenv(var_);
    else
      setenv(var_, old_.c_str(), 1);
  }

 private:
  const char* var_;
  std::string old_;
};

TEST(Roots, EmptyOrUnsetMeansTheRealPath) {
  ScopedEnv a("RAPLBENCH_POWERCAP_ROOT", ""), b("RAPLBENCH_DEV_CPU_ROOT", ""),
      c("RAPLBENCH_PMU_ROOT", ""), d("RAPLBENCH_CPU_ROOT", "");
  EXPECT_EQ(powercap_root(), "/sys/class/powercap");
  EXPECT_EQ(dev_cpu_root(), "/dev/cpu");
  EXPECT_EQ(pmu_root(), "/sys/bus/event_source/devices");
  EXPECT_EQ(cpu_root(), "/sys/devices/system/cpu");
  EXPECT_EQ(msr_device_path(3), "/dev/cpu/3/msr");
  EXPECT_EQ(cpuid_device_path(3), "/dev/cpu/3/cpuid");
}

TEST(Roots, EachVariableReplacesItsPath) {
  ScopedEnv a("RAPLBENCH_POWERCAP_ROOT", "/f/powercap"), b("RAPLBENCH_DEV_CPU_ROOT", "/f/dev"),
      c("RAPLBENCH_PMU_ROOT", "/f/pmu"), d("RAPLBENCH_CPU_ROOT", "/f/cpu");
  EXPECT_EQ(powercap_root(), "/f/powercap");
  EXPECT_EQ(pmu_root(), "/f/pmu");
  EXPECT_EQ(cpu_root(), "/f/cpu");
  EXPECT_EQ(msr_device_path(1), "/f/dev/1/msr");
  EXPECT_EQ(cpuid_device_path(1), "/f/dev/1/cpuid");
}

TEST(Roots, TheCpuRootDecidesOnlineCpusAndPackages) {
  ScopedEnv cpu("RAPLBENCH_CPU_ROOT",
                (std::string(RAPLBENCH_TESTDATA) + "/two-packages/sys/devices/system/cpu").c_str());
  EXPECT_EQ(online_cpus(), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(cpu_package(3), 1);
  EXPECT_EQ(package_lead_cpu(1), 2);
}

}  // namespace
}  // namespace raplbench

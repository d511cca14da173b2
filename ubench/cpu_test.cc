#include "cpu.h"

#include <gtest/gtest.h>
#include <sched.h>

namespace raplbench {
namespace {

TEST(Cpu, UsableCpusAreTheAffinityMaskAscending) {
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  std::vector<int> usable = usable_cpus();
  ASSERT_EQ(int(usable.size()), CPU_COUNT(&set));
  for (size_t i = 0; i < usable.size(); ++i) {
    EXPECT_TRUE(CPU_ISSET(usable[i], &set)) << usable[i];
    if (i > 0) {
      EXPECT_LT(usable[i - 1], usable[i]);
    }
  }
}

TEST(Cpu, PinningMovesTheThread) {
  // only CPUs of the affinity mask: a cpuset may forbid the others
  for (int cpu : usable_cpus()) {
    EXPECT_EQ(pin_to_cpu(cpu), "");
    EXPECT_EQ(sched_getcpu(), cpu);
  }
  EXPECT_NE(pin_to_cpu(100000), "");
}

}  // namespace
}  // namespace raplbench

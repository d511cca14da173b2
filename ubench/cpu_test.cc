#include "cpu.h"

#include <gtest/gtest.h>

namespace raplbench {
namespace {

TEST(Cpu, ParsesKernelCpuLists) {
  EXPECT_EQ(parse_cpu_list("0"), (std::vector<int>{0}));
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11\n"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_TRUE(parse_cpu_list("").empty());
}

TEST(Cpu, PlacementsPairSameAndOtherCpu) {
  std::vector<int> cpus = online_cpus();
  ASSERT_FALSE(cpus.empty());
  std::vector<Placement> p = placements(cpus.front());
  EXPECT_EQ(p[0].cpu, cpus.front());
  EXPECT_EQ(p[0].target_cpu, cpus.front());
  if (cpus.size() > 1) {
    ASSERT_EQ(p.size(), 2u);
    EXPECT_NE(p[1].cpu, cpus.front());
    EXPECT_EQ(p[1].label(), std::to_string(p[1].cpu) + "->" + std::to_string(cpus.front()));
  }
  std::vector<Placement> none = placements(std::nullopt);
  ASSERT_EQ(none.size(), 1u);
  EXPECT_FALSE(none[0].target_cpu.has_value());
}

TEST(Cpu, PinningMovesTheThread) {
  for (int cpu : online_cpus()) {
    EXPECT_EQ(pin_to_cpu(cpu), "");
    EXPECT_EQ(sched_getcpu(), cpu);
  }
  EXPECT_NE(pin_to_cpu(100000), "");
}

}  // namespace
}  // namespace raplbench

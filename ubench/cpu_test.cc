#include "cpu.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>

namespace raplbench {
namespace {

TEST(Cpu, ParsesKernelCpuLists) {
  EXPECT_EQ(parse_cpu_list("0"), (std::vector<int>{0}));
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11\n"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_TRUE(parse_cpu_list("").empty());
}

// Issue 14: a malformed list threw std::invalid_argument (std::stoi) and
// ended the harness, and "0-2147483647" pushed two billion CPUs.
TEST(Cpu, MalformedCpuListPartsAndImpossibleCpusAreSkipped) {
  EXPECT_EQ(parse_cpu_list("0-1,abc,3"), (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(parse_cpu_list("0-1,2-2147483647,3"), (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(parse_cpu_list("99999999999999999999,-,5-,2"), (std::vector<int>{2}));
  EXPECT_EQ(parse_cpu_list(" 4 - 5 \n"), (std::vector<int>{4, 5}));
}

TEST(Cpu, PlacementsPairSameAndOtherCpu) {
  std::vector<int> cpus = usable_cpus();
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

TEST(Cpu, PlacementsOfAGivenCpuList) {
  std::vector<Placement> p = placements(2, {0, 1, 2, 3});
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].label(), "2->2");
  EXPECT_EQ(p[1].label(), "3->2");
  EXPECT_EQ(placements(0, {0}).size(), 1u);  // one CPU: same CPU only
  EXPECT_EQ(placements(std::nullopt, {1, 3})[0].label(), "1");
}

TEST(Cpu, UsableCpusAreOnlineAndInTheAffinityMask) {
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  std::vector<int> online = online_cpus();
  std::vector<int> usable = usable_cpus();
  ASSERT_FALSE(usable.empty());
  for (int cpu : usable) {
    EXPECT_TRUE(CPU_ISSET(cpu, &set)) << cpu;
    EXPECT_NE(std::find(online.begin(), online.end(), cpu), online.end()) << cpu;
  }
}

TEST(Cpu, PackageOfACpuFromTheTopology) {
  const std::string sys = std::string(RAPLBENCH_TESTDATA) + "/two-packages/sys/devices/system/cpu";
  EXPECT_EQ(cpu_package(1, sys), 0);
  EXPECT_EQ(cpu_package(2, sys), 1);
  EXPECT_FALSE(cpu_package(9, sys).has_value());
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

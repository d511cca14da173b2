// Per-package discovery, judging and row planning on the two-package fixture
// (a 4-CPU, 2-socket machine: power PMU type 23, cpumask 0,2). Its events
// cannot be opened here, so the counters are read by fakes and the rows are
// planned from the discovered specs, for the fixture's CPUs and topology.
#include "perf_rows.h"

#include <gtest/gtest.h>

#include <cmath>

namespace raplbench {
namespace {

using std::chrono::milliseconds;

const std::string kSys = std::string(RAPLBENCH_TESTDATA) + "/two-packages/sys";
const std::string kCpuRoot = kSys + "/devices/system/cpu";
const std::vector<int> kCpus = {0, 1, 2, 3};

std::vector<PerfEventSpec> two_package_events() {
  return discover_pmu_events("power", "energy-", kSys + "/bus/event_source/devices").events;
}

// Every counter of package 0 (CPU 0) advances at each read; package 1's
// (CPU 2) never does, like a socket whose RAPL is dead.
CounterSetRead package_0_live(const std::vector<PerfEventSpec>& events) {
  auto reads = std::make_shared<uint64_t>(0);
  return [events, reads](std::vector<uint64_t>* values) {
    ++*reads;
    size_t i = 0;
    for (const PerfEventSpec& e : events)
      for (int cpu : e.cpus) (*values)[i++] = cpu == 0 ? *reads : 42;
    return std::string();
  };
}

EnergyCounters judged_two_packages() {
  EnergyCounters counters;
  counters.events = two_package_events();
  std::string error;
  counters.verdicts =
      judge_perf_events(counters.events, package_0_live(counters.events), &error, milliseconds(5))
          .value();
  return counters;
}

TEST(PerfRows, TheFixtureHasOneCpuPerPackage) {
  std::vector<PerfEventSpec> events = two_package_events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].name, "power/energy-pkg/");
  EXPECT_EQ(events[0].cpus, (std::vector<int>{0, 2}));
  EXPECT_TRUE(events[0].cpumask);
  EXPECT_EQ(counter_cpus(events, {1}), (std::vector<int>{0, 2}));  // the cpumask, usable or not
  EXPECT_EQ(perf_unit_problem(events[0]), "");
}

TEST(PerfRows, EveryEventIsJudgedOnEveryPackage) {
  EnergyCounters counters = judged_two_packages();
  std::vector<std::string> names;
  for (const CounterVerdict& v : counters.verdicts) names.push_back(v.counter);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "power/energy-pkg/ on CPU 0", "power/energy-pkg/ on CPU 2",
                       "power/energy-ram/ on CPU 0", "power/energy-ram/ on CPU 2"}));
  EXPECT_EQ(counters.verdicts[0].liveness, Liveness::Live);
  EXPECT_EQ(counters.verdicts[1].liveness, Liveness::Frozen);
  EXPECT_EQ(counters.verdicts[1].note.rfind("power/energy-pkg/ on CPU 2: did not change in ", 0),
            0u)
      << counters.verdicts[1].note;
}

TEST(PerfRows, AnEventWithoutAnEnergyUnitIsNoUnit) {
  std::vector<PerfEventSpec> events = two_package_events();
  events[0].unit = "Watts";
  events[1].scale = std::nan("");
  EXPECT_EQ(perf_unit_problem(events[0]), "unit 'Watts', scale 2.32831e-10: not an energy counter");
  EXPECT_NE(perf_unit_problem(events[1]).find("scale nan"), std::string::npos);
  PerfEventSpec zero_scale = two_package_events()[0];
  zero_scale.scale = 0;
  EXPECT_NE(perf_unit_problem(zero_scale), "");
  int reads = 0;
  CounterSetRead never = [&](std::vector<uint64_t>*) { ++reads; return std::string(); };
  std::string error;
  auto verdicts = judge_perf_events(events, never, &error, std::chrono::seconds(60));
  ASSERT_TRUE(verdicts) << error;
  EXPECT_EQ(reads, 0);  // nothing left to probe
  EXPECT_EQ(worst_of(*verdicts).liveness, Liveness::NoUnit);
  EXPECT_EQ((*verdicts)[0].note,
            "power/energy-pkg/ on CPU 0: unit 'Watts', scale 2.32831e-10: not an energy counter");
}

TEST(PerfRows, PlacementsStayInThePackage) {
  std::vector<Placement> p0 = package_placements(0, kCpus, kCpuRoot);
  ASSERT_EQ(p0.size(), 2u);
  EXPECT_EQ(p0[0].label(), "0->0");
  EXPECT_EQ(p0[1].label(), "1->0");  // CPU 1 is package 0's other CPU, CPU 3 is not
  std::vector<Placement> p2 = package_placements(2, kCpus, kCpuRoot);
  EXPECT_EQ(p2[1].label(), "3->2");
  // no other CPU in the package: any other CPU
  EXPECT_EQ(package_placements(0, {0, 3}, kCpuRoot)[1].label(), "3->0");
  EXPECT_EQ(package_placements(0, {0}, kCpuRoot).size(), 1u);
}

TEST(PerfRows, PerfRowsForEveryPackageWithTheirVerdicts) {
  std::vector<PlannedRow> rows = plan_perf_rows(judged_two_packages(), kCpus, kCpuRoot);
  std::vector<std::string> names;
  for (const PlannedRow& r : rows) names.push_back(r.bench);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "perf/read/power/energy-pkg//0->0",
                       "perf/read/power/energy-pkg//1->0",
                       "perf/read/power/energy-pkg//2->2",
                       "perf/read/power/energy-pkg//3->2",
                       "perf/group-read/power/{energy-pkg,energy-ram}//0->0",
                       "perf/group-read/power/{energy-pkg,energy-ram}//1->0",
                       "perf/group-read/power/{energy-pkg,energy-ram}//2->2",
                       "perf/group-read/power/{energy-pkg,energy-ram}//3->2"}));
  const PlannedRow& read_p0 = rows[1];
  EXPECT_EQ(read_p0.meta.cpu, 1);
  EXPECT_EQ(read_p0.meta.target_cpu, 0);
  EXPECT_EQ(read_p0.meta.liveness, Liveness::Live);
  EXPECT_EQ(read_p0.meta.liveness_note, "");
  EXPECT_EQ(read_p0.events.size(), 1u);
  const PlannedRow& group_p1 = rows[6];
  EXPECT_EQ(group_p1.meta.target_cpu, 2);
  EXPECT_EQ(group_p1.events.size(), 2u);
  EXPECT_EQ(group_p1.meta.liveness, Liveness::Frozen);
  // the note names both dead counters of package 1
  EXPECT_NE(group_p1.meta.liveness_note.find("power/energy-pkg/ on CPU 2"), std::string::npos);
  EXPECT_NE(group_p1.meta.liveness_note.find("; power/energy-ram/ on CPU 2"), std::string::npos)
      << group_p1.meta.liveness_note;
  EXPECT_TRUE(group_p1.meta.stand_in.empty());
}

TEST(PerfRows, EbpfRowsReadTheSlotOfEveryPackage) {
  std::vector<PlannedRow> rows = plan_ebpf_rows(judged_two_packages(), kCpus, kCpuRoot);
  ASSERT_EQ(rows.size(), 8u);
  EXPECT_EQ(rows[0].bench, "ebpf-lookup/lookup/power/{energy-pkg,energy-ram}//0->0");
  EXPECT_EQ(rows[1].bench, "ebpf-mmap/load/power/{energy-pkg,energy-ram}//0->0");
  EXPECT_EQ(rows[7].bench, "ebpf-mmap/load/power/{energy-pkg,energy-ram}//3->2");
  EXPECT_EQ(rows[0].meta.liveness, Liveness::Live);
  EXPECT_EQ(rows[4].meta.target_cpu, 2);
  EXPECT_EQ(rows[4].meta.liveness, Liveness::Frozen);
}

// A PMU without cpumask (the msr/tsc/ stand-in): its first CPU only, no verdict.
TEST(PerfRows, AStandInIsReadOnItsFirstCpuWithoutVerdict) {
  EnergyCounters counters;
  counters.events = discover_pmu_events(
      "msr", "tsc", std::string(RAPLBENCH_TESTDATA) + "/sys/bus/event_source/devices").events;
  ASSERT_EQ(counters.events.size(), 1u);
  EXPECT_FALSE(counters.events[0].cpumask);
  counters.events[0].cpus = {0, 1, 2, 3};  // every online CPU of some machine
  counters.stand_in = "no RAPL here";
  std::vector<PlannedRow> rows = plan_perf_rows(counters, kCpus, kCpuRoot);
  ASSERT_EQ(rows.size(), 4u);  // read and group-read, 0->0 and 1->0
  for (const PlannedRow& r : rows) {
    EXPECT_EQ(r.meta.target_cpu, 0);
    EXPECT_FALSE(r.meta.liveness.has_value());
    EXPECT_EQ(r.meta.stand_in, "no RAPL here");
  }
  // a process allowed on CPUs 2-3 only reads it from CPU 2
  EXPECT_EQ(counter_cpus(counters.events, {2, 3}), (std::vector<int>{2}));
}

}  // namespace
}  // namespace raplbench

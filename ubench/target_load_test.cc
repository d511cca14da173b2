// What the target CPU of a cross-CPU row does while the row is timed
// (target_load.h): busy spins there, ticking wakes it at the tick rate and
// little more, idle starts nothing; what cannot start says why; and a row's
// benchmark holds its row's state while it runs (register.h).
#include "target_load.h"

#include <dirent.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "cpu.h"
#include "register.h"

namespace raplbench {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// The CPU the loads run on: one this process may use, the last (a single
// allowed CPU is tested too, shared with the test's own thread).
int target_cpu() {
  const std::vector<int> cpus = usable_cpus();
  return cpus.empty() ? 0 : cpus.back();
}

// This process's threads (/proc/self/task).
std::set<pid_t> threads() {
  std::set<pid_t> tids;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return tids;
  while (const dirent* e = readdir(dir))
    if (e->d_name[0] != '.') tids.insert(pid_t(std::stol(e->d_name)));
  closedir(dir);
  return tids;
}

// What the scheduler accounts to thread `tid` (its schedstat; getrusage's
// CPU time is sampled at ticks), in ns: the time it ran, and the time it
// waited on a run queue, runnable but not running; -1 unreadable.
struct Sched {
  double ran = -1, waited = -1;
};
Sched sched(pid_t tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/schedstat");
  Sched s;
  f >> s.ran >> s.waited;
  return f ? s : Sched{};
}

// The CPU thread `tid` last ran on (field 39 of its stat); -1 unreadable.
int last_cpu(pid_t tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t comm_end = stat.rfind(')');
  if (comm_end == std::string::npos) return -1;
  std::istringstream fields(stat.substr(comm_end + 2));  // from field 3, the state
  std::string field;
  for (int i = 3; i <= 39 && fields >> field; ++i)
    if (i == 39) return std::stoi(field);
  return -1;
}

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// How long destroying `load` takes (stopping and joining its thread).
Clock::duration stop_time(std::unique_ptr<TargetLoad> load) {
  const Clock::time_point t0 = Clock::now();
  load.reset();
  return Clock::now() - t0;
}

TEST(TargetLoad, StateNamesAreThePlansAndAnUnknownOneIsNamed) {
  for (TargetState s : {TargetState::kIdle, TargetState::kTicking, TargetState::kBusy}) {
    std::string why;
    EXPECT_EQ(parse_target_state(target_state_name(s), &why), s) << why;
  }
  std::string why;
  EXPECT_FALSE(parse_target_state("spinning", &why));
  EXPECT_NE(why.find("\"spinning\""), std::string::npos) << why;
}

TEST(TargetLoad, IdleStartsNoThread) {
  const std::set<pid_t> before = threads();
  std::string why;
  auto load = TargetLoad::start(TargetState::kIdle, target_cpu(), 1000, &why);
  ASSERT_TRUE(load) << why;
  EXPECT_EQ(load->tid(), 0);
  EXPECT_EQ(threads(), before);
}

TEST(TargetLoad, BusySpinsOnTheTargetCpu) {
  const int cpu = target_cpu();
  std::string why;
  auto load = TargetLoad::start(TargetState::kBusy, cpu, 0, &why);
  ASSERT_TRUE(load) << why;
  const pid_t tid = load->tid();
  const Clock::time_point w0 = Clock::now();
  const Sched s0 = sched(tid);
  ASSERT_GE(s0.ran, 0) << "/proc/self/task/" << tid << "/schedstat (CONFIG_SCHED_INFO)";
  std::this_thread::sleep_for(50ms);
  const Sched s1 = sched(tid);
  const double wall_ns = seconds(Clock::now() - w0) * 1e9;
  const double ran = (s1.ran - s0.ran) / wall_ns, waited = (s1.waited - s0.waited) / wall_ns;
  std::printf("busy on CPU %d: ran %.3f and waited for the CPU %.3f of %.1f ms\n", cpu, ran,
              waited, wall_ns / 1e6);
  RecordProperty("busy_cpu_fraction", std::to_string(ran));
  // It always wants the CPU, and has it when nothing else does. Another
  // process spinning there (a build beside the tests) takes half of it: a
  // share above a quarter, running or waiting nearly all the time, is a spin
  // (a sleeping thread's are about 0.01 and 0.01).
  EXPECT_GE(ran + waited, 0.9);
  EXPECT_GE(ran, waited > 0.1 ? 0.25 : 0.5);
  EXPECT_EQ(last_cpu(tid), cpu);
  const Clock::duration stopped = stop_time(std::move(load));
  std::printf("busy stopped in %.3f ms\n", seconds(stopped) * 1e3);
  EXPECT_LT(stopped, 50ms);
  EXPECT_EQ(threads().count(tid), 0u);
}

TEST(TargetLoad, TickingWakesTheTargetCpuAtTheTickRateAndLittleMore) {
  const int cpu = target_cpu();
  std::string why;
  auto load = TargetLoad::start(TargetState::kTicking, cpu, 1000, &why);
  ASSERT_TRUE(load) << why;
  EXPECT_GE(load->ticks(), 1u);  // the state held before start returned
  const pid_t tid = load->tid();
  const Clock::time_point w0 = Clock::now();
  const uint64_t t0 = load->ticks();
  const Sched s0 = sched(tid);
  ASSERT_GE(s0.ran, 0) << "/proc/self/task/" << tid << "/schedstat (CONFIG_SCHED_INFO)";
  std::this_thread::sleep_for(100ms);
  const uint64_t ticks = load->ticks() - t0;
  const Sched s1 = sched(tid);
  const double wall_ms = seconds(Clock::now() - w0) * 1e3;
  const double fraction = (s1.ran - s0.ran) / (wall_ms * 1e6);
  std::printf("ticking on CPU %d: %llu ticks in %.1f ms, %.4f of the wall time on the CPU\n", cpu,
              static_cast<unsigned long long>(ticks), wall_ms, fraction);
  RecordProperty("ticks", std::to_string(ticks));
  RecordProperty("ticking_cpu_fraction", std::to_string(fraction));
  // 1 kHz: about one tick a millisecond (this VM misses a few per cent)
  EXPECT_GE(double(ticks), 0.5 * wall_ms);
  EXPECT_LE(double(ticks), 1.5 * wall_ms);
  EXPECT_LT(fraction, 0.2);  // a busy thread's is at least 0.5
  EXPECT_EQ(last_cpu(tid), cpu);
  const Clock::duration stopped = stop_time(std::move(load));
  std::printf("ticking stopped in %.3f ms\n", seconds(stopped) * 1e3);
  EXPECT_LT(stopped, 50ms);  // the next tick, within a period
  EXPECT_EQ(threads().count(tid), 0u);
}

TEST(TargetLoad, WhatCannotStartSaysWhy) {
  const std::set<pid_t> before = threads();
  for (TargetState s : {TargetState::kBusy, TargetState::kTicking}) {
    std::string why;
    EXPECT_FALSE(TargetLoad::start(s, 1 << 20, 1000, &why));
    EXPECT_NE(why.find("CPU 1048576"), std::string::npos) << why;
    EXPECT_NE(why.find(target_state_name(s)), std::string::npos) << why;
  }
  std::string why;
  EXPECT_FALSE(TargetLoad::start(TargetState::kTicking, target_cpu(), 0, &why));
  EXPECT_NE(why.find("target_tick_hz"), std::string::npos) << why;
  EXPECT_EQ(threads(), before);  // every thread that could not start was joined
}

// Keeps what the benchmarks report, instead of printing it.
class Collect : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) got[r.benchmark_name()] = r.error_occurred ? r.error_message : "ok";
  }
  std::map<std::string, std::string> got;
};

nlohmann::json row(const std::string& id, nlohmann::json target_state, nlohmann::json target_cpu,
                   nlohmann::json tick_hz = 1000) {
  return {{"id", "target-load-test-" + id}, {"cpu", nullptr}, {"target_cpu", target_cpu},
          {"target_load", target_state}, {"target_tick_hz", tick_hz}};
}

TEST(TargetLoad, ARowsBenchmarkHoldsItsTargetStateWhileItRuns) {
  const int cpu = target_cpu();
  const std::set<pid_t> before = threads();
  std::set<pid_t> during;
  std::map<pid_t, int> ran_on;
  add_benchmark(
      row("busy", "busy", cpu),
      [&](benchmark::State& state) {
        for (auto _ : state) std::this_thread::sleep_for(20ms);
        during = threads();
        for (pid_t t : during)
          if (!before.count(t)) ran_on[t] = last_cpu(t);
      },
      1);
  add_benchmark(row("unknown", "spinning", cpu), [](benchmark::State& s) { for (auto _ : s) {} });
  add_benchmark(row("no-rate", "ticking", cpu, nullptr),
                [](benchmark::State& s) { for (auto _ : s) {} });
  add_benchmark(row("no-target", "busy", nullptr), [](benchmark::State& s) { for (auto _ : s) {} });
  Collect collect;
  benchmark::RunSpecifiedBenchmarks(&collect, "target-load-test-");

  EXPECT_EQ(collect.got["target-load-test-busy/iterations:1"], "ok");
  ASSERT_EQ(ran_on.size(), 1u) << "one load thread while the benchmark ran";
  EXPECT_EQ(ran_on.begin()->second, cpu);
  EXPECT_EQ(threads(), before) << "the load stops when the benchmark returns";
  EXPECT_NE(collect.got["target-load-test-unknown/iterations:1"].find(
                "unavailable: unknown target_state \"spinning\""),
            std::string::npos);
  EXPECT_NE(collect.got["target-load-test-no-rate/iterations:1"].find("target_tick_hz"),
            std::string::npos);
  EXPECT_NE(collect.got["target-load-test-no-target/iterations:1"].find("not another CPU"),
            std::string::npos);
}

}  // namespace
}  // namespace raplbench

// ubench's own flags are taken out of argv, the others stay in order.
#include "flags.h"

#include <gtest/gtest.h>

#include <vector>

namespace raplbench {
namespace {

struct Args {
  std::vector<std::string> text;
  std::vector<char*> argv;
  int argc;
  explicit Args(std::vector<std::string> t) : text(std::move(t)) {
    for (std::string& s : text) argv.push_back(s.data());
    argc = int(argv.size());
  }
  std::vector<std::string> left() const { return {argv.begin(), argv.begin() + argc}; }
};

TEST(Flags, TakesThePlanFlagAndKeepsTheRestInOrder) {
  Args a({"ubench", "--benchmark_repetitions=2", "--raplbench_plan=/tmp/plan.json",
          "--benchmark_filter=perf"});
  Flags f = take_raplbench_flags(&a.argc, a.argv.data());
  EXPECT_EQ(f.plan, "/tmp/plan.json");
  EXPECT_EQ(f.error, "");
  EXPECT_EQ(a.left(), (std::vector<std::string>{"ubench", "--benchmark_repetitions=2",
                                                "--benchmark_filter=perf"}));
}

TEST(Flags, NoneGivenMeansRunThePlannerAndOthersAreLeftForGoogleBenchmark) {
  Args a({"ubench", "--raplbench_plan_only"});
  Flags f = take_raplbench_flags(&a.argc, a.argv.data());
  EXPECT_EQ(f.plan, "");
  EXPECT_EQ(a.argc, 2);  // left for Google Benchmark to reject
}

TEST(Flags, ThePlanNeedsAPath) {
  for (const char* bad : {"--raplbench_plan", "--raplbench_plan="}) {
    Args a({"ubench", bad});
    EXPECT_NE(take_raplbench_flags(&a.argc, a.argv.data()).error, "") << bad;
  }
}

TEST(Flags, WarmupTakesSecondsAndDefaultsToTheConstant) {
  Args a({"ubench", "--raplbench_warmup=0.02", "--benchmark_min_time=0.01"});
  Flags f = take_raplbench_flags(&a.argc, a.argv.data());
  EXPECT_EQ(f.error, "");
  EXPECT_DOUBLE_EQ(f.warmup_seconds, 0.02);
  EXPECT_EQ(a.left(), (std::vector<std::string>{"ubench", "--benchmark_min_time=0.01"}));
  Args none({"ubench"});
  EXPECT_DOUBLE_EQ(take_raplbench_flags(&none.argc, none.argv.data()).warmup_seconds,
                   kDefaultWarmupSeconds);
  Args zero({"ubench", "--raplbench_warmup=0"});
  EXPECT_DOUBLE_EQ(take_raplbench_flags(&zero.argc, zero.argv.data()).warmup_seconds, 0);
  for (const char* bad : {"--raplbench_warmup", "--raplbench_warmup=", "--raplbench_warmup=-1",
                          "--raplbench_warmup=10ms", "--raplbench_warmup=nan"}) {
    Args b({"ubench", bad});
    EXPECT_NE(take_raplbench_flags(&b.argc, b.argv.data()).error, "") << bad;
  }
}

TEST(Flags, RateWindowTakesSecondsAboveZero) {
  Args a({"ubench", "--raplbench_rate_window=0.05", "--benchmark_repetitions=3"});
  Flags f = take_raplbench_flags(&a.argc, a.argv.data());
  EXPECT_EQ(f.error, "");
  EXPECT_DOUBLE_EQ(f.rate_window_seconds, 0.05);
  EXPECT_EQ(a.left(), (std::vector<std::string>{"ubench", "--benchmark_repetitions=3"}));
  Args none({"ubench"});
  EXPECT_DOUBLE_EQ(take_raplbench_flags(&none.argc, none.argv.data()).rate_window_seconds,
                   kDefaultRateWindowSeconds);
  for (const char* bad : {"--raplbench_rate_window", "--raplbench_rate_window=0",
                          "--raplbench_rate_window=-0.1", "--raplbench_rate_window=50ms",
                          "--raplbench_rate_window=inf"}) {
    Args b({"ubench", bad});
    EXPECT_NE(take_raplbench_flags(&b.argc, b.argv.data()).error, "") << bad;
  }
}

}  // namespace
}  // namespace raplbench

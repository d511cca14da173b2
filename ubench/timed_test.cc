// The warm-up every benchmark runs before its timed loop (timed.h).
#include "timed.h"

#include <gtest/gtest.h>

#include <chrono>

namespace raplbench {
namespace {

using namespace std::chrono_literals;

TEST(WarmUp, RunsTheOperationForTheWarmupTimeInDoublingBatches) {
  int calls = 0;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(warm_up([&] { return ++calls > 0; }, 5ms));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 5ms);
  // batches of 1, 2, 4, ...: the number of calls is 2^k - 1
  EXPECT_EQ(calls & (calls + 1), 0) << calls;
  EXPECT_GT(calls, 1);
}

TEST(WarmUp, NoneAtZeroAndStopsAtTheFirstFailure) {
  int calls = 0;
  EXPECT_TRUE(warm_up([&] { return ++calls > 0; }, 0ns));
  EXPECT_EQ(calls, 0);
  EXPECT_FALSE(warm_up([&] { return ++calls < 3; }, 1s));
  EXPECT_EQ(calls, 3);
}

TEST(WarmUp, NeverRunsMoreOperationsThanTheCallTimes) {
  // Google Benchmark's iteration-count search calls a benchmark with 1, 10,
  // 100, ... iterations: each call warms up at most that many operations
  // (in whole doubling batches), not for the whole second.
  struct FakeState {
    int64_t max_iterations;
  };
  const std::chrono::nanoseconds before = warmup_time;
  warmup_time = 1s;
  int calls = 0;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(warm_up_before(FakeState{5}, [&] { return ++calls > 0; }));
  EXPECT_EQ(calls, 7);  // batches of 1, 2 and 4
  EXPECT_LT(std::chrono::steady_clock::now() - start, 500ms);
  calls = 0;
  EXPECT_TRUE(warm_up([&] { return ++calls > 0; }, 2ms, 1));
  EXPECT_EQ(calls, 1);
  warmup_time = before;
}

TEST(WarmUp, TheDefaultIsTheConfiguredTime) {
  const std::chrono::nanoseconds before = warmup_time;
  warmup_time = 2ms;
  int calls = 0;
  const auto start = std::chrono::steady_clock::now();
  warm_up([&] { return ++calls > 0; });
  EXPECT_GE(std::chrono::steady_clock::now() - start, 2ms);
  warmup_time = 0ns;
  calls = 0;
  warm_up([&] { return ++calls > 0; });
  EXPECT_EQ(calls, 0);
  warmup_time = before;
}

}  // namespace
}  // namespace raplbench

// timed.h - the untimed warm-up every access path's benchmark runs right
// before its timed loop, so that Google Benchmark times each block of
// operations the way rbench's Criterion harness does.
//
// Google Benchmark 1.7.1 warms a benchmark up once, before its first
// repetition (--benchmark_min_warmup_time; benchmark_runner.cc runs
// RunWarmUp only while !warmup_done). With --benchmark_enable_random_interleaving
// (results/bench_all.py) every later repetition starts cold: right after
// its thread was pinned, often moved from the other CPU, after another
// benchmark ran. rbench warms each block up on its pinned CPU before timing
// it (Criterion's warm-up). So every benchmark call here first runs its own
// operation untimed for warmup_time, set by --raplbench_warmup (flags.h).
//
// Use: put the operation in a lambda returning true on success, then
//
//   if (warm_up(read_once)) for (auto _ : state) { if (!read_once()) ...; }
//
// A failing operation stops the warm-up (warm_up returns false): the timed
// loop reports the error, so call the loop's first iteration anyway, or
// report it the same way.
#pragma once

#include <chrono>
#include <cstdint>

namespace raplbench {

// How long each benchmark call runs its operation before timing it (0: not at all).
inline std::chrono::nanoseconds warmup_time{0};

// Runs op() untimed in doubling batches (1, 2, 4, ...) until `warmup` has
// passed, as Criterion's warm-up does; nothing when `warmup` is 0. Returns
// false as soon as op() does.
template <class Op>
bool warm_up(Op&& op, std::chrono::nanoseconds warmup = warmup_time) {
  if (warmup.count() <= 0) return true;
  using Clock = std::chrono::steady_clock;
  const Clock::time_point until = Clock::now() + warmup;
  for (uint64_t batch = 1;; batch *= 2) {
    for (uint64_t i = 0; i < batch; ++i)
      if (!op()) return false;
    if (Clock::now() >= until) return true;
  }
}

}  // namespace raplbench

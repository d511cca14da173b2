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
// operation untimed for warmup_time, set by --raplbench_warmup (flags.h);
// bench-all turns Google Benchmark's own warm-up off (results/schedule.py).
//
// Use: put the operation in a lambda returning true on success, then
//
//   if (warm_up_before(state, read_once)) for (auto _ : state) { if (!read_once()) ...; }
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
// passed or `max_ops` operations ran, as Criterion's warm-up does; nothing
// when `warmup` is 0. Returns false as soon as op() does.
template <class Op>
bool warm_up(Op&& op, std::chrono::nanoseconds warmup = warmup_time,
             uint64_t max_ops = UINT64_MAX) {
  if (warmup.count() <= 0) return true;
  using Clock = std::chrono::steady_clock;
  const Clock::time_point until = Clock::now() + warmup;
  uint64_t done = 0;
  for (uint64_t batch = 1;; batch *= 2) {
    for (uint64_t i = 0; i < batch; ++i, ++done)
      if (!op()) return false;
    if (Clock::now() >= until || done >= max_ops) return true;
  }
}

// The warm-up of one benchmark call, never longer in operations than the
// call times. Google Benchmark sizes a benchmark's first repetition by
// calling it with 1, 10, 100, ... iterations until one lasts
// --benchmark_min_time; each of those calls would otherwise warm up for the
// whole warmup_time, in every leg: about 0.3 s per row and leg, more than
// the row's timed blocks. A timed repetition runs at least min_time's worth
// of operations, at least warmup_time's (bench_all's schedules), so its
// warm-up stays whole.
template <class State, class Op>
bool warm_up_before(const State& state, Op&& op) {
  return warm_up(op, warmup_time, uint64_t(state.max_iterations));
}

}  // namespace raplbench

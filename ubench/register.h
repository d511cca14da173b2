// register.h - registering the benchmark of a plan row (plan.h).
//
// A runnable row's benchmark runs under the row's "id" (rbench's
// Planned::id, the Criterion full id of the same row), so results/gbench.py
// joins Google Benchmark's output to the plan's rows by it. A benchmark
// reports its figure in the user counter named by the row's "metric"
// ("latency" in ns, "rate_hz") where Google Benchmark's time per iteration
// is not it.
#pragma once

#include <benchmark/benchmark.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace raplbench {

using BenchFn = std::function<void(benchmark::State&)>;

// Registers the benchmark of plan row `row`, named by its id. The benchmark
// first pins its thread to the row's cpu (if any), then, when the row names
// a "target_load", puts its "target_cpu" in that state (target_load.h;
// ticking at the row's "target_tick_hz", which parse_plan copies from the
// plan's root) from before `fn` runs, so through its warm-up and timed
// loop, until `fn` returns. A load that cannot start skips the benchmark as
// unavailable, saying why; a row whose target state this ubench cannot hold
// (an unknown name, no other target CPU, ticking without a tick rate)
// registers as add_unavailable. `iterations` > 0 fixes the iteration count
// (Google Benchmark then appends "/iterations:N" to the name in its output).
void add_benchmark(const nlohmann::json& row, BenchFn fn, int iterations = 0);

// A row this ubench cannot time: its benchmark says why, as unavailable.
void add_unavailable(const nlohmann::json& row, const std::string& reason);

// Marks a benchmark as unavailable from inside it (normalized to
// status "unavailable", not "error").
void skip_unavailable(benchmark::State& state, const std::string& reason);

}  // namespace raplbench

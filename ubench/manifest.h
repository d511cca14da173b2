// manifest.h - what each registered benchmark measures, in the terms of the
// results schema (results/schema.json).
//
// Google Benchmark reports names and times only. ubench therefore keeps a
// manifest: one row per row of the plan it times (plan.h), saying which
// benchmark (and which of its values) feeds the row, with the plan row's
// path, op, target, cpu, target_cpu, stand_in, liveness, liveness_note,
// metric and unit as they are; or, for a row that cannot run here, the
// reason. main.cc writes it to the file named by --raplbench_manifest, in
// the format both harnesses share (results/manifest.py; rbench writes the
// same for Criterion):
//
//   {"manifest_version": 1, "harness": "gbench", "rows": [ROW, ...]}
//   ROW = {"bench": <run name> | null, "value": "real_time" | "counter:<name>" | null,
//          "path", "op", "target", "cpu", "target_cpu", "stand_in", "liveness",
//          "liveness_note", "metric", "unit", "status": "ok" | "unavailable", "reason"}
//
// one row per line, the keys in exactly that order; "value" is null exactly
// when "bench" is (an unavailable row); results/gbench.py joins it with the
// Google Benchmark JSON output to build schema rows.
#pragma once

#include <benchmark/benchmark.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace raplbench {

using BenchFn = std::function<void(benchmark::State&)>;

// Registers benchmark `name` for the plan row `row` (its manifest row takes
// the row's fields). The benchmark first pins its thread to the row's cpu
// (if any). `value` is "real_time" (time per iteration) or "counter:<name>"
// (a user counter the benchmark sets). `iterations` > 0 fixes the iteration
// count. Returns the benchmark's run name in the JSON output (Google
// Benchmark appends "/iterations:N").
std::string add_benchmark(const std::string& name, const nlohmann::json& row, BenchFn fn,
                          const std::string& value = "real_time", int iterations = 0);

// Another row fed by a counter of an already registered benchmark.
void add_counter_row(const std::string& bench_name, const std::string& counter,
                     const nlohmann::json& row);

// A row that cannot run here: its manifest row says why.
void add_unavailable(const nlohmann::json& row, const std::string& reason);

// Marks a benchmark as unavailable from inside it (normalized to
// status "unavailable", not "error").
void skip_unavailable(benchmark::State& state, const std::string& reason);

// The manifest of every row added so far, in the format above.
std::string manifest_json();

// Writes manifest_json() to `path` ("-": standard output). Returns an empty
// string, or why it could not be written.
std::string write_manifest(const std::string& path);

}  // namespace raplbench

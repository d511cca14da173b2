// manifest.h - what each registered benchmark measures, in the terms of the
// results schema (results/schema.json), and the paths that could not run.
//
// Google Benchmark reports names and times only. ubench therefore keeps a
// manifest: one row per future schema row, saying which benchmark (and which
// of its values) feeds the row, with path, op, target, cpu, target_cpu,
// stand_in, liveness, liveness_note, metric and unit; or, for a path that
// cannot run here, the reason. main.cc writes it to the file named by
// --raplbench_manifest, in the format both harnesses share (rbench writes
// the same for Criterion):
//
//   {"manifest_version": 1, "harness": "gbench", "rows": [ROW, ...]}
//   ROW = {"bench": <run name> | null, "value": "real_time" | "counter:<name>" | null,
//          "path", "op", "target", "cpu", "target_cpu", "stand_in", "liveness",
//          "liveness_note", "metric", "unit", "status": "ok" | "unavailable", "reason"}
//
// with the keys in exactly that order; "value" is null exactly when "bench"
// is (an unavailable row); results/gbench.py joins it with the
// Google Benchmark JSON output to build schema rows.
#pragma once

#include <benchmark/benchmark.h>

#include <functional>
#include <optional>
#include <string>

#include "liveness.h"

namespace raplbench {

struct RowMeta {
  std::string path;     // access path id: uinsn, powercap, msr-dev, perf, ebpf-lookup, ...
  std::string op;       // pread, read, group-read, lookup, load, cpuid:0x1, ...
  std::string target;   // what was read: file, MSR address, event name
  std::optional<int> cpu;         // CPU the benchmark thread is pinned to
  std::optional<int> target_cpu;  // CPU whose counter is read (nullopt: not per-CPU)
  std::string stand_in;           // empty, or why a substitute is measured
  std::string metric = "latency";
  std::string unit = "ns";
  // The verdict of the energy counters the row reads (see liveness.h); none
  // for stand-ins, instructions and unavailable rows.
  std::optional<Liveness> liveness = std::nullopt;
  std::string liveness_note = "";  // empty when live or no verdict

  RowMeta& set_liveness(const RowVerdict& v) {
    liveness = v.liveness;
    liveness_note = v.note;
    return *this;
  }
};

using BenchFn = std::function<void(benchmark::State&)>;

// Registers benchmark `name` and its manifest row. The benchmark first pins
// its thread to meta.cpu (if set). `value` is "real_time" (time per
// iteration) or "counter:<name>" (a user counter the benchmark sets).
// `iterations` > 0 fixes the iteration count. Returns the benchmark's run
// name in the JSON output (Google Benchmark appends "/iterations:N").
std::string add_benchmark(const std::string& name, const RowMeta& meta, BenchFn fn,
                          const std::string& value = "real_time", int iterations = 0);

// Another row fed by a counter of an already registered benchmark.
void add_counter_row(const std::string& bench_name, const std::string& counter,
                     const RowMeta& meta);

// A path that cannot run here: its row says why, in words a person can act on.
void add_unavailable(const RowMeta& meta, const std::string& reason);

// Marks a benchmark as unavailable from inside it (normalized to
// status "unavailable", not "error").
void skip_unavailable(benchmark::State& state, const std::string& reason);

// The manifest of every row added so far, in the format above (one row per line).
std::string manifest_json();

// Writes manifest_json() to `path` ("-": standard output). Returns an empty
// string, or why it could not be written.
std::string write_manifest(const std::string& path);

// JSON string literal for `s` (quotes included).
std::string json_quote(const std::string& s);

}  // namespace raplbench

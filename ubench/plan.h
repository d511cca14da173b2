// plan.h - the plan ubench times. rbench makes it, the one discovery of the
// suite (rbench/src/plan.rs; the raplbench-plan binary writes it as JSON):
//
//   {"plan_version": 1, "target_tick_hz": N, "rows": [ROW, ...]}
//   ROW = {"id", "path", "op", "target", "cpu", "target_cpu", "target_state",
//          "ipi", "target_load", "stand_in", "liveness", "liveness_note", "metric", "unit", "harnesses": [...],
//          "status": "ok" | "unavailable", "reason", "open": OPEN | null}
//
// ubench times the rows whose "harnesses" name "gbench", in the plan's
// order, and no other: a runnable row's OPEN says what to open (the
// functions of paths/paths.h, one per kind of OPEN), an unavailable row
// has no benchmark (results/gbench.py gives it the plan's reason). Each
// benchmark runs under its row's "id" (register.h); the targets, CPUs,
// stand-in words and liveness verdicts stay the plan's, for results/gbench.py
// to join to Google Benchmark's output.
//
// A cross-CPU row's "target_state" (null, "idle", "ticking" or "busy") is
// what its target CPU does while it is timed; its "target_load" is the load
// the harness starts there for it (target_load.h): the same state, or null
// where the suite's own program holds it (the eBPF rows' "ticking": their
// BPF timer). The row's id already names the state. The ticking load's
// rate is the plan's, at its root: parse_plan copies "target_tick_hz" into
// every row with a target load, so the registration reads it from the row
// (register.h).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace raplbench {

inline constexpr int kPlanVersion = 1;

// The rows of a plan document that gbench times, in order, each with a
// target state given the plan's "target_tick_hz" (null when it has none);
// nullopt and *why when `text` is not a plan this ubench reads.
std::optional<std::vector<nlohmann::json>> parse_plan(const std::string& text, std::string* why);

// The same, read from the file `path`.
std::optional<std::vector<nlohmann::json>> load_plan(const std::string& path, std::string* why);

// The same, written by the planner `command` on its standard output (run
// with this process's environment: the fixture hooks reach it).
std::optional<std::vector<nlohmann::json>> run_planner(const std::string& command,
                                                      std::string* why);

// Registers the benchmark of every runnable row (register.h), one that says
// why for a row this ubench cannot open.
void register_plan(const std::vector<nlohmann::json>& rows);

}  // namespace raplbench

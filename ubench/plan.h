// plan.h - the plan ubench times. rbench makes it, the one discovery of the
// suite (rbench/src/plan.rs; the raplbench-plan binary writes it as JSON):
//
//   {"plan_version": 1, "rows": [ROW, ...]}
//   ROW = {"path", "op", "target", "cpu", "target_cpu", "stand_in", "liveness",
//          "liveness_note", "metric", "unit", "harnesses": [...],
//          "status": "ok" | "unavailable", "reason", "open": OPEN | null}
//
// ubench times the rows whose "harnesses" name "gbench", in the plan's
// order, and no other: a runnable row's OPEN says what to open (the
// functions of paths/paths.h, one per kind of OPEN), an unavailable row
// keeps the plan's reason. The targets, CPUs, stand-in words and liveness
// verdicts are the plan's, copied into the manifest (manifest.h).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace raplbench {

inline constexpr int kPlanVersion = 1;

// The rows of a plan document that gbench times, in order; nullopt and
// *why when `text` is not a plan this ubench reads.
std::optional<std::vector<nlohmann::json>> parse_plan(const std::string& text, std::string* why);

// The same, read from the file `path`.
std::optional<std::vector<nlohmann::json>> load_plan(const std::string& path, std::string* why);

// The same, written by the planner `command` on its standard output (run
// with this process's environment: the fixture hooks reach it).
std::optional<std::vector<nlohmann::json>> run_planner(const std::string& command,
                                                      std::string* why);

// "<path>/<op>/<target>/<cpu>-><target_cpu>": the benchmark name of a row
// (the target and the placement's parts only where the row has them).
std::string bench_name(const nlohmann::json& row);

// Registers every row: its benchmark, or its unavailable row.
void register_plan(const std::vector<nlohmann::json>& rows);

}  // namespace raplbench

// plan.cc - see plan.h.
#include "plan.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "register.h"
#include "paths/paths.h"

namespace raplbench {

std::optional<std::vector<nlohmann::json>> parse_plan(const std::string& text, std::string* why) {
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("rows") || !doc["rows"].is_array()) {
    *why = "not a raplbench plan (JSON with a \"rows\" list)";
    return std::nullopt;
  }
  if (doc.value("plan_version", nlohmann::json()) != kPlanVersion) {
    *why = "plan_version " + doc.value("plan_version", nlohmann::json()).dump() +
           ", this ubench reads " + std::to_string(kPlanVersion) + ": rebuild both (make build)";
    return std::nullopt;
  }
  const nlohmann::json tick_hz = doc.value("target_tick_hz", nlohmann::json());
  std::vector<nlohmann::json> rows;
  for (nlohmann::json row : doc["rows"]) {
    const nlohmann::json harnesses = row.value("harnesses", nlohmann::json::array());
    if (!row.contains("id") || !row.contains("status") || !harnesses.is_array()) {
      *why = "a plan row lacks id, status or harnesses: " + row.dump();
      return std::nullopt;
    }
    if (!row.value("target_load", nlohmann::json()).is_null()) row["target_tick_hz"] = tick_hz;
    for (const nlohmann::json& h : harnesses)
      if (h == "gbench") rows.push_back(row);
  }
  return rows;
}

std::optional<std::vector<nlohmann::json>> load_plan(const std::string& path, std::string* why) {
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  if (!f) {
    *why = "cannot read the plan " + path;
    return std::nullopt;
  }
  auto rows = parse_plan(text.str(), why);
  if (!rows) *why = path + ": " + *why;
  return rows;
}

std::optional<std::vector<nlohmann::json>> run_planner(const std::string& command,
                                                      std::string* why) {
  FILE* out = popen(("'" + command + "'").c_str(), "r");
  if (out == nullptr) {
    *why = "cannot run " + command;
    return std::nullopt;
  }
  std::string text;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), out)) > 0;) text.append(buf, n);
  const int status = pclose(out);
  if (status != 0) {
    *why = command + " failed (status " + std::to_string(status) +
           "): pass --raplbench_plan=FILE, or build it (make build)";
    return std::nullopt;
  }
  auto rows = parse_plan(text, why);
  if (!rows) *why = command + ": " + *why;
  return rows;
}

void register_plan(const std::vector<nlohmann::json>& rows) {
  using Add = void (*)(const nlohmann::json&);
  const std::pair<const char*, Add> openers[] = {
      {"insn", add_insn_row}, {"file", add_file_row}, {"device", add_device_row},
      {"perf", add_perf_row}, {"bpf", add_bpf_row}};
  for (const nlohmann::json& row : rows) {
    const nlohmann::json open = row.value("open", nlohmann::json());
    if (row["status"] != "ok") continue;  // the plan says why
    if (!open.is_object()) {
      add_unavailable(row, "the plan says to open nothing: " + open.dump());
      continue;
    }
    Add add = nullptr;
    for (const auto& [key, fn] : openers)
      if (open.contains(key)) add = fn;
    if (add)
      add(row);
    else
      add_unavailable(row, "this ubench cannot open " + open.dump() + ": rebuild it (make build)");
  }
}

}  // namespace raplbench

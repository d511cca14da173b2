// manifest.cc - see manifest.h.
#include "manifest.h"

#include <cerrno>
#include <fstream>
#include <iostream>
#include <optional>
#include <vector>

#include "cpu.h"

namespace raplbench {
namespace {

// The keys a manifest row copies from its plan row, in order.
constexpr const char* kRowKeys[] = {"path",     "op",       "target",   "cpu",
                                    "target_cpu", "stand_in", "liveness", "liveness_note",
                                    "metric",   "unit"};

std::vector<nlohmann::ordered_json>& rows() {
  static std::vector<nlohmann::ordered_json> all;
  return all;
}

void add_row(const std::string& bench, const std::string& value, const nlohmann::json& row,
             const std::string& reason) {
  nlohmann::ordered_json m;
  m["bench"] = bench.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(bench);
  m["value"] = bench.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(value);
  for (const char* key : kRowKeys) m[key] = row.contains(key) ? row[key] : nlohmann::json();
  if (bench.empty()) m["liveness"] = m["liveness_note"] = nullptr;  // nothing measured
  m["status"] = bench.empty() ? "unavailable" : "ok";
  m["reason"] = reason.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(reason);
  rows().push_back(std::move(m));
}

}  // namespace

std::string add_benchmark(const std::string& name, const nlohmann::json& row, BenchFn fn,
                          const std::string& value, int iterations) {
  const std::optional<int> cpu =
      row.value("cpu", nlohmann::json()).is_number() ? std::optional<int>(row["cpu"]) : std::nullopt;
  auto* b = benchmark::RegisterBenchmark(name.c_str(), [fn, cpu](benchmark::State& state) {
    if (cpu) {
      std::string why = pin_to_cpu(*cpu);
      if (!why.empty()) return skip_unavailable(state, why);
    }
    fn(state);
  });
  std::string run_name = name;
  if (iterations > 0) {
    b->Iterations(iterations);
    run_name += "/iterations:" + std::to_string(iterations);  // Google Benchmark's naming
  }
  add_row(run_name, value, row, "");
  return run_name;
}

void add_counter_row(const std::string& bench_name, const std::string& counter,
                     const nlohmann::json& row) {
  add_row(bench_name, "counter:" + counter, row, "");
}

void add_unavailable(const nlohmann::json& row, const std::string& reason) {
  add_row("", "", row, reason);
}

void skip_unavailable(benchmark::State& state, const std::string& reason) {
  state.SkipWithError(("unavailable: " + reason).c_str());
}

std::string manifest_json() {
  std::string out = "{\"manifest_version\": 1, \"harness\": \"gbench\", \"rows\": [";
  for (size_t i = 0; i < rows().size(); ++i) out += (i ? ",\n" : "\n") + rows()[i].dump();
  return out + "\n]}\n";
}

std::string write_manifest(const std::string& path) {
  const std::string json = manifest_json();
  if (path == "-") {
    std::cout << json << std::flush;
    return std::cout ? "" : "cannot write the manifest to standard output";
  }
  std::ofstream f(path, std::ios::trunc);
  if (f) f << json;
  if (f) f.close();
  if (!f) return "cannot write the manifest to " + path + ": " + errno_text(errno);
  return "";
}

}  // namespace raplbench

// manifest.cc - see manifest.h.
#include "manifest.h"

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <vector>

#include "cpu.h"

namespace raplbench {
namespace {

struct Entry {
  std::string bench;  // empty: not measured (status unavailable)
  std::string value;
  RowMeta meta;
  std::string reason;
};

std::vector<Entry>& entries() {
  static std::vector<Entry> all;
  return all;
}

std::string json_int_or_null(const std::optional<int>& v) {
  return v ? std::to_string(*v) : "null";
}

std::string json_str_or_null(const std::string& s) { return s.empty() ? "null" : json_quote(s); }

// Only a measured row that reads a real energy counter carries a verdict
// (contract: stand-ins and unavailable rows have none).
bool judged(const Entry& e) { return !e.bench.empty() && e.meta.stand_in.empty() && e.meta.liveness; }

std::string json_liveness(const Entry& e) {
  return judged(e) ? json_quote(liveness_name(*e.meta.liveness)) : "null";
}

}  // namespace

std::string json_quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += char(c);
        }
    }
  }
  return out + "\"";
}

std::string add_benchmark(const std::string& name, const RowMeta& meta, BenchFn fn,
                          const std::string& value, int iterations) {
  std::optional<int> cpu = meta.cpu;
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
  entries().push_back({run_name, value, meta, ""});
  return run_name;
}

void add_counter_row(const std::string& bench_name, const std::string& counter,
                     const RowMeta& meta) {
  entries().push_back({bench_name, "counter:" + counter, meta, ""});
}

void add_unavailable(const RowMeta& meta, const std::string& reason) {
  entries().push_back({"", "", meta, reason});
}

void skip_unavailable(benchmark::State& state, const std::string& reason) {
  state.SkipWithError(("unavailable: " + reason).c_str());
}

std::string manifest_json() {
  std::string out = "{\"manifest_version\": 1, \"harness\": \"gbench\", \"rows\": [";
  bool first = true;
  for (const Entry& e : entries()) {
    const RowMeta& m = e.meta;
    out += first ? "\n" : ",\n";
    first = false;
    out += "{\"bench\": " + json_str_or_null(e.bench) +
           // null exactly when bench is (rbench writes the same)
           ", \"value\": " + (e.bench.empty() ? "null" : json_quote(e.value)) +
           ", \"path\": " + json_quote(m.path) + ", \"op\": " + json_quote(m.op) +
           ", \"target\": " + json_str_or_null(m.target) +
           ", \"cpu\": " + json_int_or_null(m.cpu) +
           ", \"target_cpu\": " + json_int_or_null(m.target_cpu) +
           ", \"stand_in\": " + json_str_or_null(m.stand_in) +
           ", \"liveness\": " + json_liveness(e) +
           ", \"liveness_note\": " + json_str_or_null(judged(e) ? m.liveness_note : "") +
           ", \"metric\": " + json_quote(m.metric) + ", \"unit\": " + json_quote(m.unit) +
           ", \"status\": " + json_quote(e.bench.empty() ? "unavailable" : "ok") +
           ", \"reason\": " + json_str_or_null(e.reason) + "}";
  }
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

// register.cc - see register.h.
#include "register.h"

#include <optional>

#include "cpu.h"

namespace raplbench {

void add_benchmark(const nlohmann::json& row, BenchFn fn, int iterations) {
  const std::optional<int> cpu =
      row.value("cpu", nlohmann::json()).is_number() ? std::optional<int>(row["cpu"]) : std::nullopt;
  const std::string id = row["id"];
  auto* b = benchmark::RegisterBenchmark(id.c_str(), [fn, cpu](benchmark::State& state) {
    if (cpu) {
      std::string why = pin_to_cpu(*cpu);
      if (!why.empty()) return skip_unavailable(state, why);
    }
    fn(state);
  });
  if (iterations > 0) b->Iterations(iterations);
}

void add_unavailable(const nlohmann::json& row, const std::string& reason) {
  add_benchmark(row, [reason](benchmark::State& state) { skip_unavailable(state, reason); }, 1);
}

void skip_unavailable(benchmark::State& state, const std::string& reason) {
  state.SkipWithError(("unavailable: " + reason).c_str());
}

}  // namespace raplbench

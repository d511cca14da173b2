// register.cc - see register.h.
#include "register.h"

#include <memory>
#include <optional>

#include "cpu.h"
#include "target_load.h"

namespace raplbench {

namespace {

// What a row's target CPU does while the row is timed (target_load.h).
struct LoadSpec {
  TargetState state;
  int cpu;
  int tick_hz;
};

// The target load of `row`: nullopt when it names none (no target_load,
// or null), or, with *why, when it names one this ubench cannot hold.
std::optional<LoadSpec> target_load_of(const nlohmann::json& row, std::string* why) {
  const nlohmann::json name = row.value("target_load", nlohmann::json());
  if (name.is_null()) return std::nullopt;
  if (!name.is_string()) {
    *why = "the plan's target_load is neither null nor a name: " + name.dump();
    return std::nullopt;
  }
  const std::optional<TargetState> state = parse_target_state(name.get<std::string>(), why);
  if (!state) return std::nullopt;
  const nlohmann::json target = row.value("target_cpu", nlohmann::json());
  const nlohmann::json cpu = row.value("cpu", nlohmann::json());
  if (!target.is_number_integer() || target == cpu) {
    *why = "the plan gives target_load " + name.dump() + " to a row whose target_cpu " +
           target.dump() + " is not another CPU than its cpu " + cpu.dump() +
           ": rebuild both (make build)";
    return std::nullopt;
  }
  const nlohmann::json hz = row.value("target_tick_hz", nlohmann::json());
  if (*state == TargetState::kTicking && !(hz.is_number_integer() && hz > 0)) {
    *why = "the plan gives no target_tick_hz (ticks per second) for its ticking rows: " +
           hz.dump() + ": rebuild both (make build)";
    return std::nullopt;
  }
  return LoadSpec{*state, target.get<int>(), hz.is_number_integer() ? hz.get<int>() : 0};
}

void register_row(const nlohmann::json& row, BenchFn fn, int iterations,
                  std::optional<LoadSpec> load) {
  const std::optional<int> cpu =
      row.value("cpu", nlohmann::json()).is_number() ? std::optional<int>(row["cpu"]) : std::nullopt;
  const std::string id = row["id"];
  auto* b = benchmark::RegisterBenchmark(id.c_str(), [fn, cpu, load](benchmark::State& state) {
    if (cpu) {
      std::string why = pin_to_cpu(*cpu);
      if (!why.empty()) return skip_unavailable(state, why);
    }
    // the target's state holds from before fn's warm-up to after its timed loop
    std::unique_ptr<TargetLoad> held;
    if (load) {
      std::string why;
      held = TargetLoad::start(load->state, load->cpu, load->tick_hz, &why);
      if (!held) return skip_unavailable(state, why);
    }
    fn(state);
    held.reset();
  });
  if (iterations > 0) b->Iterations(iterations);
}

}  // namespace

void add_benchmark(const nlohmann::json& row, BenchFn fn, int iterations) {
  std::string why;
  const std::optional<LoadSpec> load = target_load_of(row, &why);
  if (!why.empty()) return add_unavailable(row, why);
  register_row(row, std::move(fn), iterations, load);
}

void add_unavailable(const nlohmann::json& row, const std::string& reason) {
  register_row(
      row, [reason](benchmark::State& state) { skip_unavailable(state, reason); }, 1, std::nullopt);
}

void skip_unavailable(benchmark::State& state, const std::string& reason) {
  state.SkipWithError(("unavailable: " + reason).c_str());
}

}  // namespace raplbench

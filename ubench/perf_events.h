// perf_events.h - the perf events the plan names (rbench discovers them:
// rbench/src/perf, rbench/src/discovery) and opening them.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace raplbench {

struct PerfEventSpec {
  std::string name;       // "power/energy-pkg/"
  uint32_t type = 0;      // perf_event_attr.type (the PMU's type)
  uint64_t config = 0;    // perf_event_attr.config
  std::vector<int> cpus;  // the CPUs it counts on (a RAPL PMU's cpumask)
};

// The events of a plan's EVENT list: [{"name", "type", "config", "cpus"}, ...].
std::vector<PerfEventSpec> perf_events_of(const nlohmann::json& events);

// perf_event_open for counting `spec` on `cpu` (all tasks), in group
// `group_fd` (-1: new group) with `read_format`. Returns the fd, or -1 with
// errno set.
int open_counter(const PerfEventSpec& spec, int cpu, int group_fd, uint64_t read_format);

// "perf_event_open(<name>) failed: <strerror>" (the plan has said what the
// machine lacks: this is for what fails anyway, at run time).
std::string perf_open_error_reason(int err, const std::string& name);

}  // namespace raplbench

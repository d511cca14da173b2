// perf_rows.cc - see perf_rows.h.
#include "perf_rows.h"

#include <linux/perf_event.h>

#include <algorithm>

namespace raplbench {
namespace {

// The worst verdict of `events` on `cpu` (none for a stand-in).
RowVerdict verdict_on(const EnergyCounters& counters, const std::vector<PerfEventSpec>& events,
                      int cpu) {
  std::vector<std::string> names;
  for (const PerfEventSpec& e : events) names.push_back(perf_counter_name(e.name, cpu));
  return worst_of(counters.verdicts, names);
}

}  // namespace

std::vector<int> counter_cpus(const std::vector<PerfEventSpec>& events,
                              const std::vector<int>& usable) {
  if (events.empty() || events.front().cpus.empty()) return {};
  const std::vector<int>& cpus = events.front().cpus;
  if (events.front().cpumask) return cpus;
  for (int cpu : cpus)
    if (std::find(usable.begin(), usable.end(), cpu) != usable.end()) return {cpu};
  return {cpus.front()};
}

std::vector<Placement> package_placements(int target, const std::vector<int>& usable,
                                          const std::string& cpu_root) {
  std::vector<int> same_package;
  if (std::optional<int> package = cpu_package(target, cpu_root))
    for (int cpu : usable)
      if (cpu == target || cpu_package(cpu, cpu_root) == package) same_package.push_back(cpu);
  std::vector<Placement> in_package = placements(target, same_package);
  return in_package.size() > 1 ? in_package : placements(target, usable);
}

namespace {

// Each counter CPU with its placements, worked out once for every op.
std::vector<std::pair<int, std::vector<Placement>>> targets_and_placements(
    const EnergyCounters& counters, const std::vector<int>& usable,
    const std::string& cpu_root) {
  std::vector<std::pair<int, std::vector<Placement>>> out;
  for (int target : counter_cpus(counters.events, usable))
    out.emplace_back(target, package_placements(target, usable, cpu_root));
  return out;
}

}  // namespace

std::vector<PlannedRow> plan_perf_rows(const EnergyCounters& counters,
                                       const std::vector<int>& usable,
                                       const std::string& cpu_root) {
  if (counters.events.empty()) return {};
  struct Op {
    const char* name;
    std::vector<PerfEventSpec> events;
    uint64_t read_format;
  };
  const std::vector<Op> ops = {{"read", {counters.events.front()}, 0},
                               {"group-read", counters.events, PERF_FORMAT_GROUP}};
  const auto targets = targets_and_placements(counters, usable, cpu_root);
  std::vector<PlannedRow> rows;
  for (const Op& op : ops) {
    const std::string label = events_label(op.events);
    for (const auto& [target, target_placements] : targets) {
      const RowVerdict verdict = verdict_on(counters, op.events, target);
      for (const Placement& p : target_placements) {
        PlannedRow row;
        row.bench = "perf/" + std::string(op.name) + "/" + label + "/" + p.label();
        row.meta = RowMeta{"perf", op.name, label, p.cpu, p.target_cpu, counters.stand_in};
        row.meta.set_liveness(verdict);
        row.events = op.events;
        row.read_format = op.read_format;
        rows.push_back(row);
      }
    }
  }
  return rows;
}

std::vector<PlannedRow> plan_ebpf_rows(const EnergyCounters& counters,
                                       const std::vector<int>& usable,
                                       const std::string& cpu_root) {
  const std::string label = events_label(counters.events);
  std::vector<PlannedRow> rows;
  for (const auto& [target, target_placements] :
       targets_and_placements(counters, usable, cpu_root)) {
    const RowVerdict verdict = verdict_on(counters, counters.events, target);
    for (const Placement& p : target_placements) {
      for (const auto& [path, op] : {std::pair<const char*, const char*>{"ebpf-lookup", "lookup"},
                                     {"ebpf-mmap", "load"}}) {
        PlannedRow row;
        row.bench = std::string(path) + "/" + op + "/" + label + "/" + p.label();
        row.meta = RowMeta{path, op, label, p.cpu, p.target_cpu, counters.stand_in};
        row.meta.set_liveness(verdict);
        row.events = counters.events;
        rows.push_back(row);
      }
    }
  }
  return rows;
}

}  // namespace raplbench

// perf_events.h - discovery of perf PMU events from sysfs (the RAPL `power`
// PMU and the `msr` PMU used as its stand-in) and opening them.
//
// Layout, for PMU P under pmu_root() (/sys/bus/event_source/devices):
//   P/type                 the perf_event_attr.type of the PMU
//   P/cpumask              CPUs to open its events on (one per package for RAPL)
//   P/format/<term>        where a term goes in the config, e.g. "config:0-7"
//   P/events/<name>        the event's terms, e.g. "event=0x02"
//   P/events/<name>.scale  multiply a count by this to get <name>.unit
//   P/events/<name>.unit   e.g. "Joules"
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "liveness.h"
#include "roots.h"

namespace raplbench {

struct PerfEventSpec {
  std::string name;       // "power/energy-pkg/"
  uint32_t type = 0;
  uint64_t config = 0;
  double scale = 1.0;     // count * scale is in `unit`; 1.0 without a .scale file, NaN if unparsable
  std::string unit;       // "Joules", or empty
  std::vector<int> cpus;  // the PMU's cpumask, else every online CPU
  bool cpumask = false;   // `cpus` is the PMU's cpumask (RAPL: one CPU per package)
};

struct PmuEvents {
  std::vector<PerfEventSpec> events;
  std::string missing;  // why there are none (empty when events were found)
};

// Events of PMU `pmu` whose names start with `prefix` ("" for all), sorted by
// name. Malformed sysfs files leave the event out and say why in `missing`
// when nothing is left.
PmuEvents discover_pmu_events(const std::string& pmu, const std::string& prefix,
                              const std::string& root = pmu_root());

// Encodes event terms ("event=0x02,umask=0x1") into a config value using the
// PMU's format directory. nullopt if a term is unknown or not in `config`.
std::optional<uint64_t> encode_config(const std::string& terms, const std::string& format_dir);

// The events' common label: "msr/tsc/" or "power/{energy-pkg,energy-ram}/".
std::string events_label(const std::vector<PerfEventSpec>& events);

// perf_event_open for counting `spec` on `cpu` (all tasks), in group
// `group_fd` (-1: new group) with `read_format`. Returns the fd, or -1 and
// *err = errno.
int open_counter(const PerfEventSpec& spec, int cpu, int group_fd, uint64_t read_format, int* err);

// Why `spec` is not an energy counter ("unit 'Watts', scale 1: not an
// energy counter"), or an empty string: its unit must be Joules and its
// scale a finite number > 0.
std::string perf_unit_problem(const PerfEventSpec& spec);

// "power/energy-pkg/ on CPU 0": how a verdict names an event on one CPU.
std::string perf_counter_name(const std::string& event, int cpu);

// The liveness of every event on every CPU of its `cpus` (one counter per
// package and domain), in the order: for each event, for each of its CPUs.
// `read` fills the values in that order. Events with an implausible unit
// are no-unit without being probed. nullopt and *error on a read error.
std::optional<std::vector<CounterVerdict>> judge_perf_events(
    const std::vector<PerfEventSpec>& events, const CounterSetRead& read, std::string* error,
    std::chrono::nanoseconds window = kLivenessWindow);

// The energy counters a perf-based path reads: the RAPL `power` PMU's
// energy-* events (energy-pkg first), or, where the machine has none, the
// `msr` PMU's msr/tsc/ event as a labeled stand-in; only events that open
// (RAPL: on every CPU of the cpumask) are kept.
struct EnergyCounters {
  std::vector<PerfEventSpec> events;
  std::string stand_in;     // empty for real RAPL events
  std::string unavailable;  // non-empty: nothing can be read, and why
  std::vector<CounterVerdict> verdicts;  // RAPL events: one per (event, cpumask CPU)
};
EnergyCounters energy_counters(const std::string& root = pmu_root());

// Why opening `name` failed, in words a person can act on.
std::string perf_open_error_reason(int err, const std::string& name);

}  // namespace raplbench

// perf_rows.h - the rows of the perf-event-based paths (perf, ebpf-lookup,
// ebpf-mmap) for every package, planned from the discovered counters
// without opening anything, so that a fixture of another machine (two
// packages, a PMU type that does not exist here) can be planned in a test.
//
// A RAPL `power` PMU's cpumask names one CPU per package: the counters of
// each package are read at the placements of its cpumask CPU C (C itself,
// and another CPU). RAPL events are package-scoped and read locally from any
// CPU of the package, so the other CPU is one of the same package where
// there is one. A PMU without a cpumask (the msr/tsc/ stand-in: CPU-bound
// events) is read at the placements of its first usable CPU only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cpu.h"
#include "manifest.h"
#include "perf_events.h"

namespace raplbench {

struct PlannedRow {
  std::string bench;                  // the benchmark's name
  RowMeta meta;                       // path, op, target, cpu, target_cpu, stand_in, liveness
  std::vector<PerfEventSpec> events;  // what one read returns
  uint64_t read_format = 0;           // perf_event read_format (the perf path)
};

// The CPUs whose counters are read: every CPU of the cpumask, or, for a PMU
// without one, its first CPU that is `usable` (else its first CPU).
std::vector<int> counter_cpus(const std::vector<PerfEventSpec>& events,
                              const std::vector<int>& usable);

// Same CPU and another usable CPU, of the same package as `target`
// (topology under `cpu_root`) where there is one. A target outside the
// affinity mask keeps its same-CPU row: pinning reports why it cannot run.
std::vector<Placement> package_placements(int target, const std::vector<int>& usable,
                                          const std::string& cpu_root);

// perf rows: op "read" (the first event) and "group-read" (all events in one
// PERF_FORMAT_GROUP read), for every counter CPU and placement; each row has
// the worst verdict of the events it reads on its target CPU.
std::vector<PlannedRow> plan_perf_rows(const EnergyCounters& counters,
                                       const std::vector<int>& usable,
                                       const std::string& cpu_root = raplbench::cpu_root());

// ebpf rows: ebpf-lookup/lookup and ebpf-mmap/load of the slot of every
// counter CPU, at its placements; the slot holds every event, so each row
// has the worst verdict of all of them on that CPU.
std::vector<PlannedRow> plan_ebpf_rows(const EnergyCounters& counters,
                                       const std::vector<int>& usable,
                                       const std::string& cpu_root = raplbench::cpu_root());

}  // namespace raplbench

// cpu.h - which CPUs exist, pinning the calling thread, the CPU vendor, and
// the TSC frequency. Shared by every access-path benchmark.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "roots.h"

namespace raplbench {

// Online CPUs, ascending (from <cpu_root()>/online, i.e.
// /sys/devices/system/cpu/online, else the affinity mask of this process).
std::vector<int> online_cpus();

// The online CPUs this process may run on (its sched_getaffinity mask, which
// a cpuset, taskset or container narrows): the CPUs a benchmark can pin to.
std::vector<int> usable_cpus();

// CPU numbers from this one up are no CPU (far above any kernel's NR_CPUS;
// x86's MAXSMP is 8192): rbench's CPU_LIMIT.
constexpr long kCpuLimit = 1 << 16;

// Parses a kernel CPU list such as "0-3,8,10-11". Parts that are not
// numbers or reach kCpuLimit are skipped (a malformed "0-4294967295" must
// not list four billion CPUs), as is every part that would make the list
// longer than kCpuLimit; the same rules as rbench's parse_cpu_list.
std::vector<int> parse_cpu_list(const std::string& list);

// Pins the calling thread to `cpu`; returns an empty string on success,
// otherwise a reason a person can act on.
std::string pin_to_cpu(int cpu);

// The "other CPU" of a same-CPU/other-CPU pair: the highest-numbered CPU of
// `cpus` (e.g. usable_cpus()) that is not `target`, or nullopt.
std::optional<int> other_cpu(int target, const std::vector<int>& cpus);

// Where a benchmark thread runs relative to the CPU whose counter it reads.
struct Placement {
  int cpu;                        // the benchmark thread's CPU
  std::optional<int> target_cpu;  // the counter's CPU; nullopt if not per-CPU
  std::string label() const;      // "0->0", "1->0", "0"
};

// Same CPU (target->target) and, when there is one, another CPU
// (other_cpu(target)->target). A counter that belongs to no CPU is read from
// the first usable CPU only. `cpus` defaults to usable_cpus().
std::vector<Placement> placements(std::optional<int> target_cpu, const std::vector<int>& cpus);
std::vector<Placement> placements(std::optional<int> target_cpu);

// Physical package of `cpu` from
// <cpu_root>/cpu<N>/topology/physical_package_id.
std::optional<int> cpu_package(int cpu, const std::string& cpu_root = raplbench::cpu_root());

// Lowest-numbered online CPU of physical package `package` (the CPU through
// which the RAPL driver reads that package's MSRs), or nullopt.
std::optional<int> package_lead_cpu(int package);

enum class CpuVendor { Intel, Amd, Other };
CpuVendor cpu_vendor();  // from cpuid leaf 0
const char* vendor_name(CpuVendor v);

// TSC frequency in kHz, measured against CLOCK_MONOTONIC_RAW over ~20 ms.
uint64_t measure_tsc_khz();

// strerror as std::string.
std::string errno_text(int err);

}  // namespace raplbench

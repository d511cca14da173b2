// cpu.h - the CPUs this process may run on, pinning the calling thread, and
// the TSC frequency. Which CPUs a row reads and runs on is the plan's
// (plan.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace raplbench {

// The CPUs this process may run on (its sched_getaffinity mask, which the
// kernel gives within the active CPUs, and a cpuset, taskset or container
// narrows), ascending.
std::vector<int> usable_cpus();

// Pins the calling thread to `cpu`; returns an empty string on success,
// otherwise a reason a person can act on.
std::string pin_to_cpu(int cpu);

// TSC frequency in kHz, measured against CLOCK_MONOTONIC_RAW over ~20 ms.
uint64_t measure_tsc_khz();

}  // namespace raplbench

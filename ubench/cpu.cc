// cpu.cc - see cpu.h.
#include "cpu.h"

#include <sched.h>
#include <x86intrin.h>

#include <cstring>
#include <ctime>

namespace raplbench {

std::vector<int> usable_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

std::string pin_to_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof(set), &set) != 0)
    return "cannot pin to CPU " + std::to_string(cpu) + ": " + std::strerror(errno) +
           " (is it online and in this process's cpuset?)";
  return "";
}

static uint64_t raw_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

uint64_t measure_tsc_khz() {
  unsigned aux;
  uint64_t ns0 = raw_ns(), tsc0 = __rdtscp(&aux);
  timespec pause = {0, 20 * 1000 * 1000};
  nanosleep(&pause, nullptr);
  uint64_t ns1 = raw_ns(), tsc1 = __rdtscp(&aux);
  return (tsc1 - tsc0) * 1000000u / (ns1 - ns0);
}

}  // namespace raplbench

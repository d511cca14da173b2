// cpu.cc - see cpu.h.
#include "cpu.h"

#include "roots.h"

#include <cpuid.h>
#include <sched.h>
#include <x86intrin.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

namespace raplbench {

// A CPU number as the kernel writes it: digits only (surrounding blanks
// allowed), below kCpuLimit; -1 for anything else.
static long parse_cpu_number(const std::string& text) {
  size_t begin = text.find_first_not_of(" \n\t");
  size_t end = text.find_last_not_of(" \n\t");
  if (begin == std::string::npos) return -1;
  long value = 0;
  for (size_t i = begin; i <= end; ++i) {
    if (text[i] < '0' || text[i] > '9') return -1;
    value = value * 10 + (text[i] - '0');
    if (value >= kCpuLimit) return -1;
  }
  return value;
}

std::vector<int> parse_cpu_list(const std::string& list) {
  std::vector<int> cpus;
  std::stringstream ss(list);
  std::string part;
  while (std::getline(ss, part, ',')) {
    size_t dash = part.find('-');
    long lo = parse_cpu_number(part.substr(0, dash));
    long hi = dash == std::string::npos ? lo : parse_cpu_number(part.substr(dash + 1));
    if (lo < 0 || hi < 0 || long(cpus.size()) + (hi - lo) >= kCpuLimit) continue;  // as rbench
    for (long c = lo; c <= hi; ++c) cpus.push_back(int(c));
  }
  return cpus;
}

std::vector<int> online_cpus() {
  std::ifstream f(cpu_root() + "/online");
  std::string line;
  if (f && std::getline(f, line) && !line.empty()) return parse_cpu_list(line);
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

std::vector<int> usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return online_cpus();
  std::vector<int> cpus;
  for (int c : online_cpus())
    if (c < CPU_SETSIZE && CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

std::string pin_to_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof(set), &set) != 0)
    return "cannot pin to CPU " + std::to_string(cpu) + ": " + errno_text(errno) +
           " (is it online and in this process's cpuset?)";
  return "";
}

std::optional<int> other_cpu(int target, const std::vector<int>& cpus) {
  for (auto it = cpus.rbegin(); it != cpus.rend(); ++it)
    if (*it != target) return *it;
  return std::nullopt;
}

std::string Placement::label() const {
  return target_cpu ? std::to_string(cpu) + "->" + std::to_string(*target_cpu)
                    : std::to_string(cpu);
}

std::vector<Placement> placements(std::optional<int> target_cpu) {
  return placements(target_cpu, usable_cpus());
}

std::vector<Placement> placements(std::optional<int> target_cpu, const std::vector<int>& cpus) {
  if (!target_cpu) return {{cpus.empty() ? 0 : cpus.front(), std::nullopt}};
  std::vector<Placement> out = {{*target_cpu, target_cpu}};
  if (auto other = other_cpu(*target_cpu, cpus)) out.push_back({*other, target_cpu});
  return out;
}

std::optional<int> cpu_package(int cpu, const std::string& cpu_root) {
  std::ifstream f(cpu_root + "/cpu" + std::to_string(cpu) + "/topology/physical_package_id");
  int id = -1;
  if (f >> id && id >= 0) return id;
  return std::nullopt;
}

std::optional<int> package_lead_cpu(int package) {
  for (int cpu : online_cpus())
    if (cpu_package(cpu) == package) return cpu;
  return std::nullopt;
}

CpuVendor cpu_vendor() {
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return CpuVendor::Other;
  char vendor[13];
  std::memcpy(vendor, &ebx, 4);
  std::memcpy(vendor + 4, &edx, 4);
  std::memcpy(vendor + 8, &ecx, 4);
  vendor[12] = '\0';
  if (std::strcmp(vendor, "GenuineIntel") == 0) return CpuVendor::Intel;
  // Hygon parts carry AMD's RAPL MSRs.
  if (std::strcmp(vendor, "AuthenticAMD") == 0 || std::strcmp(vendor, "HygonGenuine") == 0)
    return CpuVendor::Amd;
  return CpuVendor::Other;
}

const char* vendor_name(CpuVendor v) {
  switch (v) {
    case CpuVendor::Intel: return "Intel";
    case CpuVendor::Amd: return "AMD";
    default: return "other";
  }
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

std::string errno_text(int err) { return std::strerror(err); }

}  // namespace raplbench

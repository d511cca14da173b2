// perf_events.cc - see perf_events.h.
#include "perf_events.h"

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

namespace raplbench {

std::vector<PerfEventSpec> perf_events_of(const nlohmann::json& events) {
  std::vector<PerfEventSpec> out;
  for (const nlohmann::json& e : events)
    out.push_back({e.at("name"), e.at("type"), e.at("config"), e.at("cpus")});
  return out;
}

int open_counter(const PerfEventSpec& spec, int cpu, int group_fd, uint64_t read_format) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.size = sizeof(attr);
  attr.type = spec.type;
  attr.config = spec.config;
  attr.read_format = read_format;
  // counting, all tasks on `cpu`; no exclude_* bits: the RAPL and msr PMUs
  // reject them (and some wrappers set exclude_kernel by default)
  return int(syscall(SYS_perf_event_open, &attr, -1, cpu, group_fd, PERF_FLAG_FD_CLOEXEC));
}

std::string perf_open_error_reason(int err, const std::string& name) {
  return "perf_event_open(" + name + ") failed: " + std::strerror(err);
}

}  // namespace raplbench

// perf_events.cc - see perf_events.h.
#include "perf_events.h"

#include <dirent.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "cpu.h"
#include "sysfs.h"

namespace raplbench {
namespace {

std::optional<uint64_t> parse_number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  uint64_t v = std::strtoull(s.c_str(), &end, 0);  // 0x.. or decimal
  if (errno != 0 || *end != '\0') return std::nullopt;
  return v;
}

}  // namespace

std::optional<uint64_t> encode_config(const std::string& terms, const std::string& format_dir) {
  uint64_t config = 0;
  std::stringstream ss(terms);
  std::string term;
  while (std::getline(ss, term, ',')) {
    size_t eq = term.find('=');
    std::string key = term.substr(0, eq);
    std::optional<uint64_t> value = eq == std::string::npos ? 1 : parse_number(term.substr(eq + 1));
    std::optional<std::string> format = read_first_line(format_dir + "/" + key);
    if (!value || !format || format->rfind("config:", 0) != 0) return std::nullopt;
    // "config:0-7" or "config:0-7,32-35": the value's bits fill the ranges in order
    uint64_t v = *value;
    std::stringstream ranges(format->substr(7));
    std::string range;
    while (std::getline(ranges, range, ',')) {
      size_t dash = range.find('-');
      int lo = std::stoi(range.substr(0, dash));
      int hi = dash == std::string::npos ? lo : std::stoi(range.substr(dash + 1));
      int width = hi - lo + 1;
      uint64_t mask = width >= 64 ? ~0ull : ((1ull << width) - 1);
      config |= (v & mask) << lo;
      v = width >= 64 ? 0 : v >> width;
    }
  }
  return config;
}

PmuEvents discover_pmu_events(const std::string& pmu, const std::string& prefix,
                              const std::string& root) {
  PmuEvents out;
  const std::string dir = root + "/" + pmu;
  std::optional<uint64_t> type;
  if (auto t = read_first_line(dir + "/type")) type = parse_number(*t);
  if (!type) {
    out.missing = "no '" + pmu + "' PMU (" + dir + "/type missing)";
    return out;
  }
  std::vector<int> cpus;
  if (auto mask = read_first_line(dir + "/cpumask")) cpus = parse_cpu_list(*mask);
  const bool from_cpumask = !cpus.empty();
  if (cpus.empty()) cpus = online_cpus();

  std::vector<std::string> names;
  if (DIR* d = opendir((dir + "/events").c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name[0] == '.' || name.find('.') != std::string::npos) continue;  // .scale, .unit
      if (name.rfind(prefix, 0) == 0) names.push_back(name);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  std::string bad;
  for (const std::string& name : names) {
    std::optional<std::string> terms = read_first_line(dir + "/events/" + name);
    std::optional<uint64_t> config = terms ? encode_config(*terms, dir + "/format") : std::nullopt;
    if (!config) {
      bad += " " + name;
      continue;
    }
    PerfEventSpec spec;
    spec.name = pmu + "/" + name + "/";
    spec.type = uint32_t(*type);
    spec.config = *config;
    if (auto scale = read_first_line(dir + "/events/" + name + ".scale")) {
      char* end = nullptr;
      double v = std::strtod(scale->c_str(), &end);
      spec.scale = end == scale->c_str() ? std::nan("") : v;  // judged by perf_unit_problem
    }
    spec.unit = read_first_line(dir + "/events/" + name + ".unit").value_or("");
    spec.cpus = cpus;
    spec.cpumask = from_cpumask;
    out.events.push_back(spec);
  }
  if (out.events.empty())
    out.missing = "the '" + pmu + "' PMU has no " + (prefix.empty() ? "" : prefix + "* ") +
                  "events" + (bad.empty() ? "" : " (unparsable:" + bad + ")");
  return out;
}

std::string events_label(const std::vector<PerfEventSpec>& events) {
  if (events.empty()) return "";
  if (events.size() == 1) return events[0].name;
  std::string pmu = events[0].name.substr(0, events[0].name.find('/'));
  std::string label = pmu + "/{";
  for (size_t i = 0; i < events.size(); ++i) {
    std::string n = events[i].name.substr(pmu.size() + 1);
    label += (i ? "," : "") + n.substr(0, n.size() - 1);
  }
  return label + "}/";
}

int open_counter(const PerfEventSpec& spec, int cpu, int group_fd, uint64_t read_format, int* err) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.size = sizeof(attr);
  attr.type = spec.type;
  attr.config = spec.config;
  attr.read_format = read_format;
  // counting, all tasks on `cpu`; no exclude_* bits: the RAPL and msr PMUs
  // reject them (and some wrappers set exclude_kernel by default)
  int fd = int(syscall(SYS_perf_event_open, &attr, -1, cpu, group_fd, PERF_FLAG_FD_CLOEXEC));
  if (fd < 0) *err = errno;
  return fd;
}

namespace {

// Moves the event named `first` (if present) to the front.
void put_first(std::vector<PerfEventSpec>* events, const std::string& first) {
  std::stable_partition(events->begin(), events->end(),
                        [&](const PerfEventSpec& e) { return e.name == first; });
}

// 0 if `spec` opens on its first CPU, else the errno.
int try_open(const PerfEventSpec& spec) {
  int err = 0;
  int fd = open_counter(spec, spec.cpus.front(), -1, 0, &err);
  if (fd >= 0) close(fd);
  return fd >= 0 ? 0 : err;
}

// Opens every event on every CPU of its cpumask (the probe's order) and
// judges them; an event that does not open makes the set unavailable.
void judge_rapl_events(EnergyCounters* out) {
  std::vector<int> fds;
  for (const PerfEventSpec& e : out->events) {
    for (int cpu : e.cpus) {
      int err = 0;
      int fd = open_counter(e, cpu, -1, 0, &err);
      if (fd < 0) {
        out->unavailable = perf_open_error_reason(err, perf_counter_name(e.name, cpu));
        break;
      }
      fds.push_back(fd);
    }
    if (!out->unavailable.empty()) break;
  }
  if (out->unavailable.empty()) {
    CounterSetRead read = [&](std::vector<uint64_t>* values) -> std::string {
      for (size_t i = 0; i < fds.size(); ++i)
        if (::read(fds[i], &(*values)[i], sizeof(uint64_t)) != ssize_t(sizeof(uint64_t)))
          return "read() of a perf counter failed: " + errno_text(errno);
      return "";
    };
    // a failed probe read leaves no verdict: the benchmarks report the error
    std::string probe_error;
    out->verdicts = judge_perf_events(out->events, read, &probe_error)
                        .value_or(std::vector<CounterVerdict>{});
  }
  for (int fd : fds) close(fd);
  if (!out->unavailable.empty()) out->events.clear();
}

}  // namespace

std::string perf_unit_problem(const PerfEventSpec& spec) {
  if (spec.unit == "Joules" && std::isfinite(spec.scale) && spec.scale > 0) return "";
  char scale[32];
  std::snprintf(scale, sizeof(scale), "%g", spec.scale);
  return "unit '" + spec.unit + "', scale " + scale + ": not an energy counter";
}

std::string perf_counter_name(const std::string& event, int cpu) {
  return event + " on CPU " + std::to_string(cpu);
}

std::optional<std::vector<CounterVerdict>> judge_perf_events(
    const std::vector<PerfEventSpec>& events, const CounterSetRead& read, std::string* error,
    std::chrono::nanoseconds window) {
  std::vector<std::string> names, unit_problems;
  for (const PerfEventSpec& e : events)
    for (int cpu : e.cpus) {
      names.push_back(perf_counter_name(e.name, cpu));
      unit_problems.push_back(perf_unit_problem(e));
    }
  return judge_counters(names, unit_problems, read, error, window);
}

EnergyCounters energy_counters(const std::string& root) {
  EnergyCounters out;
  PmuEvents rapl = discover_pmu_events("power", "energy-", root);
  if (!rapl.events.empty()) {
    put_first(&rapl.events, "power/energy-pkg/");
    out.events = rapl.events;
    judge_rapl_events(&out);
    return out;
  }
  // msr/tsc/ only: it reads the TSC, which does not trap on a VM, where the
  // other msr events (smi, aperf, ...) would add a trapping rdmsr per read
  const std::string no_rapl = rapl.missing + ": no RAPL energy events on this machine";
  PmuEvents msr = discover_pmu_events("msr", "tsc", root);
  std::string msr_why = msr.missing;
  for (const PerfEventSpec& e : msr.events) {
    if (int err = try_open(e))
      msr_why = perf_open_error_reason(err, e.name);
    else
      out.events.push_back(e);
  }
  if (out.events.empty()) {
    out.unavailable = no_rapl + "; stand-in msr PMU unusable: " + msr_why;
    return out;
  }
  out.stand_in = no_rapl + ": measured msr PMU events (" + events_label(out.events) +
                 ") through the same perf_event read route";
  return out;
}

std::string perf_open_error_reason(int err, const std::string& name) {
  if (err == EACCES || err == EPERM) {
    std::string paranoid = read_first_line("/proc/sys/kernel/perf_event_paranoid").value_or("?");
    return "perf_event_open(" + name + ") denied: perf_event_paranoid=" + paranoid +
           " and no CAP_PERFMON: run as root or set kernel.perf_event_paranoid=0";
  }
  if (err == ENOENT || err == EINVAL || err == EOPNOTSUPP)
    return "perf_event_open(" + name + ") failed: " + errno_text(err) +
           ": the event is not supported by this CPU or kernel";
  return "perf_event_open(" + name + ") failed: " + errno_text(err);
}

}  // namespace raplbench

// perf.cc - path "perf": read() of perf_event counters of the RAPL `power`
// PMU (stand-in: the `msr` PMU), as the plan (rbench/src/paths/perf.rs)
// names them.
//
//   op "read":       one event (energy-pkg), read_format 0: 8 bytes;
//   op "group-read": all energy events in one group, PERF_FORMAT_GROUP: one
//                    read() returns every domain.
//
// The events count on each package's designated CPU (the PMU's cpumask),
// and every package is read: from that CPU and from another one (RAPL
// events are package-scoped, so a CPU of the same package reads them
// without an IPI; the CPU-bound msr/tsc/ stand-in needs one).
#include <linux/perf_event.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "register.h"
#include "paths/paths.h"
#include "perf_events.h"
#include "timed.h"

namespace raplbench {
namespace {

// Opens `events` on `cpu` as one group (leader first); closes and returns
// false with *why on failure.
bool open_group(const std::vector<PerfEventSpec>& events, int cpu, uint64_t read_format,
                std::vector<int>* fds, std::string* why) {
  for (const PerfEventSpec& e : events) {
    int fd = open_counter(e, cpu, fds->empty() ? -1 : fds->front(), read_format);
    if (fd < 0) {
      *why = perf_open_error_reason(errno, e.name);  // before the closes below
      for (int f : *fds) close(f);
      fds->clear();
      return false;
    }
    fds->push_back(fd);
  }
  return true;
}

void bench_read(benchmark::State& state, const std::vector<PerfEventSpec>& events, int cpu,
                uint64_t read_format, const std::string& label) {
  std::vector<int> fds;
  std::string why;
  if (!open_group(events, cpu, read_format, &fds, &why)) return skip_unavailable(state, why);
  // PERF_FORMAT_GROUP: {nr, value[nr]}; otherwise one value
  std::vector<uint64_t> buf(read_format & PERF_FORMAT_GROUP ? 1 + events.size() : 1);
  const size_t bytes = buf.size() * sizeof(uint64_t);
  warm_up_before(state, [&] { return read(fds.front(), buf.data(), bytes) == ssize_t(bytes); });
  for (auto _ : state) {
    if (read(fds.front(), buf.data(), bytes) != ssize_t(bytes)) {
      state.SkipWithError(("read() of " + label + " failed: " +
                           std::strerror(errno)).c_str());
      break;
    }
    benchmark::DoNotOptimize(buf.data());
  }
  for (int fd : fds) close(fd);
}

}  // namespace

void add_perf_row(const nlohmann::json& row) {
  const std::vector<PerfEventSpec> events = perf_events_of(row["open"]["perf"]);
  const int cpu = row["open"]["cpu"];
  const uint64_t read_format = row["open"].value("group", false) ? PERF_FORMAT_GROUP : 0;
  const std::string label = row.value("target", nlohmann::json()).is_string()
                                ? row["target"].get<std::string>() : "";
  if (events.empty()) return add_unavailable(row, "the plan names no perf event");
  add_benchmark(row, [events, cpu, read_format, label](benchmark::State& s) {
    bench_read(s, events, cpu, read_format, label);
  });
}

}  // namespace raplbench

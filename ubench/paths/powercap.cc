// powercap.cc - path "powercap": one read of a zone's energy_uj, the way
// energy tools read RAPL through the powercap framework.
//
//   op "pread":           the file is kept open; each read is pread(fd, 0)
//                         plus parsing the decimal text (one value out);
//   op "open-read-close": open, read, close and parse, as most tools do.
//
// Reading energy_uj of an MSR-backed zone makes the driver read the MSR on
// the package's lead CPU (an IPI when the reader runs elsewhere), so each
// zone is read from that CPU and from another one. Where this machine has no
// powercap zone, a live sysfs counter (/sys/class/net/lo/statistics/rx_bytes)
// is read through the same kernfs route as a labeled stand-in.
#include "paths/powercap.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "cpu.h"
#include "manifest.h"
#include "powercap_zones.h"
#include "register.h"
#include "roots.h"
#include "timed.h"

namespace raplbench {

std::string powercap_no_zone_reason(const std::string& root) {
  return "no powercap zone under " + root +
         " (no RAPL here, or the intel_rapl_msr driver is not loaded: modprobe intel_rapl_msr)";
}

std::string powercap_stand_in_text(const std::string& root) {
  return powercap_no_zone_reason(root) + ": measured the live sysfs counter " +
         kPowercapStandInFile +
         " through the same kernfs read route (without the MSR read and IPI that energy_uj "
         "costs)";
}

std::string powercap_stand_in_unreadable(const std::string& root, const std::string& why) {
  return powercap_no_zone_reason(root) + "; stand-in " + kPowercapStandInFile +
         " unreadable too: " + why;
}

namespace {

void bench_pread(benchmark::State& state, const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return skip_unavailable(state, path + ": " + errno_text(errno));
  uint64_t value = 0;
  warm_up([&] { return read_energy_uj(fd, path, &value).empty(); });
  for (auto _ : state) {
    std::string err = read_energy_uj(fd, path, &value);
    if (!err.empty()) {
      state.SkipWithError(err.c_str());
      break;
    }
    benchmark::DoNotOptimize(value);
  }
  close(fd);
}

void bench_open_read_close(benchmark::State& state, const std::string& path) {
  uint64_t value = 0;
  warm_up([&] {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const bool ok = read_energy_uj(fd, path, &value).empty();
    close(fd);
    return ok;
  });
  for (auto _ : state) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      skip_unavailable(state, path + ": " + errno_text(errno));
      break;
    }
    std::string err = read_energy_uj(fd, path, &value);
    close(fd);
    if (!err.empty()) {
      state.SkipWithError(err.c_str());
      break;
    }
    benchmark::DoNotOptimize(value);
  }
}

// `why`: powercap_unreadable_reason(path), worked out once by the caller.
void register_file(const std::string& path, const std::string& target,
                   std::optional<int> target_cpu, const std::string& stand_in,
                   const std::string& why, const RowVerdict& verdict = {}) {
  for (const Placement& p : placements(target_cpu)) {
    for (const char* op : {"pread", "open-read-close"}) {
      RowMeta meta{"powercap", op, target, p.cpu, p.target_cpu, stand_in};
      meta.set_liveness(verdict);
      if (!why.empty()) {
        add_unavailable(meta, why);
        continue;
      }
      std::string name = "powercap/" + std::string(op) + "/" + target + "/" + p.label();
      if (std::string(op) == "pread")
        add_benchmark(name, meta, [path](benchmark::State& s) { bench_pread(s, path); });
      else
        add_benchmark(name, meta,
                      [path](benchmark::State& s) { bench_open_read_close(s, path); });
    }
  }
}

void register_powercap(PathContext&) {
  const std::string root = powercap_root();
  std::vector<PowercapZone> zones = discover_powercap_zones(root);

  // the zones this process can read are probed together; the others get
  // unavailable rows (and a zone whose probe read fails keeps no verdict:
  // its benchmark reports the same read error)
  std::vector<PowercapZone> readable;
  std::vector<std::string> why_unreadable;
  for (const PowercapZone& z : zones) {
    why_unreadable.push_back(powercap_unreadable_reason(z.energy_path));
    if (why_unreadable.back().empty()) readable.push_back(z);
  }
  std::string probe_error;
  std::vector<CounterVerdict> verdicts =
      judge_powercap_zones(readable, &probe_error).value_or(std::vector<CounterVerdict>{});
  for (size_t i = 0; i < zones.size(); ++i) {
    const PowercapZone& z = zones[i];
    std::optional<int> target_cpu;
    if (z.package && !z.mmio) target_cpu = package_lead_cpu(*z.package);
    register_file(z.energy_path, z.id + "/energy_uj", target_cpu, "", why_unreadable[i],
                  worst_of(verdicts, {powercap_counter_name(z)}));
  }
  if (!zones.empty()) return;

  const std::string stand_in_unreadable = powercap_unreadable_reason(kPowercapStandInFile);
  if (!stand_in_unreadable.empty()) {
    for (const char* op : {"pread", "open-read-close"})
      add_unavailable(RowMeta{"powercap", op, "energy_uj", std::nullopt, std::nullopt, ""},
                      powercap_stand_in_unreadable(root, stand_in_unreadable));
    return;
  }
  register_file(kPowercapStandInFile, kPowercapStandInFile, std::nullopt,
                powercap_stand_in_text(root), "");
}

}  // namespace

RAPLBENCH_PATH(200, register_powercap);

}  // namespace raplbench

// msr_dev.cc - path "msr-dev": one 8-byte pread of a RAPL energy MSR from
// /dev/cpu/N/msr, from CPU N itself and from another CPU (the driver then
// reads the MSR on CPU N through an IPI).
//
// Where /dev/cpu/N/msr is missing, the stand-in is /dev/cpu/N/cpuid: the same
// per-CPU character device route (open per CPU, pread at an offset, the
// instruction run on CPU N via smp_call_function_single) with cpuid leaf 0
// in place of rdmsr.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "cpu.h"
#include "manifest.h"
#include "msr_device.h"
#include "register.h"
#include "timed.h"

namespace raplbench {
namespace {

void bench_msr(benchmark::State& state, const std::string& path, uint32_t addr) {
  int err = 0;
  std::optional<MsrDevice> dev = MsrDevice::open(path, &err);
  if (!dev) return skip_unavailable(state, msr_error_reason(err, path, addr));
  uint64_t value = 0;
  warm_up([&] { return dev->read(addr, &value) == 0; });
  for (auto _ : state) {
    if ((err = dev->read(addr, &value)) != 0) {
      state.SkipWithError(msr_error_reason(err, path, addr).c_str());
      break;
    }
    benchmark::DoNotOptimize(value);
  }
}

// The stand-in: pread of the 16-byte cpuid record of leaf 0.
void bench_cpuid_dev(benchmark::State& state, const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return skip_unavailable(state, path + ": " + errno_text(errno));
  uint32_t regs[4];
  warm_up([&] { return pread(fd, regs, sizeof(regs), 0) == ssize_t(sizeof(regs)); });
  for (auto _ : state) {
    if (pread(fd, regs, sizeof(regs), 0) != ssize_t(sizeof(regs))) {
      state.SkipWithError((path + ": read failed: " + errno_text(errno)).c_str());
      break;
    }
    benchmark::DoNotOptimize(regs);
  }
  close(fd);
}

void register_msr_dev(PathContext&) {
  std::vector<int> cpus = usable_cpus();
  const int target = cpus.empty() ? 0 : cpus.front();
  const std::string path = msr_device_path(target);
  const std::vector<RaplMsr> msrs = rapl_energy_msrs(cpu_vendor());

  int err = 0;
  std::optional<MsrDevice> dev = MsrDevice::open(path, &err);
  const bool have_device = dev.has_value();
  if (have_device && msrs.empty()) {
    for (const Placement& p : placements(target))
      add_unavailable(RowMeta{"msr-dev", "pread", "", p.cpu, p.target_cpu, ""},
                      std::string("no known RAPL MSRs for this CPU vendor (") +
                          vendor_name(cpu_vendor()) + ")");
    return;
  }
  if (have_device) {
    // probe each MSR once: one that faults gets an unavailable row, not a
    // benchmark; the readable ones are judged together
    std::vector<RaplMsr> readable;
    std::vector<int> read_errs;
    for (const RaplMsr& msr : msrs) {
      uint64_t value;
      read_errs.push_back(dev->read(msr.addr, &value));
      if (read_errs.back() == 0) readable.push_back(msr);
    }
    std::string probe_error;  // a failing probe read leaves no verdict; the benchmark reports it
    std::vector<CounterVerdict> verdicts;
    if (std::optional<RaplMsr> unit = rapl_unit_msr(cpu_vendor()))
      verdicts = judge_msrs(*dev, target, readable, *unit, &probe_error)
                     .value_or(std::vector<CounterVerdict>{});
    for (size_t i = 0; i < msrs.size(); ++i) {
      const uint32_t addr = msrs[i].addr;
      const RowVerdict verdict = worst_of(verdicts, {msr_counter_name(addr, target)});
      for (const Placement& p : placements(target)) {
        RowMeta meta{"msr-dev", "pread", msr_hex(addr), p.cpu, p.target_cpu, ""};
        if (read_errs[i]) {
          add_unavailable(meta, msr_error_reason(read_errs[i], path, addr));
          continue;
        }
        meta.set_liveness(verdict);
        add_benchmark("msr-dev/pread/" + msr_hex(addr) + "/" + p.label(), meta,
                      [path, addr](benchmark::State& s) { bench_msr(s, path, addr); });
      }
    }
    return;
  }

  const std::string missing = msr_error_reason(err, path, 0);
  const std::string cpuid_path = cpuid_device_path(target);
  const std::string cpuid_unusable = cpuid_unusable_reason(cpuid_path);
  for (const Placement& p : placements(target)) {
    RowMeta meta{"msr-dev", "pread", "cpuid:0x0", p.cpu, p.target_cpu, ""};
    if (!cpuid_unusable.empty()) {
      meta.target = "";
      add_unavailable(meta, missing + "; stand-in " + cpuid_unusable);
      continue;
    }
    meta.stand_in = missing + ": measured " + cpuid_path +
                    " (pread of leaf 0), the same per-CPU character device and IPI route";
    add_benchmark("msr-dev/pread/cpuid:0x0/" + p.label(), meta,
                  [cpuid_path](benchmark::State& s) { bench_cpuid_dev(s, cpuid_path); });
  }
}

}  // namespace

RAPLBENCH_PATH(300, register_msr_dev);

}  // namespace raplbench

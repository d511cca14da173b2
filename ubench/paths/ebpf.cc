// ebpf.cc - paths "ebpf-lookup" and "ebpf-mmap": polling the counters that
// bpf/counters.bpf.c samples in the kernel at 1 kHz on every CPU.
//
//   ebpf-lookup, op "lookup": one bpf(BPF_MAP_LOOKUP_ELEM) syscall copying a
//                             CPU's slot;
//   ebpf-mmap,   op "load":   a plain load of the slot from the mmapped
//                             BPF_F_MMAPABLE array, with the seqlock check.
//
// The program's achieved firing rate on each CPU is reported too (path
// ebpf-mmap, op "tick", metric rate_hz), measured over 100 ms windows from
// the slots' tick counts: the VM this was written on delays timers, so the
// rate is measured, never assumed.
//
// Every package's slot is read (the slot of each CPU of the PMU's cpumask,
// see perf_rows.h), and each is checked before it is timed: a slot whose
// program reports an error, or whose tick count does not advance, holds no
// data, so its rows are unavailable with the count and the reason
// (bpf_slot_check.h); an error that appears during the timing fails the row.
#include <time.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "cpu.h"
#include "manifest.h"
#include "perf_events.h"
#include "perf_rows.h"
#include "register.h"
#include "timed.h"

#ifdef RAPLBENCH_HAVE_BPF
#include "bpf_sampler.h"
#include "bpf_slot_check.h"
#endif

namespace raplbench {
namespace {

constexpr uint64_t kPeriodNs = 1000000;  // 1 kHz
constexpr int kRateWindowMs = 100;

void add_all_unavailable(const std::string& target, const std::string& stand_in,
                         const std::string& reason) {
  add_unavailable(RowMeta{"ebpf-lookup", "lookup", target, std::nullopt, std::nullopt, stand_in},
                  reason);
  add_unavailable(RowMeta{"ebpf-mmap", "load", target, std::nullopt, std::nullopt, stand_in},
                  reason);
  RowMeta rate{"ebpf-mmap", "tick", "", std::nullopt, std::nullopt, stand_in, "rate_hz", "Hz"};
  add_unavailable(rate, reason);
}

#ifdef RAPLBENCH_HAVE_BPF

// Lives as long as the process: the benchmarks read what it publishes.
std::unique_ptr<BpfSampler>& sampler() {
  static std::unique_ptr<BpfSampler> s;
  return s;
}

// The slot's count of failed reads before the timing (0 if unsettled).
uint64_t failed_ticks(int target_cpu) {
  rb_slot slot{};
  return sampler()->load_slot(target_cpu, &slot) ? slot.err_ticks : 0;
}

// A slot that turned bad while it was timed is not data either: any read
// that failed since `failed_before` (err_ticks counts every one, not only
// the last) fails the row.
void fail_if_slot_error(benchmark::State& state, int target_cpu, uint64_t failed_before,
                        const rb_slot& last) {
  const uint64_t failed = last.err_ticks - failed_before;
  if (failed > 0)
    state.SkipWithError(("BPF slot of CPU " + std::to_string(target_cpu) + ": " +
                         std::to_string(failed) + " failed reads during the timing (last " +
                         slot_error_text(last.err) + "): not data").c_str());
}

void bench_lookup(benchmark::State& state, int target_cpu) {
  const uint64_t failed_before = failed_ticks(target_cpu);
  const BpfSampler& bpf = *sampler();
  rb_slot slot{};
  warm_up([&] { return bpf.lookup_slot(target_cpu, &slot) == 0; });
  for (auto _ : state) {
    if (int err = bpf.lookup_slot(target_cpu, &slot)) {
      state.SkipWithError(("bpf map lookup failed: " + errno_text(err)).c_str());
      return;
    }
    benchmark::DoNotOptimize(slot);
  }
  fail_if_slot_error(state, target_cpu, failed_before, slot);
}

void bench_load(benchmark::State& state, int target_cpu) {
  const uint64_t failed_before = failed_ticks(target_cpu);
  const rb_slot* const found = sampler()->slot(target_cpu);  // once, as a poller holds it
  if (found == nullptr) {
    state.SkipWithError("the sampler has no slot for this CPU");
    return;
  }
  rb_slot slot{};
  warm_up([&] { return BpfSampler::load_slot(found, &slot); });
  for (auto _ : state) {
    if (!BpfSampler::load_slot(found, &slot)) {
      state.SkipWithError("the mmapped slot never settled (seqlock kept moving)");
      return;
    }
    benchmark::DoNotOptimize(slot);
  }
  fail_if_slot_error(state, target_cpu, failed_before, slot);
}

uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

// One window per iteration; counters rate_hz_cpu<N> = ticks per second.
void bench_rate(benchmark::State& state) {
  const std::vector<int>& cpus = sampler()->cpus();
  std::vector<double> ticks(cpus.size(), 0.0);
  double seconds = 0;
  for (auto _ : state) {
    std::vector<uint64_t> before(cpus.size());
    rb_slot slot;
    for (size_t i = 0; i < cpus.size(); ++i)
      before[i] = sampler()->load_slot(cpus[i], &slot) ? slot.ticks : 0;
    uint64_t t0 = monotonic_ns();
    std::this_thread::sleep_for(std::chrono::milliseconds(kRateWindowMs));
    uint64_t t1 = monotonic_ns();
    for (size_t i = 0; i < cpus.size(); ++i)
      ticks[i] += sampler()->load_slot(cpus[i], &slot) ? double(slot.ticks - before[i]) : 0;
    seconds += double(t1 - t0) * 1e-9;
  }
  for (size_t i = 0; i < cpus.size(); ++i)
    state.counters["rate_hz_cpu" + std::to_string(cpus[i])] = ticks[i] / seconds;
}

#endif

void register_ebpf(PathContext& context) {
  const EnergyCounters& counters = context.energy_counters();
  const std::string label = events_label(counters.events);
  if (counters.events.empty()) return add_all_unavailable(label, "", counters.unavailable);
#ifndef RAPLBENCH_HAVE_BPF
  add_all_unavailable(label, counters.stand_in, RAPLBENCH_BPF_MISSING);
#else
  std::string why;
  sampler() = BpfSampler::start(counters.events, kPeriodNs, &why);
  if (!sampler()) return add_all_unavailable(label, counters.stand_in, why);

  const std::vector<int> usable = usable_cpus();
  const std::vector<int> counter_cpu_list = counter_cpus(counters.events, usable);
  std::map<int, std::string> not_data;  // per counter CPU: why its slot is not data
  for (int cpu : counter_cpu_list) not_data[cpu];  // every entry exists before the checks start
  std::vector<std::thread> checks;      // the slots are watched together, in one window
  for (int cpu : counter_cpu_list) {
    const std::vector<int>& armed = sampler()->cpus();
    if (std::find(armed.begin(), armed.end(), cpu) == armed.end()) {
      not_data[cpu] = "BPF slot of CPU " + std::to_string(cpu) +
                      ": no trigger armed there (outside this process's CPU affinity)";
      continue;
    }
    std::string& why = not_data[cpu];
    checks.emplace_back([cpu, &why] {
      why = check_slot(
          cpu, [cpu](rb_slot* slot) { return sampler()->load_slot(cpu, slot); },
          sampler()->trigger());
    });
  }
  for (std::thread& check : checks) check.join();
  for (const PlannedRow& row : plan_ebpf_rows(counters, usable)) {
    const int t = *row.meta.target_cpu;
    if (!not_data[t].empty()) {
      add_unavailable(row.meta, not_data[t]);
      continue;
    }
    if (row.meta.path == "ebpf-lookup")
      add_benchmark(row.bench, row.meta, [t](benchmark::State& s) { bench_lookup(s, t); });
    else
      add_benchmark(row.bench, row.meta, [t](benchmark::State& s) { bench_load(s, t); });
  }

  std::string rate_bench;
  const std::string trigger = sampler()->trigger() + ", " +
                              std::to_string(1000000000 / kPeriodNs) + " Hz requested";
  bool first = true;
  for (int cpu : sampler()->cpus()) {
    RowMeta meta{"ebpf-mmap", "tick", trigger, std::nullopt, cpu, counters.stand_in,
                 "rate_hz", "Hz"};
    if (first)  // one window per repetition
      rate_bench = add_benchmark("ebpf-mmap/tick/rate", meta, bench_rate,
                                 "counter:rate_hz_cpu" + std::to_string(cpu), 1);
    else
      add_counter_row(rate_bench, "rate_hz_cpu" + std::to_string(cpu), meta);
    first = false;
  }
#endif
}

}  // namespace

RAPLBENCH_PATH(500, register_ebpf);

}  // namespace raplbench

// ebpf.cc - paths "ebpf-lookup" and "ebpf-mmap": polling the counters that
// bpf/counters.bpf.c samples in the kernel at 1 kHz on every CPU.
//
//   ebpf-lookup, op "lookup": one bpf(BPF_MAP_LOOKUP_ELEM) syscall copying a
//                             CPU's slot;
//   ebpf-mmap,   op "load":   a plain load of the slot from the mmapped
//                             BPF_F_MMAPABLE array, with the seqlock check.
//
// The program's achieved firing rate on each CPU is reported too (path
// ebpf-mmap, op "tick", metric rate_hz), measured from the slots' tick counts
// over windows of --raplbench_rate_window (bench-all: rate_window_s of
// results/schedule.json): the VM this was written on delays timers, so the
// rate is measured, never assumed.
//
// The plan (rbench/src/paths/ebpf.rs) names the sampler (its events, CPUs
// and period) and each row's slot; it has checked that each slot it lists
// holds data. ubench runs one sampler for all its rows, on every CPU they
// name, started when the first of them runs (never in a plan-only run); a
// slot whose reads fail, or that does not tick, during the timing fails
// the row.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "register.h"
#include "paths/paths.h"
#include "perf_events.h"
#include "timed.h"

#ifdef RAPLBENCH_HAVE_BPF
#include "bpf_sampler.h"
#endif

namespace raplbench {

#ifndef RAPLBENCH_HAVE_BPF

void add_bpf_row(const nlohmann::json& row) { add_unavailable(row, RAPLBENCH_BPF_MISSING); }

#else

namespace {

// What the sampler runs: the plan's events, every CPU its rows name.
struct SamplerSpec {
  std::vector<PerfEventSpec> events;
  std::set<int> cpus;
  uint64_t period_ns = 0;
};

SamplerSpec sampler_spec;

// The sampler of every row, started at the first call and kept for the
// process; nullptr, `state` skipped as unavailable with why, if it cannot start.
const BpfSampler* sampler(benchmark::State& state) {
  static std::unique_ptr<BpfSampler> running;
  static std::string failed;
  static bool tried = false;
  if (!tried) {
    tried = true;
    const SamplerSpec& spec = sampler_spec;
    BpfOptions options;
    options.cpus.assign(spec.cpus.begin(), spec.cpus.end());
    running = BpfSampler::start(spec.events, spec.period_ns, &failed, options);
    // its first ticks, before any slot is timed (a slot that never ticks
    // fails its row: see fail_if_not_data)
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    for (int cpu : running ? spec.cpus : std::set<int>{}) {
      rb_slot slot{};
      while (std::chrono::steady_clock::now() < until &&
             !(running->load_slot(cpu, &slot) && slot.ticks > 0))
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  if (!running) skip_unavailable(state, failed);
  return running.get();
}

// "err -2 (ENOENT)": a slot's error as the program stores it (a negative errno).
std::string slot_error_text(int err) {
  const char* name = strerrorname_np(err < 0 ? -err : err);
  return "err " + std::to_string(err) + " (" + (name ? name : "?") + ")";
}

// The slot's tick accounting when its timing starts.
struct Before {
  uint64_t ticks = 0, err_ticks = 0;
  std::chrono::steady_clock::time_point at = std::chrono::steady_clock::now();
};

Before before(const BpfSampler& bpf, int cpu) {
  rb_slot slot{};
  Before b;
  if (bpf.load_slot(cpu, &slot)) b = {slot.ticks, slot.err_ticks, b.at};
  return b;
}

// A slot that failed or stopped ticking while it was timed is not data:
// any read that failed since `b` (err_ticks counts every one, not only the
// last) fails the row, and so does a timing of 10 periods or more without
// a tick (rbench judges its rows alike).
void fail_if_not_data(benchmark::State& state, const BpfSampler& bpf, int cpu, const Before& b,
                      const rb_slot& last) {
  const uint64_t failed = last.err_ticks - b.err_ticks;
  const auto elapsed = std::chrono::steady_clock::now() - b.at;
  const std::string slot = "BPF slot of CPU " + std::to_string(cpu);
  if (failed > 0)
    state.SkipWithError((slot + ": " + std::to_string(failed) +
                         " failed reads during the timing (last " + slot_error_text(last.err) +
                         "): not data").c_str());
  else if (last.ticks == b.ticks &&
           elapsed >= std::chrono::nanoseconds(10 * std::max<uint64_t>(bpf.period_ns(), 1)))
    state.SkipWithError((slot + ": no tick during the timing: not data").c_str());
}

void bench_lookup(benchmark::State& state, int cpu) {
  const BpfSampler* bpf = sampler(state);
  if (!bpf) return;
  rb_slot slot{};
  warm_up_before(state, [&] { return bpf->lookup_slot(cpu, &slot) == 0; });
  const Before b = before(*bpf, cpu);
  for (auto _ : state) {
    if (int err = bpf->lookup_slot(cpu, &slot)) {
      state.SkipWithError(("bpf map lookup failed: " + std::string(std::strerror(err))).c_str());
      return;
    }
    benchmark::DoNotOptimize(slot);
  }
  fail_if_not_data(state, *bpf, cpu, b, slot);
}

void bench_load(benchmark::State& state, int cpu) {
  const BpfSampler* bpf = sampler(state);
  if (!bpf) return;
  const rb_slot* const found = bpf->slot(cpu);  // once, as a poller holds it
  if (found == nullptr) {
    state.SkipWithError("the sampler has no slot for this CPU");
    return;
  }
  rb_slot slot{};
  warm_up_before(state, [&] { return BpfSampler::load_slot(found, &slot); });
  const Before b = before(*bpf, cpu);
  for (auto _ : state) {
    if (!BpfSampler::load_slot(found, &slot)) {
      state.SkipWithError("the mmapped slot never settled (seqlock kept moving)");
      return;
    }
    benchmark::DoNotOptimize(slot);
  }
  fail_if_not_data(state, *bpf, cpu, b, slot);
}

// What drives the program, without the details in parentheses:
// "bpf_timer", "perf cpu-clock event".
std::string trigger_kind(const std::string& trigger) {
  return trigger.substr(0, trigger.find(" ("));
}

// One window per iteration; counter rate_hz = CPU `cpu`'s ticks per second.
// `planned`: the trigger the plan's sampler got (the rows' target).
void bench_rate(benchmark::State& state, const std::string& planned, int cpu) {
  const BpfSampler* bpf = sampler(state);
  if (!bpf) return;
  if (trigger_kind(bpf->trigger()) != trigger_kind(planned)) {
    state.SkipWithError(("the sampler runs on " + bpf->trigger() + ", the plan's on " + planned)
                            .c_str());
    return;
  }
  double ticks = 0, seconds = 0;
  for (auto _ : state) {
    rb_slot slot;
    const uint64_t start = bpf->load_slot(cpu, &slot) ? slot.ticks : 0;
    const auto t0 = std::chrono::steady_clock::now();  // CLOCK_MONOTONIC
    std::this_thread::sleep_for(rate_window);
    const auto t1 = std::chrono::steady_clock::now();
    ticks += bpf->load_slot(cpu, &slot) ? double(slot.ticks - start) : 0;
    seconds += std::chrono::duration<double>(t1 - t0).count();
  }
  state.counters["rate_hz"] = ticks / seconds;
}

}  // namespace

void add_bpf_row(const nlohmann::json& row) {
  const nlohmann::json& open = row["open"];
  const nlohmann::json& bpf = open["bpf"];
  SamplerSpec& spec = sampler_spec;
  if (spec.events.empty()) {
    spec.events = perf_events_of(bpf["events"]);
    spec.period_ns = bpf["period_ns"];
  }
  for (int cpu : bpf["cpus"]) spec.cpus.insert(cpu);

  const int cpu = open["cpu"];
  const std::string via = open["via"];
  if (via == "lookup") {
    add_benchmark(row, [cpu](benchmark::State& s) { bench_lookup(s, cpu); });
  } else if (via == "load") {
    add_benchmark(row, [cpu](benchmark::State& s) { bench_load(s, cpu); });
  } else if (via == "tick") {  // one window per repetition
    const std::string planned = row["target"];
    add_benchmark(row, [planned, cpu](benchmark::State& s) { bench_rate(s, planned, cpu); }, 1);
  } else {
    add_unavailable(row, "this ubench cannot read a BPF slot via " + via);
  }
}

#endif

}  // namespace raplbench

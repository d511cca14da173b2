// bpf_sampler.h - loads bpf/counters.bpf.c, points it at a set of perf
// counters, starts it on every online CPU and reads what it publishes.
//
// libbpf-bootstrap style; start()'s steps are numbered in bpf_sampler.cc.
// The perf-event map is filled before any trigger starts, so no tick finds
// an empty entry. Where the kernel has no CPU-pinned timers (or BpfOptions
// asks for it), a per-CPU perf cpu-clock event drives the program instead.
//
// Each descriptor has one owner: the counters' events belong to the sampler
// (the map takes its own reference to each event); a cpu-clock event belongs
// to its bpf_link once attached (bpf_link__destroy closes it), and is closed
// by the sampler only when the attach fails.
#pragma once

#include <x86intrin.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "perf_events.h"

extern "C" {
#include <linux/types.h>

#include "counters.h"
}

struct counters_bpf;
struct bpf_link;

namespace raplbench {

// What may drive the program.
enum class BpfTrigger {
  kAuto,      // the CPU-pinned bpf_timer where the kernel has it (Linux 6.7), else cpu-clock
  kCpuClock,  // the perf cpu-clock fallback even where bpf_timer works (to test or compare it)
};

struct BpfOptions {
  BpfTrigger trigger = BpfTrigger::kAuto;
  std::vector<int> cpus;  // CPUs to sample on (the others get no timer); empty: every online CPU
};

// libbpf's messages since the last BpfSampler::start (which routes them
// here instead of stderr): the last one as " (libbpf: ...)", or "".
std::string libbpf_said();
// Starts keeping libbpf's messages (BpfSampler::start calls it).
void keep_libbpf_messages();
// Feeds one message to the keeper, as libbpf would (for tests).
void keep_libbpf_message_for_test(const char* format, ...);

class BpfSampler {
 public:
  // Loads and starts the program; nullptr and *why (actionable) on failure.
  // At most RB_MAX_COUNTERS counters are used. A CPU where a counter does
  // not live (outside its cpumask) has no map entry for it: its slot reads
  // err -ENOENT.
  static std::unique_ptr<BpfSampler> start(const std::vector<PerfEventSpec>& counters,
                                           uint64_t period_ns, std::string* why,
                                           const BpfOptions& options = {});
  ~BpfSampler();

  // CPU `cpu`'s slot in the mmapped array, or nullptr if it has none: found
  // once, then loaded again and again (load_slot), as a poller holds it.
  const rb_slot* slot(int cpu) const {
    return cpu >= 0 && size_t(cpu) < nslots_ ? &slots_[cpu] : nullptr;
  }
  // Copies a slot of slot() under the seqlock; false if it did not settle
  // after many retries. Inline (defined below), as rbench's SlotRef::load
  // is: path ebpf-mmap times this copy, a few ns, and a call into another
  // object file added about a quarter to it.
  static inline bool load_slot(const rb_slot* slot, rb_slot* out);
  // The same for CPU `cpu`'s slot; false also if `cpu` has none.
  bool load_slot(int cpu, rb_slot* out) const {
    const rb_slot* found = slot(cpu);
    return found != nullptr && load_slot(found, out);
  }
  // Copies the slot with the bpf(BPF_MAP_LOOKUP_ELEM) syscall; 0 or errno.
  int lookup_slot(int cpu, rb_slot* out) const;

  const std::vector<int>& cpus() const { return cpus_; }  // CPUs it runs on
  // What drives it: "bpf_timer (CPU-pinned, absolute deadlines)" or
  // "perf cpu-clock event (fallback: <why>)".
  const std::string& trigger() const { return trigger_; }
  uint64_t period_ns() const { return period_ns_; }

 private:
  BpfSampler() = default;
  // A counter's perf event on one CPU, at key cpu * RB_MAX_COUNTERS + i.
  struct CounterFd {
    __u32 key;
    int fd;  // owned by the sampler
  };
  bool open_counters(const std::vector<PerfEventSpec>& counters, std::string* why);
  bool store_counters(const std::vector<PerfEventSpec>& counters, std::string* why);
  bool arm_timers(std::string* why);
  bool attach_cpu_clock(std::string* why);

  counters_bpf* skel_ = nullptr;
  const rb_slot* slots_ = nullptr;
  size_t slots_len_ = 0;  // bytes mapped
  size_t nslots_ = 0;     // slots in them: one per possible CPU
  int slots_fd_ = -1;
  std::vector<int> cpus_;
  std::vector<CounterFd> counter_fds_;
  std::vector<bpf_link*> links_;  // each owns its cpu-clock event
  std::string trigger_;
  uint64_t period_ns_ = 0;
};

bool BpfSampler::load_slot(const rb_slot* slot, rb_slot* out) {
  for (int tries = 0; tries < 10000; ++tries) {
    uint64_t seq = __atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE);
    if (seq & 1) {  // being written
      _mm_pause();
      continue;
    }
    std::memcpy(out, slot, sizeof(*out));
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&slot->seq, __ATOMIC_RELAXED) == seq) {
      out->seq = seq;
      return true;
    }
  }
  return false;
}

}  // namespace raplbench

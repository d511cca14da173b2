// bpf_sampler.h - loads bpf/counters.bpf.c, points it at a set of perf
// counters, starts it on every online CPU and reads what it publishes.
//
// Steps (libbpf-bootstrap style): open the skeleton; size the maps to the
// CPU count and set the knobs; load; put one perf event fd per (CPU,
// counter) in the `counters` map; arm a CPU-pinned bpf_timer on each CPU
// (the thread pins itself to the CPU and makes a syscall, which runs the
// arm_timer program there); mmap the `slots` array. Where the kernel has no
// CPU-pinned timers, the program is driven by a per-CPU perf cpu-clock event.
#pragma once

#include <cstdint>
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

class BpfSampler {
 public:
  // Loads and starts the program; nullptr and *why (actionable) on failure.
  // At most RB_MAX_COUNTERS counters are used.
  static std::unique_ptr<BpfSampler> start(const std::vector<PerfEventSpec>& counters,
                                           uint64_t period_ns, std::string* why);
  ~BpfSampler();

  // Copies CPU `cpu`'s slot from the mmapped array under the seqlock; false
  // if it did not settle after many retries.
  bool load_slot(int cpu, rb_slot* out) const;
  // Copies the slot with the bpf(BPF_MAP_LOOKUP_ELEM) syscall; 0 or errno.
  int lookup_slot(int cpu, rb_slot* out) const;

  const std::vector<int>& cpus() const { return cpus_; }  // CPUs it runs on
  const std::string& trigger() const { return trigger_; } // what drives it
  uint64_t period_ns() const { return period_ns_; }

 private:
  BpfSampler() = default;
  bool arm_timers(std::string* why);
  bool attach_cpu_clock(std::string* why);

  counters_bpf* skel_ = nullptr;
  const rb_slot* slots_ = nullptr;
  size_t slots_len_ = 0;
  int slots_fd_ = -1;
  std::vector<int> cpus_;
  std::vector<int> perf_fds_;
  std::vector<bpf_link*> links_;
  std::string trigger_;
  uint64_t period_ns_ = 0;
};

}  // namespace raplbench

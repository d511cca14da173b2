// bpf_sampler.cc - see bpf_sampler.h.
#include "bpf_sampler.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "counters.skel.h"
#include "cpu.h"

namespace raplbench {
namespace {

// bpf/counters.h makes the slot's size and field offsets the loaders'
// contract: the mmapped array is read with this layout (rbench's loader
// asserts the same against the skeleton's type).
static_assert(sizeof(rb_slot) == 128, "rb_slot is two cache lines");
static_assert(offsetof(rb_slot, seq) == 0 && offsetof(rb_slot, time_ns) == 8 &&
                  offsetof(rb_slot, ticks) == 16 && offsetof(rb_slot, missed) == 24 &&
                  offsetof(rb_slot, err) == 32 && offsetof(rb_slot, ncounters) == 36 &&
                  offsetof(rb_slot, value) == 40 && offsetof(rb_slot, busy_ns) == 104 &&
                  offsetof(rb_slot, err_ticks) == 112 && offsetof(rb_slot, ring_drops) == 120,
              "rb_slot's layout is the contract of bpf/counters.h");

// libbpf's own messages (a verifier log, a missing BTF) are kept instead of
// going to the harness's stderr, and the last one joins the reason a load
// failed.
std::mutex libbpf_mutex;
std::string libbpf_messages;

int keep_libbpf_message(enum libbpf_print_level level, const char* format, va_list args) {
  if (level == LIBBPF_DEBUG) return 0;
  char line[512];
  int n = vsnprintf(line, sizeof line, format, args);
  if (n <= 0) return 0;
  std::lock_guard<std::mutex> lock(libbpf_mutex);
  if (libbpf_messages.size() < 16384)
    libbpf_messages.append(line, std::min<size_t>(size_t(n), sizeof line - 1));
  return 0;
}

}  // namespace

std::string libbpf_said() {
  std::lock_guard<std::mutex> lock(libbpf_mutex);
  std::string text = libbpf_messages;
  text.erase(text.find_last_not_of("\n ") + 1);  // npos + 1 == 0: all blank, all erased
  text = text.substr(text.rfind('\n') + 1);       // the last line (no newline: npos + 1, all)
  if (text.rfind("libbpf: ", 0) == 0) text = text.substr(8);
  return text.empty() ? "" : " (libbpf: " + text + ")";
}

void keep_libbpf_messages() {
  {
    std::lock_guard<std::mutex> lock(libbpf_mutex);
    libbpf_messages.clear();
  }
  libbpf_set_print(keep_libbpf_message);
}

void keep_libbpf_message_for_test(const char* format, ...) {
  va_list args;
  va_start(args, format);
  keep_libbpf_message(LIBBPF_WARN, format, args);
  va_end(args);
}

namespace {

// libbpf returns -errno; say what to do about the common ones.
std::string bpf_error(const std::string& what, int err) {
  err = err < 0 ? -err : err;
  std::string text = what + ": " + std::strerror(err);
  if (err == EPERM || err == EACCES)
    text += ": needs CAP_BPF and CAP_PERFMON (run as root)";
  return text;
}

// Restores the calling thread's CPU affinity when it goes out of scope.
struct AffinityGuard {
  cpu_set_t saved;
  bool ok;
  AffinityGuard() { ok = sched_getaffinity(0, sizeof(saved), &saved) == 0; }
  ~AffinityGuard() {
    if (ok) sched_setaffinity(0, sizeof(saved), &saved);
  }
};

}  // namespace

std::unique_ptr<BpfSampler> BpfSampler::start(const std::vector<PerfEventSpec>& counters,
                                              uint64_t period_ns, std::string* why,
                                              const BpfOptions& options) {
  if (period_ns < RB_MIN_PERIOD_NS) {  // 0 would re-arm the timer in the past forever
    *why = "a timer period of " + std::to_string(period_ns) + " ns is below the " +
           std::to_string(RB_MIN_PERIOD_NS) + " ns the BPF sampler accepts (at most 100 kHz)";
    return nullptr;
  }
  keep_libbpf_messages();
  std::unique_ptr<BpfSampler> s(new BpfSampler());
  s->period_ns_ = period_ns;
  s->cpus_ = options.cpus.empty() ? usable_cpus() : options.cpus;
  const int ncpus = libbpf_num_possible_cpus();
  if (ncpus <= 0 || ncpus > RB_MAX_CPUS) {
    *why = "cannot size the BPF maps: " + std::to_string(ncpus) + " possible CPUs";
    return nullptr;
  }
  for (int cpu : s->cpus_)
    if (cpu < 0 || cpu >= ncpus) {
      *why = "CPU " + std::to_string(cpu) + " is not a possible CPU (0-" +
             std::to_string(ncpus - 1) + ")";
      return nullptr;
    }
  const std::vector<PerfEventSpec> used(
      counters.begin(), counters.begin() + std::min<size_t>(counters.size(), RB_MAX_COUNTERS));

  // 1. the counters' perf events, shared by every load below
  if (!s->open_counters(used, why)) return nullptr;

  // 2. open, size the maps, set the knobs, load; 3. fill the perf-event map
  // before any trigger starts. A kernel that cannot load the timer program
  // (no bpf_timer, no tp_btf) gets the fallback only.
  auto open_and_load = [&](bool with_timer) -> bool {
    if (s->skel_) counters_bpf__destroy(s->skel_);
    s->skel_ = counters_bpf__open();
    if (!s->skel_) {
      *why = bpf_error("opening the BPF program", errno);
      return false;
    }
    bpf_map__set_max_entries(s->skel_->maps.slots, ncpus);
    bpf_map__set_max_entries(s->skel_->maps.timers, ncpus);
    bpf_map__set_max_entries(s->skel_->maps.counters, ncpus * RB_MAX_COUNTERS);
    s->skel_->rodata->target_tgid = getpid();
    s->skel_->rodata->period_ns = period_ns;
    s->skel_->rodata->ncounters = __u32(used.size());
    for (int cpu = 0; cpu < ncpus; ++cpu)
      s->skel_->bss->arm_skip[cpu] =
          std::find(s->cpus_.begin(), s->cpus_.end(), cpu) == s->cpus_.end();
    bpf_program__set_autoload(s->skel_->progs.arm_timer, with_timer);
    if (int err = counters_bpf__load(s->skel_)) {
      *why = bpf_error("loading the BPF program", err) + libbpf_said();
      return false;
    }
    return s->store_counters(used, why);
  };
  bool with_timer = options.trigger == BpfTrigger::kAuto;
  std::string timer_why = with_timer ? "the kernel cannot load the bpf_timer program"
                                     : "forced by BpfOptions::trigger";
  if (!with_timer || !open_and_load(true)) {
    const std::string timer_load_error = with_timer ? *why : "";
    with_timer = false;
    if (!open_and_load(false)) {
      if (!timer_load_error.empty()) *why = timer_load_error;
      return nullptr;
    }
  }

  // 4. start it on every CPU: timers, or else (with fresh maps, so no timer
  // is left running) the perf cpu-clock fallback
  if (with_timer && !s->arm_timers(&timer_why)) {
    with_timer = false;
    if (!open_and_load(false)) return nullptr;
  }
  if (!with_timer) {
    std::string clock_why;
    if (!s->attach_cpu_clock(&clock_why)) {
      *why = timer_why + "; perf cpu-clock fallback: " + clock_why;
      return nullptr;
    }
    s->trigger_ = "perf cpu-clock event (fallback: " + timer_why + ")";
  }

  // 5. map the published slots
  s->slots_fd_ = bpf_map__fd(s->skel_->maps.slots);
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  s->nslots_ = size_t(ncpus);
  s->slots_len_ = (s->nslots_ * sizeof(rb_slot) + page - 1) / page * page;
  void* m = mmap(nullptr, s->slots_len_, PROT_READ, MAP_SHARED, s->slots_fd_, 0);
  if (m == MAP_FAILED) {
    *why = bpf_error("mmap of the BPF slots array", errno);
    return nullptr;
  }
  s->slots_ = static_cast<const rb_slot*>(m);
  return s;
}

bool BpfSampler::arm_timers(std::string* why) {
  bpf_link* link = bpf_program__attach(skel_->progs.arm_timer);
  if (!link) {
    *why = bpf_error("attaching the timer-arming program", errno);
    return false;
  }
  bool all_armed = true;
  {
    AffinityGuard guard;
    for (int cpu : cpus_) {
      std::string pin = pin_to_cpu(cpu);
      if (!pin.empty()) {
        *why = pin;
        all_armed = false;
        break;
      }
      // any syscall made from `cpu` runs arm_timer there
      for (int tries = 0; tries < 100 && skel_->bss->arm_result[cpu] == RB_ARM_NOT_TRIED; ++tries)
        syscall(SYS_getppid);
      int result = skel_->bss->arm_result[cpu];
      if (result != RB_ARM_OK) {
        *why = result == RB_ARM_NOT_TRIED
                   ? "the timer was not armed on CPU " + std::to_string(cpu)
                   : bpf_error("bpf_timer_start(BPF_F_TIMER_CPU_PIN) on CPU " +
                                   std::to_string(cpu) + " (needs Linux 6.7)",
                               result);
        all_armed = false;
        break;
      }
    }
  }
  bpf_link__destroy(link);  // every CPU is armed (or failed): stop watching syscalls
  if (all_armed) trigger_ = "bpf_timer (CPU-pinned, absolute deadlines)";
  return all_armed;
}

bool BpfSampler::open_counters(const std::vector<PerfEventSpec>& counters, std::string* why) {
  for (int cpu : cpus_) {
    for (size_t i = 0; i < counters.size(); ++i) {
      const PerfEventSpec& c = counters[i];
      if (std::find(c.cpus.begin(), c.cpus.end(), cpu) == c.cpus.end()) continue;
      int fd = open_counter(c, cpu, -1, 0);
      if (fd < 0) {
        *why = perf_open_error_reason(errno, c.name);
        return false;
      }
      counter_fds_.push_back({__u32(cpu * RB_MAX_COUNTERS + i), fd});
    }
  }
  return true;
}

bool BpfSampler::store_counters(const std::vector<PerfEventSpec>& counters, std::string* why) {
  const int map_fd = bpf_map__fd(skel_->maps.counters);
  for (const CounterFd& c : counter_fds_) {
    if (bpf_map_update_elem(map_fd, &c.key, &c.fd, BPF_ANY) != 0) {
      *why = bpf_error(
          "storing perf event " + counters[c.key % RB_MAX_COUNTERS].name + " in the BPF map",
          errno);
      return false;
    }
  }
  return true;
}

bool BpfSampler::attach_cpu_clock(std::string* why) {
  for (int cpu : cpus_) {
    perf_event_attr attr;
    std::memset(&attr, 0, sizeof(attr));
    attr.size = sizeof(attr);
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_CPU_CLOCK;
    attr.sample_period = period_ns_;  // cpu-clock counts nanoseconds
    int fd = int(syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC));
    if (fd < 0) {
      *why = perf_open_error_reason(errno, "cpu-clock");
      return false;
    }
    bpf_link* link = bpf_program__attach_perf_event(skel_->progs.on_cpu_clock, fd);
    if (!link) {
      int err = errno;
      close(fd);  // a failed attach leaves the event to us
      *why = bpf_error("attaching to the cpu-clock event on CPU " + std::to_string(cpu), err);
      return false;
    }
    // attached: bpf_link__destroy closes the event (libbpf's
    // bpf_link_perf_detach), so the link is its only owner
    links_.push_back(link);
  }
  return true;
}

BpfSampler::~BpfSampler() {
  if (slots_) munmap(const_cast<rb_slot*>(slots_), slots_len_);
  for (bpf_link* l : links_) bpf_link__destroy(l);  // closes each cpu-clock event
  for (const CounterFd& c : counter_fds_) close(c.fd);
  if (skel_) counters_bpf__destroy(skel_);  // freeing the maps cancels the timers
}

int BpfSampler::lookup_slot(int cpu, rb_slot* out) const {
  __u32 key = __u32(cpu);
  return bpf_map_lookup_elem(slots_fd_, &key, out) == 0 ? 0 : errno;
}

}  // namespace raplbench

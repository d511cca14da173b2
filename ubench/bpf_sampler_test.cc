// Tests of the BPF sampler that hold on any machine: no assumption about a
// counter's value, the rate a trigger reaches, root, or CPUs outside this
// process's affinity mask. Where the sampler cannot run (not root, no
// CAP_BPF) they skip with the reason.
#include "bpf_sampler.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "cpu.h"

namespace raplbench {
namespace {

using Clock = std::chrono::steady_clock;

// How long to wait for ticks before concluding the trigger does not fire (a
// bound on waiting, not a rate: the test then reports instead of failing).
constexpr auto kPatience = std::chrono::seconds(5);

// A fake of a dead energy counter (RAPL on some VMs reads 0 forever): the
// software dummy event opens and reads like any other on `cpus`, always 0.
PerfEventSpec constant_zero_counter(const std::vector<int>& cpus) {
  PerfEventSpec spec;
  spec.name = "software/dummy/";
  spec.type = PERF_TYPE_SOFTWARE;
  spec.config = PERF_COUNT_SW_DUMMY;
  spec.cpus = cpus;
  return spec;
}

// A counter that moves: the software cpu-clock event (ns of CPU time) on `cpus`.
PerfEventSpec counting_counter(const std::vector<int>& cpus) {
  PerfEventSpec spec;
  spec.name = "software/cpu-clock/";
  spec.type = PERF_TYPE_SOFTWARE;
  spec.config = PERF_COUNT_SW_CPU_CLOCK;
  spec.cpus = cpus;
  return spec;
}

// Starts the sampler; nullptr and *skip set where it cannot run here.
std::unique_ptr<BpfSampler> start_or_skip(const std::vector<PerfEventSpec>& counters,
                                          uint64_t period_ns, const BpfOptions& options,
                                          std::string* skip) {
  if (geteuid() != 0) {
    *skip = "needs root for BPF and perf events (CAP_BPF, CAP_PERFMON)";
    return nullptr;
  }
  std::string why;
  std::unique_ptr<BpfSampler> s = BpfSampler::start(counters, period_ns, &why, options);
  if (!s && why.find("needs CAP_BPF") != std::string::npos) *skip = why;
  else EXPECT_TRUE(s) << why;
  return s;
}

// The constant-0 counter sampled on every usable CPU every `period_ns`.
std::unique_ptr<BpfSampler> start_zero_counter_or_skip(uint64_t period_ns, std::string* skip) {
  const std::vector<int> cpus = usable_cpus();
  BpfOptions options;
  options.cpus = cpus;
  return start_or_skip({constant_zero_counter(cpus)}, period_ns, options, skip);
}

bool on_bpf_timer(const BpfSampler& s) { return s.trigger().rfind("bpf_timer", 0) == 0; }

std::map<int, rb_slot> load_all(const BpfSampler& s) {
  std::map<int, rb_slot> slots;
  for (int cpu : s.cpus()) EXPECT_TRUE(s.load_slot(cpu, &slots[cpu])) << "cpu " << cpu;
  return slots;
}

// Polls every sampled CPU's slot from now on, calling `seen` on each copy
// that holds a sample, until every CPU has `ticks` ticks or kPatience ran
// out; the last copies.
template <typename Seen>
std::map<int, rb_slot> poll_until_ticks(const BpfSampler& s, uint64_t ticks, Seen seen) {
  const auto deadline = Clock::now() + kPatience;
  for (;;) {
    std::map<int, rb_slot> last = load_all(s);
    bool all = true;
    for (const auto& [cpu, slot] : last) {
      if (slot.ticks > 0) seen(cpu, slot);
      all = all && slot.ticks >= ticks;
    }
    if (all || Clock::now() > deadline) return last;
  }
}

std::string rates(const std::map<int, rb_slot>& before, const std::map<int, rb_slot>& after,
                  double seconds) {
  std::string text;
  for (const auto& [cpu, a] : after)
    text += "cpu " + std::to_string(cpu) + ": " +
            std::to_string(int(double(a.ticks - before.at(cpu).ticks) / seconds)) +
            " Hz (missed " + std::to_string(a.missed) + ") ";
  return text;
}

// The first ticks already find the perf events in the `counters` map: no
// slot ever publishes -ENOENT (an empty entry), even at a 10 kHz start. The
// counter is the constant-0 fake: its 0 is published as a value with err 0
// (telling a dead counter from a live one is the harness's job).
TEST(BpfSampler, FirstTicksFindEveryCounterInTheMap) {
  std::string skip;
  auto s = start_zero_counter_or_skip(100000, &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_TRUE(s);
  std::cout << "trigger: " << s->trigger() << "\n";
  std::string first_error;
  auto last = poll_until_ticks(*s, 20, [&](int cpu, const rb_slot& slot) {
    if (slot.err != 0 && first_error.empty())
      first_error = "cpu " + std::to_string(cpu) + ", tick " + std::to_string(slot.ticks) +
                    ": err " + std::to_string(slot.err) +
                    " (-2: the perf event was not in the map yet)";
  });
  EXPECT_EQ(first_error, "");
  for (const auto& [cpu, slot] : last) {
    if (slot.ticks == 0) {
      EXPECT_FALSE(on_bpf_timer(*s)) << "cpu " << cpu << ": bpf_timer never fired";
      std::cout << "cpu " << cpu << ": the cpu-clock fallback did not fire\n";
      continue;
    }
    EXPECT_EQ(slot.err_ticks, 0u) << "cpu " << cpu << ": failed reads since the start";
    EXPECT_EQ(slot.ncounters, 1u);
    EXPECT_EQ(slot.value[0], 0u) << "cpu " << cpu << ": the dummy event counts nothing";
  }
}

// The program loads, publishes err 0 on the CPUs its counters live on,
// ticks advance (bpf_timer; the fallback's rate is only reported), the
// values are perf counts like a direct perf read (never decreasing), and
// only CPUs of this process's affinity mask are used.
// Issue 14: the loader never checked the period (0 would re-arm the timer in
// the past forever). Refused before anything is loaded: no privilege needed.
TEST(BpfSampler, APeriodBelowTheMinimumIsRefused) {
  const std::vector<int> cpus = usable_cpus();
  for (uint64_t period_ns : {uint64_t{0}, uint64_t{RB_MIN_PERIOD_NS - 1}}) {
    std::string why;
    EXPECT_FALSE(BpfSampler::start({constant_zero_counter(cpus)}, period_ns, &why));
    EXPECT_NE(why.find("a timer period of " + std::to_string(period_ns) + " ns is below"),
              std::string::npos)
        << why;
  }
}

// Issue 14: load_slot indexed the mapped slots by CPU without a bounds check.
TEST(BpfSampler, LoadSlotOfACpuWithoutASlotIsFalse) {
  std::string skip;
  auto s = start_zero_counter_or_skip(1000000, &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_TRUE(s);
  rb_slot slot{};
  EXPECT_TRUE(s->load_slot(s->cpus()[0], &slot));
  EXPECT_FALSE(s->load_slot(-1, &slot));
  EXPECT_FALSE(s->load_slot(RB_MAX_CPUS, &slot));
  EXPECT_FALSE(s->load_slot(1 << 30, &slot));
  // what path ebpf-mmap times: the slot found once, then loads of it alone
  EXPECT_EQ(s->slot(-1), nullptr);
  EXPECT_EQ(s->slot(RB_MAX_CPUS), nullptr);
  const rb_slot* found = s->slot(s->cpus()[0]);
  ASSERT_NE(found, nullptr);
  EXPECT_TRUE(BpfSampler::load_slot(found, &slot));
}

TEST(BpfSampler, LoadsPublishesAndTicksOnTheCpusItMayRunOn) {
  const std::vector<int> cpus = usable_cpus();
  struct {
    std::vector<PerfEventSpec> events;
  } counters{{counting_counter(cpus)}};
  std::string skip;
  BpfOptions options;
  options.cpus = cpus;
  auto s = start_or_skip(counters.events, 1000000, options, &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_TRUE(s);
  std::cout << "trigger: " << s->trigger() << "\n";
  EXPECT_EQ(s->cpus(), cpus);
  const size_t n = std::min<size_t>(counters.events.size(), RB_MAX_COUNTERS);
  const std::vector<PerfEventSpec> used(counters.events.begin(), counters.events.begin() + n);
  // the CPUs where every sampled counter lives (elsewhere the map has no
  // entry for it: that slot reads -ENOENT by design)
  std::vector<int> home;
  for (int cpu : cpus)
    if (std::all_of(used.begin(), used.end(), [cpu](const PerfEventSpec& c) {
          return std::find(c.cpus.begin(), c.cpus.end(), cpu) != c.cpus.end();
        }))
      home.push_back(cpu);
  if (home.empty()) GTEST_SKIP() << "the counters live outside this process's affinity mask";

  auto before = poll_until_ticks(*s, 1, [](int, const rb_slot&) {});
  const auto t0 = Clock::now();
  __u64 most = 0;
  for (const auto& [cpu, slot] : before) most = std::max(most, slot.ticks);
  auto after = poll_until_ticks(*s, most + 2, [](int, const rb_slot&) {});
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto later = load_all(*s);
  std::cout << s->trigger() << ": "
            << rates(before, later, std::chrono::duration<double>(Clock::now() - t0).count())
            << "\n";

  for (int cpu : cpus) {
    const rb_slot &b = before[cpu], &a = after[cpu], &l = later[cpu];
    EXPECT_EQ(a.seq % 2, 0u);
    EXPECT_GE(l.seq, a.seq);
    if (on_bpf_timer(*s)) {
      EXPECT_GT(a.ticks, b.ticks) << "cpu " << cpu << ": bpf_timer ticks did not advance";
      EXPECT_GT(a.time_ns, b.time_ns);
      EXPECT_GT(a.seq, b.seq);
    }
  }
  for (int cpu : home) {
    const rb_slot &a = after[cpu], &l = later[cpu];
    if (l.ticks == 0) {
      std::cout << "cpu " << cpu << ": no sample to check (the fallback did not fire)\n";
      continue;
    }
    EXPECT_EQ(l.err, 0) << "cpu " << cpu;
    EXPECT_EQ(l.err_ticks, 0u) << "cpu " << cpu;
    EXPECT_EQ(l.ncounters, n);
    for (size_t i = 0; i < n; ++i) {
      // what a direct perf read of the same event on that CPU gives: a
      // count that reads without error and never decreases
      int fd = open_counter(used[i], cpu, -1, 0);
      const int err = errno;
      ASSERT_GE(fd, 0) << perf_open_error_reason(err, used[i].name);
      uint64_t first = 0, second = 0;
      EXPECT_EQ(read(fd, &first, sizeof(first)), ssize_t(sizeof(first)));
      EXPECT_EQ(read(fd, &second, sizeof(second)), ssize_t(sizeof(second)));
      close(fd);
      EXPECT_GE(second, first) << "direct read of " << used[i].name;
      EXPECT_GE(l.value[i], a.value[i]) << "cpu " << cpu << ": " << used[i].name << " went back";
    }
    // both ways of copying a slot see the same sample or a later one
    rb_slot loaded, copied;
    ASSERT_TRUE(s->load_slot(cpu, &loaded));
    ASSERT_EQ(s->lookup_slot(cpu, &copied), 0);
    EXPECT_GE(copied.seq, loaded.seq);
    EXPECT_EQ(copied.err, 0);
  }
}

// This process's open descriptors and what each refers to.
std::map<int, std::string> open_fds() {
  std::map<int, std::string> fds;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return fds;
  const int own = dirfd(dir);
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    const int fd = std::atoi(e->d_name);
    if (fd == own) continue;
    char target[256] = {};
    ssize_t len = readlinkat(own, e->d_name, target, sizeof(target) - 1);
    fds[fd] = len > 0 ? std::string(target, size_t(len)) : "?";
  }
  closedir(dir);
  return fds;
}

// Started and destroyed, the sampler closes each of its descriptors exactly
// once, on the forced cpu-clock fallback (a bpf_link owns its event) and on
// the default trigger: the descriptors are those of before the start, and
// one opened meanwhile survives. (gtest_discover_tests runs each test in
// its own process, so no other test opens descriptors meanwhile.)
TEST(BpfSampler, ForcedCpuClockFallbackClosesEachDescriptorOnce) {
  const std::vector<int> cpus = usable_cpus();
  for (BpfTrigger trigger : {BpfTrigger::kCpuClock, BpfTrigger::kAuto}) {
    const char* name = trigger == BpfTrigger::kCpuClock ? "cpu-clock" : "auto";
    const std::map<int, std::string> fds_before = open_fds();
    std::string skip;
    BpfOptions options;
    options.cpus = cpus;
    options.trigger = trigger;
    auto s = start_or_skip({constant_zero_counter(cpus)}, 1000000, options, &skip);
    if (!skip.empty()) GTEST_SKIP() << skip;
    ASSERT_TRUE(s);
    std::cout << name << ": trigger " << s->trigger() << "\n";
    if (trigger == BpfTrigger::kCpuClock) {
      EXPECT_EQ(s->trigger().rfind("perf cpu-clock event (fallback: forced", 0), 0u);
      // busy this CPU briefly (an idle VM CPU may never fire), report the rate
      auto before = load_all(*s);
      const auto t0 = Clock::now();
      while (Clock::now() - t0 < std::chrono::milliseconds(200)) {
      }
      auto after = load_all(*s);
      std::cout << "fallback rate: "
                << rates(before, after, std::chrono::duration<double>(Clock::now() - t0).count())
                << "\n";
    }
    // a descriptor opened meanwhile must survive the destruction
    const int unrelated = open("/dev/null", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(unrelated, 0);
    s.reset();
    EXPECT_NE(fcntl(unrelated, F_GETFD), -1) << name << ": an unrelated fd was closed";
    std::map<int, std::string> fds_after = open_fds();
    EXPECT_EQ(fds_after[unrelated], "/dev/null");
    fds_after.erase(unrelated);
    close(unrelated);
    EXPECT_EQ(fds_after, fds_before) << name << ": descriptors before start and after destruction";
  }
}

// Issue 14: libbpf's own messages went to the harness's stderr. They are
// kept, and the last one joins the reason a load failed.
TEST(BpfSampler, LibbpfMessagesJoinTheReasonInsteadOfStderr) {
  keep_libbpf_messages();
  EXPECT_EQ(libbpf_said(), "");
  keep_libbpf_message_for_test("libbpf: prog '%s': BPF program load failed: %s\n", "on_timer",
                               "Invalid argument");
  keep_libbpf_message_for_test("libbpf: failed to load object '%s'\n", "counters_bpf");
  EXPECT_EQ(libbpf_said(), " (libbpf: failed to load object 'counters_bpf')");
  keep_libbpf_messages();  // a new start forgets the old ones
  EXPECT_EQ(libbpf_said(), "");
}

}  // namespace
}  // namespace raplbench

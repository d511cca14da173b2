// The BPF program loads, fires at >= 900 Hz on every CPU for one second, and
// the sequence of its mmapped slots advances. Needs root (CAP_BPF,
// CAP_PERFMON); skipped with the reason otherwise.
#include "bpf_sampler.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace raplbench {
namespace {

TEST(BpfSampler, FiresAtOneKilohertzOnEveryCpuAndPublishes) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root for BPF and perf events";
  EnergyCounters counters = energy_counters();
  ASSERT_FALSE(counters.events.empty()) << counters.unavailable;
  std::string why;
  std::unique_ptr<BpfSampler> s = BpfSampler::start(counters.events, 1000000, &why);
  ASSERT_TRUE(s) << why;
  std::cout << "trigger: " << s->trigger() << "\n";

  std::vector<rb_slot> before(s->cpus().size()), after(s->cpus().size());
  for (size_t i = 0; i < s->cpus().size(); ++i) ASSERT_TRUE(s->load_slot(s->cpus()[i], &before[i]));
  auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (size_t i = 0; i < s->cpus().size(); ++i) ASSERT_TRUE(s->load_slot(s->cpus()[i], &after[i]));

  for (size_t i = 0; i < s->cpus().size(); ++i) {
    double hz = double(after[i].ticks - before[i].ticks) / seconds;
    std::cout << "cpu " << s->cpus()[i] << ": " << hz << " Hz, missed " << after[i].missed
              << ", err " << after[i].err << "\n";
    EXPECT_GE(hz, 900.0) << "cpu " << s->cpus()[i];
    EXPECT_GT(after[i].seq, before[i].seq);
    EXPECT_EQ(after[i].seq % 2, 0u);
    EXPECT_GT(after[i].time_ns, before[i].time_ns);
  }
  // the counters are read on the CPUs they live on
  const int cpu = counters.events.front().cpus.front();
  rb_slot slot;
  ASSERT_TRUE(s->load_slot(cpu, &slot));
  EXPECT_EQ(slot.err, 0);
  EXPECT_GT(slot.value[0], 0u);
  rb_slot copy;
  ASSERT_EQ(s->lookup_slot(cpu, &copy), 0);
  EXPECT_GE(copy.seq, slot.seq);
}

}  // namespace
}  // namespace raplbench

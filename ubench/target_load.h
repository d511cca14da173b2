// target_load.h - what the target CPU of a cross-CPU row is doing while the
// row is timed (issue 34). A read of another CPU's counter (an IPI, an
// rdmsr on that CPU) costs what that CPU makes it cost: woken from idle,
// interrupted in a running thread. The plan names the state of each such
// row ("target_state", plan.h); results/schedule.json ("target_load") says
// what each means:
//
//   idle     no load of the suite's on the target CPU;
//   ticking  a thread pinned to it sleeps on a timerfd (CLOCK_MONOTONIC,
//            periodic, the plan's "target_tick_hz") and reads it at every
//            tick, as a sampler's timer wakes that CPU;
//   busy     a thread pinned to it spins in user space on a relaxed atomic
//            stop flag, nothing else, as a workload keeps it running.
//
// A TargetLoad holds the state for as long as it lives: start() returns
// once it holds (busy: the thread spins on the target CPU; ticking: the
// thread, on the target CPU, has read its first tick), the destructor stops
// and joins the thread (ticking: within about one tick period, when the next
// tick wakes it to see the stop flag).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>

namespace raplbench {

enum class TargetState { kIdle, kTicking, kBusy };

// The state named `name` ("idle", "ticking", "busy"); nullopt and *why,
// naming it, for any other name.
std::optional<TargetState> parse_target_state(const std::string& name, std::string* why);

// The plan's name of `state`.
const char* target_state_name(TargetState state);

class TargetLoad {
 public:
  // Starts `state` on CPU `cpu` (ticking at `tick_hz` ticks per second);
  // returns once the state holds. nullptr and *why, a reason a person can
  // act on, when its thread cannot be pinned to `cpu`, the timerfd cannot be
  // created or armed, or `tick_hz` is not positive. Idle starts nothing.
  static std::unique_ptr<TargetLoad> start(TargetState state, int cpu, int tick_hz,
                                           std::string* why);

  // Stops the thread and joins it.
  ~TargetLoad();

  TargetLoad(const TargetLoad&) = delete;
  TargetLoad& operator=(const TargetLoad&) = delete;

  TargetState state() const { return state_; }
  int cpu() const { return cpu_; }
  // The load thread's kernel thread id (/proc/self/task/<tid>); 0 when idle.
  pid_t tid() const { return tid_; }
  // The timerfd reads of the ticking thread so far, each a wake-up of the
  // target CPU (the first one before start() returned); 0 otherwise.
  uint64_t ticks() const { return ticks_.load(std::memory_order_relaxed); }

 private:
  TargetLoad(TargetState state, int cpu) : state_(state), cpu_(cpu) {}
  // The load's thread: pins itself to cpu_, then says on `ready` that the
  // state holds (an empty string) or why it cannot (prefixed by `what`),
  // and holds it until stop_.
  void run(int tick_hz, std::string what, std::promise<std::string> ready);

  const TargetState state_;
  const int cpu_;
  pid_t tid_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> ticks_{0};
  std::thread thread_;
};

}  // namespace raplbench

// target_load.cc - see target_load.h.
#include "target_load.h"

#include <pthread.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <utility>

#include "cpu.h"

namespace raplbench {

namespace {

constexpr std::pair<TargetState, const char*> kNames[] = {
    {TargetState::kIdle, "idle"}, {TargetState::kTicking, "ticking"}, {TargetState::kBusy, "busy"}};

// One tick of timerfd `fd` (its expirations in *expirations); false when the
// read fails (an interrupted read is retried).
bool read_tick(int fd, uint64_t* expirations) {
  for (;;) {
    if (read(fd, expirations, sizeof(*expirations)) == sizeof(*expirations)) return true;
    if (errno != EINTR) return false;
  }
}

}  // namespace

std::optional<TargetState> parse_target_state(const std::string& name, std::string* why) {
  for (const auto& [state, n] : kNames)
    if (name == n) return state;
  *why = "unknown target_state \"" + name + "\" (this ubench knows idle, ticking and busy): " +
         "rebuild it (make build)";
  return std::nullopt;
}

const char* target_state_name(TargetState state) {
  for (const auto& [s, n] : kNames)
    if (s == state) return n;
  return "?";
}

std::unique_ptr<TargetLoad> TargetLoad::start(TargetState state, int cpu, int tick_hz,
                                              std::string* why) {
  std::unique_ptr<TargetLoad> load(new TargetLoad(state, cpu));
  if (state == TargetState::kIdle) return load;
  const std::string what = std::string("target state ") + target_state_name(state) + ": ";
  if (state == TargetState::kTicking && tick_hz <= 0) {
    *why = what + "cannot tick CPU " + std::to_string(cpu) + " at " + std::to_string(tick_hz) +
           " Hz: the plan's target_tick_hz must be a positive number of ticks per second";
    return nullptr;
  }
  // The thread owns the promise: set_value may still be returning when
  // start() has its answer and returns.
  std::promise<std::string> ready;
  std::future<std::string> holds = ready.get_future();
  try {
    load->thread_ = std::thread(&TargetLoad::run, load.get(), tick_hz, what, std::move(ready));
  } catch (const std::system_error& e) {
    *why = what + "cannot start its thread: " + e.what();
    return nullptr;
  }
  *why = holds.get();
  if (!why->empty()) return nullptr;  // the thread has ended; the destructor joins it
  return load;
}

void TargetLoad::run(int tick_hz, std::string what, std::promise<std::string> ready) {
  tid_ = gettid();  // start() reads it after ready
  const std::string name = std::string("target-") + target_state_name(state_);  // ps -L, top -H
  pthread_setname_np(pthread_self(), name.c_str());
  const std::string pinned = pin_to_cpu(cpu_);
  if (!pinned.empty()) return ready.set_value(what + pinned);
  if (state_ == TargetState::kBusy) {
    ready.set_value("");
    while (!stop_.load(std::memory_order_relaxed)) {
    }
    return;
  }
  // Ticking. The timer is armed on the target CPU, so that it fires there
  // as a sampler's timer on that CPU does (the kernel re-arms a periodic
  // timerfd on the CPU that reads it anyway).
  const int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
  if (fd < 0)
    return ready.set_value(what + "cannot create a timerfd for CPU " + std::to_string(cpu_) +
                           ": " + std::strerror(errno));
  const long period_ns = std::max(1L, 1000000000L / tick_hz);
  const timespec period = {period_ns / 1000000000L, period_ns % 1000000000L};
  const itimerspec every = {period, period};
  uint64_t expirations = 0;
  if (timerfd_settime(fd, 0, &every, nullptr) != 0 || !read_tick(fd, &expirations)) {
    ready.set_value(what + "cannot tick a timerfd at " + std::to_string(tick_hz) + " Hz on CPU " +
                    std::to_string(cpu_) + ": " + std::strerror(errno));
    close(fd);
    return;
  }
  ticks_.store(1, std::memory_order_relaxed);
  ready.set_value("");
  // Each tick wakes the thread, which then sees a stop flag set since the
  // last one. A read that fails ends the load early; an armed periodic
  // timerfd has no such failure.
  while (!stop_.load(std::memory_order_relaxed) && read_tick(fd, &expirations))
    ticks_.fetch_add(1, std::memory_order_relaxed);
  close(fd);
}

TargetLoad::~TargetLoad() {
  stop_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
}

}  // namespace raplbench

// flags.h - ubench's own command-line flags, taken out of argv before
// Google Benchmark parses the rest (it rejects flags it does not know):
//
//   --raplbench_plan=PATH      the plan to time (plan.h), as rbench's
//                              raplbench-plan wrote it; without it, ubench
//                              runs raplbench-plan (kPlanCommand) and reads
//                              its output;
//   --raplbench_warmup=SECONDS how long every benchmark call (each
//                              repetition) runs its operation untimed right
//                              before timing it (timed.h); a plain number of
//                              seconds, as Google Benchmark 1.7's times;
//                              default kDefaultWarmupSeconds, 0 for none.
//   --raplbench_rate_window=SECONDS the window of each repetition of a rate
//                              row (ebpf-mmap "tick": the BPF program's ticks
//                              counted over it, paths/ebpf.cc); seconds > 0,
//                              default kDefaultRateWindowSeconds.
#pragma once

#include <chrono>
#include <string>

namespace raplbench {

inline constexpr double kDefaultWarmupSeconds = 0.01;
inline constexpr double kDefaultRateWindowSeconds = 0.1;  // 100 ticks at 1 kHz

// A flag's seconds as the nanoseconds the timing code waits or warms up for.
inline std::chrono::nanoseconds seconds_ns(double seconds) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(seconds));
}

#ifndef RAPLBENCH_PLAN_COMMAND
#error "RAPLBENCH_PLAN_COMMAND (rbench's raplbench-plan binary) comes from CMakeLists.txt"
#endif
// The planner run when no --raplbench_plan is given (cargo builds it).
inline constexpr const char* kPlanCommand = RAPLBENCH_PLAN_COMMAND;

struct Flags {
  std::string plan;        // empty: run the planner
  double warmup_seconds = kDefaultWarmupSeconds;
  double rate_window_seconds = kDefaultRateWindowSeconds;
  std::string error;       // non-empty: a flag was malformed, and how
};

// Parses and removes the flags above from argv (argv[0] and the other
// arguments keep their order; *argc shrinks accordingly).
Flags take_raplbench_flags(int* argc, char** argv);

}  // namespace raplbench

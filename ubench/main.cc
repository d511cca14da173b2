// main.cc - raplbench-ubench: the Google Benchmark harness of raplbench.
//
// It times the rows of the plan (plan.h, flags.h) and adds to the benchmark
// context the measured TSC frequency and which Google Benchmark library this
// is (ubench/gbench.cmake). Usual flags: --benchmark_repetitions=10
// --benchmark_min_time=0.1 (Google Benchmark 1.7: a plain number of seconds).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>

#include "cpu.h"
#include "flags.h"
#include "paths/paths.h"
#include "plan.h"
#include "timed.h"

#ifndef RAPLBENCH_GBENCH_LIBRARY
#error "RAPLBENCH_GBENCH_LIBRARY and RAPLBENCH_GBENCH_NDEBUG come from ubench/gbench.cmake"
#endif

int main(int argc, char** argv) {
  const raplbench::Flags flags = raplbench::take_raplbench_flags(&argc, argv);
  if (!flags.error.empty()) {
    std::fprintf(stderr, "%s\n", flags.error.c_str());
    return 1;
  }
  raplbench::warmup_time = raplbench::seconds_ns(flags.warmup_seconds);
  raplbench::rate_window = raplbench::seconds_ns(flags.rate_window_seconds);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  std::string why;
  const auto rows = flags.plan.empty() ? raplbench::run_planner(raplbench::kPlanCommand, &why)
                                       : raplbench::load_plan(flags.plan, &why);
  if (!rows) {
    std::fprintf(stderr, "raplbench-ubench: no plan: %s\n", why.c_str());
    return 1;
  }
  raplbench::register_plan(*rows);
  benchmark::AddCustomContext("raplbench_tsc_khz", std::to_string(raplbench::measure_tsc_khz()));
  // The console reporter prints these before the library's own DEBUG warning.
  benchmark::AddCustomContext("raplbench_gbench_library", RAPLBENCH_GBENCH_LIBRARY);
  if (!RAPLBENCH_GBENCH_NDEBUG)
    benchmark::AddCustomContext(
        "raplbench_gbench_debug_warning",
        "the DEBUG warning below is Debian's libbenchmark, built without NDEBUG: its "
        "checks run a few times per batch of iterations, never in the timed loop "
        "(inlined from the header, compiled here with NDEBUG). Against an NDEBUG build of the same 1.7.1 source "
        "its effect on ubench's figures was within run-to-run noise (README, \"Google "
        "Benchmark\"; make gbench-effect measures it again on this machine)");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

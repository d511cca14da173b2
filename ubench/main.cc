// main.cc - raplbench-ubench: the Google Benchmark harness of raplbench.
//
// Every access path (ubench/paths/*.cc, each registered by RAPLBENCH_PATH,
// see register.h) discovers what this machine offers and registers its
// benchmarks (or unavailable rows). The manifest that maps benchmarks to
// result rows goes to the file named by --raplbench_manifest (flags.h); the
// measured TSC frequency goes into the benchmark context
// ("raplbench_tsc_khz"). results/gbench.py reads both. Usual flags:
// --benchmark_repetitions=10 --benchmark_min_time=0.1 (Google Benchmark
// 1.7: a plain number of seconds).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "cpu.h"
#include "flags.h"
#include "manifest.h"
#include "register.h"
#include "timed.h"

int main(int argc, char** argv) {
  const raplbench::Flags flags = raplbench::take_raplbench_flags(&argc, argv);
  if (!flags.error.empty()) {
    std::fprintf(stderr, "%s\n", flags.error.c_str());
    return 1;
  }
  raplbench::set_warmup_time(std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(flags.warmup_seconds)));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  raplbench::register_all_paths();

  const std::string manifest = flags.plan_only && flags.manifest.empty() ? "-" : flags.manifest;
  if (!manifest.empty()) {
    const std::string why = raplbench::write_manifest(manifest);
    if (!why.empty()) {
      std::fprintf(stderr, "%s\n", why.c_str());
      return 1;
    }
  }
  if (flags.plan_only) {
    benchmark::Shutdown();
    return 0;
  }
  benchmark::AddCustomContext("raplbench_tsc_khz", std::to_string(raplbench::measure_tsc_khz()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

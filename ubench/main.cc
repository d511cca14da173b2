// main.cc - raplbench-ubench: the Google Benchmark harness of raplbench.
//
// Every access path discovers what this machine offers and registers its
// benchmarks (or unavailable rows); the manifest that maps benchmarks to
// result rows and the measured TSC frequency go into the benchmark context,
// so the JSON output (--benchmark_out) is self-contained for
// results/gbench.py. Usual flags: --benchmark_repetitions=10
// --benchmark_min_time=0.1 (Google Benchmark 1.7: a plain number of seconds).
#include <benchmark/benchmark.h>

#include <string>

#include "cpu.h"
#include "manifest.h"
#include "perf_events.h"
#include "register.h"

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  raplbench::register_uinsn();
  raplbench::register_powercap();
  raplbench::register_msr_dev();
  const raplbench::EnergyCounters counters = raplbench::energy_counters();
  raplbench::register_perf(counters);
  raplbench::register_ebpf(counters);

  benchmark::AddCustomContext("raplbench_manifest", raplbench::manifest_json());
  benchmark::AddCustomContext("raplbench_tsc_khz", std::to_string(raplbench::measure_tsc_khz()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

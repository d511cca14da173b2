// uinsn.cc - path "uinsn": single user-space instructions (nop, mov,
// cpuid leaves 0x0 and 0x1, rdtsc, rdtscp).
//
// Loop and clock overhead are removed by timing the same instruction at two
// unroll factors within each iteration (nanoBench's method):
//
//   t0 ; SMALL copies ; t1 ; LARGE copies ; t2
//   ns per instruction = ((t2 - t1) - (t1 - t0)) / (LARGE - SMALL)
//
// Both intervals contain one clock read and the same loop bookkeeping, so
// those cancel; what remains is LARGE - SMALL instructions. The copies are
// emitted with the assembler's .rept, so the compiler cannot reorder or
// drop them. nop and mov measure throughput (independent instructions);
// cpuid is serializing, so it measures latency; on a VM it traps to the
// hypervisor. cpuid is preceded by the two instructions that load its leaf
// and subleaf (a fraction of a nanosecond next to cpuid).
// The plan (rbench/src/paths/uinsn.rs) names the instruction of each row.
#include <benchmark/benchmark.h>

#include <chrono>
#include <string>
#include <utility>

#include "register.h"
#include "paths/paths.h"

namespace raplbench {
namespace {

// The instructions: Insn::block<N>() runs N copies.
struct Nop {
  template <int N>
  static void block() { asm volatile(".rept %c0\n\tnop\n\t.endr" ::"i"(N)); }
};

struct Mov {
  template <int N>
  static void block() { asm volatile(".rept %c0\n\tmov %%rax, %%rdx\n\t.endr" ::"i"(N) : "rdx"); }
};

template <unsigned Leaf>
struct Cpuid {
  template <int N>
  static void block() {
    asm volatile(
        ".rept %c[n]\n\tmov %[leaf], %%eax\n\txor %%ecx, %%ecx\n\tcpuid\n\t.endr" ::[n] "i"(N),
        [leaf] "i"(Leaf)
        : "eax", "ebx", "ecx", "edx");
  }
};

struct Rdtsc {
  template <int N>
  static void block() { asm volatile(".rept %c0\n\trdtsc\n\t.endr" ::"i"(N) : "eax", "edx"); }
};

struct Rdtscp {
  template <int N>
  static void block() {
    asm volatile(".rept %c0\n\trdtscp\n\t.endr" ::"i"(N) : "eax", "ecx", "edx");
  }
};

using Clock = std::chrono::steady_clock;

template <class Insn, int Small, int Large>
void unrolled_difference(benchmark::State& state) {
  double extra_ns = 0;  // sum over iterations of (large block - small block)
  for (auto _ : state) {
    auto t0 = Clock::now();
    Insn::template block<Small>();
    auto t1 = Clock::now();
    Insn::template block<Large>();
    auto t2 = Clock::now();
    extra_ns += std::chrono::duration<double, std::nano>((t2 - t1) - (t1 - t0)).count();
  }
  state.counters["latency"] = extra_ns / (double(state.iterations()) * (Large - Small));
}

// SMALL and LARGE per instruction: large enough that LARGE - SMALL copies
// take well over the clock's resolution, small enough to keep an iteration
// short (cpuid takes about 1 us on a VM).
constexpr int kFastSmall = 32, kFastLarge = 32 + 512;
constexpr int kTscSmall = 4, kTscLarge = 4 + 64;
constexpr int kCpuidSmall = 1, kCpuidLarge = 1 + 8;

}  // namespace

void add_insn_row(const nlohmann::json& row) {
  const std::pair<const char*, BenchFn> cases[] = {
      {"nop", unrolled_difference<Nop, kFastSmall, kFastLarge>},
      {"mov", unrolled_difference<Mov, kFastSmall, kFastLarge>},
      {"cpuid:0x0", unrolled_difference<Cpuid<0>, kCpuidSmall, kCpuidLarge>},
      {"cpuid:0x1", unrolled_difference<Cpuid<1>, kCpuidSmall, kCpuidLarge>},
      {"rdtsc", unrolled_difference<Rdtsc, kTscSmall, kTscLarge>},
      {"rdtscp", unrolled_difference<Rdtscp, kTscSmall, kTscLarge>},
  };
  const nlohmann::json insn = row["open"]["insn"];
  for (const auto& [op, fn] : cases)
    if (insn == op) {
      add_benchmark(row, fn);
      return;
    }
  add_unavailable(row, "this ubench has no instruction " + insn.dump() + ": rebuild it (make build)");
}

}  // namespace raplbench

// msr_dev.cc - path "msr-dev": one pread of a RAPL energy MSR from
// /dev/cpu/N/msr (8 bytes at offset ADDR), from CPU N itself and from
// another CPU (the driver then reads the MSR on CPU N through an IPI).
//
// Where /dev/cpu/N/msr is missing, the plan's stand-in is /dev/cpu/N/cpuid
// (16 bytes at offset LEAF): the same per-CPU character device route (open
// per CPU, pread at an offset, the instruction run on CPU N via
// smp_call_function_single) with cpuid in place of rdmsr. Either way the
// plan (rbench/src/paths/msr_dev.rs) names the device, offset and size.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "register.h"
#include "paths/paths.h"
#include "timed.h"

namespace raplbench {
namespace {

void bench_device(benchmark::State& state, const std::string& path, uint64_t offset,
                  size_t bytes) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return skip_unavailable(state, path + ": " + std::strerror(errno));
  uint64_t buf[2] = {0, 0};  // an MSR, or a cpuid record (EAX, EBX, ECX, EDX)
  auto read_once = [&] { return pread(fd, buf, bytes, off_t(offset)) == ssize_t(bytes); };
  warm_up_before(state, read_once);
  for (auto _ : state) {
    if (!read_once()) {
      state.SkipWithError((path + ": pread of " + std::to_string(bytes) + " bytes at " +
                           std::to_string(offset) + " failed: " + std::strerror(errno))
                              .c_str());
      break;
    }
    benchmark::DoNotOptimize(buf);
  }
  close(fd);
}

}  // namespace

void add_device_row(const nlohmann::json& row) {
  const nlohmann::json& open = row["open"];
  const std::string path = open["device"];
  const uint64_t offset = open["offset"];
  const size_t bytes = open["bytes"];
  if (bytes == 0 || bytes > 16)
    return add_unavailable(row, "a pread of " + std::to_string(bytes) + " bytes: not a register");
  add_benchmark(row,
                [path, offset, bytes](benchmark::State& s) { bench_device(s, path, offset, bytes); });
}

}  // namespace raplbench

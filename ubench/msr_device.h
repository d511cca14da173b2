// msr_device.h - the vendor's RAPL energy MSRs and reading them through the
// msr driver's character device /dev/cpu/N/msr.
//
// The device contract (arch/x86/kernel/msr.c): pread of 8 bytes at file
// offset ADDR returns MSR ADDR of CPU N, read on that CPU (an IPI when the
// reader runs elsewhere). Errors: EIO when rdmsr faults (MSR not implemented),
// EPERM/EACCES without CAP_SYS_RAWIO, ENXIO when CPU N is offline. A fixture
// is a sparse file holding values at the MSR offsets, read by the same code.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cpu.h"
#include "liveness.h"
#include "roots.h"

namespace raplbench {

struct RaplMsr {
  uint32_t addr;
  const char* name;  // the SDM / PPR register name
};

// The energy-status MSRs of the vendor (Intel: PKG, PP0, PP1, DRAM, PSYS;
// AMD: core, package). Empty for other vendors.
std::vector<RaplMsr> rapl_energy_msrs(CpuVendor vendor);

// The vendor's RAPL unit MSR, whose energy status unit (ESU, bits 12:8)
// scales every energy MSR: one count is 1/2^ESU J (Intel
// MSR_RAPL_POWER_UNIT 0x606, AMD MSR_AMD_RAPL_POWER_UNIT 0xc0010299).
// nullopt for other vendors.
std::optional<RaplMsr> rapl_unit_msr(CpuVendor vendor);

// Why the unit MSR's value `unit` means that the energy MSRs hold no
// energy, or an empty string. A unit MSR of 0, or an ESU of 0 ("1 J per
// count"), is not RAPL: a hypervisor that answers every rdmsr with 0 does that.
std::string msr_unit_problem(uint32_t unit_addr, uint64_t unit);

// "MSR 0x611 on CPU 0": how a verdict names an energy MSR.
std::string msr_counter_name(uint32_t addr, int cpu);

// "0x611", "0xc001029b": the spelling used in result rows.
std::string msr_hex(uint32_t addr);

// "<root>/<cpu>/msr": /dev/cpu/<cpu>/msr unless $RAPLBENCH_DEV_CPU_ROOT is set.
std::string msr_device_path(int cpu, const std::string& root = dev_cpu_root());

// "<root>/<cpu>/cpuid": the msr device's stand-in (same driver pattern).
std::string cpuid_device_path(int cpu, const std::string& root = dev_cpu_root());

class MsrDevice {
 public:
  // Opens the device (or a fixture file) read-only; nullopt and *err = errno on failure.
  static std::optional<MsrDevice> open(const std::string& path, int* err);
  MsrDevice(MsrDevice&& other) noexcept;
  MsrDevice(const MsrDevice&) = delete;
  MsrDevice& operator=(const MsrDevice&) = delete;
  ~MsrDevice();

  // Reads MSR `addr`: 0, or the errno of the failed pread (EIO also for a short read).
  int read(uint32_t addr, uint64_t* value) const;

 private:
  explicit MsrDevice(int fd) : fd_(fd) {}
  int fd_;
};

// Why MSR `addr` cannot be read through `path`, in words a person can act on.
std::string msr_error_reason(int err, const std::string& path, uint32_t addr);

// What an unprivileged reader of /dev/cpu/N/cpuid is told to do (rbench's
// CPUID_DEVICE_IS_ROOTS, word for word).
inline constexpr const char* kCpuidDeviceIsRoots =
    " (the device is root's, mode 0400: run as root, or give this user read access to it)";

// Why the stand-in device `path` (/dev/cpu/N/cpuid) cannot be opened, as
// rbench says it; empty if it can: missing, "<path>: missing too (load the
// cpuid module: modprobe cpuid)"; offline, "<path>: CPU offline (ENXIO)";
// denied, "<path>: <strerror text>" and kCpuidDeviceIsRoots; otherwise the
// errno alone, "<path>: <strerror text>" (none of the msr device's
// CAP_SYS_RAWIO advice: the cpuid device checks only its file mode).
std::string cpuid_unusable_reason(const std::string& path);

// The liveness of `msrs`, read from `dev` (the device of CPU `cpu`): the
// unit MSR first (an implausible or unreadable unit makes them all no-unit,
// without probing), then all of them probed together. nullopt and *error
// when an energy MSR cannot be read.
std::optional<std::vector<CounterVerdict>> judge_msrs(
    const MsrDevice& dev, int cpu, const std::vector<RaplMsr>& msrs, const RaplMsr& unit_msr,
    std::string* error, std::chrono::nanoseconds window = kLivenessWindow);

}  // namespace raplbench

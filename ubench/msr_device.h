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

namespace raplbench {

struct RaplMsr {
  uint32_t addr;
  const char* name;  // the SDM / PPR register name
};

// The energy-status MSRs of the vendor (Intel: PKG, PP0, PP1, DRAM, PSYS;
// AMD: core, package). Empty for other vendors.
std::vector<RaplMsr> rapl_energy_msrs(CpuVendor vendor);

// "0x611", "0xc001029b": the spelling used in result rows.
std::string msr_hex(uint32_t addr);

// "/dev/cpu/<cpu>/msr"
std::string msr_device_path(int cpu);

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

}  // namespace raplbench

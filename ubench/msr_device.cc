// msr_device.cc - see msr_device.h.
#include "msr_device.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace raplbench {

std::vector<RaplMsr> rapl_energy_msrs(CpuVendor vendor) {
  switch (vendor) {
    case CpuVendor::Intel:
      return {{0x611, "MSR_PKG_ENERGY_STATUS"},
              {0x639, "MSR_PP0_ENERGY_STATUS"},
              {0x641, "MSR_PP1_ENERGY_STATUS"},
              {0x619, "MSR_DRAM_ENERGY_STATUS"},
              {0x64D, "MSR_PLATFORM_ENERGY_STATUS"}};
    case CpuVendor::Amd:
      return {{0xC001029A, "MSR_AMD_CORE_ENERGY_STATUS"},
              {0xC001029B, "MSR_AMD_PKG_ENERGY_STATUS"}};
    default:
      return {};
  }
}

std::string msr_hex(uint32_t addr) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%x", addr);
  return buf;
}

std::string msr_device_path(int cpu) { return "/dev/cpu/" + std::to_string(cpu) + "/msr"; }

std::optional<MsrDevice> MsrDevice::open(const std::string& path, int* err) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *err = errno;
    return std::nullopt;
  }
  return MsrDevice(fd);
}

MsrDevice::MsrDevice(MsrDevice&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

MsrDevice::~MsrDevice() {
  if (fd_ >= 0) ::close(fd_);
}

int MsrDevice::read(uint32_t addr, uint64_t* value) const {
  ssize_t n = ::pread(fd_, value, sizeof(*value), off_t(addr));
  if (n < 0) return errno;
  return n == sizeof(*value) ? 0 : EIO;
}

std::string msr_error_reason(int err, const std::string& path, uint32_t addr) {
  switch (err) {
    case ENOENT:
    case ENODEV:
      return path + " missing: load the msr module (modprobe msr; kernel needs CONFIG_X86_MSR)";
    case EACCES:
    case EPERM:
      return path + ": " + errno_text(err) +
             ": needs root with CAP_SYS_RAWIO (and no kernel lockdown)";
    case EIO:
      return "rdmsr " + msr_hex(addr) + " faults on this CPU (EIO): this model does not "
             "implement it";
    case ENXIO:
      return path + ": CPU offline (ENXIO)";
    default:
      return path + ": " + errno_text(err);
  }
}

}  // namespace raplbench

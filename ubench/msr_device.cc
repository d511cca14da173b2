// msr_device.cc - see msr_device.h.
#include "msr_device.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace raplbench {
namespace {

std::string msr_hex64(uint64_t value) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(value));
  return buf;
}

}  // namespace

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

std::optional<RaplMsr> rapl_unit_msr(CpuVendor vendor) {
  switch (vendor) {
    case CpuVendor::Intel: return RaplMsr{0x606, "MSR_RAPL_POWER_UNIT"};
    case CpuVendor::Amd: return RaplMsr{0xC0010299, "MSR_AMD_RAPL_POWER_UNIT"};
    default: return std::nullopt;
  }
}

std::string msr_unit_problem(uint32_t unit_addr, uint64_t unit) {
  const unsigned esu = unsigned(unit >> 8) & 0x1F;
  const std::string reads = "energy unit MSR " + msr_hex(unit_addr) + " reads " + msr_hex64(unit);
  if (unit == 0) return reads + ": not RAPL, no energy unit";
  if (esu == 0) return reads + ": its energy status unit (bits 12:8) is 0, 1 J per count: not RAPL";
  return "";
}

std::string msr_counter_name(uint32_t addr, int cpu) {
  return "MSR " + msr_hex(addr) + " on CPU " + std::to_string(cpu);
}

std::string msr_hex(uint32_t addr) { return msr_hex64(addr); }

std::string msr_device_path(int cpu, const std::string& root) {
  return root + "/" + std::to_string(cpu) + "/msr";
}

std::string cpuid_device_path(int cpu, const std::string& root) {
  return root + "/" + std::to_string(cpu) + "/cpuid";
}

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

std::string cpuid_unusable_reason(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ::close(fd);
    return "";
  }
  const int err = errno;
  if (err == ENOENT || err == ENODEV)
    return path + ": missing too (load the cpuid module: modprobe cpuid)";
  if (err == ENXIO) return path + ": CPU offline (ENXIO)";
  // none of the msr device's advice: the cpuid device checks no capability,
  // only its file mode (root-only)
  if (err == EACCES || err == EPERM) return path + ": " + errno_text(err) + kCpuidDeviceIsRoots;
  return path + ": " + errno_text(err);
}

std::optional<std::vector<CounterVerdict>> judge_msrs(
    const MsrDevice& dev, int cpu, const std::vector<RaplMsr>& msrs, const RaplMsr& unit_msr,
    std::string* error, std::chrono::nanoseconds window) {
  std::vector<std::string> names;
  for (const RaplMsr& m : msrs) names.push_back(msr_counter_name(m.addr, cpu));
  uint64_t unit = 0;
  std::string problem;
  if (int err = dev.read(unit_msr.addr, &unit))
    problem = "energy unit MSR " + msr_hex(unit_msr.addr) + " cannot be read (" +
              errno_text(err) + "): no energy unit";
  else
    problem = msr_unit_problem(unit_msr.addr, unit);
  CounterSetRead read = [&](std::vector<uint64_t>* values) -> std::string {
    for (size_t i = 0; i < msrs.size(); ++i)
      if (int err = dev.read(msrs[i].addr, &(*values)[i]))
        return msr_error_reason(err, "CPU " + std::to_string(cpu) + "'s msr device", msrs[i].addr);
    return "";
  };
  return judge_counters(names, std::vector<std::string>(msrs.size(), problem), read, error,
                        window);
}

}  // namespace raplbench

// powercap_zones.h - discovery of the powercap (RAPL) zones of this machine.
//
// Under /sys/class/powercap every zone is a directory (or a symlink to one)
// named after its control type and position: "intel-rapl:0" (package 0),
// "intel-rapl:0:0" (its first subzone, e.g. core), "intel-rapl:1" (package 1,
// or psys on a one-socket laptop), "intel-rapl-mmio:0" (the same package
// read over MMIO). AMD parts use the same "intel-rapl" names. A zone has a
// `name` ("package-0", "core", "uncore", "dram", "psys"), an `energy_uj`
// counter in microjoules that wraps at `max_energy_range_uj`. Control-type
// directories such as "intel-rapl" have no energy_uj and are skipped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "liveness.h"

namespace raplbench {

struct PowercapZone {
  std::string id;              // directory name, e.g. "intel-rapl:0:1"
  std::string name;            // contents of `name`, e.g. "uncore"
  std::string energy_path;     // <root>/<id>/energy_uj
  std::optional<uint64_t> max_energy_range_uj;
  std::optional<int> package;  // physical package of "package-N" zones and their subzones
  bool mmio = false;           // intel-rapl-mmio: read without an MSR access or IPI
};

// Zones under `root` (powercap_root() in roots.h), in natural order (intel-rapl:0, intel-rapl:0:0, ...,
// intel-rapl:1, intel-rapl-mmio:0). Empty when root is missing.
std::vector<PowercapZone> discover_powercap_zones(const std::string& root);

// Parses the text of an energy_uj file ("123456\n"). False if it is not a
// non-negative decimal number.
bool parse_energy_uj(const char* text, size_t len, uint64_t* value);

// Reads and parses the counter at `fd` (an open energy_uj file, pread at 0);
// returns an empty string, or the error naming `path`.
std::string read_energy_uj(int fd, const std::string& path, uint64_t* value);

// Why `path` (an energy_uj file, or its stand-in) cannot be opened for
// reading, in words a person can act on (rbench says the same); empty if it can.
std::string powercap_unreadable_reason(const std::string& path);

// Why opening `path` failed with `err`, word for word as rbench says it
// (rbench/src/error.rs): an energy_uj file (its name is energy_uj) denied to
// this process gets the advice (root-only since Linux 5.10, CVE-2020-8694,
// a udev rule); any other error, or any other file (the lo rx_bytes
// stand-in), "<path>: <strerror text>", e.g.
// "/sys/class/net/lo/statistics/rx_bytes: Permission denied".
std::string powercap_open_error(const std::string& path, int err);

// "intel-rapl:0:1/energy_uj": how a verdict names a zone's counter.
std::string powercap_counter_name(const PowercapZone& zone);

// The liveness of `zones`, probed together through their energy_uj files
// (in microjoules by definition, so there is no unit to check); counters are
// named by powercap_counter_name(). nullopt and *error if a file cannot be read.
std::optional<std::vector<CounterVerdict>> judge_powercap_zones(
    const std::vector<PowercapZone>& zones, std::string* error,
    std::chrono::nanoseconds window = kLivenessWindow);

}  // namespace raplbench

// powercap_zones.cc - see powercap_zones.h.
#include "powercap_zones.h"

#include "cpu.h"
#include "sysfs.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <regex>

namespace raplbench {
namespace {

// "intel-rapl:0:1" -> {"intel-rapl", 0, 1}; natural order compares numbers as numbers.
std::vector<std::string> split_id(const std::string& id) {
  std::vector<std::string> parts;
  size_t start = 0, colon;
  while ((colon = id.find(':', start)) != std::string::npos) {
    parts.push_back(id.substr(start, colon - start));
    start = colon + 1;
  }
  parts.push_back(id.substr(start));
  return parts;
}

bool natural_less(const std::string& a, const std::string& b) {
  std::vector<std::string> pa = split_id(a), pb = split_id(b);
  if (pa[0] != pb[0]) return pa[0] < pb[0];
  for (size_t i = 1; i < std::min(pa.size(), pb.size()); ++i)
    if (pa[i] != pb[i]) return std::atoi(pa[i].c_str()) < std::atoi(pb[i].c_str());
  return pa.size() < pb.size();
}

}  // namespace

bool parse_energy_uj(const char* text, size_t len, uint64_t* value) {
  uint64_t v = 0;
  size_t i = 0;
  for (; i < len && text[i] >= '0' && text[i] <= '9'; ++i) {
    uint64_t digit = uint64_t(text[i] - '0');
    if (v > (UINT64_MAX - digit) / 10) return false;  // overflow
    v = v * 10 + digit;
  }
  if (i == 0) return false;
  for (; i < len; ++i)
    if (text[i] != '\n' && text[i] != ' ' && text[i] != '\0') return false;
  *value = v;
  return true;
}

std::vector<PowercapZone> discover_powercap_zones(const std::string& root) {
  std::vector<std::string> ids;
  if (DIR* dir = opendir(root.c_str())) {
    while (dirent* e = readdir(dir)) {
      std::string id = e->d_name;
      if (id[0] == '.') continue;
      if (access((root + "/" + id + "/energy_uj").c_str(), F_OK) == 0) ids.push_back(id);
    }
    closedir(dir);
  }
  std::sort(ids.begin(), ids.end(), natural_less);

  static const std::regex package_name(R"(package-(\d+)(-die-\d+)?)");
  std::vector<PowercapZone> zones;
  for (const std::string& id : ids) {
    PowercapZone z;
    z.id = id;
    z.name = read_first_line(root + "/" + id + "/name").value_or("");
    z.energy_path = root + "/" + id + "/energy_uj";
    if (auto max = read_first_line(root + "/" + id + "/max_energy_range_uj")) {
      uint64_t v;
      if (parse_energy_uj(max->data(), max->size(), &v)) z.max_energy_range_uj = v;
    }
    std::vector<std::string> parts = split_id(id);
    z.mmio = parts[0] == "intel-rapl-mmio";
    // the package of a zone is named by its top-level zone: "<type>:<N>"
    if (parts.size() >= 2) {
      std::string top = parts[0] + ":" + parts[1];
      std::smatch m;
      std::string top_name = read_first_line(root + "/" + top + "/name").value_or("");
      if (std::regex_match(top_name, m, package_name)) z.package = std::stoi(m[1]);
    }
    zones.push_back(z);
  }
  return zones;
}

std::string read_energy_uj(int fd, const std::string& path, uint64_t* value) {
  char buf[32];
  ssize_t n = pread(fd, buf, sizeof(buf), 0);
  if (n < 0) return path + ": read failed: " + errno_text(errno);
  if (!parse_energy_uj(buf, size_t(n), value))
    return path + ": not a decimal counter value (" + (n == 0 ? "empty" : "malformed") + ")";
  return "";
}

std::string powercap_unreadable_reason(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY);
  if (fd >= 0) {
    close(fd);
    return "";
  }
  return powercap_open_error(path, errno);
}

std::string powercap_open_error(const std::string& path, int err) {
  const size_t slash = path.rfind('/');
  const bool energy_uj = path.substr(slash == std::string::npos ? 0 : slash + 1) == "energy_uj";
  if (energy_uj && (err == EACCES || err == EPERM))
    return path + ": permission denied: energy_uj is readable by root only since Linux 5.10 "
                  "(CVE-2020-8694); run as root or grant read access with a udev rule";
  return path + ": " + errno_text(err);
}

std::string powercap_counter_name(const PowercapZone& zone) { return zone.id + "/energy_uj"; }

std::optional<std::vector<CounterVerdict>> judge_powercap_zones(
    const std::vector<PowercapZone>& zones, std::string* error, std::chrono::nanoseconds window) {
  std::vector<std::string> names;
  for (const PowercapZone& z : zones) names.push_back(powercap_counter_name(z));
  // open, read, close each time: a file replaced under its name (a fixture
  // rewritten by a test) is seen as it is now
  CounterSetRead read = [&zones](std::vector<uint64_t>* values) -> std::string {
    for (size_t i = 0; i < zones.size(); ++i) {
      const std::string& path = zones[i].energy_path;
      int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return path + ": " + errno_text(errno);
      std::string err = read_energy_uj(fd, path, &(*values)[i]);
      close(fd);
      if (!err.empty()) return err;
    }
    return "";
  };
  return judge_counters(names, {}, read, error, window);
}

}  // namespace raplbench

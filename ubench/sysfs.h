// sysfs.h - reading the one-line files of sysfs and procfs.
#pragma once

#include <fstream>
#include <optional>
#include <string>

namespace raplbench {

// The first line of `path` (without its newline), or nullopt if unreadable.
inline std::optional<std::string> read_first_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  if (!f || !std::getline(f, line)) return std::nullopt;
  return line;
}

}  // namespace raplbench

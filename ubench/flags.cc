// flags.cc - see flags.h.
#include "flags.h"

#include <cmath>
#include <cstdlib>

namespace raplbench {
namespace {

constexpr const char* kPlan = "--raplbench_plan";
constexpr const char* kWarmup = "--raplbench_warmup";

// "--name" or "--name=VALUE": true and *value set (empty without "=").
bool match(const std::string& arg, const std::string& name, std::string* value) {
  if (arg.compare(0, name.size(), name) != 0) return false;
  if (arg.size() > name.size() && arg[name.size()] != '=') return false;
  *value = arg.size() > name.size() ? arg.substr(name.size() + 1) : "";
  return true;
}

}  // namespace

Flags take_raplbench_flags(int* argc, char** argv) {
  Flags flags;
  int kept = 1;
  for (int i = 1; i < *argc; ++i) {
    const std::string arg = argv[i];
    std::string value;
    if (match(arg, kPlan, &value)) {
      if (value.empty()) flags.error = std::string(kPlan) + " needs a file: " + kPlan + "=PATH";
      flags.plan = value;
    } else if (match(arg, kWarmup, &value)) {
      char* end = nullptr;
      const double seconds = value.empty() ? -1 : std::strtod(value.c_str(), &end);
      if (end == nullptr || *end != '\0' || !std::isfinite(seconds) || seconds < 0)
        flags.error = std::string(kWarmup) + " takes a number of seconds >= 0: " + arg;
      else
        flags.warmup_seconds = seconds;
    } else {
      argv[kept++] = argv[i];
    }
  }
  *argc = kept;
  return flags;
}

}  // namespace raplbench

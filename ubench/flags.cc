// flags.cc - see flags.h.
#include "flags.h"

#include <cmath>
#include <cstdlib>

namespace raplbench {
namespace {

constexpr const char* kPlan = "--raplbench_plan";
constexpr const char* kWarmup = "--raplbench_warmup";
constexpr const char* kRateWindow = "--raplbench_rate_window";

// "--name" or "--name=VALUE": true and *value set (empty without "=").
bool match(const std::string& arg, const std::string& name, std::string* value) {
  if (arg.compare(0, name.size(), name) != 0) return false;
  if (arg.size() > name.size() && arg[name.size()] != '=') return false;
  *value = arg.size() > name.size() ? arg.substr(name.size() + 1) : "";
  return true;
}

// A plain number of seconds, finite, > 0 (>= 0 when `zero_ok`): *seconds
// set; otherwise `error` names the flag and the argument.
void take_seconds(const std::string& arg, const char* name, const std::string& value,
                  bool zero_ok, double* seconds, std::string* error) {
  char* end = nullptr;
  const double s = value.empty() ? std::nan("") : std::strtod(value.c_str(), &end);
  if (end == nullptr || *end != '\0' || !std::isfinite(s) || s < 0 || (s == 0 && !zero_ok))
    *error = std::string(name) + " takes a number of seconds " + (zero_ok ? ">= 0" : "> 0") +
             ": " + arg;
  else
    *seconds = s;
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
      take_seconds(arg, kWarmup, value, true, &flags.warmup_seconds, &flags.error);
    } else if (match(arg, kRateWindow, &value)) {
      take_seconds(arg, kRateWindow, value, false, &flags.rate_window_seconds, &flags.error);
    } else {
      argv[kept++] = argv[i];
    }
  }
  *argc = kept;
  return flags;
}

}  // namespace raplbench

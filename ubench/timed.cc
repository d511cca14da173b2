// timed.cc - see timed.h.
#include "timed.h"

namespace raplbench {
namespace {

std::chrono::nanoseconds& configured_warmup() {
  static std::chrono::nanoseconds warmup{0};
  return warmup;
}

}  // namespace

std::chrono::nanoseconds warmup_time() { return configured_warmup(); }

void set_warmup_time(std::chrono::nanoseconds warmup) { configured_warmup() = warmup; }

}  // namespace raplbench

// register.h - how an access path registers itself.
//
// Each access path is one source file in ubench/paths/ (CMake picks up every
// ubench/paths/*.cc) that defines a registration function and ends with
//
//   RAPLBENCH_PATH(300, register_msr_dev);
//
// Its tests are ubench/paths/<p>_test.cc (globbed too). The registration
// function may stay in an anonymous namespace; what the tests call is
// declared in ubench/paths/<p>.h (namespace raplbench, included as
// "paths/<p>.h"), as ubench/paths/powercap.h is: the tests link every path's
// object, and a registrar does nothing before register_all_paths().
//
// The function discovers what this machine offers, registers benchmarks for
// what can run and records an unavailable row (with the reason) for what
// cannot (manifest.h). main.cc runs every registered function once, in
// ascending order of the number, which is the order of the rows in the
// manifest: uinsn 100, powercap 200, msr-dev 300, perf 400, ebpf 500; a new
// path picks a free number (a number taken twice aborts the start-up). The
// numbers only order the rows; the list of path ids is results/schema.json
// (read through results/registry.py), where a new path's id is added.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "perf_events.h"

namespace raplbench {

// What the paths share, discovered at first use and kept for the others.
class PathContext {
 public:
  // `discover` finds the energy counters (tests pass a fake).
  explicit PathContext(std::function<EnergyCounters()> discover = [] {
    return raplbench::energy_counters();
  }) : discover_(std::move(discover)) {}

  // The energy counters the perf-event-based paths read (perf, ebpf): the
  // RAPL `power` PMU's energy events, liveness-probed, or the msr/tsc/
  // stand-in (perf_events.h). Discovered once, at the first call.
  const EnergyCounters& energy_counters();

 private:
  std::function<EnergyCounters()> discover_;
  std::optional<EnergyCounters> energy_counters_;
};

using PathRegistrar = void (*)(PathContext& context);

// Records `fn` under `name` to be run at position `order`; called by
// RAPLBENCH_PATH before main(). Returns true. An `order` already taken is
// recorded as a conflict (path_number_conflicts()), not resolved: static
// initialization order across files is unspecified, so two paths with one
// number would have no defined order.
bool add_path_registrar(int order, const char* name, PathRegistrar fn);

// The recorded registrars' names, in the order register_all_paths() runs them.
std::vector<std::string> path_registrar_names();

// The recorded registrars' numbers, in the same order.
std::vector<int> path_registrar_numbers();

// One line per number taken twice, naming both registrars, e.g.
// "RAPLBENCH_PATH number 300 is taken twice: register_msr_dev and
// register_rdpmc (each path needs a number of its own)"; empty if none.
std::vector<std::string> path_number_conflicts();

// Runs every recorded registrar once, in ascending `order`, sharing one
// PathContext. A programming error found at start-up (a number taken twice)
// is printed to standard error and aborts before any registrar runs.
void register_all_paths();

}  // namespace raplbench

// A static object whose initialization records `fn` (see above).
#define RAPLBENCH_PATH(order, fn)                           \
  [[maybe_unused]] static const bool raplbench_path_##fn = \
      ::raplbench::add_path_registrar(order, #fn, fn)

// Self-registration: the paths linked in (ubench/paths/*.cc) run in the
// order of their RAPLBENCH_PATH numbers, whatever the link order, and a
// registrar added here takes its place among them by its number; the shared
// energy counters are discovered once.
#include "register.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace raplbench {
namespace {

void register_nothing(PathContext&) {}
RAPLBENCH_PATH(250, register_nothing);

// The known paths keep the manifest's row order, with the one above among
// them; a path added later may sit anywhere (no edit here).
TEST(Register, PathsRunInTheOrderOfTheirNumbers) {
  const std::vector<std::string> expected = {"register_uinsn",   "register_powercap",
                                             "register_nothing", "register_msr_dev",
                                             "register_perf",    "register_ebpf"};
  std::vector<std::string> seen;
  for (const std::string& name : path_registrar_names())
    if (std::find(expected.begin(), expected.end(), name) != expected.end()) seen.push_back(name);
  EXPECT_EQ(seen, expected);
}

TEST(Register, TheContextDiscoversTheEnergyCountersOnceAtFirstUse) {
  int discoveries = 0;
  PathContext context([&] {
    ++discoveries;
    EnergyCounters found;
    found.unavailable = "fake: none";
    return found;
  });
  EXPECT_EQ(discoveries, 0);
  const EnergyCounters& first = context.energy_counters();
  const EnergyCounters& again = context.energy_counters();
  EXPECT_EQ(discoveries, 1);
  EXPECT_EQ(&first, &again);
  EXPECT_EQ(again.unavailable, "fake: none");
}

}  // namespace
}  // namespace raplbench

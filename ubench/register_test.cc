// Self-registration: the paths linked in (ubench/paths/*.cc) run in the
// order of their RAPLBENCH_PATH numbers, whatever the link order, and a
// registrar added here takes its place among them by its number; no number
// is taken twice; the shared energy counters are discovered once.
#include "register.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace raplbench {
namespace {

void register_nothing(PathContext&) {}
RAPLBENCH_PATH(250, register_nothing);

// The names below are no list of the paths (results/schema.json is): they
// check only the relative order of the paths known when this was written,
// which is the manifest's row order, with the one above among them. Paths
// not named are ignored, so a path added later needs no edit here.
TEST(Register, PathsRunInTheOrderOfTheirNumbers) {
  const std::vector<std::string> expected = {"register_uinsn",   "register_powercap",
                                             "register_nothing", "register_msr_dev",
                                             "register_perf",    "register_ebpf"};
  std::vector<std::string> seen;
  for (const std::string& name : path_registrar_names())
    if (std::find(expected.begin(), expected.end(), name) != expected.end()) seen.push_back(name);
  EXPECT_EQ(seen, expected);
}

// Two paths with one number would have no defined order (static
// initialization order across files is unspecified).
TEST(Register, EveryPathHasANumberOfItsOwn) {
  std::vector<int> numbers = path_registrar_numbers();
  EXPECT_EQ(numbers.size(), path_registrar_names().size());
  EXPECT_TRUE(std::adjacent_find(numbers.begin(), numbers.end()) == numbers.end())
      << ::testing::PrintToString(numbers);
  EXPECT_EQ(path_number_conflicts(), std::vector<std::string>{});
}

// A number taken twice is recorded, and aborts the start-up naming both
// registrars (in a child process: the recorded paths here stay as they are).
TEST(RegisterDeathTest, ANumberTakenTwiceAbortsTheStartUpNamingBoth) {
  EXPECT_DEATH(
      {
        add_path_registrar(250, "register_again", register_nothing);
        register_all_paths();
      },
      "raplbench-ubench: RAPLBENCH_PATH number 250 is taken twice: register_nothing and "
      "register_again \\(each path needs a number of its own\\)");
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

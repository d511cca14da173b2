// register.cc - see register.h.
#include "register.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace raplbench {
namespace {

struct Registrar {
  int order;
  std::string name;
  PathRegistrar fn;
};

// A function-local static: the registrars' static objects may be
// initialized before any namespace-scope object of this file.
std::vector<Registrar>& registrars() {
  static std::vector<Registrar> all;
  return all;
}

// The numbers taken twice, found as the registrars are recorded.
std::vector<std::string>& conflicts() {
  static std::vector<std::string> all;
  return all;
}

}  // namespace

const EnergyCounters& PathContext::energy_counters() {
  if (!energy_counters_) energy_counters_ = discover_();
  return *energy_counters_;
}

bool add_path_registrar(int order, const char* name, PathRegistrar fn) {
  for (const Registrar& r : registrars())
    if (r.order == order)
      conflicts().push_back("RAPLBENCH_PATH number " + std::to_string(order) +
                            " is taken twice: " + r.name + " and " + name +
                            " (each path needs a number of its own)");
  registrars().push_back({order, name, fn});
  return true;
}

namespace {

std::vector<Registrar> in_order() {
  std::vector<Registrar> sorted = registrars();
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Registrar& a, const Registrar& b) { return a.order < b.order; });
  return sorted;
}

}  // namespace

std::vector<std::string> path_registrar_names() {
  std::vector<std::string> names;
  for (const Registrar& r : in_order()) names.push_back(r.name);
  return names;
}

std::vector<int> path_registrar_numbers() {
  std::vector<int> numbers;
  for (const Registrar& r : in_order()) numbers.push_back(r.order);
  return numbers;
}

std::vector<std::string> path_number_conflicts() { return conflicts(); }

void register_all_paths() {
  if (!conflicts().empty()) {
    for (const std::string& conflict : conflicts())
      std::fprintf(stderr, "raplbench-ubench: %s\n", conflict.c_str());
    std::abort();
  }
  PathContext context;
  for (const Registrar& r : in_order()) r.fn(context);
}

}  // namespace raplbench

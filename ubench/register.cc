// register.cc - see register.h.
#include "register.h"

#include <algorithm>
#include <string>
#include <tuple>
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

}  // namespace

const EnergyCounters& PathContext::energy_counters() {
  if (!energy_counters_) energy_counters_ = discover_();
  return *energy_counters_;
}

bool add_path_registrar(int order, const char* name, PathRegistrar fn) {
  registrars().push_back({order, name, fn});
  return true;
}

namespace {

std::vector<Registrar> in_order() {
  std::vector<Registrar> sorted = registrars();
  std::sort(sorted.begin(), sorted.end(), [](const Registrar& a, const Registrar& b) {
    return std::tie(a.order, a.name) < std::tie(b.order, b.name);
  });
  return sorted;
}

}  // namespace

std::vector<std::string> path_registrar_names() {
  std::vector<std::string> names;
  for (const Registrar& r : in_order()) names.push_back(r.name);
  return names;
}

void register_all_paths() {
  PathContext context;
  for (const Registrar& r : in_order()) r.fn(context);
}

}  // namespace raplbench

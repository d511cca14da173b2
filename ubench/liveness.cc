// liveness.cc - see liveness.h.
#include "liveness.h"

#include <algorithm>
#include <thread>

namespace raplbench {

const char* liveness_name(Liveness liveness) {
  switch (liveness) {
    case Liveness::Live: return "live";
    case Liveness::Frozen: return "frozen";
    case Liveness::NoUnit: return "no-unit";
  }
  return "?";
}

RowVerdict worst_of(const std::vector<CounterVerdict>& counters) {
  RowVerdict row;
  for (const CounterVerdict& c : counters) {
    row.liveness = row.liveness ? std::max(*row.liveness, c.liveness) : c.liveness;
    if (c.liveness != Liveness::Live) row.note += (row.note.empty() ? "" : "; ") + c.note;
  }
  return row;
}

RowVerdict worst_of(const std::vector<CounterVerdict>& all, const std::vector<std::string>& names) {
  std::vector<CounterVerdict> chosen;
  for (const CounterVerdict& c : all)
    if (std::find(names.begin(), names.end(), c.counter) != names.end()) chosen.push_back(c);
  return worst_of(chosen);
}

std::optional<std::vector<CounterVerdict>> judge_counters(
    const std::vector<std::string>& names, const std::vector<std::string>& unit_problems,
    const CounterSetRead& read, std::string* error, std::chrono::nanoseconds window,
    std::chrono::nanoseconds poll) {
  const size_t n = names.size();
  std::vector<CounterVerdict> verdicts(n);
  std::vector<bool> pending(n, false);  // probed and not seen to change yet
  size_t left = 0;
  for (size_t i = 0; i < n; ++i) {
    verdicts[i].counter = names[i];
    if (i < unit_problems.size() && !unit_problems[i].empty()) {
      verdicts[i].liveness = Liveness::NoUnit;
      verdicts[i].note = names[i] + ": " + unit_problems[i];
    } else {
      pending[i] = true;
      ++left;
    }
  }
  if (left == 0) return verdicts;

  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  std::vector<uint64_t> first(n), now(n);
  if ((*error = read(&first)) != "") return std::nullopt;
  int reads = 1;
  do {  // at least a second read, however late the first one returned
    std::this_thread::sleep_for(poll);
    if ((*error = read(&now)) != "") return std::nullopt;
    ++reads;
    for (size_t i = 0; i < n; ++i)
      if (pending[i] && now[i] != first[i]) {
        pending[i] = false;
        --left;
      }
  } while (left > 0 && Clock::now() - start < window);
  const auto elapsed_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  for (size_t i = 0; i < n; ++i) {
    if (!pending[i]) continue;
    verdicts[i].liveness = Liveness::Frozen;
    verdicts[i].note = names[i] + ": did not change in " + std::to_string(elapsed_ms) + " ms (" +
                       std::to_string(reads) + " reads): a dead counter, it yields no energy";
  }
  return verdicts;
}

}  // namespace raplbench

// liveness.h - is an energy counter alive? One verdict per counter, computed
// where the counter is discovered (never in a timed loop):
//
//   live     its raw value changed within the probe window, and its unit is
//            plausible;
//   frozen   it did not change within the window: a dead counter (a VM, a
//            driver without support, an unsupported domain);
//   no-unit  its unit is implausible, so the value is not energy (an energy
//            unit MSR of 0, a perf event whose unit is not Joules). Checked
//            first, without probing the counter.
//
// A row that reads several counters takes the worst verdict of them
// (no-unit > frozen > live) and a note naming every counter that is not live.
// Stand-ins, instruction paths and unavailable rows get no verdict at all.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace raplbench {

// The probe's constants, in one place. RAPL updates its energy counters about
// every 976 µs (Intel SDM vol. 3B 15.10.1; AMD's ~1 ms), so a 1 ms poll sees
// each update, and a counter that has not moved after 100 ms has missed about
// 100 updates: it is dead, not slow.
constexpr std::chrono::milliseconds kLivenessPoll{1};
constexpr std::chrono::milliseconds kLivenessWindow{100};

// In ascending order of badness: worst_of() relies on it.
enum class Liveness { Live, Frozen, NoUnit };

// "live", "frozen", "no-unit": the spelling of the results schema.
const char* liveness_name(Liveness liveness);

struct CounterVerdict {
  std::string counter;  // what a person recognizes: "intel-rapl:0/energy_uj", "MSR 0x611 on CPU 0"
  Liveness liveness = Liveness::Live;
  std::string note;     // empty when live; otherwise one line that starts with `counter`
};

// The verdict of a row (or of any set of counters read together).
struct RowVerdict {
  std::optional<Liveness> liveness;  // nullopt: no energy counter, no verdict
  std::string note;                  // empty when live or no verdict
};

// The worst verdict of `counters`, with the notes of those that are not live
// joined by "; ". No counters: no verdict.
RowVerdict worst_of(const std::vector<CounterVerdict>& counters);

// The worst verdict of those counters of `all` whose names are in `names`
// (the counters one row reads). None of them judged: no verdict.
RowVerdict worst_of(const std::vector<CounterVerdict>& all, const std::vector<std::string>& names);

// Reads every counter of a set once, in a fixed order, into (*values)[i]
// (the vector comes sized). Returns an empty string, or the read error.
using CounterSetRead = std::function<std::string(std::vector<uint64_t>* values)>;

// Judges the counters `names`: counter i with a non-empty `unit_problems[i]`
// is no-unit with that text ("unit 'Watts', scale 1: not an energy counter").
// The others are probed: the whole set is read every `poll` until each of
// them has changed once or `window` has passed (no read at all when none is
// left to probe). A read error is no verdict: nullopt and *error set.
std::optional<std::vector<CounterVerdict>> judge_counters(
    const std::vector<std::string>& names, const std::vector<std::string>& unit_problems,
    const CounterSetRead& read, std::string* error,
    std::chrono::nanoseconds window = kLivenessWindow,
    std::chrono::nanoseconds poll = kLivenessPoll);

}  // namespace raplbench

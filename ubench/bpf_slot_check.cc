// bpf_slot_check.cc - see bpf_slot_check.h.
#include "bpf_slot_check.h"

#include <cstring>
#include <thread>

namespace raplbench {

std::string slot_error_text(int err) {
  const char* name = strerrorname_np(err < 0 ? -err : err);
  return "err " + std::to_string(err) + " (" + (name ? name : "?") + ")";
}

std::string check_slot(int cpu, const SlotLoad& load, const std::string& trigger,
                       std::chrono::nanoseconds window, std::chrono::nanoseconds poll) {
  const std::string slot_name = "BPF slot of CPU " + std::to_string(cpu);
  const std::string never_settled = slot_name + ": never settled (its seqlock kept moving)";
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  rb_slot slot;
  if (!load(&slot)) return never_settled;
  // the program counts every tick and every failed read (err_ticks): the
  // differences are exact however many ticks fall between two looks
  const rb_slot first = slot;
  int last_err = 0;
  do {
    std::this_thread::sleep_for(poll);
    if (!load(&slot)) return never_settled;
    if (slot.err != 0) last_err = slot.err;
  } while (Clock::now() - start < window);
  const uint64_t seen = slot.ticks - first.ticks;
  const uint64_t with_error = slot.err_ticks - first.err_ticks;
  const std::string ms = std::to_string(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count());
  if (seen == 0) {
    const double floor_hz = 1e9 / double(std::chrono::nanoseconds(window).count());
    char hz[32];
    std::snprintf(hz, sizeof(hz), "%g", floor_hz);
    return slot_name + ": no tick in " + ms + " ms: " + trigger + " fires below " + hz +
           " Hz on this CPU";
  }
  if (with_error > 0)
    return slot_name + ": " + slot_error_text(last_err) + " on " + std::to_string(with_error) +
           " of " + std::to_string(seen) + " ticks seen in " + ms + " ms";
  return "";
}

}  // namespace raplbench

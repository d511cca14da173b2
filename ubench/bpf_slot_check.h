// bpf_slot_check.h - is a CPU's slot of the BPF sampler data? Checked before
// a slot is timed: a slot whose program reports an error (err != 0: the perf
// event could not be read) or whose tick count does not advance (the trigger
// does not fire on that CPU: the cpu-clock fallback can fire far below 1 kHz,
// even at 0 Hz on an idle VM CPU) holds no values to measure.
#pragma once

#include <chrono>
#include <functional>
#include <string>

extern "C" {
#include <linux/types.h>

#include "counters.h"
}

namespace raplbench {

// 500 ms is 500 ticks at the 1 kHz the program is asked for: a slot with no
// tick in that time fires below 2 Hz. rbench watches as long (SLOT_CHECK in
// rbench/src/paths/ebpf.rs), so a slow slot is no data in both harnesses.
constexpr std::chrono::milliseconds kSlotCheckWindow{500};
constexpr std::chrono::milliseconds kSlotCheckPoll{1};

// Copies the slot under its seqlock; false if it never settled.
using SlotLoad = std::function<bool(rb_slot* slot)>;

// Watches the slot of CPU `cpu` for `window`. Returns an empty string if its
// tick count advanced and no tick's read failed (the slot's err_ticks did not
// grow); otherwise why the
// slot is not data, e.g.
//   "BPF slot of CPU 0: err -2 (ENOENT) on 3 of 480 ticks seen in 500 ms"
//   "BPF slot of CPU 1: no tick in 500 ms: <trigger> fires below 2 Hz on this CPU"
std::string check_slot(int cpu, const SlotLoad& load, const std::string& trigger,
                       std::chrono::nanoseconds window = kSlotCheckWindow,
                       std::chrono::nanoseconds poll = kSlotCheckPoll);

// "err -2 (ENOENT)": a slot's error as the program stores it (a negative errno).
std::string slot_error_text(int err);

}  // namespace raplbench

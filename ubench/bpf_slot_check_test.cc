// The slot check on fake slots: no BPF, no root, no rate assumed.
#include "bpf_slot_check.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace raplbench {
namespace {

using std::chrono::milliseconds;

// A slot whose tick count grows by one at each load, with `err` (and one
// more failed tick in err_ticks) from the load numbered `err_from` on
// (1-based; 0: never).
SlotLoad ticking(int err, int err_from, int* loads) {
  return [=](rb_slot* slot) {
    ++*loads;
    *slot = rb_slot{};
    slot->ticks = uint64_t(*loads);
    const bool failing = err_from != 0 && *loads >= err_from;
    slot->err = failing ? err : 0;
    slot->err_ticks = failing ? uint64_t(*loads - err_from + 1) : 0;
    return true;
  };
}

TEST(BpfSlotCheck, ATickingSlotWithoutErrorIsData) {
  int loads = 0;
  EXPECT_EQ(check_slot(0, ticking(0, 0, &loads), "bpf_timer", milliseconds(5)), "");
  EXPECT_GE(loads, 2);
}

TEST(BpfSlotCheck, ErrorsAreCountedAndNamed) {
  int loads = 0;
  std::string why = check_slot(2, ticking(-ENOENT, 1, &loads), "bpf_timer", milliseconds(5));
  EXPECT_EQ(why.rfind("BPF slot of CPU 2: err -2 (ENOENT) on ", 0), 0u) << why;
  const std::string all = std::to_string(loads - 1);  // every load after the first saw a tick
  EXPECT_NE(why.find("on " + all + " of " + all + " ticks seen in "), std::string::npos) << why;
}

TEST(BpfSlotCheck, FailedTicksBetweenTwoLooksAreAllCounted) {
  int loads = 0;
  auto busy_failing = [&loads](rb_slot* slot) {  // 10 ticks, 3 of them failed, per look
    ++loads;
    *slot = rb_slot{};
    slot->ticks = 10 * uint64_t(loads);
    slot->err_ticks = 3 * uint64_t(loads);
    slot->err = loads % 2 ? -EIO : 0;  // the last error may be gone by the next look
    return true;
  };
  std::string why = check_slot(0, busy_failing, "bpf_timer", milliseconds(5));
  const int looks = loads - 1;
  EXPECT_NE(why.find("on " + std::to_string(3 * looks) + " of " + std::to_string(10 * looks) +
                     " ticks seen in "),
            std::string::npos)
      << why;
}

TEST(BpfSlotCheck, ASlotThatDoesNotTickIsNotData) {
  auto frozen = [](rb_slot* slot) {
    *slot = rb_slot{};
    slot->ticks = 7;
    return true;
  };
  std::string why = check_slot(1, frozen, "perf cpu-clock event (fallback)", milliseconds(5));
  EXPECT_EQ(why.rfind("BPF slot of CPU 1: no tick in ", 0), 0u) << why;
  EXPECT_NE(why.find("perf cpu-clock event (fallback) fires below 200 Hz"), std::string::npos)
      << why;
}

// The default window is rbench's SLOT_CHECK (rbench/src/paths/ebpf.rs,
// 500 ms): a slot ticking between 2 and 20 Hz is no data in both harnesses.
TEST(BpfSlotCheck, TheDefaultWindowIsHalfASecondAsInRbench) {
  EXPECT_EQ(kSlotCheckWindow, milliseconds(500));
  auto frozen = [](rb_slot* slot) {
    *slot = rb_slot{};
    return true;
  };
  std::string why = check_slot(3, frozen, "bpf_timer");  // watches for the whole window
  EXPECT_EQ(why.rfind("BPF slot of CPU 3: no tick in ", 0), 0u) << why;
  EXPECT_NE(why.find(" ms: bpf_timer fires below 2 Hz on this CPU"), std::string::npos) << why;
  const int ms = std::stoi(why.substr(std::string("BPF slot of CPU 3: no tick in ").size()));
  EXPECT_GE(ms, 500) << why;
}

TEST(BpfSlotCheck, ASlotThatNeverSettlesIsNotData) {
  auto busy = [](rb_slot*) { return false; };
  EXPECT_EQ(check_slot(0, busy, "bpf_timer", milliseconds(5)),
            "BPF slot of CPU 0: never settled (its seqlock kept moving)");
}

}  // namespace
}  // namespace raplbench

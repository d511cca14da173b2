// The liveness probe on fake counters: one that never advances (a VM whose
// RAPL reads a constant), one that advances on the third read, unit-less
// ones, and the worst-of combination. No hardware, no root, no time limit:
// a live fake is probed with a long window it never needs, a frozen one with
// a short window.
#include "liveness.h"

#include <gtest/gtest.h>

namespace raplbench {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Counter i reads `base[i]` until the read numbered `moves_at[i]` (1-based;
// 0: never), then base[i] + 1.
struct FakeCounters {
  std::vector<uint64_t> base;
  std::vector<int> moves_at;
  int reads = 0;
  CounterSetRead reader() {
    return [this](std::vector<uint64_t>* values) {
      ++reads;
      for (size_t i = 0; i < base.size(); ++i)
        (*values)[i] = base[i] + (moves_at[i] != 0 && reads >= moves_at[i] ? 1 : 0);
      return std::string();
    };
  }
};

TEST(Liveness, ACounterThatNeverAdvancesIsFrozen) {
  FakeCounters fake{{0}, {0}};
  std::string error;
  auto v = judge_counters({"power/energy-psys/ on CPU 0"}, {}, fake.reader(), &error,
                          milliseconds(5));
  ASSERT_TRUE(v) << error;
  ASSERT_EQ(v->size(), 1u);
  EXPECT_EQ((*v)[0].liveness, Liveness::Frozen);
  EXPECT_GE(fake.reads, 2);
  const std::string& note = (*v)[0].note;
  EXPECT_EQ(note.rfind("power/energy-psys/ on CPU 0: did not change in ", 0), 0u) << note;
  EXPECT_NE(note.find("(" + std::to_string(fake.reads) + " reads)"), std::string::npos) << note;
  EXPECT_NE(note.find("a dead counter"), std::string::npos) << note;
}

TEST(Liveness, ACounterThatAdvancesOnTheThirdReadIsLiveAndEndsTheProbe) {
  FakeCounters fake{{7}, {3}};
  std::string error;
  auto v = judge_counters({"intel-rapl:0/energy_uj"}, {}, fake.reader(), &error, seconds(60));
  ASSERT_TRUE(v) << error;
  EXPECT_EQ((*v)[0].liveness, Liveness::Live);
  EXPECT_TRUE((*v)[0].note.empty());
  EXPECT_EQ(fake.reads, 3);  // stopped as soon as it moved, not at the window
}

TEST(Liveness, TheProbeWaitsForEveryCounterOfTheSet) {
  FakeCounters fake{{1, 1, 1}, {2, 5, 0}};
  std::string error;
  auto v = judge_counters({"a", "b", "c"}, {}, fake.reader(), &error, milliseconds(30));
  ASSERT_TRUE(v) << error;
  EXPECT_EQ((*v)[0].liveness, Liveness::Live);
  EXPECT_EQ((*v)[1].liveness, Liveness::Live);
  EXPECT_EQ((*v)[2].liveness, Liveness::Frozen);
  EXPECT_GE(fake.reads, 5);
}

TEST(Liveness, NoUnitWinsWithoutProbing) {
  FakeCounters fake{{0, 0}, {2, 2}};
  std::string error;
  auto v = judge_counters({"power/energy-foo/", "power/energy-bar/"},
                          {"unit 'Watts', scale 1: not an energy counter",
                           "unit 'Joules', scale nan: not an energy counter"},
                          fake.reader(), &error, seconds(60));
  ASSERT_TRUE(v) << error;
  EXPECT_EQ(fake.reads, 0);
  EXPECT_EQ((*v)[0].liveness, Liveness::NoUnit);
  EXPECT_EQ((*v)[0].note, "power/energy-foo/: unit 'Watts', scale 1: not an energy counter");
  EXPECT_EQ((*v)[1].liveness, Liveness::NoUnit);
}

TEST(Liveness, AReadErrorIsNoVerdict) {
  int reads = 0;
  CounterSetRead failing = [&](std::vector<uint64_t>* values) {
    (*values)[0] = 0;
    return ++reads == 2 ? std::string("energy_uj: read failed: Permission denied") : "";
  };
  std::string error;
  EXPECT_FALSE(judge_counters({"x"}, {}, failing, &error, seconds(60)).has_value());
  EXPECT_EQ(error, "energy_uj: read failed: Permission denied");
}

TEST(Liveness, TheWorstVerdictWinsAndNamesEveryDeadCounter) {
  CounterVerdict live{"a", Liveness::Live, ""};
  CounterVerdict frozen{"b", Liveness::Frozen, "b: did not change"};
  CounterVerdict no_unit{"c", Liveness::NoUnit, "c: no energy unit"};
  EXPECT_FALSE(worst_of({}).liveness.has_value());
  RowVerdict all_live = worst_of({live, live});
  EXPECT_EQ(all_live.liveness, Liveness::Live);
  EXPECT_EQ(all_live.note, "");
  RowVerdict row = worst_of({frozen, live, no_unit});
  EXPECT_EQ(row.liveness, Liveness::NoUnit);
  EXPECT_EQ(row.note, "b: did not change; c: no energy unit");
  EXPECT_EQ(worst_of({live, frozen}).liveness, Liveness::Frozen);
  // the counters one row reads, chosen by name
  EXPECT_EQ(worst_of({live, frozen, no_unit}, {"a", "b"}).liveness, Liveness::Frozen);
  EXPECT_EQ(worst_of({live, frozen, no_unit}, {"a"}).liveness, Liveness::Live);
  EXPECT_FALSE(worst_of({live, frozen}, {"zz"}).liveness.has_value());
}

TEST(Liveness, SchemaSpelling) {
  EXPECT_STREQ(liveness_name(Liveness::Live), "live");
  EXPECT_STREQ(liveness_name(Liveness::Frozen), "frozen");
  EXPECT_STREQ(liveness_name(Liveness::NoUnit), "no-unit");
}

}  // namespace
}  // namespace raplbench

// ubench reads rbench's plan: the rows gbench times, in order, each
// registered under its id; what it cannot open becomes a benchmark that
// says so, never a missing one.
#include "plan.h"

#include <gtest/gtest.h>

#include <map>

#include "register.h"

namespace raplbench {
namespace {

using nlohmann::json;

json row(const std::string& path, const std::string& op, json harnesses, json open,
         json reason = nullptr) {
  return {{"id", path + "/" + op + "/t@1->0"}, {"path", path}, {"op", op}, {"target", "t"}, {"cpu", 1}, {"target_cpu", 0},
          {"stand_in", nullptr}, {"liveness", nullptr}, {"liveness_note", nullptr},
          {"metric", "latency"}, {"unit", "ns"}, {"harnesses", harnesses},
          {"status", reason.is_null() ? "ok" : "unavailable"}, {"reason", reason}, {"open", open}};
}

TEST(Plan, KeepsTheRowsGbenchTimesInOrder) {
  const json plan = {{"plan_version", kPlanVersion},
                     {"rows",
                      {row("uinsn", "nop", {"gbench"}, {{"insn", "nop"}}),
                       row("msr-dev", "pread", {"criterion"}, {{"device", "x"}}),
                       row("perf", "read", {"gbench", "criterion"}, nullptr, "no PMU")}}};
  std::string why;
  const auto rows = parse_plan(plan.dump(), &why);
  ASSERT_TRUE(rows) << why;
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0]["path"], "uinsn");
  EXPECT_EQ((*rows)[1]["reason"], "no PMU");
}

TEST(Plan, ARowWithATargetStateCarriesThePlansTickRate) {
  json idle = row("msr-dev", "pread", {"gbench"}, {{"device", "x"}});
  json ticking = idle, same_cpu = idle;
  idle["target_load"] = "idle";
  ticking["target_load"] = "ticking";
  same_cpu["target_load"] = nullptr;
  const json plan = {{"plan_version", kPlanVersion}, {"target_tick_hz", 1000},
                     {"rows", {idle, ticking, same_cpu}}};
  std::string why;
  const auto rows = parse_plan(plan.dump(), &why);
  ASSERT_TRUE(rows) << why;
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ((*rows)[0]["target_tick_hz"], 1000);
  EXPECT_EQ((*rows)[1]["target_tick_hz"], 1000);
  EXPECT_FALSE((*rows)[2].contains("target_tick_hz"));
  // a plan without a rate: the ticking row says so when registered (register.h)
  const auto no_rate =
      parse_plan(json{{"plan_version", kPlanVersion}, {"rows", {ticking}}}.dump(), &why);
  ASSERT_TRUE(no_rate) << why;
  EXPECT_TRUE((*no_rate)[0]["target_tick_hz"].is_null());
}

TEST(Plan, RefusesWhatIsNotAPlanOfItsVersion) {
  std::string why;
  EXPECT_FALSE(parse_plan("[1, 2]", &why));
  EXPECT_NE(why.find("not a raplbench plan"), std::string::npos) << why;
  EXPECT_FALSE(parse_plan(json{{"plan_version", 99}, {"rows", json::array()}}.dump(), &why));
  EXPECT_NE(why.find("plan_version 99"), std::string::npos) << why;
  EXPECT_FALSE(parse_plan(json{{"plan_version", kPlanVersion}, {"rows", {{{"path", "x"}}}}}.dump(),
                          &why));
  EXPECT_FALSE(load_plan("/nonexistent/plan.json", &why));
  EXPECT_NE(why.find("/nonexistent/plan.json"), std::string::npos) << why;
  EXPECT_FALSE(run_planner("/nonexistent/raplbench-plan", &why));
  EXPECT_NE(why.find("--raplbench_plan=FILE"), std::string::npos) << why;
}

// Keeps what the benchmarks report, instead of printing it.
class Collect : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) got[r.benchmark_name()] = r.error_occurred ? r.error_message : "ok";
  }
  std::map<std::string, std::string> got;
};

TEST(Plan, EveryRunnableRowRunsUnderItsIdEvenWhatItCannotOpen) {
  json unavailable = row("perf", "plan-test-unavailable", {"gbench"}, nullptr, "no PMU");
  json unknown = row("no-such-route", "plan-test-unknown", {"gbench"}, {{"no-such-open", 1}});
  json nothing = row("perf", "plan-test-nothing", {"gbench"}, nullptr);
  for (json* r : {&unavailable, &unknown, &nothing}) (*r)["cpu"] = nullptr;  // no pinning
  register_plan({unavailable, unknown, nothing});
  Collect collect;
  benchmark::RunSpecifiedBenchmarks(&collect, "plan-test-");
  EXPECT_EQ(collect.got.count(unavailable["id"]), 0u);  // the plan says why: no benchmark
  EXPECT_EQ(collect.got[unknown["id"].get<std::string>() + "/iterations:1"],
            "unavailable: this ubench cannot open {\"no-such-open\":1}: rebuild it (make build)");
  EXPECT_EQ(collect.got[nothing["id"].get<std::string>() + "/iterations:1"],
            "unavailable: the plan says to open nothing: null");
}

}  // namespace
}  // namespace raplbench

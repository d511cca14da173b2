// ubench reads rbench's plan: the rows gbench times, in order; what it
// cannot open becomes a row that says so, never a missing row.
#include "plan.h"

#include <gtest/gtest.h>

#include "manifest.h"

namespace raplbench {
namespace {

using nlohmann::json;

json row(const std::string& path, const std::string& op, json harnesses, json open,
         json reason = nullptr) {
  return {{"path", path}, {"op", op}, {"target", "t"}, {"cpu", 1}, {"target_cpu", 0},
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

TEST(Plan, BenchNamesHaveTheTargetAndPlacementWhereTheRowHasThem) {
  EXPECT_EQ(bench_name(row("msr-dev", "pread", {"gbench"}, nullptr)), "msr-dev/pread/t/1->0");
  json no_target = row("powercap", "pread", {"gbench"}, nullptr);
  no_target["target"] = nullptr;
  no_target["target_cpu"] = nullptr;
  EXPECT_EQ(bench_name(no_target), "powercap/pread/1");
}

TEST(Plan, EveryRowIsInTheManifestEvenWhatItCannotOpen) {
  json unavailable = row("perf", "read", {"gbench"}, nullptr, "plan-test: no PMU");
  json unknown = row("rdpmc", "plan-test-unknown", {"gbench"}, {{"rdpmc", 1}});
  register_plan({unavailable, unknown});
  const json manifest = json::parse(manifest_json());
  json got_unavailable, got_unknown;
  for (const json& m : manifest["rows"]) {
    if (m["reason"] == "plan-test: no PMU") got_unavailable = m;
    if (m["op"] == "plan-test-unknown") got_unknown = m;
  }
  EXPECT_EQ(got_unavailable["status"], "unavailable");
  EXPECT_EQ(got_unknown["status"], "unavailable");
  EXPECT_NE(got_unknown["reason"].get<std::string>().find("cannot open {\"rdpmc\":1}"),
            std::string::npos)
      << got_unknown;
}

}  // namespace
}  // namespace raplbench

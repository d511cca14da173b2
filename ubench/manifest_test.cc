// The manifest's format (the contract both harnesses write): the header
// keys, one row per line, every row's keys in order, the plan row's fields
// as they are, and no verdict where nothing was measured.
#include "manifest.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace raplbench {
namespace {

using nlohmann::json;

// A plan row (plan.h) as rbench writes it.
json plan_row(const std::string& op, const std::string& target) {
  return {{"path", "msr-dev"}, {"op", op}, {"target", target}, {"cpu", 1}, {"target_cpu", 0},
          {"stand_in", nullptr}, {"liveness", "frozen"}, {"liveness_note", "MSR 0x611: dead"},
          {"metric", "latency"}, {"unit", "ns"}, {"harnesses", {"gbench"}}, {"status", "ok"},
          {"reason", nullptr}, {"open", {{"device", "/dev/cpu/0/msr"}}}};
}

// Rows are added to the one manifest of the process: each test adds its own
// and finds them by their benchmark or target names.
json row_with(const std::string& needle) {
  std::istringstream lines(manifest_json());
  for (std::string line; std::getline(lines, line);)
    if (line.find(needle) != std::string::npos)
      return json::parse(line.back() == ',' ? line.substr(0, line.size() - 1) : line);
  return nullptr;
}

TEST(Manifest, HasTheVersionAndHarnessAndOneRowPerLineWithTheKeysInOrder) {
  add_benchmark("manifest-test/order", plan_row("pread", "0x611"), [](benchmark::State&) {});
  add_unavailable(plan_row("pread", "manifest-test-unavailable"), "manifest-test: no device");
  const std::string text = manifest_json();
  EXPECT_EQ(text.rfind("{\"manifest_version\": 1, \"harness\": \"gbench\", \"rows\": [\n", 0), 0u);
  EXPECT_EQ(text.substr(text.size() - 4), "\n]}\n");
  EXPECT_EQ(json::parse(text)["harness"], "gbench");
  const json ok = row_with("manifest-test/order");
  // (nlohmann::json sorts the keys it parses: their order is checked on the text below)
  EXPECT_EQ(ok["value"], "real_time");
  EXPECT_EQ(ok["status"], "ok");
  EXPECT_EQ(ok["liveness"], "frozen");
  EXPECT_EQ(ok["cpu"], 1);
  EXPECT_FALSE(ok.contains("open") || ok.contains("harnesses"));
  const json unavailable = row_with("manifest-test-unavailable");
  EXPECT_EQ(unavailable["bench"], nullptr);
  EXPECT_EQ(unavailable["value"], nullptr);
  EXPECT_EQ(unavailable["liveness"], nullptr);  // nothing measured: no verdict
  EXPECT_EQ(unavailable["status"], "unavailable");
  EXPECT_EQ(unavailable["reason"], "manifest-test: no device");
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line) && line.find("manifest-test/order") == std::string::npos) {
  }
  size_t at = 0;
  for (const char* key : {"bench", "value", "path", "op", "target", "cpu", "target_cpu",
                          "stand_in", "liveness", "liveness_note", "metric", "unit", "status",
                          "reason"}) {
    const size_t found = line.find("\"" + std::string(key) + "\":", at);
    ASSERT_NE(found, std::string::npos) << key << " in " << line;
    at = found;
  }
}

TEST(Manifest, CounterRowsNameTheirCounter) {
  const std::string bench =
      add_benchmark("manifest-test/rate", plan_row("tick", "manifest-test-rate-0"),
                    [](benchmark::State&) {}, "counter:rate_hz_cpu0", 1);
  EXPECT_EQ(bench, "manifest-test/rate/iterations:1");
  add_counter_row(bench, "rate_hz_cpu1", plan_row("tick", "manifest-test-rate-1"));
  EXPECT_EQ(row_with("manifest-test-rate-0")["value"], "counter:rate_hz_cpu0");
  EXPECT_EQ(row_with("manifest-test-rate-1")["value"], "counter:rate_hz_cpu1");
  EXPECT_EQ(row_with("manifest-test-rate-1")["bench"], bench);
}

TEST(Manifest, IsWrittenToAFileOrSaysWhyNot) {
  const std::string path = ::testing::TempDir() + "manifest-test.json";
  ASSERT_EQ(write_manifest(path), "");
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  EXPECT_EQ(text.str(), manifest_json());
  std::remove(path.c_str());
  EXPECT_NE(write_manifest("/nonexistent-dir/manifest.json").find(
                "cannot write the manifest to /nonexistent-dir/manifest.json: "),
            std::string::npos);
}

}  // namespace
}  // namespace raplbench

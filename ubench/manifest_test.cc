// The manifest's format (the contract both harnesses write): the header
// keys, one row per line, every row's keys in order, and the liveness keys
// right after stand_in, null unless a measured row reads a real energy
// counter.
#include "manifest.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace raplbench {
namespace {

// Rows are added to the one manifest of the process: each test adds its own
// and finds them by their benchmark or target names.
std::string line_with(const std::string& json, const std::string& needle) {
  std::istringstream lines(json);
  for (std::string line; std::getline(lines, line);)
    if (line.find(needle) != std::string::npos) return line;
  return "";
}

TEST(Manifest, HasTheVersionAndHarnessAndOneRowPerLineWithTheKeysInOrder) {
  RowMeta meta{"msr-dev", "pread", "cpuid:0x0", 1, 0, "why"};
  add_benchmark("manifest-test/order", meta, [](benchmark::State&) {});
  add_unavailable(RowMeta{"msr-dev", "pread", "", std::nullopt, std::nullopt, ""},
                  "manifest-test: no device");
  const std::string json = manifest_json();
  EXPECT_EQ(json.rfind("{\"manifest_version\": 1, \"harness\": \"gbench\", \"rows\": [\n", 0), 0u)
      << json;
  EXPECT_EQ(json.substr(json.size() - 4), "\n]}\n") << json;
  EXPECT_EQ(line_with(json, "manifest-test/order"),
            "{\"bench\": \"manifest-test/order\", \"value\": \"real_time\", \"path\": \"msr-dev\", "
            "\"op\": \"pread\", \"target\": \"cpuid:0x0\", \"cpu\": 1, \"target_cpu\": 0, "
            "\"stand_in\": \"why\", \"liveness\": null, \"liveness_note\": null, "
            "\"metric\": \"latency\", \"unit\": \"ns\", \"status\": \"ok\", \"reason\": null},");
  const std::string unavailable = line_with(json, "manifest-test: no device");
  EXPECT_EQ(unavailable.rfind(
                "{\"bench\": null, \"value\": null, \"path\": \"msr-dev\", \"op\": \"pread\", "
                "\"target\": null, \"cpu\": null, \"target_cpu\": null, \"stand_in\": null, "
                "\"liveness\": null, \"liveness_note\": null, \"metric\": \"latency\", "
                "\"unit\": \"ns\", \"status\": \"unavailable\", "
                "\"reason\": \"manifest-test: no device\"}",
                0),
            0u)
      << unavailable;
}

TEST(Manifest, LivenessFollowsStandInAndIsNullWhereThereIsNoVerdict) {
  const RowVerdict frozen{Liveness::Frozen, "intel-rapl:0/energy_uj: did not change"};
  RowMeta real{"powercap", "pread", "intel-rapl:0/energy_uj", 0, 0, ""};
  add_benchmark("manifest-test/real", real.set_liveness(frozen), [](benchmark::State&) {});
  RowMeta stand_in{"perf", "read", "msr/tsc/", 0, 0, "no RAPL here"};
  add_benchmark("manifest-test/stand-in", stand_in.set_liveness(frozen), [](benchmark::State&) {});
  add_unavailable(RowMeta{"perf", "read", "power/energy-pkg/", 0, 0, ""}.set_liveness(frozen),
                  "manifest-test: denied");

  const std::string json = manifest_json();
  EXPECT_NE(line_with(json, "manifest-test/real")
                .find("\"stand_in\": null, \"liveness\": \"frozen\", \"liveness_note\": "
                      "\"intel-rapl:0/energy_uj: did not change\", \"metric\""),
            std::string::npos)
      << json;
  EXPECT_NE(line_with(json, "manifest-test/stand-in")
                .find("\"stand_in\": \"no RAPL here\", \"liveness\": null, \"liveness_note\": null"),
            std::string::npos)
      << json;
  EXPECT_NE(line_with(json, "manifest-test: denied")
                .find("\"liveness\": null, \"liveness_note\": null, \"metric\": \"latency\", "
                      "\"unit\": \"ns\", \"status\": \"unavailable\""),
            std::string::npos)
      << json;
}

// The contract both harnesses keep: "value" is null exactly when "bench" is;
// a measured row names the value it takes (real_time or a counter).
TEST(Manifest, ValueIsNullExactlyWhenBenchIs) {
  RowMeta meta{"perf", "read", "msr/tsc/", 0, 0, ""};
  const std::string bench = add_benchmark("manifest-test/value", meta, [](benchmark::State&) {});
  add_counter_row(bench, "manifest_test_counter", meta);
  add_benchmark("manifest-test/counter-value", meta, [](benchmark::State&) {},
                "counter:manifest_test_ns");
  add_unavailable(meta, "manifest-test: unavailable, with a target");
  add_unavailable(RowMeta{"perf", "read", "", std::nullopt, std::nullopt, "a stand-in"}
                      .set_liveness({Liveness::Live, ""}),
                  "manifest-test: unavailable, with a verdict");

  std::istringstream lines(manifest_json());
  int measured = 0, unmeasured = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("{\"bench\": ", 0) != 0) continue;  // the header and the end
    const bool bench_null = line.rfind("{\"bench\": null, \"value\": ", 0) == 0;
    const size_t value = line.find(", \"value\": ");
    ASSERT_NE(value, std::string::npos) << line;
    const std::string value_text = line.substr(value + std::string(", \"value\": ").size());
    if (bench_null) {
      ++unmeasured;
      EXPECT_EQ(value_text.rfind("null, ", 0), 0u) << line;
      EXPECT_NE(line.find("\"status\": \"unavailable\""), std::string::npos) << line;
    } else {
      ++measured;
      EXPECT_TRUE(value_text.rfind("\"real_time\", ", 0) == 0 ||
                  value_text.rfind("\"counter:", 0) == 0)
          << line;
      EXPECT_NE(line.find("\"status\": \"ok\""), std::string::npos) << line;
    }
  }
  EXPECT_GE(measured, 3);
  EXPECT_GE(unmeasured, 2);
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

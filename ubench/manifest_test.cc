// The manifest's liveness keys: right after stand_in, null unless a measured
// row reads a real energy counter.
#include "manifest.h"

#include <gtest/gtest.h>

namespace raplbench {
namespace {

TEST(Manifest, LivenessFollowsStandInAndIsNullWhereThereIsNoVerdict) {
  const RowVerdict frozen{Liveness::Frozen, "intel-rapl:0/energy_uj: did not change"};
  RowMeta real{"powercap", "pread", "intel-rapl:0/energy_uj", 0, 0, ""};
  add_benchmark("manifest-test/real", real.set_liveness(frozen), [](benchmark::State&) {});
  RowMeta stand_in{"perf", "read", "msr/tsc/", 0, 0, "no RAPL here"};
  add_benchmark("manifest-test/stand-in", stand_in.set_liveness(frozen), [](benchmark::State&) {});
  add_unavailable(RowMeta{"perf", "read", "power/energy-pkg/", 0, 0, ""}.set_liveness(frozen),
                  "denied");

  const std::string json = manifest_json();
  EXPECT_NE(json.find("\"stand_in\": null, \"liveness\": \"frozen\", \"liveness_note\": "
                      "\"intel-rapl:0/energy_uj: did not change\", \"metric\""),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"stand_in\": \"no RAPL here\", \"liveness\": null, \"liveness_note\": null"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"liveness\": null, \"liveness_note\": null, \"metric\": \"latency\", "
                      "\"unit\": \"ns\", \"status\": \"unavailable\""),
            std::string::npos)
      << json;
}

}  // namespace
}  // namespace raplbench

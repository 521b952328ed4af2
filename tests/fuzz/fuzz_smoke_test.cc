// Runs the bodies of the simulator's and vpic-sim's fuzz targets on their committed seeds
// (seeds/<target>/, not its crashes/ folder), on the repository's scenario files, and on fixed
// mutations of them, so that every build exercises what the fuzzers check and an input a fuzzer
// once found can be pinned as a seed.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fuzz/fuzz_support.h"
#include "fuzz/fuzz_targets.h"

namespace {

using fusebox::fuzz::RunSeedsAndMutations;
using fusebox::fuzz::SeedInputs;

std::vector<std::string> Seeds(const std::string& target) {
  return SeedInputs(std::string(FUZZ_SEEDS_DIR) + "/" + target);
}

TEST(ToolsFuzzSmokeTest, SimScenarioHoldsItsInvariantsOnSeedsAndMutations) {
  std::vector<std::string> inputs = Seeds("sim_scenario");
  ASSERT_GE(inputs.size(), 4U);
  for (std::string& scenario : SeedInputs(FUSEBOX_SOURCE_DIR "/scenarios")) {
    inputs.push_back(std::move(scenario));
  }
  EXPECT_GT(RunSeedsAndMutations(fusebox::fuzz::SimScenario, inputs, 40, 11), 400);
}

TEST(ToolsFuzzSmokeTest, VpicSimFaultJsonHoldsItsInvariantsOnSeedsAndMutations) {
  const std::vector<std::string> inputs = Seeds("vpic_fault_json");
  ASSERT_GE(inputs.size(), 8U);
  EXPECT_GT(RunSeedsAndMutations(fusebox::fuzz::VpicSimFaultJson, inputs, 100, 13), 800);
}

TEST(ToolsFuzzSmokeTest, VpicSimScheduleHoldsItsInvariantsOnSeedsAndMutations) {
  std::vector<std::string> inputs = Seeds("vpic_schedule");
  ASSERT_GE(inputs.size(), 4U);
  for (std::string& scenario : SeedInputs(FUSEBOX_SOURCE_DIR "/scenarios")) {
    inputs.push_back(std::move(scenario));
  }
  EXPECT_GT(RunSeedsAndMutations(fusebox::fuzz::VpicSimSchedule, inputs, 40, 17), 400);
}

}  // namespace

// Golden traces: every scenario shipped in scenarios/ is run (the base and every variant) and its
// JSON output (what `fusebox-sim run FILE --format json` prints) must equal
// tests/sim/golden/<name>.json byte for byte. The cooldown trade-off sweep is pinned the same way
// as CSV. After an intended change, regenerate with
//   FUSEBOX_UPDATE_GOLDEN=1 build/<preset>/bin/fusebox_sim_golden_test --gtest_filter='*Golden*'
// and review the diff like code.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "report.h"
#include "scenario.h"
#include "simulator.h"
#include "sweep.h"

namespace fusebox::sim {
namespace {

namespace fs = std::filesystem;

const fs::path kScenarios = fs::path(FUSEBOX_SOURCE_DIR) / "scenarios";
const fs::path kGolden = fs::path(FUSEBOX_SOURCE_DIR) / "tests" / "sim" / "golden";

bool Updating() {
  const char* update = std::getenv("FUSEBOX_UPDATE_GOLDEN");
  return update != nullptr && std::string(update) == "1";
}

std::vector<std::string> ShippedScenarios() {
  std::vector<std::string> names;
  if (fs::is_directory(kScenarios)) {
    for (const fs::directory_entry& entry : fs::directory_iterator(kScenarios)) {
      if (entry.path().extension() == ".toml") {
        names.push_back(entry.path().stem().string());
      }
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Compares with the golden file (or rewrites it when updating).
void ExpectGolden(const fs::path& golden, const std::string& actual) {
  if (Updating()) {
    std::ofstream(golden, std::ios::binary | std::ios::trunc) << actual;
    GTEST_SKIP() << "rewrote " << golden;
  }
  ASSERT_TRUE(fs::exists(golden)) << golden << " is missing; run with FUSEBOX_UPDATE_GOLDEN=1";
  EXPECT_EQ(ReadFile(golden), actual) << "the trace differs from " << golden;
}

// What `fusebox-sim run FILE --format json` prints.
std::string RunJsonOf(const fs::path& path) {
  auto file = LoadScenarioFile(path.string());
  if (!file) {
    ADD_FAILURE() << file.error().ToString();
    return "";
  }
  std::vector<const Scenario*> scenarios = {&file->base()};
  for (const Scenario& variant : file->variants()) {
    scenarios.push_back(&variant);
  }
  std::vector<RunResult> runs;
  for (const Scenario* scenario : scenarios) {
    auto run = Simulate(*scenario);
    if (!run) {
      ADD_FAILURE() << run.error();
      return "";
    }
    runs.push_back(std::move(*run));
  }
  const std::vector<RunResult> variants(runs.begin() + 1, runs.end());
  return RunJson(runs.front(), variants);
}

class GoldenTraceTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenTraceTest, JsonTraceMatchesTheGoldenFile) {
  ExpectGolden(kGolden / (GetParam() + ".json"), RunJsonOf(kScenarios / (GetParam() + ".toml")));
}

INSTANTIATE_TEST_SUITE_P(Scenarios, GoldenTraceTest, ::testing::ValuesIn(ShippedScenarios()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           return param_info.param;
                         });

TEST(GoldenSetTest, ShipsTheScenariosTheDocsDescribe) {
  const std::vector<std::string> names = ShippedScenarios();
  for (const char* required :
       {"lesson5", "slow_upstream", "probe_cap", "fragile_revival", "priorities", "sliding_window",
        "cooldown_tradeoff", "recovery_ramp", "adaptive_limit", "throttle"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), required), names.end()) << required;
  }
}

TEST(GoldenSetTest, EveryGoldenTraceBelongsToAShippedScenario) {
  const std::vector<std::string> names = ShippedScenarios();
  for (const fs::directory_entry& entry : fs::directory_iterator(kGolden)) {
    if (entry.path().extension() == ".json") {
      EXPECT_NE(std::find(names.begin(), names.end(), entry.path().stem().string()), names.end())
          << entry.path() << " has no scenario";
    }
  }
}

TEST(GoldenSweepTest, CooldownTradeoffTableMatchesTheGoldenFile) {
  auto file = LoadScenarioFile((kScenarios / "cooldown_tradeoff.toml").string());
  ASSERT_TRUE(file) << file.error().ToString();
  auto param = ParseParam("breaker.cooldown=1s:30s:1s");
  ASSERT_TRUE(param) << param.error();
  SweepOptions options;
  options.jobs = 2;
  auto sweep = RunSweep(*file, {}, {*param}, options);
  ASSERT_TRUE(sweep) << sweep.error();
  ExpectGolden(kGolden / "cooldown_tradeoff.sweep.csv", SweepCsv(*sweep));
}

}  // namespace
}  // namespace fusebox::sim

// Both tools read the same [[upstream.phase]] files the same way: every shipped scenario loads in
// fusebox-sim (the whole scenario) and in vpic-sim (as a --schedule: the base scenario's
// [upstream] table and its phases; vpic-sim ignores the other top-level keys, variants
// included), the two agree on every phase, and a broken phase is refused by both with the same
// located message.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "scenario.h"
#include "schedule.h"

namespace {

namespace sim = fusebox::sim;
namespace vpic = fusebox::vpic_sim;

std::vector<std::string> ScenarioFiles() {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(
           std::filesystem::path(FUSEBOX_SOURCE_DIR) / "scenarios")) {
    if (entry.path().extension() == ".toml") {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// fusebox-sim's own upstream modes, which vpic-sim does not serve under their names: `warming`
// (a capacity that grows after a revival) and `refuse` (a refusal beyond the capacity: vpic-sim's
// `capacity` without a relapse). A scenario using one is refused by vpic-sim, naming the mode.
// `queue` (servers and a line) both tools serve.
bool IsSimOnly(const sim::Phase& phase) {
  return phase.mode == sim::Mode::kWarming || phase.mode == sim::Mode::kRefuse;
}

// The first phase of such a mode, or null.
const sim::Phase* FirstSimOnlyPhase(const sim::Scenario& scenario) {
  const auto it = std::find_if(scenario.phases.begin(), scenario.phases.end(), IsSimOnly);
  return it == scenario.phases.end() ? nullptr : &*it;
}

// vpic-sim's name for a simulator mode.
std::string_view VpicMode(sim::Mode mode) {
  return mode == sim::Mode::kFragile ? std::string_view("capacity") : sim::ToString(mode);
}

TEST(ScenarioFilesTest, EveryScenarioLoadsInBothToolsAndTheyAgreeOnThePhases) {
  const std::vector<std::string> files = ScenarioFiles();
  ASSERT_EQ(files.size(), 15U);
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    auto scenario = sim::LoadScenarioFile(path);
    ASSERT_TRUE(scenario) << scenario.error().ToString();
    auto schedule = vpic::LoadScheduleFile(path);
    const sim::Scenario& base = scenario->base();
    if (const sim::Phase* own = FirstSimOnlyPhase(base)) {
      ASSERT_FALSE(schedule);
      EXPECT_NE(schedule.error().message.find(std::string(sim::ToString(own->mode))),
                std::string::npos)
          << schedule.error().message;
      continue;
    }
    ASSERT_TRUE(schedule) << schedule.error().message;
    ASSERT_EQ(schedule->phases.size(), base.phases.size());
    for (std::size_t i = 0; i < base.phases.size(); ++i) {
      const sim::Phase& a = base.phases[i];
      const vpic::Phase& b = schedule->phases[i];
      EXPECT_EQ(b.from, a.from) << i;
      EXPECT_EQ(b.to, a.to) << i;
      EXPECT_EQ(vpic::ToString(b.spec.mode), VpicMode(a.mode)) << i;
      if (a.mode != sim::Mode::kHang) {
        EXPECT_EQ(b.spec.latency.value, a.latency) << i;
      }
      if (a.mode == sim::Mode::kFragile) {
        EXPECT_EQ(b.spec.capacity, static_cast<int>(a.capacity)) << i;
        EXPECT_EQ(b.spec.relapse, a.relapse) << i;
      }
      if (a.mode == sim::Mode::kQueue) {
        EXPECT_EQ(b.spec.capacity, static_cast<int>(a.capacity)) << i;
        EXPECT_EQ(b.spec.queue_limit, std::nullopt) << i;  // both lines without a bound
      }
    }
    if (schedule->healthy_latency) {
      EXPECT_EQ(*schedule->healthy_latency, base.upstream_latency);
    }
  }
}

// The same broken phase, after a valid [traffic] (which vpic-sim ignores): the same message.
TEST(ScenarioFilesTest, BothToolsRefuseABrokenPhaseWithTheSameMessage) {
  const std::string head = "[traffic]\nrate = 1\n";
  const std::vector<std::string> phases = {
      // A string without a unit (vpic-sim read it as seconds before the shared grammar).
      "[[upstream.phase]]\nfrom = \"10\"\nto = \"20s\"\nmode = \"error\"\n",
      "[[upstream.phase]]\nfrom = \"1 s\"\nto = \"20s\"\nmode = \"error\"\n",
      "[[upstream.phase]]\nfrom = 1\nmode = \"error\"\n",
      "[[upstream.phase]]\nfrom = 1\nto = 2\nmode = \"error\"\nlatnecy = \"1s\"\n",
      "[[upstream.phase]]\nfrom = \"5s\"\nto = \"5s\"\nmode = \"error\"\n",
      "[[upstream.phase]]\nfrom = \"10s\"\nto = \"30s\"\nmode = \"error\"\n"
      "[[upstream.phase]]\nfrom = \"20s\"\nto = \"40s\"\nmode = \"hang\"\n",
      "[[upstream.phase]]\nfrom = \"20s\"\nto = \"40s\"\nmode = \"error\"\n"
      "[[upstream.phase]]\nfrom = \"10s\"\nto = \"30s\"\nmode = \"hang\"\n",
      "[[upstream.phase]]\nfrom = 1\nto = 2\nmode = 3\n",
      "[upstream]\nlatency = \"fast\"\n",
  };
  for (const std::string& phase : phases) {
    const std::string text = head + phase;
    SCOPED_TRACE(text);
    auto scenario = sim::LoadScenarioString(text, "x.toml");
    auto schedule = vpic::ParseSchedule(text, "x.toml");
    ASSERT_FALSE(scenario);
    ASSERT_FALSE(schedule);
    EXPECT_EQ(schedule.error().message, scenario.error().ToString());
    EXPECT_EQ(schedule.error().field, scenario.error().key);
  }
}

}  // namespace

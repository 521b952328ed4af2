// The claims of scenarios/throttle.toml (docs/scenarios.md, "throttle"): an upstream that refuses
// a share of the calls growing to 80 % and back (capacity 10, 6, 4, 2, 4, 6, 10 of the 10 calls
// the traffic keeps in flight), without and with a client-side throttle (k = 2). Each claim is
// about the last 10 s of a 20 s phase, once the throttle's 10 s window holds that phase alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "scenario.h"
#include "simulator.h"

namespace fusebox::sim {
namespace {

constexpr Micros kSecond = kMicrosPerSecond;

struct Shares {
  double upstream = 0;  // of the calls sent, the share the upstream refused
  double throttle = 0;  // of the arrivals, the share the throttle refused
  double succeeded_per_s = 0;
};

// The last 10 s of [from, to), from the timeline (calls counted by arrival).
Shares SharesIn(const RunResult& run, Micros from, Micros to) {
  const Timeline& timeline = run.timeline;
  std::uint64_t sent = 0;
  std::uint64_t refused = 0;
  std::uint64_t arrivals = 0;
  std::uint64_t throttled = 0;
  std::uint64_t succeeded = 0;
  const Micros start = to - 10 * kSecond;
  for (std::size_t i = 0; i < timeline.bins.size(); ++i) {
    const Micros t = static_cast<Micros>(i) * timeline.bin_width;
    if (t < std::max(from, start) || t >= to) {
      continue;
    }
    const Timeline::Bin& b = timeline.bins[i];
    const std::uint64_t bin_sent = b.succeeded + b.slow_succeeded + b.failed + b.timeouts;
    sent += bin_sent;
    refused += b.refused;
    throttled += b.throttled;
    succeeded += b.succeeded + b.slow_succeeded;
    arrivals += bin_sent + b.rejected_open + b.rejected_probe_cap + b.rejected_recovering +
                b.overloaded + b.throttled;
  }
  auto share = [](std::uint64_t part, std::uint64_t whole) {
    return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
  };
  return Shares{.upstream = share(refused, sent),
                .throttle = share(throttled, arrivals),
                .succeeded_per_s = static_cast<double>(succeeded) / 10.0};
}

struct Runs {
  std::vector<Phase> phases;
  RunResult plain;      // the base: no throttle
  RunResult throttled;  // the variant "throttle"
};

RunResult RunOf(const ScenarioFile& file, std::optional<std::string> variant) {
  BuildOptions options;
  options.variant = std::move(variant);
  auto scenario = BuildScenario(file, options);
  EXPECT_TRUE(scenario) << scenario.error().ToString();
  if (!scenario) {
    return {};
  }
  SimOptions sim;
  sim.record_timeline = true;
  auto run = Simulate(*scenario, sim);
  EXPECT_TRUE(run) << run.error();
  return run ? std::move(*run) : RunResult{};
}

Runs MakeRuns() {
  Runs runs;
  auto file = LoadScenarioFile(FUSEBOX_SOURCE_DIR "/scenarios/throttle.toml");
  if (!file) {
    ADD_FAILURE() << file.error().ToString();
    return runs;
  }
  runs.phases = file->base().phases;
  runs.plain = RunOf(*file, std::nullopt);
  runs.throttled = RunOf(*file, "throttle");
  EXPECT_EQ(runs.plain.timeline.bin_width, kSecond);
  return runs;
}

const Runs& TheRuns() {
  static const Runs runs = MakeRuns();
  return runs;
}

// The traffic keeps 10 calls in flight: a refuse upstream serving C refuses 1 - C / 10 of them.
double OfferedRefusal(const Phase& phase) { return 1.0 - phase.capacity / 10.0; }

TEST(ThrottleScenarioTest, TheUpstreamRefusesAShareThatGrowsAndShrinks) {
  const Runs& runs = TheRuns();
  ASSERT_EQ(runs.phases.size(), 7U);
  for (const Phase& phase : runs.phases) {
    SCOPED_TRACE("capacity " + std::to_string(phase.capacity));
    EXPECT_EQ(phase.mode, Mode::kRefuse);
    if (phase.capacity >= 4) {  // at 2 the breaker keeps calls from it (below)
      EXPECT_NEAR(SharesIn(runs.plain, phase.from, phase.to).upstream, OfferedRefusal(phase), 0.01);
    }
  }
}

TEST(ThrottleScenarioTest, TheThrottleShedsNothingWhileMoreThanHalfTheCallsSucceed) {
  const Runs& runs = TheRuns();
  for (const Phase& phase : runs.phases) {
    if (OfferedRefusal(phase) < 0.5) {
      SCOPED_TRACE("capacity " + std::to_string(phase.capacity));
      EXPECT_LT(SharesIn(runs.throttled, phase.from, phase.to).throttle, 0.02);
    }
  }
}

// Its share rises and falls with the upstream's: more at 80 % than at 60 %, alike on the way up
// and down.
TEST(ThrottleScenarioTest, TheThrottlesShareFollowsTheUpstreams) {
  const Runs& runs = TheRuns();
  ASSERT_EQ(runs.phases.size(), 7U);
  const auto share = [&](std::size_t i) {
    return SharesIn(runs.throttled, runs.phases[i].from, runs.phases[i].to).throttle;
  };
  const double up = share(2);    // capacity 4, on the way up
  const double peak = share(3);  // capacity 2
  const double down = share(4);  // capacity 4, on the way down
  EXPECT_GT(up, 0.10);
  EXPECT_GT(down, 0.10);
  EXPECT_GT(peak, up + 0.25);
  EXPECT_GT(peak, down + 0.25);
  EXPECT_NEAR(up, down, 0.05);
}

// So the upstream refuses at most about 60 % of what is sent, the breaker (75 % over 10 s) never
// trips, and the upstream still gets most of what it can serve; without the throttle the
// breaker opens in the 80 % phase and it gets next to nothing.
TEST(ThrottleScenarioTest, TheThrottleKeepsTheBreakerClosedAndTheUpstreamBusy) {
  const Runs& runs = TheRuns();
  ASSERT_EQ(runs.phases.size(), 7U);
  EXPECT_TRUE(runs.throttled.transitions.empty());
  EXPECT_EQ(runs.throttled.counters.rejected_open, 0U);
  for (const Phase& phase : runs.phases) {
    SCOPED_TRACE("capacity " + std::to_string(phase.capacity));
    const Shares shares = SharesIn(runs.throttled, phase.from, phase.to);
    EXPECT_LT(shares.upstream, 0.65);
    EXPECT_GE(shares.succeeded_per_s, 0.8 * 10.0 * phase.capacity);
  }
  ASSERT_FALSE(runs.plain.transitions.empty());
  const Phase& worst = runs.phases[3];
  EXPECT_EQ(runs.plain.transitions.front().to, State::kOpen);
  EXPECT_GE(runs.plain.transitions.front().t, worst.from);
  EXPECT_LT(runs.plain.transitions.front().t, worst.to);
  EXPECT_LT(SharesIn(runs.plain, worst.from, worst.to).succeeded_per_s,
            0.5 * SharesIn(runs.throttled, worst.from, worst.to).succeeded_per_s);
}

}  // namespace
}  // namespace fusebox::sim

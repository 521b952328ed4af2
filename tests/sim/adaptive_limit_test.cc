// The claims of scenarios/adaptive_limit.toml (docs/scenarios.md, "adaptive_limit"): a queue
// upstream whose capacity C goes 80 -> 40 -> 160, a minute each, under more load than it serves.
//   - In each period the best fixed limit is C: the smallest fixed limit whose goodput is within
//     0.5 % of the most any fixed limit gets (C - 1 leaves a server idle; 2 C gets no more, and
//     doubles the latency).
//   - The adaptive limit settles within 20 % of C, within 20 s of the start and of each change,
//     and from then on gets the goodput the best fixed limit gets.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "scenario.h"
#include "simulator.h"

namespace fusebox::sim {
namespace {

constexpr Micros kSecond = kMicrosPerSecond;

struct Period {
  Micros from = 0;
  Micros to = 0;
  std::uint32_t capacity = 0;
};

struct Outcomes {
  double goodput = 0;       // successes ending in the span, per second
  double mean_latency = 0;  // of those successes, in seconds
};

Outcomes OutcomesIn(const RunResult& run, Micros from, Micros to) {
  std::uint64_t ok = 0;
  double latency = 0;
  for (const CallRecord& call : run.calls) {
    if (call.outcome == Outcome::kSuccess && call.end >= from && call.end < to) {
      ++ok;
      latency += static_cast<double>(call.end - call.start) / 1e6;
    }
  }
  return Outcomes{.goodput = static_cast<double>(ok) * 1e6 / static_cast<double>(to - from),
                  .mean_latency = ok == 0 ? 0.0 : latency / static_cast<double>(ok)};
}

// The first instant of [period.from, period.to) from which the limit stays in [low, high] up to
// period.to; nullopt if it never does.
std::optional<Micros> SettledFrom(const RunResult& run, const Period& period, double low,
                                  double high) {
  const auto& changes = run.limit_changes;
  std::optional<Micros> settled;
  for (std::size_t i = 0; i < changes.size(); ++i) {
    const Micros until = i + 1 < changes.size() ? changes[i + 1].first : period.to;
    if (until <= period.from || changes[i].first >= period.to) {
      continue;
    }
    const bool inside = changes[i].second >= low && changes[i].second <= high;
    if (!inside) {
      settled.reset();
    } else if (!settled) {
      settled = std::max(changes[i].first, period.from);
    }
  }
  return settled;
}

RunResult RunOf(const ScenarioFile& file, std::vector<Override> overrides) {
  BuildOptions options;
  options.overrides = std::move(overrides);
  auto scenario = BuildScenario(file, options);
  EXPECT_TRUE(scenario) << scenario.error().ToString();
  if (!scenario) {
    return {};
  }
  SimOptions sim;
  sim.record_timeline = true;
  sim.record_calls = true;
  auto run = Simulate(*scenario, sim);
  EXPECT_TRUE(run) << run.error();
  return run ? std::move(*run) : RunResult{};
}

// The scenario's runs, made once for all the tests: the base (adaptive), the base with the
// library's default tolerance, and each fixed limit the claims compare them with (C - 1, C and
// 2 C of every period).
struct Runs {
  std::vector<Period> periods;
  RunResult adaptive;
  RunResult default_tolerance;
  std::map<std::uint32_t, RunResult> fixed;
  std::optional<ScenarioFile> file;

  const RunResult& Fixed(std::uint32_t limit) const {
    static const RunResult none;
    const auto it = fixed.find(limit);
    if (it == fixed.end()) {
      ADD_FAILURE() << "no run with the fixed limit " << limit;
      return none;
    }
    return it->second;
  }
};

Runs MakeRuns() {
  Runs runs;
  auto file = LoadScenarioFile(FUSEBOX_SOURCE_DIR "/scenarios/adaptive_limit.toml");
  if (!file) {
    ADD_FAILURE() << file.error().ToString();
    return runs;
  }
  runs.file.emplace(std::move(*file));
  for (const Phase& phase : runs.file->base().phases) {
    EXPECT_EQ(phase.mode, Mode::kQueue);
    runs.periods.push_back(Period{phase.from, phase.to, phase.capacity});
  }
  EXPECT_EQ(runs.periods.size(), 3U);
  runs.adaptive = RunOf(*runs.file, {});
  runs.default_tolerance = RunOf(*runs.file, {{"limit.tolerance", "1.25"}});
  for (const Period& p : runs.periods) {
    for (std::uint32_t limit : {p.capacity - 1, p.capacity, 2 * p.capacity}) {
      if (!runs.fixed.contains(limit)) {
        runs.fixed.emplace(limit,
                           RunOf(*runs.file, {{"limit.max_in_flight", std::to_string(limit)}}));
      }
    }
  }
  return runs;
}

const Runs& TheRuns() {
  static const Runs runs = MakeRuns();
  return runs;
}

TEST(AdaptiveLimitScenarioTest, TheBestFixedLimitIsTheCapacityInEveryPeriod) {
  const Runs& runs = TheRuns();
  ASSERT_FALSE(runs.periods.empty());
  for (const Period& p : runs.periods) {
    SCOPED_TRACE("capacity " + std::to_string(p.capacity));
    const Outcomes at_capacity = OutcomesIn(runs.Fixed(p.capacity), p.from, p.to);
    const Outcomes one_less = OutcomesIn(runs.Fixed(p.capacity - 1), p.from, p.to);
    const Outcomes twice = OutcomesIn(runs.Fixed(2 * p.capacity), p.from, p.to);
    // Twice the capacity gets no more goodput than the capacity ...
    EXPECT_GE(at_capacity.goodput, 0.995 * twice.goodput);
    // ... one call less does: C is the smallest limit within 0.5 % of the best.
    EXPECT_LT(one_less.goodput, 0.995 * twice.goodput);
    // More only makes calls wait in line (after the first period, the line it inherits too).
    EXPECT_GT(twice.mean_latency, 1.5 * at_capacity.mean_latency);
  }
}

TEST(AdaptiveLimitScenarioTest, TheAdaptiveLimitSettlesWithinTwentyPercentOfTheBestFixedLimit) {
  const Runs& runs = TheRuns();
  ASSERT_FALSE(runs.periods.empty());
  for (const Period& p : runs.periods) {
    SCOPED_TRACE("capacity " + std::to_string(p.capacity));
    const std::optional<Micros> settled =
        SettledFrom(runs.adaptive, p, 0.8 * p.capacity, 1.2 * p.capacity);
    ASSERT_TRUE(settled.has_value());
    EXPECT_LE(settled.value_or(p.to) - p.from, 20 * kSecond);
  }
}

TEST(AdaptiveLimitScenarioTest, OnceSettledItGetsTheBestFixedLimitsGoodput) {
  const Runs& runs = TheRuns();
  ASSERT_FALSE(runs.periods.empty());
  for (const Period& p : runs.periods) {
    SCOPED_TRACE("capacity " + std::to_string(p.capacity));
    const Micros from =
        SettledFrom(runs.adaptive, p, 0.8 * p.capacity, 1.2 * p.capacity).value_or(p.to - kSecond);
    const Outcomes adaptive = OutcomesIn(runs.adaptive, from, p.to);
    const Outcomes best = OutcomesIn(runs.Fixed(p.capacity), from, p.to);
    EXPECT_GE(adaptive.goodput, 0.98 * best.goodput);
    // The price of the headroom: a short line, not a long one.
    EXPECT_LT(adaptive.mean_latency, 1.25 * best.mean_latency);
  }
}

// The library's default tolerance allows a 25 % slower window on purpose: the same goodput, a
// limit at about 1.4 C (docs/composition.md, "Adaptive concurrency").
TEST(AdaptiveLimitScenarioTest, WithTheDefaultToleranceItSettlesAboveTheBand) {
  const Runs& runs = TheRuns();
  ASSERT_FALSE(runs.periods.empty());
  for (const Period& p : runs.periods) {
    SCOPED_TRACE("capacity " + std::to_string(p.capacity));
    const std::optional<Micros> settled =
        SettledFrom(runs.default_tolerance, p, 1.3 * p.capacity, 1.5 * p.capacity);
    ASSERT_TRUE(settled.has_value());
    EXPECT_LE(settled.value_or(p.to) - p.from, 30 * kSecond);
  }
}

}  // namespace
}  // namespace fusebox::sim

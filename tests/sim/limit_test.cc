// Tests of a scenario's [limit] (docs/scenario-format.md): the table's keys, values and errors,
// overrides and sweeps of it, and the simulator running the library's Bulkhead or AdaptiveLimit
// in front of the breaker (limit first, then the breaker's permit).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "report.h"
#include "scenario.h"
#include "simulator.h"
#include "sweep.h"

namespace fusebox::sim {
namespace {

using ::testing::HasSubstr;

constexpr Micros kMs = 1000;

Result<ScenarioFile, LoadError> Load(const std::string& text) {
  return LoadScenarioString(text, "test.toml");
}

LoadError ErrorOf(const std::string& text) {
  auto file = Load(text);
  EXPECT_FALSE(file.has_value()) << "the scenario was accepted:\n" << text;
  return file ? LoadError{} : file.error();
}

Scenario Build(const std::string& text) {
  auto file = Load(text);
  EXPECT_TRUE(file) << file.error().ToString();
  return file ? file->base() : Scenario{};
}

RunResult RunSim(const std::string& text, bool timeline = false) {
  SimOptions options;
  options.record_timeline = timeline;
  auto run = Simulate(Build(text), options);
  EXPECT_TRUE(run) << run.error();
  return run ? std::move(*run) : RunResult{};
}

constexpr const char* kTraffic = "[traffic]\nrate = 1\n";

// The scenario's [limit]; a failure (and a default Limit) when it has none.
Limit LimitOf(const Scenario& scenario) {
  if (!scenario.limit) {
    ADD_FAILURE() << "the scenario has no [limit]";
    return Limit{};
  }
  return *scenario.limit;
}

// ---- the table ----

TEST(LimitTableTest, NoTableNoLimit) { EXPECT_FALSE(Build(kTraffic).limit.has_value()); }

TEST(LimitTableTest, ReadsAFixedLimit) {
  const Scenario s = Build(std::string(kTraffic) + "[limit]\nmax_in_flight = 16\n");
  EXPECT_FALSE(LimitOf(s).adaptive);
  EXPECT_EQ(LimitOf(s).max_in_flight, 16U);
}

// Every AdaptiveLimitConfig field is a key under its own name, and lands in that field.
TEST(LimitTableTest, ReadsEveryAdaptiveLimitSetting) {
  const Scenario s = Build(std::string(kTraffic) + R"([limit]
max_in_flight = "auto"
min_limit = 4
max_limit = 400
initial_limit = 40
sample_window = "250ms"
min_window_samples = 7
tolerance = 1.5
smoothing = 0.3
backoff_ratio = 0.8
no_load_reset = "2m"
)");
  EXPECT_TRUE(LimitOf(s).adaptive);
  const AdaptiveLimitConfig a = LimitOf(s).adaptive_config;
  EXPECT_EQ(a.min_limit, 4U);
  EXPECT_EQ(a.max_limit, 400U);
  EXPECT_EQ(a.initial_limit, 40U);
  EXPECT_EQ(a.sample_window, std::chrono::milliseconds(250));
  EXPECT_EQ(a.min_window_samples, 7U);
  EXPECT_DOUBLE_EQ(a.tolerance, 1.5);
  EXPECT_DOUBLE_EQ(a.smoothing, 0.3);
  EXPECT_DOUBLE_EQ(a.backoff_ratio, 0.8);
  EXPECT_EQ(a.no_load_reset, std::chrono::minutes(2));
}

TEST(LimitTableTest, AnAdaptiveLimitDefaultsToTheLibrarysSettings) {
  const Scenario s = Build(std::string(kTraffic) + "[limit]\nmax_in_flight = \"auto\"\n");
  const AdaptiveLimitConfig defaults;
  const AdaptiveLimitConfig read = LimitOf(s).adaptive_config;
  EXPECT_EQ(read.initial_limit, defaults.initial_limit);
  EXPECT_EQ(read.sample_window, defaults.sample_window);
  EXPECT_DOUBLE_EQ(read.tolerance, defaults.tolerance);
}

TEST(LimitTableTest, EveryKeyHasAKind) {
  EXPECT_EQ(LookupKeyKind("limit.max_in_flight"), KeyKind::kIntegerOrAuto);
  for (const char* key :
       {"limit.min_limit", "limit.max_limit", "limit.initial_limit", "limit.min_window_samples"}) {
    EXPECT_EQ(LookupKeyKind(key), KeyKind::kInteger) << key;
  }
  for (const char* key : {"limit.sample_window", "limit.no_load_reset"}) {
    EXPECT_EQ(LookupKeyKind(key), KeyKind::kDuration) << key;
  }
  EXPECT_EQ(LookupKeyKind("limit.throttle_window"), KeyKind::kDuration);
  for (const char* key :
       {"limit.tolerance", "limit.smoothing", "limit.backoff_ratio", "limit.throttle_k"}) {
    EXPECT_EQ(LookupKeyKind(key), KeyKind::kNumber) << key;
  }
  EXPECT_EQ(LookupKeyKind("limit.nope"), std::nullopt);
}

TEST(LimitErrorTest, ALimitNeedsMaxInFlightOrAThrottle) {
  const LoadError e = ErrorOf(std::string(kTraffic) + "[limit]\ntolerance = 1.1\n");
  EXPECT_EQ(e.line, 3);
  EXPECT_EQ(e.key, "limit");
  EXPECT_EQ(e.message, "[limit] needs max_in_flight (a number, or \"auto\") or throttle_k");
  const LoadError off = ErrorOf(std::string(kTraffic) + "[limit]\nthrottle_k = 0\n");
  EXPECT_EQ(off.key, "limit");
}

TEST(LimitTableTest, ReadsAThrottleAlone) {
  const Scenario s =
      Build(std::string(kTraffic) + "[limit]\nthrottle_k = 1.5\nthrottle_window = \"10s\"\n");
  const Limit limit = LimitOf(s);
  EXPECT_FALSE(limit.has_concurrency_limit());
  EXPECT_TRUE(limit.has_throttle());
  EXPECT_DOUBLE_EQ(limit.throttle.k, 1.5);
  EXPECT_EQ(limit.throttle.window, std::chrono::seconds(10));
}

TEST(LimitTableTest, TheThrottleIsOffByDefault) {
  const Limit limit = LimitOf(Build(std::string(kTraffic) + "[limit]\nmax_in_flight = 4\n"));
  EXPECT_FALSE(limit.has_throttle());
  EXPECT_EQ(limit.throttle.window, ThrottleConfig{}.window);
}

TEST(LimitErrorTest, AThrottleOutOfRangeIsTheThrottlesOwnComplaint) {
  const LoadError k = ErrorOf(std::string(kTraffic) + "[limit]\nthrottle_k = 0.5\n");
  EXPECT_EQ(k.line, 4);
  EXPECT_EQ(k.key, "limit.throttle_k");
  EXPECT_THAT(k.message, HasSubstr("k must be in [1, 100]"));
  const LoadError window =
      ErrorOf(std::string(kTraffic) + "[limit]\nthrottle_k = 2\nthrottle_window = \"50ms\"\n");
  EXPECT_EQ(window.line, 5);
  EXPECT_EQ(window.key, "limit.throttle_window");
  EXPECT_THAT(window.message, HasSubstr("window must be in [100 ms, 1 h]"));
}

TEST(LimitErrorTest, MaxInFlightIsANumberInRangeOrAuto) {
  const LoadError zero = ErrorOf(std::string(kTraffic) + "[limit]\nmax_in_flight = 0\n");
  EXPECT_EQ(zero.line, 4);
  EXPECT_EQ(zero.key, "limit.max_in_flight");
  EXPECT_EQ(zero.message, "must be in [1, 1000000] or \"auto\", got 0");
  const LoadError word = ErrorOf(std::string(kTraffic) + "[limit]\nmax_in_flight = \"fast\"\n");
  EXPECT_THAT(word.message, HasSubstr("\"auto\""));
  EXPECT_THAT(word.message, HasSubstr("\"fast\""));
  const LoadError real = ErrorOf(std::string(kTraffic) + "[limit]\nmax_in_flight = 1.5\n");
  EXPECT_EQ(real.message, "expected an integer or \"auto\", got a float");
}

TEST(LimitErrorTest, AnAdaptiveSettingOutOfRangeIsTheLimitsOwnComplaint) {
  const LoadError e =
      ErrorOf(std::string(kTraffic) + "[limit]\nmax_in_flight = \"auto\"\ntolerance = 0.5\n");
  EXPECT_EQ(e.line, 5);
  EXPECT_EQ(e.key, "limit.tolerance");
  EXPECT_THAT(e.message, HasSubstr("tolerance must be in [1, 10]"));
}

// initial_limit keeps its default (16), below the min_limit given: the complaint is the
// library's, at the [limit] table.
TEST(LimitErrorTest, ADefaultThatNoLongerFitsPointsAtTheTable) {
  const LoadError e =
      ErrorOf(std::string(kTraffic) + "[limit]\nmax_in_flight = \"auto\"\nmin_limit = 20\n");
  EXPECT_EQ(e.line, 3);
  EXPECT_EQ(e.key, "limit.initial_limit");
  EXPECT_THAT(e.message, HasSubstr("initial_limit must be in [min_limit, max_limit]"));
}

// A fixed limit uses none of the adaptive settings (as a count-window setting waits unused under
// a consecutive breaker), so one file can be swept over both kinds.
TEST(LimitTableTest, AFixedLimitLeavesTheAdaptiveSettingsUnused) {
  const Scenario s = Build(std::string(kTraffic) +
                           "[limit]\nmax_in_flight = 8\ntolerance = 1.0\nmin_limit = 20\n");
  EXPECT_FALSE(LimitOf(s).adaptive);
}

TEST(LimitTableTest, VariantsAndOverridesChangeItKeyByKey) {
  auto file = Load(std::string(kTraffic) +
                   "[limit]\nmax_in_flight = \"auto\"\ntolerance = 1.0\n"
                   "[[variant]]\nname = \"fixed\"\nlimit.max_in_flight = 12\n");
  ASSERT_TRUE(file) << file.error().ToString();
  ASSERT_EQ(file->variants().size(), 1U);
  EXPECT_FALSE(LimitOf(file->variants()[0]).adaptive);
  EXPECT_EQ(LimitOf(file->variants()[0]).max_in_flight, 12U);
  BuildOptions options;
  options.overrides = {{"limit.tolerance", "1.5"}};
  auto built = BuildScenario(*file, options);
  ASSERT_TRUE(built) << built.error().ToString();
  EXPECT_TRUE(LimitOf(*built).adaptive);
  EXPECT_DOUBLE_EQ(LimitOf(*built).adaptive_config.tolerance, 1.5);
  options.overrides = {{"limit.max_in_flight", "7"}};
  built = BuildScenario(*file, options);
  ASSERT_TRUE(built) << built.error().ToString();
  EXPECT_EQ(LimitOf(*built).max_in_flight, 7U);
}

TEST(LimitTableTest, AnOverrideCanAddALimit) {
  auto file = Load(kTraffic);
  ASSERT_TRUE(file) << file.error().ToString();
  BuildOptions options;
  options.overrides = {{"limit.max_in_flight", "auto"}};
  auto built = BuildScenario(*file, options);
  ASSERT_TRUE(built) << built.error().ToString();
  EXPECT_TRUE(LimitOf(*built).adaptive);
  options.overrides = {{"limit.max_in_flight", "many"}};
  auto bad = BuildScenario(*file, options);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().key, "limit.max_in_flight (override)");
  EXPECT_EQ(bad.error().message, "bad value \"many\": expected an integer or auto");
}

TEST(LimitTableTest, SweepsTakeNumbersAndAuto) {
  auto list = ParseParam("limit.max_in_flight=auto,10,20");
  ASSERT_TRUE(list) << list.error();
  ASSERT_EQ(list->values.size(), 3U);
  EXPECT_EQ(list->values[0].override_text, "auto");
  EXPECT_FALSE(list->values[0].is_numeric);
  EXPECT_EQ(list->values[2].override_text, "20");
  auto range = ParseParam("limit.max_in_flight=10:30:10");
  ASSERT_TRUE(range) << range.error();
  ASSERT_EQ(range->values.size(), 3U);
  EXPECT_EQ(range->values[1].csv, "20");
  EXPECT_FALSE(ParseParam("limit.max_in_flight=auto:30:10"));
}

// ---- the simulation ----

// A call every 10 ms, each 100 ms long: two fit under a fixed limit of 2, the others are refused
// before the breaker is asked.
TEST(LimitSimulationTest, AFixedLimitRefusesBeyondItsCapAsOverloaded) {
  const RunResult run = RunSim(R"(
duration = "50ms"
[traffic]
rate = 100
[upstream]
latency = "100ms"
[limit]
max_in_flight = 2
)",
                               /*timeline=*/true);
  const Counters& c = run.counters;
  EXPECT_TRUE(c.limited);
  EXPECT_EQ(c.calls, 5U);
  EXPECT_EQ(c.allowed, 2U);
  EXPECT_EQ(c.overloaded, 3U);
  EXPECT_EQ(c.calls, c.allowed + c.rejected_open + c.rejected_probe_cap + c.overloaded);
  EXPECT_EQ(c.max_in_flight, 2U);
  std::uint32_t binned = 0;
  for (const Timeline::Bin& bin : run.timeline.bins) {
    binned += bin.overloaded;
  }
  EXPECT_EQ(binned, 3U);
  ASSERT_EQ(run.limit_changes.size(), 1U);
  EXPECT_EQ(run.limit_changes[0], (std::pair<Micros, std::uint32_t>{0, 2}));
}

// The upstream fails the first call (the breaker opens), then hangs. After the cooldown the
// first call is the probe: it hangs, holding the breaker's probe slot and the limit's only slot
// until its budget. The calls after it are refused by the limit (OVERLOADED), never by the
// breaker's probe cap: the limit is asked first, so a call that cannot run never reaches the
// breaker, and never takes a probe slot.
TEST(LimitSimulationTest, TheLimitIsAskedBeforeTheBreaker) {
  const RunResult run = RunSim(R"(
duration = "3s"
[breaker]
failure_threshold = 1
cooldown = "1s"
call_timeout = "5s"
[traffic]
rate = 10
[limit]
max_in_flight = 1
[[upstream.phase]]
from = 0
to = "50ms"
mode = "error"
[[upstream.phase]]
from = "50ms"
to = "10s"
mode = "hang"
)");
  const Counters& c = run.counters;
  ASSERT_GE(run.transitions.size(), 2U);
  EXPECT_EQ(run.transitions[0].to, State::kOpen);
  EXPECT_EQ(run.transitions[1].to, State::kHalfOpen);
  EXPECT_EQ(run.transitions[1].t, 1000 * kMs);
  EXPECT_EQ(c.rejected_open, 9U);  // 0.1 s to 0.9 s
  EXPECT_EQ(c.probes, 1U);         // 1.0 s
  EXPECT_EQ(c.overloaded, 19U);    // 1.1 s to 2.9 s
  EXPECT_EQ(c.rejected_probe_cap, 0U);
}

// The breaker refuses every call of an outage: each gives its slot back, so calls flow again
// (under a limit of 1) once the breaker closes.
TEST(LimitSimulationTest, ACallTheBreakerRefusesGivesItsSlotBack) {
  const RunResult run = RunSim(R"(
duration = "10s"
[breaker]
failure_threshold = 2
cooldown = "2s"
[traffic]
rate = 10
[upstream]
latency = "10ms"
[limit]
max_in_flight = 1
[[upstream.phase]]
from = 0
to = "3s"
mode = "error"
)");
  const Counters& c = run.counters;
  EXPECT_GT(c.rejected_open, 0U);
  EXPECT_EQ(c.overloaded, 0U);
  ASSERT_FALSE(run.transitions.empty());
  EXPECT_EQ(run.transitions.back().to, State::kClosed);
  EXPECT_GT(c.succeeded, 50U);
}

// An upstream that refuses beyond 5 calls in flight: each refusal is a drop, and the adaptive
// limit comes down from 40 to about the capacity; with room for all it stays up.
TEST(LimitSimulationTest, AnAdaptiveLimitComesDownOnRefusalsForLoad) {
  const std::string head = R"(
duration = "30s"
[breaker]
failure_threshold = 1000000
[traffic]
rate = 400
[limit]
max_in_flight = "auto"
initial_limit = 40
min_limit = 1
sample_window = "100ms"
[[upstream.phase]]
from = 0
to = "60s"
mode = "refuse"
latency = "50ms"
)";
  const RunResult tight = RunSim(head + "capacity = 5\n", /*timeline=*/true);
  ASSERT_FALSE(tight.limit_changes.empty());
  EXPECT_EQ(tight.limit_changes.front().second, 40U);
  EXPECT_GT(tight.counters.refused, 0U);
  // Down within 3 s (a cut of 10 % a window), then about the capacity: above it, refusals cut it;
  // at or below it, no drop, and the gradient raises it again.
  for (const auto& [t, limit] : tight.limit_changes) {
    if (t >= 3000 * kMs) {
      EXPECT_GE(limit, 4U) << "at " << t;
      EXPECT_LE(limit, 7U) << "at " << t;
    }
  }
  const RunResult roomy = RunSim(head + "capacity = 1000\n", /*timeline=*/true);
  EXPECT_EQ(roomy.counters.refused, 0U);
  EXPECT_GE(roomy.limit_changes.back().second, 20U);
}

// A timeout is a drop too: against a hang the limit is cut window after window, to min_limit.
TEST(LimitSimulationTest, TimeoutsCutAnAdaptiveLimit) {
  const RunResult run = RunSim(R"(
duration = "20s"
[breaker]
failure_threshold = 1000000
call_timeout = "200ms"
[traffic]
rate = 200
[limit]
max_in_flight = "auto"
min_limit = 2
sample_window = "100ms"
[[upstream.phase]]
from = 0
to = "60s"
mode = "hang"
)",
                               /*timeline=*/true);
  ASSERT_FALSE(run.limit_changes.empty());
  EXPECT_EQ(run.limit_changes.back().second, 2U);
  EXPECT_GT(run.counters.overloaded, 0U);
}

// An upstream that serves 2 of the 10 calls in flight the traffic would keep there: the throttle
// (after the breaker) sheds a share of the calls, and the upstream still gets most of what it
// can take (a call shed at random sometimes leaves a place free: 523 of 600 here). Where it
// refuses less than half, the throttle sheds next to nothing (a few calls in the first 100 ms,
// when the refusals are counted and no success yet).
TEST(LimitSimulationTest, AThrottleShedsWhenTheUpstreamRefusesMostCalls) {
  const std::string head = R"(
duration = "30s"
[breaker]
failure_threshold = 1000000
[traffic]
rate = 100
[limit]
throttle_k = 2
throttle_window = "5s"
[[upstream.phase]]
from = 0
to = "60s"
mode = "refuse"
latency = "100ms"
)";
  const RunResult tight = RunSim(head + "capacity = 2\n", /*timeline=*/true);
  const Counters& c = tight.counters;
  EXPECT_TRUE(c.throttling);
  EXPECT_FALSE(c.limited);
  EXPECT_GT(c.throttled, c.calls / 4);
  EXPECT_EQ(c.calls, c.allowed + c.rejected_open + c.rejected_probe_cap + c.throttled);
  EXPECT_GE(c.succeeded, 20U * 30 * 8 / 10);  // 20 calls a second fit
  std::uint32_t binned = 0;
  for (const Timeline::Bin& bin : tight.timeline.bins) {
    binned += bin.throttled;
  }
  EXPECT_EQ(binned, c.throttled);
  const RunResult roomy = RunSim(head + "capacity = 7\n");
  EXPECT_GT(roomy.counters.refused, 0U);  // 30 % refused: more than 1/k succeed
  EXPECT_LT(roomy.counters.throttled, roomy.counters.calls / 100);
}

TEST(LimitReportTest, ShowsThrottledOnlyWhenARunHasAThrottle) {
  const RunResult plain = RunSim("duration = \"1s\"\n[traffic]\nrate = 1\n");
  EXPECT_THAT(RunText({plain}, false), ::testing::Not(HasSubstr("throttled")));
  const RunResult throttled =
      RunSim("duration = \"1s\"\n[traffic]\nrate = 1\n[limit]\nthrottle_k = 2\n");
  EXPECT_THAT(RunText({throttled}, false), HasSubstr("    throttled           0\n"));
  EXPECT_THAT(RunText({throttled}, false), ::testing::Not(HasSubstr("overloaded")));
  EXPECT_EQ(CounterNames(ColumnsOf(throttled.counters)).back(), "throttled");
}

TEST(LimitReportTest, ShowsOverloadedOnlyWhenARunHasALimit) {
  const RunResult plain = RunSim("duration = \"1s\"\n[traffic]\nrate = 1\n");
  EXPECT_THAT(RunText({plain}, false), ::testing::Not(HasSubstr("overloaded")));
  const RunResult limited = RunSim(
      "duration = \"50ms\"\n[traffic]\nrate = 100\n[upstream]\nlatency = \"100ms\"\n"
      "[limit]\nmax_in_flight = 2\n");
  EXPECT_THAT(RunText({plain, limited}, true), HasSubstr("    overloaded          3\n"));
  EXPECT_THAT(RunJson(plain, {limited}), HasSubstr("\"overloaded\": 0\n"));
  EXPECT_EQ(CounterNames(ColumnsOf(limited.counters)).back(), "overloaded");
}

}  // namespace
}  // namespace fusebox::sim

// Tests of the scenario loader: the format of docs/scenario-format.md, its defaults, variants,
// overrides, and errors that name the file, the line and the key.
#include "scenario.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <chrono>
#include <string>

#include "fusebox/breaker_settings.h"

namespace fusebox::sim {
namespace {

using ::testing::HasSubstr;

constexpr Micros kSecond = kMicrosPerSecond;

Result<ScenarioFile, LoadError> Load(const std::string& text) {
  return LoadScenarioString(text, "test.toml");
}

// The error of a scenario that must be refused.
LoadError ErrorOf(const std::string& text) {
  auto file = Load(text);
  EXPECT_FALSE(file.has_value()) << "the scenario was accepted:\n" << text;
  return file ? LoadError{} : file.error();
}

constexpr const char* kMinimal = "[traffic]\nrate = 1.0\n";

TEST(ParseDurationTest, AcceptsEveryUnit) {
  EXPECT_EQ(ParseDuration("250ms"), 250'000);
  EXPECT_EQ(ParseDuration("23.3s"), 23'300'000);
  EXPECT_EQ(ParseDuration("1500ms"), 1'500'000);
  EXPECT_EQ(ParseDuration("2m"), 120'000'000);
  EXPECT_EQ(ParseDuration("7us"), 7);
  EXPECT_EQ(ParseDuration("0ms"), 0);
  EXPECT_EQ(ParseDuration(".5s"), 500'000);
  EXPECT_EQ(ParseDuration("1h"), 3'600'000'000);
  EXPECT_EQ(ParseDuration("1d"), 86'400'000'000);
  EXPECT_EQ(ParseDuration("2m30s"), 150'000'000);
}

TEST(ParseDurationTest, RoundsToTheNearestMicrosecond) {
  EXPECT_EQ(ParseDuration("0.0000004s"), 0);
  EXPECT_EQ(ParseDuration("0.0000006s"), 1);
  EXPECT_EQ(ParseDuration("1.0015ms"), 1'002);
}

TEST(ParseDurationTest, TellsATooLargeValueFromAMalformedOne) {
  bool too_large = false;
  EXPECT_EQ(ParseDuration("1000000000s", &too_large), kMaxDuration);
  EXPECT_FALSE(too_large);
  for (const char* big : {"1000000000.000001s", "16666667m", "99999999999999999999999s"}) {
    too_large = false;
    EXPECT_EQ(ParseDuration(big, &too_large), std::nullopt) << big;
    EXPECT_TRUE(too_large) << big;
  }
  too_large = false;
  EXPECT_EQ(ParseDuration("10 seconds", &too_large), std::nullopt);
  EXPECT_FALSE(too_large);
  // Digits beyond the 18th after the point cannot change the rounding; they are not an error.
  EXPECT_EQ(ParseDuration("0.0000005000000000000000001s"), 1);
  EXPECT_EQ(ParseDuration("0.0000004999999999999999999s"), 0);
}

TEST(ParseDurationTest, RefusesAnythingElse) {
  for (const char* bad :
       {"", "s", "10", "-1s", "1 s", "1w", "1.2.3s", "ms5", ".s", "1e3ms", "30s2m", "2m30"}) {
    EXPECT_EQ(ParseDuration(bad), std::nullopt) << bad;
  }
}

TEST(FormatSecondsTest, KeepsMicrosecondsAndOneDecimalAtLeast) {
  EXPECT_EQ(FormatSeconds(14'000'000), "14.0");
  EXPECT_EQ(FormatSeconds(64'020'000), "64.02");
  EXPECT_EQ(FormatSeconds(1), "0.000001");
  EXPECT_EQ(FormatSeconds(0), "0.0");
  EXPECT_EQ(FormatSeconds(-1'500'000), "-1.5");
}

TEST(ScenarioLoaderTest, AppliesTheDefaultsOfTheFormat) {
  auto file = Load(kMinimal);
  ASSERT_TRUE(file) << file.error().ToString();
  const Scenario& s = file->base();
  EXPECT_EQ(s.name, "test");
  EXPECT_EQ(s.seed, 1U);
  EXPECT_EQ(s.duration, 60 * kSecond);
  EXPECT_EQ(s.upstream_latency, 20'000);
  ASSERT_EQ(s.streams.size(), 1U);
  EXPECT_EQ(s.streams[0].start, 0);
  EXPECT_EQ(s.streams[0].arrivals, Arrivals::kUniform);
  EXPECT_EQ(s.streams[0].priority, Priority::kInteractive);
  EXPECT_EQ(s.breaker.failure_threshold, CircuitBreakerConfig{}.failure_threshold);
  EXPECT_EQ(s.breaker.cooldown, CircuitBreakerConfig{}.cooldown);
  EXPECT_FALSE(s.breaker.slow_call_duration.has_value());
  EXPECT_TRUE(s.phases.empty());
}

// The [breaker] keys are the library's settings, by the same names: a value written in a scenario
// lands where the library's table puts it. (With count_window, so that every setting may be set.)
TEST(ScenarioLoaderTest, EveryBreakerSettingOfTheLibraryIsAKey) {
  for (const BreakerSetting& s : BreakerSettings()) {
    std::string text;
    fusebox::SettingValue expected;
    switch (s.type) {
      case SettingType::kTripPolicy:
        text = "\"count_window\"";
        expected = TripPolicy::kCountWindow;
        break;
      case SettingType::kCount:
        text = "10";
        expected = std::uint32_t{10};
        break;
      case SettingType::kNumber:
        text = fmt::format("{}", (s.min + s.max) / 2);
        expected = (s.min + s.max) / 2;
        break;
      case SettingType::kDuration:
        text = s.name == "probe_budget" ? "\"5s\"" : "\"6m\"";
        expected = s.name == "probe_budget" ? Duration(std::chrono::seconds(5))
                                            : Duration(std::chrono::minutes(6));
        break;
      case SettingType::kBool:
        text = "true";
        expected = true;
        break;
      case SettingType::kProbeMode:
        text = "\"active\"";
        expected = fusebox::ProbeMode::kActive;
        break;
    }
    const std::string trip = s.name == "trip" ? "" : "trip = \"count_window\"\n";
    auto file =
        Load(fmt::format("[breaker]\n{}{} = {}\n[traffic]\nrate = 1\n", trip, s.name, text));
    ASSERT_TRUE(file) << s.name << ": " << file.error().ToString();
    EXPECT_EQ(GetSetting(file->base().breaker, s), expected) << s.name;
  }
}

TEST(ScenarioLoaderTest, ReadsEveryBreakerKey) {
  auto file = Load(R"(
[breaker]
trip = "count_window"
failure_threshold = 3
window_size = 20
minimum_calls = 4
failure_rate_threshold = 0.25
slow_call_duration = "1500ms"
slow_call_rate_threshold = 0.75
call_timeout = "5s"
cooldown = "2m"
half_open_max_probes = 3
half_open_successes = 2
batch_may_probe = true
inflight_slow_accounting = true
cooldown_multiplier = 2
cooldown_max = "10m"
cooldown_jitter = 0.1
[traffic]
rate = 1
)");
  ASSERT_TRUE(file) << file.error().ToString();
  const CircuitBreakerConfig& b = file->base().breaker;
  EXPECT_EQ(b.trip, TripPolicy::kCountWindow);
  EXPECT_EQ(b.failure_threshold, 3U);
  EXPECT_EQ(b.window_size, 20U);
  EXPECT_EQ(b.minimum_calls, 4U);
  EXPECT_DOUBLE_EQ(b.failure_rate_threshold, 0.25);
  EXPECT_EQ(b.slow_call_duration, std::chrono::milliseconds(1500));
  EXPECT_DOUBLE_EQ(b.slow_call_rate_threshold, 0.75);
  EXPECT_EQ(b.call_timeout, std::chrono::seconds(5));
  EXPECT_EQ(b.cooldown, std::chrono::minutes(2));
  EXPECT_EQ(b.half_open_max_probes, 3U);
  EXPECT_EQ(b.half_open_successes, 2U);
  EXPECT_TRUE(b.batch_may_probe);
  EXPECT_TRUE(b.inflight_slow_accounting);
  EXPECT_DOUBLE_EQ(b.cooldown_multiplier, 2.0);
  EXPECT_EQ(b.cooldown_max, std::chrono::minutes(10));
  EXPECT_DOUBLE_EQ(b.cooldown_jitter, 0.1);
}

TEST(ScenarioLoaderTest, AcceptsPlainNumbersOfSecondsAsDurations) {
  auto file = Load("duration = 1.5\n[breaker]\ncooldown = 3\n[traffic]\nrate = 1\n");
  ASSERT_TRUE(file) << file.error().ToString();
  EXPECT_EQ(file->base().duration, 1'500'000);
  EXPECT_EQ(file->base().breaker.cooldown, std::chrono::seconds(3));
}

// The cooldown an operator writes in the gateway's config reads the same in a scenario.
TEST(ScenarioLoaderTest, ReadsCompoundDurationsAsTheGatewayDoes) {
  auto file = Load("duration = \"1h30m\"\n[breaker]\ncooldown = \"2m30s\"\n[traffic]\nrate = 1\n");
  ASSERT_TRUE(file) << file.error().ToString();
  EXPECT_EQ(file->base().duration, 5'400'000'000);
  EXPECT_EQ(file->base().breaker.cooldown, std::chrono::seconds(150));
}

TEST(ScenarioLoaderTest, ReadsStreamsInFileOrder) {
  auto file = Load(R"(
[[traffic.stream]]
name = "forms"
rate = 2.0
[[traffic.stream]]
priority = "batch"
rate = 4.0
start = "0.5s"
arrivals = "poisson"
)");
  ASSERT_TRUE(file) << file.error().ToString();
  const auto& streams = file->base().streams;
  ASSERT_EQ(streams.size(), 2U);
  EXPECT_EQ(streams[0].name, "forms");
  EXPECT_EQ(streams[1].name, "stream1");
  EXPECT_EQ(streams[1].priority, Priority::kBatch);
  EXPECT_EQ(streams[1].start, 500'000);
  EXPECT_EQ(streams[1].arrivals, Arrivals::kPoisson);
}

TEST(ScenarioLoaderTest, SortsPhasesAndAllowsTouchingOnes) {
  auto file = Load(R"(
[traffic]
rate = 1
[[upstream.phase]]
from = "20s"
to = "30s"
mode = "hang"
[[upstream.phase]]
from = "10s"
to = "20s"
mode = "error"
)");
  ASSERT_TRUE(file) << file.error().ToString();
  const auto& phases = file->base().phases;
  ASSERT_EQ(phases.size(), 2U);
  EXPECT_EQ(phases[0].mode, Mode::kError);
  EXPECT_EQ(phases[1].mode, Mode::kHang);
}

TEST(ScenarioLoaderTest, PhaseLatencyDefaultsToZeroInEveryMode) {
  // The contract: phase `latency = "0ms"` by default, whatever the mode (not the healthy one).
  auto file = Load(R"(
[traffic]
rate = 1
[upstream]
latency = "5s"
[[upstream.phase]]
from = "0s"
to = "10s"
mode = "ok"
[[upstream.phase]]
from = "10s"
to = "20s"
mode = "fragile"
capacity = 1
relapse = "1s"
[[upstream.phase]]
from = "20s"
to = "30s"
mode = "slow"
latency = "3s"
)");
  ASSERT_TRUE(file) << file.error().ToString();
  const auto& phases = file->base().phases;
  ASSERT_EQ(phases.size(), 3U);
  EXPECT_EQ(phases[0].latency, 0);
  EXPECT_EQ(phases[1].latency, 0);
  EXPECT_EQ(phases[2].latency, 3 * kSecond);
}

TEST(ScenarioLoaderTest, AppliesVariantsOverTheBase) {
  auto file = Load(R"(
name = "base"
[breaker]
cooldown = "10s"
failure_threshold = 3
[traffic]
rate = 1
[[variant]]
name = "short"
breaker.cooldown = "1s"
[[variant]]
name = "two streams"
[[variant.traffic.stream]]
rate = 2
[[variant.traffic.stream]]
rate = 3
)");
  ASSERT_TRUE(file) << file.error().ToString();
  EXPECT_EQ(file->base().name, "base");
  ASSERT_EQ(file->variants().size(), 2U);
  const Scenario& shorter = file->variants()[0];
  EXPECT_EQ(shorter.name, "short");
  EXPECT_EQ(shorter.breaker.cooldown, std::chrono::seconds(1));
  EXPECT_EQ(shorter.breaker.failure_threshold, 3U);
  EXPECT_EQ(file->variants()[1].streams.size(), 2U);
  EXPECT_EQ(file->base().breaker.cooldown, std::chrono::seconds(10));
}

TEST(ScenarioLoaderTest, OverridesApplyAfterTheFile) {
  auto file = Load(R"(
[traffic]
rate = 1
[[upstream.phase]]
from = "10s"
to = "20s"
mode = "error"
)");
  ASSERT_TRUE(file) << file.error().ToString();
  BuildOptions options;
  options.overrides = {{"breaker.cooldown", "2.5s"},
                       {"traffic.rate", "4"},
                       {"upstream.phase[0].to", "30s"},
                       {"breaker.trip", "time_window"}};
  options.seed = 99;
  auto scenario = BuildScenario(*file, options);
  ASSERT_TRUE(scenario) << scenario.error().ToString();
  EXPECT_EQ(scenario->breaker.cooldown, std::chrono::milliseconds(2500));
  EXPECT_DOUBLE_EQ(scenario->streams[0].rate, 4.0);
  EXPECT_EQ(scenario->phases[0].to, 30 * kSecond);
  EXPECT_EQ(scenario->breaker.trip, TripPolicy::kTimeWindow);
  EXPECT_EQ(scenario->seed, 99U);
}

TEST(ScenarioLoaderTest, RefusesAnOverrideOfAnUnknownKey) {
  auto file = Load(kMinimal);
  ASSERT_TRUE(file);
  BuildOptions options;
  options.overrides = {{"breaker.colldown", "1s"}};
  auto scenario = BuildScenario(*file, options);
  ASSERT_FALSE(scenario);
  EXPECT_EQ(scenario.error().line, 0);
  EXPECT_THAT(scenario.error().ToString(), HasSubstr("breaker.colldown (override): unknown key"));
}

TEST(ScenarioLoaderTest, RefusesAnOverrideTheBreakerRefuses) {
  auto file = Load(kMinimal);
  ASSERT_TRUE(file);
  BuildOptions options;
  options.overrides = {{"breaker.half_open_max_probes", "0"}};
  auto scenario = BuildScenario(*file, options);
  ASSERT_FALSE(scenario);
  EXPECT_THAT(scenario.error().key, HasSubstr("breaker.half_open_max_probes"));
}

TEST(ScenarioLoaderTest, BuildsANamedVariant) {
  auto file = Load("[traffic]\nrate = 1\n[[variant]]\nname = \"v\"\nseed = 7\n");
  ASSERT_TRUE(file) << file.error().ToString();
  BuildOptions options;
  options.variant = "v";
  auto scenario = BuildScenario(*file, options);
  ASSERT_TRUE(scenario) << scenario.error().ToString();
  EXPECT_EQ(scenario->seed, 7U);
  options.variant = "w";
  auto missing = BuildScenario(*file, options);
  ASSERT_FALSE(missing);
  EXPECT_THAT(missing.error().message, HasSubstr("no variant named \"w\""));
}

TEST(LookupKeyKindTest, KnowsTheKeysOfEveryTable) {
  EXPECT_EQ(LookupKeyKind("breaker.cooldown"), KeyKind::kDuration);
  EXPECT_EQ(LookupKeyKind("breaker.half_open_max_probes"), KeyKind::kInteger);
  EXPECT_EQ(LookupKeyKind("breaker.failure_rate_threshold"), KeyKind::kNumber);
  EXPECT_EQ(LookupKeyKind("breaker.batch_may_probe"), KeyKind::kBool);
  EXPECT_EQ(LookupKeyKind("traffic.stream[2].rate"), KeyKind::kNumber);
  EXPECT_EQ(LookupKeyKind("upstream.phase[0].to"), KeyKind::kDuration);
  EXPECT_EQ(LookupKeyKind("seed"), KeyKind::kInteger);
  EXPECT_EQ(LookupKeyKind("breaker.nope"), std::nullopt);
  EXPECT_EQ(LookupKeyKind("upstream.phase.to"), std::nullopt);
  EXPECT_EQ(LookupKeyKind("breaker"), std::nullopt);
}

// ---- errors: file, line, key ----

TEST(ScenarioErrorTest, UnknownKeyNamesLineAndKey) {
  const LoadError e = ErrorOf("[breaker]\nfailure_treshold = 5\n[traffic]\nrate = 1\n");
  EXPECT_EQ(e.file, "test.toml");
  EXPECT_EQ(e.line, 2);
  EXPECT_EQ(e.key, "breaker.failure_treshold");
  EXPECT_EQ(e.message, "unknown key");
  EXPECT_EQ(e.ToString(), "test.toml:2:20: breaker.failure_treshold: unknown key");
}

TEST(ScenarioErrorTest, UnknownTopLevelTableIsRefused) {
  const LoadError e = ErrorOf("[traffic]\nrate = 1\n[upsteam]\nlatency = \"1ms\"\n");
  EXPECT_EQ(e.line, 3);
  EXPECT_EQ(e.key, "upsteam");
}

TEST(ScenarioErrorTest, BadDurationNamesLineAndKey) {
  const LoadError e = ErrorOf("[traffic]\nrate = 1\n[breaker]\ncooldown = \"10 seconds\"\n");
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.key, "breaker.cooldown");
  EXPECT_THAT(e.message, HasSubstr("bad duration \"10 seconds\""));
}

TEST(ScenarioErrorTest, NegativeDurationIsRefused) {
  const LoadError e = ErrorOf("duration = -5\n[traffic]\nrate = 1\n");
  EXPECT_EQ(e.line, 1);
  EXPECT_EQ(e.key, "duration");
}

TEST(ScenarioErrorTest, DurationAboveTheLimitNamesTheRange) {
  const LoadError seconds = ErrorOf("duration = 1e15\n[traffic]\nrate = 1\n");
  EXPECT_EQ(seconds.line, 1);
  EXPECT_EQ(seconds.key, "duration");
  EXPECT_EQ(seconds.message,
            "bad duration 1e+15: a number of seconds must be finite, >= 0 and at most "
            "1000000000 s (about 31.7 years)");
  const LoadError text = ErrorOf("[traffic]\nrate = 1\n[breaker]\ncooldown = \"2000000000s\"\n");
  EXPECT_EQ(text.line, 4);
  EXPECT_EQ(text.key, "breaker.cooldown");
  EXPECT_EQ(text.message,
            "bad duration \"2000000000s\": must be at most 1000000000 s (about 31.7 years)");
  const LoadError negative = ErrorOf("[traffic]\nrate = 1\nstart = -1\n");
  EXPECT_EQ(negative.key, "traffic.start");
  EXPECT_THAT(negative.message, HasSubstr(">= 0"));
}

TEST(ScenarioErrorTest, OverlappingPhasesPointAtTheLaterPhase) {
  const LoadError e = ErrorOf(R"([traffic]
rate = 1
[[upstream.phase]]
from = "10s"
to = "30s"
mode = "error"
[[upstream.phase]]
from = "20s"
to = "40s"
mode = "hang"
)");
  EXPECT_EQ(e.line, 8);
  EXPECT_EQ(e.key, "upstream.phase[1].from");
  EXPECT_THAT(e.message, HasSubstr("overlaps upstream.phase[0]"));
}

TEST(ScenarioErrorTest, PhaseMustEndAfterItStarts) {
  const LoadError e = ErrorOf(
      "[traffic]\nrate = 1\n[[upstream.phase]]\nfrom = \"5s\"\nto = \"5s\"\nmode = "
      "\"error\"\n");
  EXPECT_EQ(e.line, 5);
  EXPECT_EQ(e.key, "upstream.phase[0].to");
}

TEST(ScenarioErrorTest, RateMustBePositive) {
  const LoadError zero = ErrorOf("[traffic]\nrate = 0\n");
  EXPECT_EQ(zero.line, 2);
  EXPECT_EQ(zero.key, "traffic.rate");
  EXPECT_THAT(zero.message, HasSubstr("must be > 0"));
  const LoadError negative = ErrorOf("[[traffic.stream]]\nrate = -2.5\n");
  EXPECT_EQ(negative.key, "traffic.stream[0].rate");
}

TEST(ScenarioErrorTest, RatesWhoseArrivalsCannotBeRepresentedAreRefused) {
  // Below 1e-9/s the mean gap exceeds the longest duration; above 1e6/s it is below 1 us.
  for (const char* rate : {"1e-14", "1e-10", "1000000.5", "1e12"}) {
    const LoadError e = ErrorOf(std::string("[traffic]\nrate = ") + rate + "\n");
    EXPECT_EQ(e.file, "test.toml") << rate;
    EXPECT_EQ(e.line, 2) << rate;
    EXPECT_EQ(e.column, 8) << rate;
    EXPECT_EQ(e.key, "traffic.rate") << rate;
    EXPECT_THAT(e.message, HasSubstr("must be in [1e-09, 1e+06] calls per second")) << rate;
    EXPECT_THAT(e.message, HasSubstr("1 us, the simulator's time resolution")) << rate;
  }
  const LoadError stream =
      ErrorOf("[[traffic.stream]]\nrate = 1\n[[traffic.stream]]\nrate = 1e-14\n");
  EXPECT_EQ(stream.line, 4);
  EXPECT_EQ(stream.key, "traffic.stream[1].rate");
  EXPECT_THAT(stream.message, HasSubstr("got 1e-14"));
  // The limits themselves are fine.
  EXPECT_TRUE(Load("[traffic]\nrate = 1e-9\n"));
  EXPECT_TRUE(Load("duration = \"1s\"\n[traffic]\nrate = 1e6\n"));
}

TEST(ScenarioErrorTest, TrafficAboveTheCallLimitIsRefused) {
  const LoadError one = ErrorOf("duration = \"2000s\"\n[traffic]\nrate = 1e6\n");
  EXPECT_EQ(one.line, 3);
  EXPECT_EQ(one.key, "traffic.rate");
  EXPECT_EQ(one.message,
            "the traffic asks for 2000000000 calls (rate x (duration - start), duration 2000.0 s), "
            "more than the limit of 1000000000 calls per run: lower the rate or the duration");
  // Several streams: the sum counts, and the error points at the stream asking for the most.
  const LoadError streams = ErrorOf(
      "duration = \"1000s\"\n[[traffic.stream]]\nrate = 4e5\n[[traffic.stream]]\nrate = 7e5\n"
      "start = \"100s\"\n");
  EXPECT_EQ(streams.line, 5);
  EXPECT_EQ(streams.key, "traffic.stream[1].rate");
  EXPECT_THAT(streams.message, HasSubstr("asks for 1030000000 calls in all, 630000000 of them "
                                         "from this stream"));
  // Just below the limit is fine.
  EXPECT_TRUE(Load("duration = \"1000s\"\n[traffic]\nrate = 1e6\n"));
}

TEST(ScenarioErrorTest, AVariantThatBreaksTheCallLimitIsNamedAtItsOwnLine) {
  auto file = LoadScenarioString(
      "duration = \"10s\"\n[traffic]\nrate = 1e6\n\n[[variant]]\nname = \"long\"\n"
      "duration = \"2000s\"\n",
      "v.toml");
  ASSERT_FALSE(file.has_value());
  EXPECT_EQ(file.error().line, 7);
  EXPECT_THAT(file.error().key, ::testing::EndsWith("duration"));
  EXPECT_THAT(file.error().key, HasSubstr("variant"));
  EXPECT_THAT(file.error().message, HasSubstr("asks for 2000000000 calls"));
}

TEST(ScenarioErrorTest, OverridesAreHeldToTheSameRateAndCallLimits) {
  auto file = Load(kMinimal);
  ASSERT_TRUE(file);
  BuildOptions options;
  options.overrides = {{"traffic.rate", "1e12"}};
  auto rate = BuildScenario(*file, options);
  ASSERT_FALSE(rate);
  EXPECT_EQ(rate.error().key, "traffic.rate (override)");
  EXPECT_THAT(rate.error().message, HasSubstr("must be in [1e-09, 1e+06]"));
  options.overrides = {{"traffic.rate", "1e6"}, {"duration", "3600s"}};
  auto calls = BuildScenario(*file, options);
  ASSERT_FALSE(calls);
  EXPECT_EQ(calls.error().key, "traffic.rate (override)");
  EXPECT_THAT(calls.error().message, HasSubstr("3600000000 calls"));
  options.overrides = {{"duration", "1e15"}};
  auto duration = BuildScenario(*file, options);
  ASSERT_FALSE(duration);
  EXPECT_EQ(duration.error().key, "duration (override)");
  EXPECT_THAT(duration.error().message, HasSubstr("at most 1000000000 s"));
  options.overrides = {{"duration", "2000000000s"}};
  auto text = BuildScenario(*file, options);
  ASSERT_FALSE(text);
  EXPECT_THAT(text.error().message, HasSubstr("at most 1000000000 s"));
}

TEST(ScenarioErrorTest, ProbesBelowOneAreRefusedByTheBreakersValidate) {
  const LoadError e = ErrorOf("[traffic]\nrate = 1\n[breaker]\nhalf_open_max_probes = 0\n");
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.key, "breaker.half_open_max_probes");
  EXPECT_THAT(e.message, HasSubstr("half_open_max_probes"));
}

TEST(ScenarioErrorTest, NegativeCountsAreRefused) {
  const LoadError e = ErrorOf("[traffic]\nrate = 1\n[breaker]\nhalf_open_max_probes = -1\n");
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.key, "breaker.half_open_max_probes");
}

TEST(ScenarioErrorTest, ThresholdsOutsideZeroOneAreRefused) {
  for (const char* value : {"0", "0.0", "1.5", "-0.1"}) {
    const LoadError e = ErrorOf(std::string("[traffic]\nrate = 1\n[breaker]\n"
                                            "failure_rate_threshold = ") +
                                value + "\n");
    EXPECT_EQ(e.line, 4) << value;
    EXPECT_EQ(e.key, "breaker.failure_rate_threshold") << value;
  }
  const LoadError slow = ErrorOf("[traffic]\nrate = 1\n[breaker]\nslow_call_rate_threshold = 2\n");
  EXPECT_EQ(slow.key, "breaker.slow_call_rate_threshold");
}

TEST(ScenarioErrorTest, WrongTypeIsRefused) {
  const LoadError e = ErrorOf("[traffic]\nrate = 1\n[breaker]\nfailure_threshold = \"5\"\n");
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.message, "expected an integer, got a string");
}

TEST(ScenarioErrorTest, UnknownEnumValueIsRefused) {
  const LoadError trip = ErrorOf("[traffic]\nrate = 1\n[breaker]\ntrip = \"sliding\"\n");
  EXPECT_EQ(trip.key, "breaker.trip");
  const LoadError mode =
      ErrorOf("[traffic]\nrate = 1\n[[upstream.phase]]\nfrom = 0\nto = 1\nmode = \"down\"\n");
  EXPECT_EQ(mode.line, 6);
  EXPECT_EQ(mode.key, "upstream.phase[0].mode");
}

TEST(ScenarioErrorTest, TomlSyntaxErrorsCarryTheirLine) {
  const LoadError e = ErrorOf("[traffic]\nrate = 1\n[breaker\n");
  EXPECT_EQ(e.line, 3);
  EXPECT_TRUE(e.key.empty());
}

TEST(ScenarioErrorTest, MissingTrafficIsRefused) {
  const LoadError e = ErrorOf("seed = 3\n");
  EXPECT_EQ(e.key, "traffic");
}

TEST(ScenarioErrorTest, MissingRateIsRefused) {
  const LoadError e = ErrorOf("[traffic]\nstart = \"1s\"\n");
  EXPECT_EQ(e.key, "traffic");
  EXPECT_THAT(e.message, HasSubstr("rate"));
}

TEST(ScenarioErrorTest, StreamsAndSingleStreamKeysDoNotMix) {
  const LoadError e = ErrorOf("[traffic]\nrate = 1\n[[traffic.stream]]\nrate = 2\n");
  EXPECT_EQ(e.line, 2);
  EXPECT_EQ(e.key, "traffic.rate");
}

TEST(ScenarioErrorTest, FragileNeedsCapacityAndRelapse) {
  const LoadError e = ErrorOf(
      "[traffic]\nrate = 1\n[[upstream.phase]]\nfrom = 0\nto = 1\nmode = \"fragile\"\n"
      "relapse = \"5s\"\n");
  EXPECT_EQ(e.key, "upstream.phase[0]");
  EXPECT_THAT(e.message, HasSubstr("capacity"));
}

TEST(ScenarioErrorTest, CapacityOnlyBelongsToPhasesWithACapacity) {
  const LoadError e = ErrorOf(
      "[traffic]\nrate = 1\n[[upstream.phase]]\nfrom = 0\nto = 1\nmode = \"error\"\n"
      "capacity = 2\n");
  EXPECT_EQ(e.line, 7);
  EXPECT_EQ(e.key, "upstream.phase[0].capacity");
  EXPECT_EQ(e.message, "only valid with mode = \"fragile\", \"warming\", \"queue\" or \"refuse\"");
}

TEST(ScenarioErrorTest, QueueAndRefuseNeedACapacity) {
  for (const char* mode : {"queue", "refuse"}) {
    const LoadError e = ErrorOf(fmt::format(
        "[traffic]\nrate = 1\n[[upstream.phase]]\nfrom = 0\nto = 1\nmode = \"{}\"\n", mode));
    EXPECT_EQ(e.key, "upstream.phase[0]");
    EXPECT_EQ(e.message, fmt::format("mode \"{}\" needs capacity", mode));
  }
}

TEST(ScenarioErrorTest, RelapseOnlyBelongsToPhasesThatCollapse) {
  const LoadError e = ErrorOf(
      "[traffic]\nrate = 1\n[[upstream.phase]]\nfrom = 0\nto = 1\nmode = \"queue\"\n"
      "capacity = 2\nrelapse = \"1s\"\n");
  EXPECT_EQ(e.line, 8);
  EXPECT_EQ(e.key, "upstream.phase[0].relapse");
  EXPECT_EQ(e.message, "only valid with mode = \"fragile\" or \"warming\"");
}

TEST(ScenarioTest, ReadsQueueAndRefusePhases) {
  auto file = Load(
      "[traffic]\nrate = 1\n[[upstream.phase]]\nfrom = 0\nto = \"5s\"\nmode = \"queue\"\n"
      "capacity = 20\nlatency = \"100ms\"\n[[upstream.phase]]\nfrom = \"5s\"\nto = \"9s\"\n"
      "mode = \"refuse\"\ncapacity = 3\n");
  ASSERT_TRUE(file) << file.error().ToString();
  const Scenario& s = file->base();
  ASSERT_EQ(s.phases.size(), 2U);
  EXPECT_EQ(s.phases[0].mode, Mode::kQueue);
  EXPECT_EQ(ToString(s.phases[0].mode), "queue");
  EXPECT_EQ(s.phases[0].capacity, 20U);
  EXPECT_EQ(s.phases[0].latency, 100'000);
  EXPECT_EQ(s.phases[1].mode, Mode::kRefuse);
  EXPECT_EQ(ToString(s.phases[1].mode), "refuse");
  EXPECT_EQ(s.phases[1].capacity, 3U);
}

TEST(ScenarioErrorTest, AModeOverrideNeedsTheModesKeysInTheFile) {
  auto file = Load("[traffic]\nrate = 1\n[[upstream.phase]]\nfrom = 0\nto = 1\nmode = \"error\"\n");
  ASSERT_TRUE(file) << file.error().ToString();
  BuildOptions options;
  options.overrides = {{"upstream.phase[0].mode", "queue"}};
  auto queue = BuildScenario(*file, options);
  ASSERT_FALSE(queue);
  EXPECT_EQ(queue.error().key, "upstream.phase[0].mode (override)");
  EXPECT_EQ(queue.error().message, "mode \"queue\" needs capacity in the file");
  options.overrides = {{"upstream.phase[0].mode", "warming"}};
  auto warming = BuildScenario(*file, options);
  ASSERT_FALSE(warming);
  EXPECT_EQ(warming.error().message,
            "mode \"warming\" needs capacity, relapse, cold_capacity and warmup in the file");
}

TEST(ScenarioErrorTest, WarmingNeedsItsFourKeys) {
  const LoadError e = ErrorOf(
      "[traffic]\nrate = 1\n[[upstream.phase]]\nfrom = 0\nto = 1\nmode = \"warming\"\n"
      "capacity = 5\nrelapse = \"5s\"\ncold_capacity = 1\n");
  EXPECT_EQ(e.key, "upstream.phase[0]");
  EXPECT_THAT(e.message, HasSubstr("mode \"warming\" needs warmup"));
  const LoadError no_capacity = ErrorOf(
      "[traffic]\nrate = 1\n[[upstream.phase]]\nfrom = 0\nto = 1\nmode = \"warming\"\n"
      "relapse = \"5s\"\ncold_capacity = 1\nwarmup = \"10s\"\n");
  EXPECT_THAT(no_capacity.message, HasSubstr("mode \"warming\" needs capacity"));
}

TEST(ScenarioErrorTest, WarmupOnlyBelongsToWarmingPhases) {
  const LoadError e = ErrorOf(
      "[traffic]\nrate = 1\n[[upstream.phase]]\nfrom = 0\nto = 1\nmode = \"fragile\"\n"
      "capacity = 2\nrelapse = \"1s\"\nwarmup = \"3s\"\n");
  EXPECT_EQ(e.line, 9);
  EXPECT_EQ(e.key, "upstream.phase[0].warmup");
  EXPECT_THAT(e.message, HasSubstr("only valid with mode = \"warming\""));
}

TEST(ScenarioErrorTest, ColdCapacityIsAtMostCapacity) {
  const LoadError e = ErrorOf(
      "[traffic]\nrate = 1\n[[upstream.phase]]\nfrom = 0\nto = 1\nmode = \"warming\"\n"
      "capacity = 2\nrelapse = \"1s\"\ncold_capacity = 3\nwarmup = \"3s\"\n");
  EXPECT_EQ(e.line, 9);
  EXPECT_EQ(e.key, "upstream.phase[0].cold_capacity");
  EXPECT_THAT(e.message, HasSubstr("must be at most capacity (2), got 3"));
}

TEST(ScenarioTest, ReadsAWarmingPhaseAndTheRecoveryRamp) {
  auto file = LoadScenarioString(
      "[breaker]\nrecovery_ramp = \"30s\"\n[traffic]\nrate = 1\n[[upstream.phase]]\n"
      "from = \"1s\"\nto = \"9s\"\nmode = \"warming\"\ncapacity = 8\nrelapse = \"2s\"\n"
      "cold_capacity = 2\nwarmup = \"4s\"\n",
      "t.toml");
  ASSERT_TRUE(file) << file.error().ToString();
  const Scenario& s = file->base();
  EXPECT_EQ(s.breaker.recovery_ramp, std::chrono::seconds(30));
  ASSERT_EQ(s.phases.size(), 1U);
  EXPECT_EQ(s.phases[0].mode, Mode::kWarming);
  EXPECT_EQ(ToString(s.phases[0].mode), "warming");
  EXPECT_EQ(s.phases[0].capacity, 8U);
  EXPECT_EQ(s.phases[0].cold_capacity, 2U);
  EXPECT_EQ(s.phases[0].warmup, 4 * kMicrosPerSecond);
  EXPECT_EQ(s.phases[0].relapse, 2 * kMicrosPerSecond);
}

TEST(ScenarioErrorTest, ARecoveryRampOutOfRangeIsTheBreakersComplaint) {
  const LoadError e = ErrorOf("[traffic]\nrate = 1\n[breaker]\nrecovery_ramp = \"25h\"\n");
  EXPECT_EQ(e.key, "breaker.recovery_ramp");
}

TEST(ScenarioErrorTest, VariantErrorsNameTheVariantKey) {
  const LoadError e = ErrorOf(
      "[traffic]\nrate = 1\n[[variant]]\nname = \"a\"\n[[variant]]\nname = \"b\"\n"
      "breaker.cooldown = \"soon\"\n");
  EXPECT_EQ(e.line, 7);
  EXPECT_EQ(e.key, "variant[1].breaker.cooldown");
}

TEST(ScenarioErrorTest, VariantNamesAreUnique) {
  const LoadError e =
      ErrorOf("[traffic]\nrate = 1\n[[variant]]\nname = \"a\"\n[[variant]]\nname = \"a\"\n");
  EXPECT_EQ(e.line, 6);
  EXPECT_THAT(e.message, HasSubstr("duplicate variant name"));
}

TEST(ScenarioErrorTest, ReportsTheErrorThatComesFirstInTheFile) {
  const LoadError e = ErrorOf(
      "[traffic]\nrate = 1\n[breaker]\nzzz = 1\naaa = 2\n");  // keys iterate sorted: aaa first
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.key, "breaker.zzz");
}

TEST(ScenarioErrorTest, UnreadableFileIsReported) {
  auto file = LoadScenarioFile("/nonexistent/dir/x.toml");
  ASSERT_FALSE(file);
  EXPECT_EQ(file.error().file, "/nonexistent/dir/x.toml");
  EXPECT_THAT(file.error().message, HasSubstr("cannot open"));
}

}  // namespace
}  // namespace fusebox::sim

// Tests of sweeps: parameter parsing, grid order, parallel runs, and the lesson-7 trade-off.
#include "sweep.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "report.h"
#include "scenario.h"

namespace fusebox::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Csv(const ParamSpec& spec) {
  std::vector<std::string> out;
  for (const ParamValue& v : spec.values) {
    out.push_back(v.csv);
  }
  return out;
}

ScenarioFile LessonFile() {
  auto file = LoadScenarioFile(FUSEBOX_SOURCE_DIR "/scenarios/cooldown_tradeoff.toml");
  EXPECT_TRUE(file) << file.error().ToString();
  return std::move(*file);
}

TEST(ParseParamTest, DurationRangeIncludesBothEndsAndStepsInTheUnitGiven) {
  auto spec = ParseParam("breaker.cooldown=500ms:2s:500ms");
  ASSERT_TRUE(spec) << spec.error();
  EXPECT_EQ(spec->key, "breaker.cooldown");
  EXPECT_EQ(spec->kind, KeyKind::kDuration);
  EXPECT_THAT(Csv(*spec), ElementsAre("0.5", "1.0", "1.5", "2.0"));
  EXPECT_EQ(spec->values[0].override_text, "500000us");
  EXPECT_DOUBLE_EQ(spec->values[3].numeric, 2.0);
}

TEST(ParseParamTest, IntegerRange) {
  auto spec = ParseParam("breaker.failure_threshold=1:9:4");
  ASSERT_TRUE(spec) << spec.error();
  EXPECT_THAT(Csv(*spec), ElementsAre("1", "5", "9"));
}

TEST(ParseParamTest, FloatRangeHasNoRoundingNoise) {
  auto spec = ParseParam("breaker.failure_rate_threshold=0.1:0.3:0.1");
  ASSERT_TRUE(spec) << spec.error();
  EXPECT_THAT(Csv(*spec), ElementsAre("0.1", "0.2", "0.3"));
}

TEST(ParseParamTest, ListsTakeAnyKind) {
  auto probes = ParseParam("breaker.half_open_max_probes=1,10,10000");
  ASSERT_TRUE(probes) << probes.error();
  EXPECT_THAT(Csv(*probes), ElementsAre("1", "10", "10000"));
  auto trip = ParseParam("breaker.trip=consecutive,count_window");
  ASSERT_TRUE(trip) << trip.error();
  EXPECT_EQ(trip->values[1].json, "\"count_window\"");
  EXPECT_FALSE(trip->values[1].is_numeric);
}

TEST(ParseParamTest, RefusesARangeThatIsNotAWholeNumberOfSteps) {
  auto spec = ParseParam("breaker.cooldown=1s:10s:4s");
  ASSERT_FALSE(spec);
  EXPECT_THAT(spec.error(), HasSubstr("whole number of STEPs"));
}

TEST(ParseParamTest, RefusesUnknownKeysAndBadShapes) {
  EXPECT_THAT(ParseParam("breaker.colldown=1s:2s:1s").error(), HasSubstr("unknown key"));
  EXPECT_THAT(ParseParam("breaker.cooldown").error(), HasSubstr("KEY=FROM:TO:STEP"));
  EXPECT_THAT(ParseParam("breaker.cooldown=1s:2s").error(), HasSubstr("FROM:TO:STEP"));
  EXPECT_THAT(ParseParam("breaker.cooldown=2s:1s:1s").error(), HasSubstr("TO must not"));
  EXPECT_THAT(ParseParam("breaker.cooldown=1s:2s:0s").error(), HasSubstr("STEP must be > 0"));
  EXPECT_THAT(ParseParam("breaker.trip=a:b:c").error(), HasSubstr("give a list"));
  EXPECT_THAT(ParseParam("breaker.failure_threshold=1,x").error(), HasSubstr("bad integer"));
}

TEST(RunSweepTest, PointsComeInGridOrderWithTheLastParameterFastest) {
  const ScenarioFile file = LessonFile();
  auto a = ParseParam("breaker.cooldown=5s,10s");
  auto b = ParseParam("breaker.failure_threshold=3:5:1");
  ASSERT_TRUE(a && b);
  auto sweep = RunSweep(file, {}, {*a, *b}, {});
  ASSERT_TRUE(sweep) << sweep.error();
  ASSERT_EQ(sweep->points.size(), 6U);
  std::vector<std::vector<std::size_t>> order;
  for (const SweepPoint& p : sweep->points) {
    order.push_back(p.value_index);
  }
  EXPECT_EQ(order, (std::vector<std::vector<std::size_t>>{
                       {0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}}));
}

TEST(RunSweepTest, MatchesTheLessonsCooldownArithmetic) {
  // Outage [10 s, 60 s), one call a second, OPEN at 14 s, integer cooldowns c: a probe at
  // 14 + k c for k >= 1, wasted while before 60 s, so floor(45 / c) wasted probes; the first
  // probe at or after 60 s is at 14 + ceil(46 / c) c and closes 20 ms later.
  const ScenarioFile file = LessonFile();
  auto param = ParseParam("breaker.cooldown=1s:30s:1s");
  ASSERT_TRUE(param);
  SweepOptions options;
  options.jobs = 2;
  auto sweep = RunSweep(file, {}, {*param}, options);
  ASSERT_TRUE(sweep) << sweep.error();
  ASSERT_EQ(sweep->points.size(), 30U);
  for (std::size_t i = 0; i < 30; ++i) {
    const std::int64_t c = static_cast<std::int64_t>(i) + 1;
    SCOPED_TRACE("cooldown " + std::to_string(c));
    const Counters& counters = sweep->points[i].counters;
    EXPECT_EQ(counters.wasted_probes, static_cast<std::uint64_t>(45 / c));
    const std::int64_t close_s = 14 + ((46 + c - 1) / c) * c;
    ASSERT_TRUE(counters.recovery_delay.has_value());
    EXPECT_EQ(*counters.recovery_delay, (close_s - 60) * kMicrosPerSecond + 20'000);
  }
}

TEST(RunSweepTest, ResultsDoNotDependOnTheNumberOfThreads) {
  const ScenarioFile file = LessonFile();
  auto param = ParseParam("breaker.cooldown=1s:20s:1s");
  ASSERT_TRUE(param);
  SweepOptions one;
  one.jobs = 1;
  SweepOptions four;
  four.jobs = 4;
  auto a = RunSweep(file, {}, {*param}, one);
  auto b = RunSweep(file, {}, {*param}, four);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(SweepCsv(*a), SweepCsv(*b));
}

TEST(RunSweepTest, ReportsTheFirstPointTheBreakerRefuses) {
  const ScenarioFile file = LessonFile();
  auto param = ParseParam("breaker.half_open_max_probes=2,0,1");
  ASSERT_TRUE(param);
  auto sweep = RunSweep(file, {}, {*param}, {});
  ASSERT_FALSE(sweep);
  EXPECT_THAT(sweep.error(), HasSubstr("breaker.half_open_max_probes=0"));
}

TEST(RunSweepTest, CallsTheProgressCallbackUpToTheTotal) {
  const ScenarioFile file = LessonFile();
  auto param = ParseParam("breaker.cooldown=1s:5s:1s");
  ASSERT_TRUE(param);
  std::size_t last_done = 0;
  std::size_t last_total = 0;
  SweepOptions options;
  options.progress = [&](std::size_t done, std::size_t total) {
    last_done = done;
    last_total = total;
  };
  ASSERT_TRUE(RunSweep(file, {}, {*param}, options));
  EXPECT_EQ(last_done, 5U);
  EXPECT_EQ(last_total, 5U);
}

// What a ProgressLine writes, through a memory stream.
class ProgressOutput {
 public:
  ProgressOutput() : file_(open_memstream(&data_, &size_)) {}
  ProgressOutput(const ProgressOutput&) = delete;
  ProgressOutput& operator=(const ProgressOutput&) = delete;
  ~ProgressOutput() {
    std::fclose(file_);
    std::free(data_);
  }
  std::FILE* file() { return file_; }
  std::string text() {
    std::fflush(file_);
    return std::string(data_, size_);
  }

 private:
  char* data_ = nullptr;
  std::size_t size_ = 0;
  std::FILE* file_;
};

TEST(ProgressLineTest, AnUnfinishedBarIsWipedSoThatWhatFollowsStartsAClearLine) {
  ProgressOutput out;
  ProgressLine progress(out.file());
  progress.Draw(1, 4);
  progress.Draw(3, 4);
  progress.Close();
  const std::string bar = "[" + std::string(30, '#') + std::string(10, '.') + "] 3/4 points";
  const std::string text = out.text();
  EXPECT_THAT(text, ::testing::EndsWith("\r" + bar + "\r" + std::string(bar.size(), ' ') + "\r"));
  progress.Close();  // once is enough
  EXPECT_EQ(out.text(), text);
}

TEST(ProgressLineTest, ACompleteBarEndsItsLine) {
  ProgressOutput out;
  {
    ProgressLine progress(out.file());
    progress.Draw(4, 4);
    progress.Close();
  }
  EXPECT_EQ(out.text(), "\r[" + std::string(40, '#') + "] 4/4 points\n");
}

TEST(ProgressLineTest, NothingDrawnNothingWritten) {
  ProgressOutput out;
  {
    ProgressLine progress(out.file());
    progress.Close();
  }
  EXPECT_EQ(out.text(), "");
}

TEST(RunSweepTest, PointsWithExtremeRatesFailFastWithTheOverride) {
  const ScenarioFile file = LessonFile();
  for (const char* text : {"traffic.rate=1e12", "traffic.rate=1e-14"}) {
    auto param = ParseParam(text);
    ASSERT_TRUE(param) << text;
    auto sweep = RunSweep(file, {}, {*param}, {});
    ASSERT_FALSE(sweep) << text;
    EXPECT_THAT(sweep.error(), HasSubstr("(override): ")) << text;
  }
}

TEST(ParseParamTest, DurationsAboveTheLimitAreRefusedWithTheRange) {
  for (const char* text : {"duration=1e15", "duration=2000000000s", "duration=1s:2000000000s:1s"}) {
    auto spec = ParseParam(text);
    ASSERT_FALSE(spec) << text;
    EXPECT_THAT(spec.error(), HasSubstr("durations are at most 1000000000 s")) << text;
  }
}

TEST(RunSweepTest, RefusesAGridBeyondTheLimit) {
  const ScenarioFile file = LessonFile();
  auto a = ParseParam("breaker.cooldown=1s:100s:1s");
  auto b = ParseParam("breaker.failure_threshold=1:100:1");
  ASSERT_TRUE(a && b);
  SweepOptions options;
  options.max_points = 1000;
  auto sweep = RunSweep(file, {}, {*a, *b}, options);
  ASSERT_FALSE(sweep);
  EXPECT_THAT(sweep.error(), HasSubstr("10000 points"));
}

TEST(SweepOutputTest, CsvHasTheKeysThenTheCountersAndEmptyCellsForNoRecovery) {
  const ScenarioFile file = LessonFile();
  auto param = ParseParam("upstream.phase[0].to=60s,1000s");
  ASSERT_TRUE(param);
  auto sweep = RunSweep(file, {}, {*param}, {});
  ASSERT_TRUE(sweep) << sweep.error();
  const std::string csv = SweepCsv(*sweep);
  EXPECT_THAT(csv, ::testing::StartsWith(
                       "upstream.phase[0].to,calls,allowed,rejected_open,rejected_probe_cap,"
                       "succeeded,failed,timeouts,slow,probes,wasted_probes,recovery_delay_s,"));
  // The outage outlasts the run at 1000 s: no recovery, an empty cell.
  EXPECT_THAT(csv, HasSubstr("\n1000.0,150,"));
  EXPECT_THAT(csv, HasSubstr(",,"));
}

TEST(SweepOutputTest, JsonHasParamsInSecondsAndCounters) {
  const ScenarioFile file = LessonFile();
  auto param = ParseParam("breaker.cooldown=10s");
  ASSERT_TRUE(param);
  auto sweep = RunSweep(file, {}, {*param}, {});
  ASSERT_TRUE(sweep);
  const std::string json = SweepJson(*sweep);
  EXPECT_THAT(json, HasSubstr("{\"points\": ["));
  EXPECT_THAT(json, HasSubstr("{\"params\": {\"breaker.cooldown\": 10.0}, \"counters\": {"));
  EXPECT_THAT(json, HasSubstr("\"wasted_probes\": 4"));
  EXPECT_THAT(json, HasSubstr("\"recovery_delay_s\": 4.02"));
}

TEST(SweepOutputTest, TextHasAUnitUnderEachHeading) {
  const ScenarioFile file = LessonFile();
  auto cooldown = ParseParam("breaker.cooldown=5s,10s");
  auto rate = ParseParam("breaker.failure_rate_threshold=0.3,0.5");
  ASSERT_TRUE(cooldown && rate);
  auto sweep = RunSweep(file, {}, {*cooldown, *rate}, {});
  ASSERT_TRUE(sweep) << sweep.error();
  const std::string text = SweepText(*sweep);
  // The columns: the swept keys (a duration in s, a rate threshold in %), then the counters.
  EXPECT_THAT(text, ::testing::StartsWith(
                        "breaker.cooldown  breaker.failure_rate_threshold    calls  allowed"));
  EXPECT_THAT(text, HasSubstr("\n             (s)                             (%)  (calls)  "
                              "(calls)"));
  EXPECT_THAT(text, HasSubstr("  recovery_delay  "));
  EXPECT_THAT(text, HasSubstr("  (s)  (calls)   (times)        (calls)\n"));
  // One row per point after the two heading lines; 0.3 shows as 30 (%), 10 s as 10.0.
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2 + 4 + 1);
  EXPECT_THAT(text, HasSubstr("\n            10.0                              30      150"));
  EXPECT_THAT(text, HasSubstr("\n            10.0                              50      150"));
  // The lesson's breaker counts failures in a row: the rate threshold changes nothing.
  EXPECT_THAT(
      text, ::testing::EndsWith("\nnote: breaker.failure_rate_threshold has no effect under trip = "
                                "consecutive: the rows that differ only in it are identical\n"));

  // Durations all under a second are in ms.
  auto budget = ParseParam("breaker.call_timeout=250ms,500ms");
  ASSERT_TRUE(budget);
  auto ms = RunSweep(file, {}, {*budget}, {});
  ASSERT_TRUE(ms) << ms.error();
  const std::string ms_text = SweepText(*ms);
  EXPECT_THAT(ms_text, ::testing::StartsWith("breaker.call_timeout    calls"));
  EXPECT_THAT(ms_text, HasSubstr("\n                (ms)  (calls)"));
  EXPECT_THAT(ms_text, HasSubstr("\n                 250  "));
}

ScenarioFile SlidingWindowFile() {
  auto file = LoadScenarioFile(FUSEBOX_SOURCE_DIR "/scenarios/sliding_window.toml");
  EXPECT_TRUE(file) << file.error().ToString();
  return std::move(*file);
}

TEST(NoEffectNotesTest, FailureThresholdUnderAWindowPolicyIsNamedWithThePolicy) {
  const ScenarioFile file = SlidingWindowFile();
  BuildOptions base;
  base.variant = "count window";
  auto param = ParseParam("breaker.failure_threshold=2:8:1");
  ASSERT_TRUE(param);
  auto sweep = RunSweep(file, base, {*param}, {});
  ASSERT_TRUE(sweep) << sweep.error();
  ASSERT_EQ(sweep->points.size(), 7U);
  EXPECT_EQ(sweep->points[0].trip, TripPolicy::kCountWindow);
  EXPECT_THAT(NoEffectNotes(*sweep),
              ElementsAre("breaker.failure_threshold has no effect under trip = count_window: "
                          "every row is identical"));
  EXPECT_THAT(SweepText(*sweep),
              ::testing::EndsWith("\nnote: breaker.failure_threshold has no effect under trip = "
                                  "count_window: every row is identical\n"));
  // Under the consecutive policy (the base) the same sweep changes the outcome: no note.
  auto consecutive = RunSweep(file, {}, {*param}, {});
  ASSERT_TRUE(consecutive) << consecutive.error();
  EXPECT_THAT(NoEffectNotes(*consecutive), ::testing::IsEmpty());
  EXPECT_THAT(SweepText(*consecutive), ::testing::Not(HasSubstr("note:")));
}

TEST(NoEffectNotesTest, AWindowSettingUnderTheConsecutivePolicy) {
  auto param = ParseParam("breaker.window_size=10,20,40");
  ASSERT_TRUE(param);
  auto sweep = RunSweep(SlidingWindowFile(), {}, {*param}, {});
  ASSERT_TRUE(sweep) << sweep.error();
  EXPECT_THAT(NoEffectNotes(*sweep),
              ElementsAre("breaker.window_size has no effect under trip = consecutive: every row "
                          "is identical"));
}

TEST(NoEffectNotesTest, IdenticalRowsWithoutAPolicyReasonAndSeveralParameters) {
  // A cooldown longer than what is left of the run after the trip never ends: all alike.
  auto cooldown = ParseParam("breaker.cooldown=200s,300s");
  auto threshold = ParseParam("breaker.failure_threshold=3,5");
  ASSERT_TRUE(cooldown && threshold);
  auto sweep = RunSweep(LessonFile(), {}, {*cooldown, *threshold}, {});
  ASSERT_TRUE(sweep) << sweep.error();
  // The threshold moves the trip; the cooldown changes nothing for either threshold.
  EXPECT_THAT(NoEffectNotes(*sweep),
              ElementsAre("breaker.cooldown changed nothing here: the rows that differ only in "
                          "it are identical"));
}

}  // namespace
}  // namespace fusebox::sim

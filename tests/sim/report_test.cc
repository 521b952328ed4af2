// Tests of the output formats (docs/scenario-format.md, "Output") and of the SVG plots.
#include "report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "plot.h"
#include "scenario.h"
#include "simulator.h"
#include "sweep.h"

namespace fusebox::sim {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

struct Lesson {
  Scenario scenario;
  RunResult run;
};

Lesson RunLesson(bool timeline = false) {
  auto file = LoadScenarioFile(FUSEBOX_SOURCE_DIR "/scenarios/lesson5.toml");
  EXPECT_TRUE(file) << file.error().ToString();
  Lesson lesson{file->base(), {}};
  SimOptions options;
  options.record_timeline = timeline;
  auto run = Simulate(lesson.scenario, options);
  EXPECT_TRUE(run) << run.error();
  lesson.run = std::move(*run);
  return lesson;
}

TEST(RunTextTest, PrintsTransitionsTheWayTheLessonDoes) {
  const std::string text = RunText({RunLesson().run}, /*with_headers=*/false);
  EXPECT_THAT(text, StartsWith("--- transitions (t, from -> to) ---\n"
                               "    t= 14.0s      CLOSED -> OPEN\n"
                               "    t= 24.0s        OPEN -> HALF_OPEN\n"
                               "    t= 24.0s   HALF_OPEN -> OPEN\n"));
  EXPECT_THAT(text, HasSubstr("    t= 64.0s        OPEN -> HALF_OPEN\n"
                              "    t=64.02s   HALF_OPEN -> CLOSED\n"
                              "--- counters (seed 42) ---\n"));
  EXPECT_THAT(text, HasSubstr("    wasted_probes       4\n"));
  EXPECT_THAT(text, HasSubstr("    recovery_delay_s    4.02\n"));
}

TEST(RunTextTest, ShowsRejectedRecoveringOnlyWhenARunHasARamp) {
  const RunResult lesson = RunLesson().run;
  EXPECT_THAT(RunText({lesson}, false), ::testing::Not(HasSubstr("rejected_recovering")));
  EXPECT_THAT(RunJson(lesson, {}), ::testing::Not(HasSubstr("rejected_recovering")));
  RunResult ramped = lesson;
  ramped.name = "ramped";
  ramped.counters.recovery_ramp = true;
  ramped.counters.rejected_recovering = 7;
  // One run with a ramp shows the counter for every run, last among the counters.
  const std::string text = RunText({lesson, ramped}, true);
  EXPECT_THAT(text, HasSubstr("    max_in_flight       1\n    rejected_recovering 0\n"));
  EXPECT_THAT(text, HasSubstr("    rejected_recovering 7\n"));
  const std::string json = RunJson(lesson, {ramped});
  EXPECT_THAT(json, HasSubstr("\"rejected_recovering\": 0\n"));
  EXPECT_THAT(json, HasSubstr("\"rejected_recovering\": 7\n"));
  const CounterColumns recovering{
      .recovering = true, .refused = false, .overloaded = false, .throttled = false};
  EXPECT_EQ(CounterNames(recovering).back(), "rejected_recovering");
  EXPECT_EQ(CounterValues(ramped.counters, recovering).back(), "7");
  EXPECT_EQ(CounterNames().size() + 1, CounterNames(recovering).size());
}

TEST(RunTextTest, ShowsRefusedOnlyWhenARunHasARefusePhase) {
  const RunResult lesson = RunLesson().run;
  EXPECT_THAT(RunText({lesson}, false), ::testing::Not(HasSubstr("refused")));
  RunResult refusing = lesson;
  refusing.counters.refuse_mode = true;
  refusing.counters.refused = 12;
  EXPECT_THAT(RunText({refusing}, false),
              HasSubstr("    max_in_flight       1\n    refused             12\n"));
  EXPECT_THAT(RunJson(lesson, {refusing}), HasSubstr("\"refused\": 12\n"));
  EXPECT_THAT(RunJson(lesson, {refusing}), HasSubstr("\"refused\": 0\n"));
}

TEST(RunTextTest, HeadsEachRunWithItsNameWhenAskedTo) {
  const std::string text = RunText({RunLesson().run}, /*with_headers=*/true);
  EXPECT_THAT(text, StartsWith("=== lesson5 ===\n--- transitions"));
}

TEST(RunJsonTest, HasTheContractsKeysAndValues) {
  const std::string json = RunJson(RunLesson().run, {});
  EXPECT_THAT(json, StartsWith("{\n  \"seed\": 42,\n  \"transitions\": [\n"));
  EXPECT_THAT(json, HasSubstr("{\"t\": 14.0, \"from\": \"CLOSED\", \"to\": \"OPEN\""));
  EXPECT_THAT(json, HasSubstr("{\"t\": 64.02, \"from\": \"HALF_OPEN\", \"to\": \"CLOSED\""));
  for (const char* counter :
       {"\"calls\": 90,", "\"allowed\": 45,", "\"rejected_open\": 45,",
        "\"rejected_probe_cap\": 0,", "\"succeeded\": 36,", "\"failed\": 9,", "\"timeouts\": 0,",
        "\"slow\": 0,", "\"probes\": 5,", "\"wasted_probes\": 4,", "\"recovery_delay_s\": 4.02,"}) {
    EXPECT_THAT(json, HasSubstr(counter));
  }
}

TEST(RunJsonTest, WritesNullForAnAbsentRecoveryDelay) {
  RunResult run = RunLesson().run;
  run.counters.recovery_delay.reset();
  EXPECT_THAT(RunJson(run, {}), HasSubstr("\"recovery_delay_s\": null,"));
}

TEST(RunJsonTest, ListsVariantsWithTheirNames) {
  const RunResult run = RunLesson().run;
  RunResult variant = run;
  variant.name = "with \"quotes\"";
  const std::string json = RunJson(run, {variant});
  EXPECT_THAT(json, HasSubstr("\"variants\": [\n    {\n      \"name\": \"with \\\"quotes\\\"\","));
}

TEST(RunCsvTest, PrintsOneRowPerTransition) {
  const std::string csv = RunCsv(RunLesson().run);
  EXPECT_THAT(csv, StartsWith("t,from,to\n14.0,CLOSED,OPEN\n24.0,OPEN,HALF_OPEN\n"));
  EXPECT_THAT(csv, HasSubstr("\n64.02,HALF_OPEN,CLOSED\n"));
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 12);
}

TEST(RunSvgTest, DrawsStatesPhasesAndTransitionsWithoutScript) {
  const Lesson lesson = RunLesson(/*timeline=*/true);
  const std::string svg = RunSvg({lesson.scenario}, {lesson.run});
  EXPECT_THAT(svg, StartsWith("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_THAT(svg, HasSubstr("t=64.02 s: HALF_OPEN -&gt; CLOSED (probes_succeeded)"));
  EXPECT_THAT(svg, HasSubstr("error: [10.0 s, 60.0 s)"));
  EXPECT_THAT(svg, HasSubstr("OPEN from 14.0 s to 24.0 s"));
  EXPECT_THAT(svg, HasSubstr("1 probe at"));
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  EXPECT_THAT(svg, ::testing::EndsWith("</svg>\n"));
}

TEST(SweepSvgTest, ChartsTheTradeOffCounters) {
  auto file = LoadScenarioFile(FUSEBOX_SOURCE_DIR "/scenarios/cooldown_tradeoff.toml");
  ASSERT_TRUE(file);
  auto param = ParseParam("breaker.cooldown=1s:10s:1s");
  ASSERT_TRUE(param);
  auto sweep = RunSweep(*file, {}, {*param}, {});
  ASSERT_TRUE(sweep);
  const std::string svg = SweepSvg("cooldown_tradeoff", *sweep);
  EXPECT_THAT(svg, HasSubstr(">wasted_probes</text>"));
  EXPECT_THAT(svg, HasSubstr(">recovery_delay_s</text>"));
  EXPECT_THAT(svg, HasSubstr("breaker.cooldown=10.0 -&gt; wasted_probes=4"));
  EXPECT_EQ(svg.find("<script"), std::string::npos);
}

std::size_t Count(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) {
    ++n;
  }
  return n;
}

// The SVG of a one-parameter sweep of a shipped scenario.
std::string SweepSvgOf(const char* scenario, const char* param_text) {
  auto file = LoadScenarioFile(std::string(FUSEBOX_SOURCE_DIR "/scenarios/") + scenario);
  EXPECT_TRUE(file) << file.error().ToString();
  auto param = ParseParam(param_text);
  EXPECT_TRUE(param) << param.error();
  auto sweep = RunSweep(*file, {}, {*param}, {});
  EXPECT_TRUE(sweep) << sweep.error();
  return sweep ? SweepSvg(scenario, *sweep) : std::string();
}

TEST(SweepSvgTest, TextValuedAxisHasOneTickPerValue) {
  const std::string svg =
      SweepSvgOf("sliding_window.toml", "breaker.trip=consecutive,count_window,time_window");
  const std::size_t charts = Count(svg, "<polyline");  // one line per chart here
  ASSERT_GE(charts, 2U);
  for (const char* value : {"consecutive", "count_window", "time_window"}) {
    EXPECT_EQ(Count(svg, std::string(">") + value + "</text>"), charts) << value;
  }
  // Those are all the x-axis labels: no numeric ticks between the categories.
  EXPECT_EQ(Count(svg, "font-size=\"9\" text-anchor=\"middle\""), 3 * charts);
}

TEST(SweepSvgTest, BooleanAxisHasOneTickPerValue) {
  const std::string svg = SweepSvgOf("priorities.toml", "breaker.batch_may_probe=false,true");
  const std::size_t charts = Count(svg, "<polyline");
  ASSERT_GE(charts, 2U);
  EXPECT_EQ(Count(svg, ">false</text>"), charts);
  EXPECT_EQ(Count(svg, ">true</text>"), charts);
  EXPECT_EQ(Count(svg, "font-size=\"9\" text-anchor=\"middle\""), 2 * charts);
}

TEST(SweepSvgTest, NumericAxisKeepsItsScale) {
  const std::string svg = SweepSvgOf("cooldown_tradeoff.toml", "breaker.cooldown=1s:10s:1s");
  EXPECT_GE(Count(svg, ">2</text>"), Count(svg, "<polyline"));
}

}  // namespace
}  // namespace fusebox::sim

// Tests of the output formats (docs/scenario-format.md, "Output") and of the SVG plots.
#include "report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
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
  EXPECT_THAT(text,
              StartsWith("--- transitions (t, from -> to, cause) ---\n"
                         "    t= 14.0s      CLOSED -> OPEN         5 consecutive failures\n"
                         "    t= 24.0s        OPEN -> HALF_OPEN    cooldown elapsed (10.0 s)\n"
                         "    t= 24.0s   HALF_OPEN -> OPEN         probe failed\n"));
  EXPECT_THAT(text, HasSubstr("    t= 64.0s        OPEN -> HALF_OPEN    cooldown elapsed (10.0 s)\n"
                              "    t=64.02s   HALF_OPEN -> CLOSED       probe succeeded\n"
                              "--- counters (seed 42) ---\n"));
  EXPECT_THAT(text, HasSubstr("    wasted_probes       4\n"));
  EXPECT_THAT(text, HasSubstr("    recovery_delay_s    4.02\n"));
}

TEST(RunTextTest, SaysWhyAWindowTrippedWithTheBreakersFigures) {
  auto file = LoadScenarioFile(FUSEBOX_SOURCE_DIR "/scenarios/sliding_window.toml");
  ASSERT_TRUE(file) << file.error().ToString();
  BuildOptions options;
  options.variant = "count window";
  auto scenario = BuildScenario(*file, options);
  ASSERT_TRUE(scenario) << scenario.error().ToString();
  auto run = Simulate(*scenario);
  ASSERT_TRUE(run) << run.error();
  ASSERT_FALSE(run->transitions.empty());
  const Transition& trip = run->transitions.front();
  EXPECT_EQ(trip.cause, TransitionCause::kFailureRate);
  EXPECT_EQ(trip.judged, 20U);  // the breaker's window as it tripped
  EXPECT_EQ(trip.bad, 10U);
  EXPECT_THAT(RunText({*run}, false),
              HasSubstr("CLOSED -> OPEN         failure rate 50% >= 50% over 20 calls\n"));
}

TEST(CauseTextTest, NamesEveryCauseWithItsFigures) {
  Transition t;
  t.cause = TransitionCause::kConsecutiveFailures;
  t.judged = t.bad = 5;
  EXPECT_EQ(CauseText(t), "5 consecutive failures");
  t.slow_counts = true;
  EXPECT_EQ(CauseText(t), "5 consecutive failed or slow calls");
  t = Transition{.cause = TransitionCause::kFailureRate, .judged = 8, .bad = 5, .threshold = 0.5};
  EXPECT_EQ(CauseText(t), "failure rate 62.5% >= 50% over 8 calls");
  t = Transition{.cause = TransitionCause::kSlowCallRate, .judged = 3, .bad = 1, .threshold = 0.8};
  EXPECT_EQ(CauseText(t), "slow-call rate >= 80% (calls still running slow included)");
  t = Transition{.cause = TransitionCause::kCooldownElapsed, .waited = 2'500'000};
  EXPECT_EQ(CauseText(t), "cooldown elapsed (2.5 s)");
  t = Transition{.cause = TransitionCause::kProbesSucceeded, .judged = 3, .bad = 3};
  EXPECT_EQ(CauseText(t), "3 probes succeeded");
  EXPECT_EQ(CauseText(Transition{.cause = TransitionCause::kProbeTimedOut}), "probe timed out");
  EXPECT_EQ(CauseText(Transition{.cause = TransitionCause::kOperator}), "operator");
}

std::vector<RunResult> RunAll(const char* scenario) {
  auto file = LoadScenarioFile(std::string(FUSEBOX_SOURCE_DIR "/scenarios/") + scenario);
  EXPECT_TRUE(file) << file.error().ToString();
  std::vector<RunResult> runs;
  std::vector<std::optional<std::string>> names = {std::nullopt};
  for (const Scenario& v : file->variants()) {
    names.emplace_back(v.name);
  }
  for (const auto& name : names) {
    BuildOptions options;
    options.variant = name;
    auto built = BuildScenario(*file, options);
    EXPECT_TRUE(built) << built.error().ToString();
    auto run = Simulate(*built);
    EXPECT_TRUE(run) << run.error();
    runs.push_back(std::move(*run));
  }
  return runs;
}

TEST(RunsTableTest, PutsTheVariantsSideBySideInTextAndMarkdown) {
  const std::vector<RunResult> runs = RunAll("sliding_window.toml");
  ASSERT_EQ(runs.size(), 4U);
  const std::string markdown = RunsTable(runs, TableStyle::kMarkdown);
  EXPECT_THAT(markdown,
              StartsWith("| run | consecutive | count window | time window | time window, minimum "
                         "40 |\n|---|---:|---:|---:|---:|\n| first OPEN (s) | never | 28.5 | 28.5 "
                         "| never |\n| times opened | 0 | 4 | 4 | 0 |\n"));
  EXPECT_THAT(markdown, HasSubstr("\n| failed | 44 | 26 | 26 | 44 |\n"));
  EXPECT_THAT(markdown, HasSubstr("\n| refused: CIRCUIT_OPEN | 0 | 36 | 36 | 0 |\n"));
  EXPECT_THAT(markdown, HasSubstr("\n| upstream calls while failing | 44 | 26 | 26 | 44 |\n"));
  EXPECT_THAT(markdown, ::testing::Not(HasSubstr("relapses")));  // no run has one
  EXPECT_THAT(markdown, ::testing::Not(HasSubstr("CIRCUIT_RECOVERING")));

  // The text ends with the same table, its columns aligned under the run names.
  const std::string text = RunText(runs, /*with_headers=*/true);
  const std::size_t at = text.find("\n=== side by side ===\n");
  ASSERT_NE(at, std::string::npos);
  const std::string table = text.substr(at + 22);
  EXPECT_EQ(table, RunsTable(runs, TableStyle::kText));
  EXPECT_THAT(table, StartsWith("    run                           consecutive  count window  "
                                "time window  time window, minimum 40\n"
                                "    first OPEN (s)                      never          28.5  "
                                "       28.5                    never\n"));
  // One run: no table.
  EXPECT_THAT(RunText({runs[0]}, false), ::testing::Not(HasSubstr("side by side")));
}

TEST(RunsTableTest, CountsUpstreamCallsWhileTheUpstreamFails) {
  // lesson5: the 5 calls that trip it and the 4 wasted probes went out during the outage.
  const std::vector<RunResult> runs = RunAll("lesson5.toml");
  EXPECT_EQ(runs[0].counters.allowed_while_failing, 9U);
  EXPECT_THAT(RunsTable(runs, TableStyle::kMarkdown),
              HasSubstr("| upstream calls while failing | 9 |\n| probes (wasted) | 5 (4) |\n"));
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
  EXPECT_THAT(svg, HasSubstr("t=64.02 s: HALF_OPEN -&gt; CLOSED: probe succeeded"));
  EXPECT_THAT(svg, HasSubstr("error: [10.0 s, 60.0 s)"));
  EXPECT_THAT(svg, HasSubstr("OPEN from 14.0 s to 24.0 s"));
  EXPECT_THAT(svg, HasSubstr("1 probe at"));
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  EXPECT_THAT(svg, ::testing::EndsWith("</svg>\n"));
}

// A breaker that flaps under Poisson arrivals: a 100 ms cooldown against a dead upstream for
// 50 s makes hundreds of transitions microseconds to milliseconds apart.
RunResult FlappingRun(Scenario& scenario) {
  auto file = LoadScenarioString(R"(seed = 7
duration = "60s"
[breaker]
cooldown = "100ms"
failure_threshold = 3
[traffic]
rate = 200
arrivals = "poisson"
[[upstream.phase]]
from = "5s"
to = "55s"
mode = "error"
)",
                                 "flapping.toml");
  EXPECT_TRUE(file) << file.error().ToString();
  scenario = file->base();
  SimOptions options;
  options.record_timeline = true;
  auto run = Simulate(scenario, options);
  EXPECT_TRUE(run) << run.error();
  return std::move(*run);
}

struct Box {
  double x0, x1, y0, y1;
  std::string text;
};

bool Intersect(const Box& a, const Box& b) {
  return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;
}

// The transition labels of an SVG, each as the box its text takes (centred on x, one font size
// tall above the baseline), from a width per character no narrower than Helvetica's digits.
std::vector<Box> TransitionLabelBoxes(const std::string& svg) {
  std::vector<Box> boxes;
  const std::string tag = R"(<text class="transition-label" x=")";
  for (std::size_t at = svg.find(tag); at != std::string::npos; at = svg.find(tag, at + 1)) {
    const double x = std::stod(svg.substr(at + tag.size()));
    const std::size_t y_at = svg.find("y=\"", at) + 3;
    const double y = std::stod(svg.substr(y_at));
    const std::size_t text_at = svg.find("</title>", at) + 8;
    const std::string text = svg.substr(text_at, svg.find("</text>", text_at) - text_at);
    const double width = 0.556 * 9 * static_cast<double>(text.size());
    boxes.push_back(Box{x - width / 2, x + width / 2, y - 9, y, text});
  }
  return boxes;
}

TEST(RunSvgTest, TransitionLabelsOfAFlappingBreakerNeverOverlap) {
  Scenario scenario;
  const RunResult run = FlappingRun(scenario);
  ASSERT_GT(run.transitions.size(), 300U);
  const std::string svg = RunSvg({scenario}, {run});
  const std::vector<Box> boxes = TransitionLabelBoxes(svg);
  ASSERT_GT(boxes.size(), 3U);
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    // Rounded to the axis's resolution (0.1 s on a 60 s axis), never to the microsecond.
    EXPECT_THAT(boxes[i].text, ::testing::MatchesRegex(
                                   "[0-9]+\\.[0-9]( \\([0-9]+\\)|-[0-9]+\\.[0-9] \\([0-9]+\\))?"));
    for (std::size_t j = i + 1; j < boxes.size(); ++j) {
      EXPECT_FALSE(Intersect(boxes[i], boxes[j]))
          << "\"" << boxes[i].text << "\" at " << boxes[i].x0 << " and \"" << boxes[j].text
          << "\" at " << boxes[j].x0;
    }
  }
}

TEST(TransitionLabelLayoutTest, CoversEveryTransitionOnceWithoutOverlap) {
  Scenario scenario;
  const RunResult run = FlappingRun(scenario);
  const std::vector<TransitionLabel> labels = LayoutTransitionLabels(run.transitions, 60.0);
  std::size_t next = 0;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const TransitionLabel& a = labels[i];
    EXPECT_EQ(a.first, next);  // in order, every transition in exactly one label
    next = a.first + a.count;
    EXPECT_GE(a.row, 0);
    EXPECT_LT(a.row, kTransitionLabelRows);
    EXPECT_NEAR(a.x1 - a.x0, TransitionLabelWidth(a.text), 1e-9);
    for (std::size_t j = i + 1; j < labels.size(); ++j) {
      const TransitionLabel& b = labels[j];
      EXPECT_FALSE(a.row == b.row && a.x0 < b.x1 + 4 && b.x0 < a.x1 + 4)
          << a.text << " / " << b.text;
    }
  }
  EXPECT_EQ(next, run.transitions.size());
}

TEST(TransitionLabelLayoutTest, RoundsToTheAxisAndKeepsFarApartTransitionsApart) {
  const std::vector<Transition> transitions = {
      {14'000'000, State::kClosed, State::kOpen, TransitionCause::kConsecutiveFailures},
      {24'000'123, State::kOpen, State::kHalfOpen, TransitionCause::kCooldownElapsed},
      {24'000'456, State::kHalfOpen, State::kOpen, TransitionCause::kProbeFailed},
      {64'020'000, State::kOpen, State::kClosed, TransitionCause::kProbesSucceeded}};
  // 90 s over the plot: 0.1 s is under 5 px.
  std::vector<TransitionLabel> labels = LayoutTransitionLabels(transitions, 90.0);
  ASSERT_EQ(labels.size(), 3U);
  EXPECT_EQ(labels[0].text, "14.0");
  EXPECT_EQ(labels[1].text, "24.0 (2)");
  EXPECT_EQ(labels[2].text, "64.0");
  EXPECT_EQ(labels[2].row, 0);
  // 10 s: hundredths; 1 s: milliseconds, and 333 us apart still cannot be told apart.
  labels = LayoutTransitionLabels({transitions[0]}, 10.0);
  EXPECT_EQ(labels[0].text, "14.00");
  labels = LayoutTransitionLabels({{500'123, State::kOpen, State::kHalfOpen},
                                   {500'456, State::kHalfOpen, State::kOpen},
                                   {700'000, State::kOpen, State::kHalfOpen}},
                                  1.0);
  ASSERT_EQ(labels.size(), 2U);
  EXPECT_EQ(labels[0].text, "0.500 (2)");
  EXPECT_EQ(labels[1].text, "0.700");
  // An hour: whole seconds.
  labels = LayoutTransitionLabels({transitions[0]}, 3600.0);
  EXPECT_EQ(labels[0].text, "14");
}

TEST(TransitionLabelLayoutTest, StaggersCloseLabelsOnRowsBeforeMergingThem) {
  // Three transitions 1 s apart on a 100 s axis (8.6 px apart): too close for one row.
  const std::vector<Transition> transitions = {
      {10'000'000, State::kClosed, State::kOpen, TransitionCause::kConsecutiveFailures},
      {11'000'000, State::kOpen, State::kHalfOpen, TransitionCause::kCooldownElapsed},
      {12'000'000, State::kHalfOpen, State::kOpen, TransitionCause::kProbeFailed}};
  const std::vector<TransitionLabel> labels = LayoutTransitionLabels(transitions, 100.0);
  ASSERT_EQ(labels.size(), 3U);
  EXPECT_EQ(labels[0].row, 0);
  EXPECT_EQ(labels[1].row, 1);
  EXPECT_EQ(labels[2].row, 2);
  EXPECT_EQ(labels[1].text, "11.0");
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

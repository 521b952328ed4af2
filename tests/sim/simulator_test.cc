// Tests of the virtual-time driver: the lesson trace transition by transition, the ordering and
// timing rules of docs/scenario-format.md, and the counters.
#include "simulator.h"

#include <gtest/gtest.h>

#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "scenario.h"

namespace fusebox::sim {
namespace {

constexpr Micros kSecond = kMicrosPerSecond;

Scenario Build(const std::string& text) {
  auto file = LoadScenarioString(text, "test.toml");
  EXPECT_TRUE(file) << file.error().ToString();
  return file ? file->base() : Scenario{};
}

RunResult RunSim(const Scenario& scenario, const SimOptions& options = {}) {
  auto result = Simulate(scenario, options);
  EXPECT_TRUE(result) << result.error();
  return result ? std::move(*result) : RunResult{};
}

Scenario Lesson() {
  auto file = LoadScenarioFile(FUSEBOX_SOURCE_DIR "/scenarios/lesson5.toml");
  EXPECT_TRUE(file) << file.error().ToString();
  return file ? file->base() : Scenario{};
}

struct Expected {
  Micros t;
  State from;
  State to;
};

TEST(LessonTraceTest, PrintsExactlyTheLessonsTransitions) {
  const RunResult run = RunSim(Lesson());
  const std::vector<Expected> lesson = {
      {14 * kSecond, State::kClosed, State::kOpen},
      {24 * kSecond, State::kOpen, State::kHalfOpen},
      {24 * kSecond, State::kHalfOpen, State::kOpen},
      {34 * kSecond, State::kOpen, State::kHalfOpen},
      {34 * kSecond, State::kHalfOpen, State::kOpen},
      {44 * kSecond, State::kOpen, State::kHalfOpen},
      {44 * kSecond, State::kHalfOpen, State::kOpen},
      {54 * kSecond, State::kOpen, State::kHalfOpen},
      {54 * kSecond, State::kHalfOpen, State::kOpen},
      {64 * kSecond, State::kOpen, State::kHalfOpen},
      {64'020'000, State::kHalfOpen, State::kClosed},
  };
  ASSERT_EQ(run.transitions.size(), lesson.size());
  for (std::size_t i = 0; i < lesson.size(); ++i) {
    SCOPED_TRACE("transition " + std::to_string(i));
    EXPECT_EQ(run.transitions[i].t, lesson[i].t);
    EXPECT_EQ(run.transitions[i].from, lesson[i].from);
    EXPECT_EQ(run.transitions[i].to, lesson[i].to);
  }
}

TEST(LessonTraceTest, NamesTheCauseOfEachTransition) {
  const RunResult run = RunSim(Lesson());
  ASSERT_EQ(run.transitions.size(), 11U);
  EXPECT_EQ(run.transitions[0].cause, TransitionCause::kConsecutiveFailures);
  EXPECT_EQ(run.transitions[1].cause, TransitionCause::kCooldownElapsed);
  EXPECT_EQ(run.transitions[2].cause, TransitionCause::kProbeFailed);
  EXPECT_EQ(run.transitions[10].cause, TransitionCause::kProbesSucceeded);
}

TEST(LessonTraceTest, WastesFourProbesAndRecoversAfterFourPointZeroTwoSeconds) {
  const Counters c = RunSim(Lesson()).counters;
  EXPECT_EQ(c.probes, 5U);
  EXPECT_EQ(c.wasted_probes, 4U);
  ASSERT_TRUE(c.recovery_delay.has_value());
  EXPECT_EQ(*c.recovery_delay, 4'020'000);
}

TEST(LessonTraceTest, CountsMatchTheFormatsExample) {
  const Counters c = RunSim(Lesson()).counters;
  EXPECT_EQ(c.calls, 90U);
  EXPECT_EQ(c.allowed, 45U);
  EXPECT_EQ(c.rejected_open, 45U);
  EXPECT_EQ(c.rejected_probe_cap, 0U);
  EXPECT_EQ(c.succeeded, 36U);
  EXPECT_EQ(c.failed, 9U);
  EXPECT_EQ(c.timeouts, 0U);
  EXPECT_EQ(c.slow, 0U);
  EXPECT_EQ(c.calls, c.allowed + c.rejected_open + c.rejected_probe_cap);
  EXPECT_EQ(c.allowed, c.succeeded + c.failed);
}

// A hung upstream at a high rate keeps every call in flight until its budget: the run stops with
// an error once more are in flight than the memory bound allows, instead of taking all memory.
// Active probing (rule 7): the lesson's outage, no order ever the probe, a probe every 1.5 s
// under a 500 ms budget, closing at the first probe after the revival.
TEST(ActiveProbingTest, TheProberProbesAndNoArrivalDoes) {
  auto file = LoadScenarioFile(FUSEBOX_SOURCE_DIR "/scenarios/lesson5_active.toml");
  ASSERT_TRUE(file) << file.error().ToString();
  const RunResult run = RunSim(file->base());
  const Counters& c = run.counters;
  ASSERT_FALSE(run.transitions.empty());
  EXPECT_EQ(run.transitions.front().t, 14 * kSecond);
  EXPECT_EQ(run.transitions[1].t, 15'500'000);  // one interval after opening
  EXPECT_EQ(run.transitions.back().to, State::kClosed);
  EXPECT_EQ(run.transitions.back().t, 60'520'000);
  ASSERT_TRUE(c.recovery_delay.has_value());
  EXPECT_EQ(*c.recovery_delay, 520'000);
  EXPECT_EQ(c.probes, 31U);
  EXPECT_EQ(c.wasted_probes, 30U);
  EXPECT_EQ(run.streams.front().probes, 0U);  // no order was a probe
  EXPECT_EQ(c.calls, c.allowed + c.rejected_open + c.rejected_probe_cap);
  EXPECT_EQ(c.succeeded + c.failed, c.allowed);  // the probes are not calls
}

// Two good probes close (half_open_successes = 2): the prober asks again after the first, which
// moved nothing.
TEST(ActiveProbingTest, AGoodProbeShortOfTheCountIsFollowedByTheNext) {
  const RunResult run = RunSim(Build(R"(
duration = "30s"
[breaker]
failure_threshold = 1
probe_mode = "active"
probe_interval = "1s"
half_open_successes = 2
[traffic]
rate = 1
[upstream]
latency = "10ms"
[[upstream.phase]]
from = "0s"
to = "5s"
mode = "error"
)"));
  ASSERT_FALSE(run.transitions.empty());
  EXPECT_EQ(run.transitions.back().to, State::kClosed);
  EXPECT_LT(run.transitions.back().t, 8 * kSecond);  // not stuck in HALF_OPEN to the end
}

// A probe into a hang ends at the probe budget, not at call_timeout.
TEST(ActiveProbingTest, AProbeIntoAHangEndsAtItsBudget) {
  const RunResult run = RunSim(Build(R"(
duration = "40s"
[breaker]
failure_threshold = 1
call_timeout = "7s"
probe_mode = "active"
probe_interval = "2s"
probe_budget = "1s"
[traffic]
rate = 0.1
[upstream]
latency = "10ms"
[[upstream.phase]]
from = "0s"
to = "30s"
mode = "hang"
)"));
  // The first call (t = 0) times out at 7 s and opens; probes at 9, 12, 15 ... each end 1 s later.
  ASSERT_GE(run.transitions.size(), 5U);
  EXPECT_EQ(run.transitions[0].t, 7 * kSecond);
  EXPECT_EQ(run.transitions[1].t, 9 * kSecond);   // OPEN -> HALF_OPEN: the probe starts
  EXPECT_EQ(run.transitions[2].t, 10 * kSecond);  // HALF_OPEN -> OPEN at the budget's end
  EXPECT_EQ(run.transitions[2].cause, TransitionCause::kProbeTimedOut);
  EXPECT_EQ(run.transitions[3].t, 12 * kSecond);
  EXPECT_EQ(run.transitions.back().to, State::kClosed);
  EXPECT_EQ(run.counters.max_in_flight, 1U);
}

TEST(SimulatorTest, StopsWithAnErrorWhenTooManyCallsAreInFlight) {
  const Scenario scenario = Build(R"(
duration = "10s"
[breaker]
call_timeout = "2000s"
[traffic]
rate = 1000
[[upstream.phase]]
from = "0s"
to = "10s"
mode = "hang"
)");
  SimOptions options;
  options.max_calls_in_flight = 500;
  auto result = Simulate(scenario, options);
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error(),
            "more than 500 calls in flight at t=0.5 s (the upstream holds about rate x "
            "min(call_timeout, its latency) of them): lower the rate or breaker.call_timeout");
  options.max_calls_in_flight = 20000;  // room for all 10,000: the run completes
  EXPECT_TRUE(Simulate(scenario, options).has_value());
}

TEST(SimulatorTest, IsDeterministic) {
  const Scenario scenario = Build(R"(
duration = "30s"
[traffic]
rate = 7
arrivals = "poisson"
[[upstream.phase]]
from = "5s"
to = "15s"
mode = "error"
)");
  const RunResult a = RunSim(scenario);
  const RunResult b = RunSim(scenario);
  EXPECT_EQ(a.counters.calls, b.counters.calls);
  EXPECT_EQ(a.counters.allowed, b.counters.allowed);
  ASSERT_EQ(a.transitions.size(), b.transitions.size());
  for (std::size_t i = 0; i < a.transitions.size(); ++i) {
    EXPECT_EQ(a.transitions[i].t, b.transitions[i].t);
  }
}

TEST(SimulatorTest, PoissonArrivalsDependOnTheSeed) {
  Scenario scenario = Build("duration = \"100s\"\n[traffic]\nrate = 10\narrivals = \"poisson\"\n");
  const std::uint64_t first = RunSim(scenario).counters.calls;
  scenario.seed = 2;
  const std::uint64_t second = RunSim(scenario).counters.calls;
  EXPECT_NE(first, second);
  EXPECT_NEAR(static_cast<double>(first), 1000.0, 150.0);
}

TEST(SimulatorTest, UniformArrivalsAreRoundedToTheMicrosecond) {
  // Call k arrives at round(k * 1e6 / 3): the third call (k = 2) at 666667 us is the first one
  // inside the outage, and one failure trips.
  const RunResult run = RunSim(Build(R"(
duration = "2s"
[breaker]
failure_threshold = 1
[traffic]
rate = 3
[[upstream.phase]]
from = "0.5s"
to = "2s"
mode = "error"
)"));
  ASSERT_FALSE(run.transitions.empty());
  EXPECT_EQ(run.transitions[0].t, 666'667);
}

TEST(SimulatorTest, ArrivalsHappenOnlyBeforeTheDuration) {
  const RunResult run =
      RunSim(Build("duration = \"10s\"\n[traffic]\nrate = 1\nstart = \"0.5s\"\n"));
  EXPECT_EQ(run.counters.calls, 10U);  // 0.5, 1.5, ..., 9.5
}

TEST(SimulatorTest, CompletionsAtAnInstantRunBeforeArrivals) {
  // The call at 0 fails at 1 s, the instant the next call arrives: the failure trips first, so
  // the arrival at 1 s is rejected.
  const RunResult run = RunSim(Build(R"(
duration = "2s"
[breaker]
failure_threshold = 1
[traffic]
rate = 1
[[upstream.phase]]
from = "0s"
to = "2s"
mode = "error"
latency = "1s"
)"));
  EXPECT_EQ(run.counters.allowed, 1U);
  EXPECT_EQ(run.counters.rejected_open, 1U);
}

TEST(SimulatorTest, SameInstantArrivalsRunInStreamOrder) {
  // Both streams arrive at 0. The first stream's call fails at once; its completion (at 0)
  // runs before the second stream's arrival (also at 0), which finds the breaker open.
  const RunResult run = RunSim(Build(R"(
duration = "1s"
[breaker]
failure_threshold = 1
[[traffic.stream]]
name = "first"
rate = 1
[[traffic.stream]]
name = "second"
rate = 1
[[upstream.phase]]
from = "0s"
to = "1s"
mode = "error"
)"));
  ASSERT_EQ(run.streams.size(), 2U);
  EXPECT_EQ(run.streams[0].allowed, 1U);
  EXPECT_EQ(run.streams[1].rejected_open, 1U);
}

TEST(SimulatorTest, AnswerAtTheBudgetIsATimeoutAtTheBudget) {
  const RunResult run = RunSim(Build(R"(
duration = "1s"
[breaker]
failure_threshold = 1
call_timeout = "2s"
[traffic]
rate = 1
[[upstream.phase]]
from = "0s"
to = "1s"
mode = "slow"
latency = "2s"
)"));
  EXPECT_EQ(run.counters.timeouts, 1U);
  EXPECT_EQ(run.counters.failed, 1U);
  EXPECT_EQ(run.counters.slow, 1U);
  ASSERT_EQ(run.transitions.size(), 1U);
  EXPECT_EQ(run.transitions[0].t, 2 * kSecond);
  EXPECT_EQ(run.end, 2 * kSecond);
}

TEST(SimulatorTest, HungCallsTimeOutAtCallTimeout) {
  const RunResult run = RunSim(Build(R"(
duration = "3s"
[breaker]
failure_threshold = 100
call_timeout = "1500ms"
[traffic]
rate = 1
[[upstream.phase]]
from = "0s"
to = "3s"
mode = "hang"
)"));
  EXPECT_EQ(run.counters.timeouts, 3U);
  EXPECT_EQ(run.end, 3'500'000);
  EXPECT_EQ(run.counters.max_in_flight, 2U);
}

TEST(SimulatorTest, SlowSuccessesAreCountedFromTheBreakersVerdict) {
  const RunResult run = RunSim(Build(R"(
duration = "3s"
[breaker]
failure_threshold = 100
slow_call_duration = "1s"
[traffic]
rate = 1
[[upstream.phase]]
from = "1s"
to = "3s"
mode = "slow"
latency = "1s"
)"));
  EXPECT_EQ(run.counters.succeeded, 3U);
  EXPECT_EQ(run.counters.slow, 2U);
  EXPECT_EQ(run.counters.failed, 0U);
}

TEST(SimulatorTest, ASlowProbeIsWasted) {
  // Open at 0 on a slow call, probe at 2 s: still slow, so the probe is wasted and reopens.
  const RunResult run = RunSim(Build(R"(
duration = "3s"
[breaker]
failure_threshold = 1
slow_call_duration = "500ms"
cooldown = "1s"
[traffic]
rate = 1
[[upstream.phase]]
from = "0s"
to = "3s"
mode = "slow"
latency = "600ms"
)"));
  EXPECT_EQ(run.counters.probes, 1U);
  EXPECT_EQ(run.counters.wasted_probes, 1U);
}

TEST(SimulatorTest, BatchCallsNeverTakeTheProbeSlot) {
  const RunResult run = RunSim(Build(R"(
duration = "12s"
[breaker]
failure_threshold = 1
cooldown = "5s"
[[traffic.stream]]
name = "batch"
priority = "batch"
rate = 1
[[traffic.stream]]
name = "forms"
rate = 1
start = "0.5s"
[[upstream.phase]]
from = "0s"
to = "1s"
mode = "error"
)"));
  ASSERT_EQ(run.streams.size(), 2U);
  EXPECT_EQ(run.streams[0].probes, 0U);
  EXPECT_GE(run.streams[0].rejected_probe_cap, 1U);
  EXPECT_EQ(run.streams[1].probes, 1U);
}

TEST(SimulatorTest, FragileUpstreamCollapsesWhenASecondCallIsInFlight) {
  // Answers take 1.5 s at one call a second: the second call finds one in flight.
  const RunResult run = RunSim(Build(R"(
duration = "2s"
[breaker]
failure_threshold = 100
[traffic]
rate = 1
[[upstream.phase]]
from = "0s"
to = "10s"
mode = "fragile"
latency = "1.5s"
capacity = 1
relapse = "5s"
)"));
  EXPECT_EQ(run.counters.relapses, 1U);
  EXPECT_EQ(run.counters.succeeded, 1U);
  EXPECT_EQ(run.counters.failed, 1U);
}

TEST(SimulatorTest, CollapsedFragileUpstreamFailsEveryCallForTheRelapse) {
  const RunResult run = RunSim(Build(R"(
duration = "6s"
[breaker]
failure_threshold = 100
[traffic]
rate = 1
[[upstream.phase]]
from = "0s"
to = "10s"
mode = "fragile"
latency = "1.5s"
capacity = 1
relapse = "3s"
)"));
  // 0 served; 1 collapses it until 4; 2, 3 fail; 4 is served; 5 finds 4 in flight: collapse.
  EXPECT_EQ(run.counters.relapses, 2U);
  EXPECT_EQ(run.counters.succeeded, 2U);
  EXPECT_EQ(run.counters.failed, 4U);
}

TEST(SimulatorTest, WarmingUpstreamServesMoreCallsAsItWarms) {
  // One call a second answering in 2.5 s: 3 calls in flight from 2 s on. Warming from 1 to 5 over
  // 4 s, the capacity keeps ahead (2 at 1 s, 3 at 2 s, ...): no collapse. Warming over 100 s, it
  // is still at 1 when the second call (1 s) finds the first in flight: a collapse.
  const std::string text = R"(
duration = "10s"
[breaker]
failure_threshold = 1000
[traffic]
rate = 1
[[upstream.phase]]
from = "0s"
to = "10s"
mode = "warming"
latency = "2.5s"
cold_capacity = 1
capacity = 5
warmup = "WARMUP"
relapse = "500ms"
)";
  auto with_warmup = [&](const std::string& warmup) {
    std::string t = text;
    t.replace(t.find("WARMUP"), 6, warmup);
    return RunSim(Build(t));
  };
  const RunResult fast = with_warmup("4s");
  EXPECT_EQ(fast.counters.relapses, 0U);
  EXPECT_EQ(fast.counters.max_in_flight, 3U);
  EXPECT_EQ(fast.counters.succeeded, 10U);
  const RunResult slow = with_warmup("100s");
  EXPECT_GE(slow.counters.relapses, 1U);
  ASSERT_FALSE(slow.collapses.empty());
  EXPECT_EQ(slow.collapses.front(), std::make_pair(Micros{kSecond}, Micros{1'500'000}));
}

TEST(SimulatorTest, AWarmingUpstreamIsColdAgainAfterACollapse) {
  // Warm after 2 s (capacity 1 -> 3), a second call in flight before then collapses it for 1 s,
  // and the warm-up restarts from 1 when the collapse ends, so every 2-call burst collapses it.
  const RunResult warm_once = RunSim(Build(R"(
duration = "8s"
[breaker]
failure_threshold = 1000
[traffic]
rate = 2
[[upstream.phase]]
from = "0s"
to = "8s"
mode = "warming"
latency = "600ms"
cold_capacity = 1
capacity = 3
warmup = "2s"
relapse = "1s"
)"));
  // 0 s served; 0.5 s finds 1 in flight at capacity 1: collapse until 1.5 s; 1.5 s (capacity 1,
  // nothing in flight) served; 2 s finds 1 in flight, capacity 1 + 2 x 0.5 / 2 = 1: collapse.
  ASSERT_GE(warm_once.collapses.size(), 2U);
  EXPECT_EQ(warm_once.collapses[0].first, 500'000);
  EXPECT_EQ(warm_once.collapses[1].first, 2 * kSecond);
}

TEST(SimulatorTest, CountsCallsTheRecoveryRampTurnsAway) {
  const std::string text = R"(
duration = "60s"
[breaker]
failure_threshold = 1
cooldown = "5s"
recovery_ramp = "20s"
[traffic]
rate = 10
[upstream]
latency = "300ms"
[[upstream.phase]]
from = "1s"
to = "2s"
mode = "error"
)";
  const RunResult run = RunSim(Build(text));
  const Counters& c = run.counters;
  EXPECT_TRUE(c.recovery_ramp);
  EXPECT_GT(c.rejected_recovering, 0U);
  EXPECT_EQ(c.calls, c.allowed + c.rejected_open + c.rejected_probe_cap + c.rejected_recovering);
  ASSERT_FALSE(run.transitions.empty());
  EXPECT_EQ(run.transitions.back().to, State::kClosed);  // the ramp ran to its end
  // HALF_OPEN saw the probe and 2 more calls in its 300 ms: the ramp starts at a third.
  SimOptions options;
  options.record_timeline = true;
  const RunResult timed = RunSim(Build(text), options);
  std::uint64_t in_bins = 0;
  for (const Timeline::Bin& bin : timed.timeline.bins) {
    in_bins += bin.rejected_recovering;
  }
  EXPECT_EQ(in_bins, c.rejected_recovering);
}

TEST(SimulatorTest, WithoutARampNothingIsRejectedAsRecovering) {
  const RunResult run = RunSim(Lesson());
  EXPECT_FALSE(run.counters.recovery_ramp);
  EXPECT_EQ(run.counters.rejected_recovering, 0U);
}

TEST(SimulatorTest, OkPhaseWithoutLatencyAnswersAtOnce) {
  // The contract's default phase latency is 0 ms, not the healthy latency: the healthy 5 s would
  // make every call of the phase slow.
  const RunResult run = RunSim(Build(R"(
duration = "10s"
[breaker]
slow_call_duration = "1s"
failure_threshold = 100
[traffic]
rate = 1
[upstream]
latency = "5s"
[[upstream.phase]]
from = "0s"
to = "10s"
mode = "ok"
)"));
  EXPECT_EQ(run.counters.calls, 10U);
  EXPECT_EQ(run.counters.succeeded, 10U);
  EXPECT_EQ(run.counters.slow, 0U);
  EXPECT_EQ(run.end, 9 * kSecond);  // the last call, at 9 s, answers at once
}

TEST(SimulatorTest, FragilePhaseWithoutLatencyServesAtOnce) {
  // Latency 0: every call has ended before the next arrives, so one slot is enough: no relapse.
  const RunResult run = RunSim(Build(R"(
duration = "5s"
[traffic]
rate = 10
[upstream]
latency = "5s"
[[upstream.phase]]
from = "0s"
to = "5s"
mode = "fragile"
capacity = 1
relapse = "1s"
)"));
  EXPECT_EQ(run.counters.succeeded, 50U);
  EXPECT_EQ(run.counters.relapses, 0U);
  EXPECT_EQ(run.counters.max_in_flight, 1U);
}

TEST(SimulatorTest, ExtremeRatesEndTheRunInsteadOfOverflowing) {
  // The loader refuses these rates; the arithmetic must stay defined anyway (no wrapped instant
  // that never reaches the duration).
  Scenario scenario = Build("duration = \"10s\"\n[traffic]\nrate = 1\n");
  scenario.streams[0].rate = 1e-14;  // the next arrival would be 1e20 us away
  RunResult run = RunSim(scenario);
  EXPECT_EQ(run.counters.calls, 1U);  // k = 0, at start
  scenario.streams[0].arrivals = Arrivals::kPoisson;
  run = RunSim(scenario);
  EXPECT_EQ(run.counters.calls, 0U);  // the first gap is beyond any instant
  scenario.streams[0].rate = 1e-300;
  EXPECT_EQ(RunSim(scenario).counters.calls, 0U);
  scenario.streams[0].arrivals = Arrivals::kUniform;
  scenario.streams[0].start = std::numeric_limits<Micros>::max() - 5;
  EXPECT_EQ(RunSim(scenario).counters.calls, 0U);
}

TEST(SimulatorTest, OkPhaseUsesItsOwnLatencyAndTheHealthyOneOutside) {
  const RunResult run = RunSim(Build(R"(
duration = "2s"
[breaker]
call_timeout = "1s"
[traffic]
rate = 1
[upstream]
latency = "2s"
[[upstream.phase]]
from = "0s"
to = "1s"
mode = "ok"
latency = "10ms"
)"));
  // 0: ok phase, 10 ms; 1: healthy, 2 s >= the 1 s budget: a timeout.
  EXPECT_EQ(run.counters.succeeded, 1U);
  EXPECT_EQ(run.counters.timeouts, 1U);
}

TEST(SimulatorTest, CooldownJitterIsDrawnFromTheScenariosSeed) {
  Scenario scenario = Build(R"(
duration = "60s"
[breaker]
failure_threshold = 1
cooldown = "10s"
cooldown_jitter = 0.5
[traffic]
rate = 100
[[upstream.phase]]
from = "0s"
to = "60s"
mode = "error"
)");
  auto probe_times = [&] {
    std::vector<Micros> times;
    for (const Transition& t : RunSim(scenario).transitions) {
      if (t.to == State::kHalfOpen) {
        times.push_back(t.t);
      }
    }
    return times;
  };
  const std::vector<Micros> first = probe_times();
  ASSERT_GE(first.size(), 2U);
  EXPECT_EQ(probe_times(), first);
  scenario.seed = 2;
  EXPECT_NE(probe_times(), first);
}

TEST(SimulatorTest, RecoveryDelayIsAbsentWithoutAClose) {
  const RunResult run = RunSim(Build(R"(
duration = "10s"
[breaker]
failure_threshold = 1
[traffic]
rate = 1
[[upstream.phase]]
from = "0s"
to = "20s"
mode = "error"
)"));
  EXPECT_FALSE(run.counters.recovery_delay.has_value());
}

TEST(SimulatorTest, RecoveryDelayIgnoresOkPhases) {
  Scenario scenario = Lesson();
  Phase ok;
  ok.from = 70 * kSecond;
  ok.to = 80 * kSecond;
  ok.mode = Mode::kOk;
  scenario.phases.push_back(ok);
  EXPECT_EQ(RunSim(scenario).counters.recovery_delay, 4'020'000);
}

TEST(SimulatorTest, TimelineCountsEveryCallOnce) {
  SimOptions options;
  options.record_timeline = true;
  const RunResult run = RunSim(Lesson(), options);
  ASSERT_FALSE(run.timeline.bins.empty());
  std::uint64_t total = 0;
  std::uint64_t probes = 0;
  for (const Timeline::Bin& bin : run.timeline.bins) {
    total += bin.succeeded + bin.slow_succeeded + bin.failed + bin.timeouts + bin.rejected_open +
             bin.rejected_probe_cap;
    probes += bin.probes;
  }
  EXPECT_EQ(total, run.counters.calls);
  EXPECT_EQ(probes, run.counters.probes);
  EXPECT_LE(run.timeline.bins.size(), options.max_bins);
}

TEST(SimulatorTest, TimelineHoldsInFlightLevelsAcrossQuietBins) {
  // Hung calls admitted before the trip stay in flight while OPEN admits nothing.
  SimOptions options;
  options.record_timeline = true;
  const RunResult run = RunSim(Build(R"(
duration = "20s"
[breaker]
failure_threshold = 2
call_timeout = "5s"
cooldown = "30s"
[traffic]
rate = 1
[[upstream.phase]]
from = "0s"
to = "20s"
mode = "hang"
)"),
                               options);
  // OPEN at 6 s (timeouts of the calls at 0 and 1); calls 2..5 stay in flight until 7..10 s.
  ASSERT_FALSE(run.transitions.empty());
  EXPECT_EQ(run.transitions[0].t, 6 * kSecond);
  const Micros width = run.timeline.bin_width;
  const auto bin_at = [&](Micros t) {
    return run.timeline.bins[static_cast<std::size_t>(t / width)];
  };
  EXPECT_GE(bin_at(8 * kSecond + 1).max_in_flight, 2U);
  EXPECT_EQ(bin_at(15 * kSecond).max_in_flight, 0U);
}

}  // namespace
}  // namespace fusebox::sim

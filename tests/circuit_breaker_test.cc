// Every rule of the breaker (docs/breaker-rules.md) as a unit test, in virtual time.
#include "fusebox/circuit_breaker.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <vector>

#include "fusebox/testing/manual_clock.h"
#include "support/breaker_fixture.h"

namespace fusebox {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Seconds to a TimePoint, rounded to the microsecond (so At(64 + 0.02) == At(64.02)).
TimePoint At(double s) { return TimePoint(std::chrono::microseconds(std::llround(s * 1e6))); }

class BreakerTest : public fusebox::testing::BreakerFixture {};

// ---- config ----

TEST(CircuitBreakerConfigTest, DefaultsMatchTheContract) {
  CircuitBreakerConfig c;
  EXPECT_EQ(c.trip, TripPolicy::kConsecutive);
  EXPECT_EQ(c.failure_threshold, 5U);
  EXPECT_EQ(c.window_size, 100U);
  EXPECT_EQ(c.minimum_calls, 10U);
  EXPECT_DOUBLE_EQ(c.failure_rate_threshold, 0.5);
  EXPECT_EQ(c.effective_slow_call_duration(), seconds(7));
  EXPECT_DOUBLE_EQ(c.slow_call_rate_threshold, 1.0);
  EXPECT_EQ(c.call_timeout, seconds(7));
  EXPECT_EQ(c.cooldown, seconds(10));
  EXPECT_EQ(c.half_open_max_probes, 1U);
  EXPECT_EQ(c.effective_half_open_successes(), 1U);
  EXPECT_FALSE(c.batch_may_probe);
  EXPECT_FALSE(c.Validate().has_value());
}

struct BadConfigCase {
  const char* field;
  CircuitBreakerConfig config;
};

class CircuitBreakerConfigBadTest : public ::testing::TestWithParam<BadConfigCase> {};

TEST_P(CircuitBreakerConfigBadTest, ValidateNamesTheFieldAndItsRange) {
  const auto error = GetParam().config.Validate();
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->field, GetParam().field);
  EXPECT_THAT(error->message, ::testing::HasSubstr(GetParam().field));
  EXPECT_THAT(error->message, ::testing::HasSubstr("must be"));
}

TEST_P(CircuitBreakerConfigBadTest, CreateRefusesIt) {
  auto created = CircuitBreaker::Create("x", GetParam().config);
  ASSERT_FALSE(created.has_value());
  EXPECT_EQ(created.error().field, GetParam().field);
}

INSTANTIATE_TEST_SUITE_P(
    AllFields, CircuitBreakerConfigBadTest,
    ::testing::Values(
        BadConfigCase{"failure_threshold", {.failure_threshold = 0}},
        BadConfigCase{"window_size", {.window_size = 0}},
        BadConfigCase{"window_size", {.trip = TripPolicy::kTimeWindow, .window_size = 3601}},
        BadConfigCase{"minimum_calls", {.minimum_calls = 0}},
        BadConfigCase{"minimum_calls", {.trip = TripPolicy::kCountWindow, .window_size = 5}},
        BadConfigCase{"failure_rate_threshold", {.failure_rate_threshold = 0.0}},
        BadConfigCase{"failure_rate_threshold", {.failure_rate_threshold = 1.5}},
        BadConfigCase{"slow_call_duration", {.slow_call_duration = Duration::zero()}},
        BadConfigCase{"slow_call_rate_threshold", {.slow_call_rate_threshold = -0.1}},
        BadConfigCase{"call_timeout", {.call_timeout = Duration::zero()}},
        BadConfigCase{"cooldown", {.cooldown = -seconds(1)}},
        BadConfigCase{"half_open_max_probes", {.half_open_max_probes = 0}},
        BadConfigCase{"half_open_successes", {.half_open_successes = 0}},
        BadConfigCase{"cooldown_multiplier", {.cooldown_multiplier = 0.5}},
        BadConfigCase{"cooldown_max", {.cooldown = seconds(20), .cooldown_max = seconds(10)}},
        BadConfigCase{"cooldown_jitter", {.cooldown_jitter = 1.5}}));

TEST(CircuitBreakerConfigTest, CooldownMaxDefaultsToFiveMinutesOrTheCooldown) {
  EXPECT_EQ(CircuitBreakerConfig{}.effective_cooldown_max(), std::chrono::minutes(5));
  const CircuitBreakerConfig long_cooldown{.cooldown = std::chrono::hours(1)};
  EXPECT_EQ(long_cooldown.effective_cooldown_max(), std::chrono::hours(1));
  EXPECT_FALSE(long_cooldown.Validate().has_value());
}

TEST(CircuitBreakerConfigTest, TripPolicyNamesRoundTrip) {
  for (TripPolicy p :
       {TripPolicy::kConsecutive, TripPolicy::kCountWindow, TripPolicy::kTimeWindow}) {
    EXPECT_EQ(ParseTripPolicy(ToString(p)), p);
  }
  EXPECT_FALSE(ParseTripPolicy("sliding").has_value());
}

TEST(ReasonCodeTest, NamesAreTheContractStrings) {
  EXPECT_EQ(ToString(ReasonCode::kCircuitOpen), "CIRCUIT_OPEN");
  EXPECT_EQ(ToString(ReasonCode::kCircuitHalfOpen), "CIRCUIT_HALF_OPEN");
  EXPECT_EQ(ToString(ReasonCode::kUpstreamSlow), "UPSTREAM_SLOW");
  EXPECT_EQ(ToString(ReasonCode::kUpstreamError), "UPSTREAM_ERROR");
  EXPECT_EQ(ToString(ReasonCode::kOverloaded), "OVERLOADED");
  EXPECT_EQ(ToString(ReasonCode::kThrottled), "THROTTLED");
  EXPECT_EQ(ToString(State::kHalfOpen), "HALF_OPEN");
  EXPECT_EQ(ToString(State::kMetricsOnly), "METRICS_ONLY");
}

// ---- consecutive policy ----

TEST_F(BreakerTest, StartsClosedAndAdmits) {
  auto b = Make({});
  EXPECT_EQ(b->state(), State::kClosed);
  auto permit = b->TryAcquire();
  ASSERT_TRUE(permit.has_value());
  EXPECT_FALSE(permit->is_probe());
  EXPECT_EQ(permit->deadline(), permit->start() + seconds(7));
}

TEST_F(BreakerTest, TripsWhenConsecutiveFailuresReachThreshold) {
  auto b = Make({.failure_threshold = 3});
  Call(*b, Outcome::kFailure);
  Call(*b, Outcome::kFailure);
  EXPECT_EQ(b->state(), State::kClosed);
  Call(*b, Outcome::kFailure);
  EXPECT_EQ(b->state(), State::kOpen);
  ASSERT_EQ(Transitions().size(), 1U);
  EXPECT_EQ(Transitions()[0].cause, TransitionCause::kConsecutiveFailures);
}

TEST_F(BreakerTest, FastSuccessResetsTheRun) {
  auto b = Make({.failure_threshold = 3});
  Call(*b, Outcome::kFailure);
  Call(*b, Outcome::kFailure);
  Call(*b, Outcome::kSuccess);
  EXPECT_EQ(b->Snapshot().consecutive_failures, 0U);
  Call(*b, Outcome::kFailure);
  Call(*b, Outcome::kFailure);
  EXPECT_EQ(b->state(), State::kClosed);
}

TEST_F(BreakerTest, TimeoutsCountAsFailures) {
  auto b = Make({.failure_threshold = 2});
  Call(*b, Outcome::kTimeout, seconds(7));
  Call(*b, Outcome::kTimeout, seconds(7));
  EXPECT_EQ(b->state(), State::kOpen);
  const MetricsSnapshot m = b->Snapshot();
  EXPECT_EQ(m.timeouts, 2U);
  EXPECT_EQ(m.failed, 2U);
  EXPECT_EQ(m.slow, 2U);
}

TEST_F(BreakerTest, SlowSuccessExtendsTheRunAndDoesNotResetIt) {
  auto b = Make({.failure_threshold = 3, .slow_call_duration = seconds(2)});
  Call(*b, Outcome::kFailure);
  Call(*b, Outcome::kSuccess, seconds(3));  // slow: counts, does not reset
  EXPECT_EQ(b->Snapshot().consecutive_failures, 2U);
  Call(*b, Outcome::kSuccess, seconds(2));  // exactly the threshold: slow (>=)
  EXPECT_EQ(b->state(), State::kOpen);
  EXPECT_EQ(b->Snapshot().succeeded, 2U);
}

TEST_F(BreakerTest, IgnoredOutcomeMovesNothing) {
  auto b = Make({.failure_threshold = 2});
  Call(*b, Outcome::kFailure);
  Call(*b, Outcome::kIgnored);
  EXPECT_EQ(b->Snapshot().consecutive_failures, 1U);
  EXPECT_EQ(b->Snapshot().ignored, 1U);
  Call(*b, Outcome::kFailure);
  EXPECT_EQ(b->state(), State::kOpen);
}

TEST_F(BreakerTest, PermitDroppedWithoutOutcomeRecordsIgnored) {
  auto b = Make({});
  { auto permit = b->TryAcquire(); }
  EXPECT_EQ(b->Snapshot().ignored, 1U);
}

TEST_F(BreakerTest, OnlyTheFirstRecordCounts) {
  auto b = Make({.failure_threshold = 1});
  auto permit = b->TryAcquire();
  ASSERT_TRUE(permit.has_value());
  permit->Record(Outcome::kSuccess);
  permit->Record(Outcome::kFailure);
  EXPECT_TRUE(permit->recorded());
  EXPECT_EQ(b->state(), State::kClosed);
  EXPECT_EQ(b->Snapshot().failed, 0U);
}

TEST_F(BreakerTest, MovedPermitRecordsOnce) {
  auto b = Make({});
  auto permit = b->TryAcquire();
  ASSERT_TRUE(permit.has_value());
  Permit moved = std::move(permit).value();
  moved.Record(Outcome::kSuccess);
  EXPECT_EQ(b->Snapshot().succeeded, 1U);
  EXPECT_EQ(b->Snapshot().ignored, 0U);
}

// ---- OPEN ----

TEST_F(BreakerTest, OpenRejectsAtOnceWithTimeUntilProbe) {
  auto b = Make({.failure_threshold = 1, .cooldown = seconds(10)});
  Trip(*b);
  clock_.Advance(seconds(3));
  auto r = b->TryAcquire();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ReasonCode::kCircuitOpen);
  EXPECT_EQ(r.error().retry_after, seconds(7));
  EXPECT_EQ(b->retry_after(), seconds(7));
  EXPECT_EQ(b->Snapshot().rejected_open, 1U);
}

TEST_F(BreakerTest, MoveToHalfOpenIsLazy) {
  auto b = Make({.failure_threshold = 1, .cooldown = seconds(10)});
  Trip(*b);
  clock_.Advance(seconds(30));
  EXPECT_EQ(b->state(), State::kOpen);  // no call yet
  EXPECT_EQ(b->retry_after(), Duration::zero());
  auto probe = b->TryAcquire();
  ASSERT_TRUE(probe.has_value());
  EXPECT_TRUE(probe->is_probe());
  EXPECT_EQ(b->state(), State::kHalfOpen);
  ASSERT_EQ(Transitions().size(), 2U);
  EXPECT_EQ(Transitions()[1].cause, TransitionCause::kCooldownElapsed);
  EXPECT_EQ(Transitions()[1].at, At(30));
}

TEST_F(BreakerTest, CooldownBoundaryIsInclusive) {
  auto b = Make({.failure_threshold = 1, .cooldown = seconds(10)});
  Trip(*b);
  clock_.Advance(seconds(10) - Duration(1));
  EXPECT_FALSE(b->TryAcquire().has_value());
  clock_.Advance(Duration(1));
  EXPECT_TRUE(b->TryAcquire().has_value());
}

// ---- HALF_OPEN ----

TEST_F(BreakerTest, ProbeCapRejectsExtraCallsWithHalfOpen) {
  auto b = Make({.failure_threshold = 1, .cooldown = seconds(10)});
  Trip(*b);
  clock_.Advance(seconds(10));
  auto probe = b->TryAcquire();
  ASSERT_TRUE(probe.has_value());
  auto extra = b->TryAcquire();
  ASSERT_FALSE(extra.has_value());
  EXPECT_EQ(extra.error().code, ReasonCode::kCircuitHalfOpen);
  EXPECT_GE(extra.error().retry_after, seconds(1));
  EXPECT_EQ(b->Snapshot().rejected_half_open, 1U);
  EXPECT_EQ(b->Snapshot().probes_in_flight, 1U);
}

TEST_F(BreakerTest, GoodProbeCloses) {
  auto b = Make({.failure_threshold = 1, .cooldown = seconds(10)});
  Trip(*b);
  clock_.Advance(seconds(10));
  Call(*b, Outcome::kSuccess, milliseconds(20));
  EXPECT_EQ(b->state(), State::kClosed);
  EXPECT_EQ(Transitions().back().cause, TransitionCause::kProbesSucceeded);
  EXPECT_EQ(Transitions().back().at, At(10.02));
}

TEST_F(BreakerTest, FailedProbeReopensWithFreshCooldown) {
  auto b = Make({.failure_threshold = 1, .cooldown = seconds(10)});
  Trip(*b);
  clock_.Advance(seconds(10));
  Call(*b, Outcome::kFailure, seconds(1));  // fails at t=11
  EXPECT_EQ(b->state(), State::kOpen);
  EXPECT_EQ(b->retry_after(), seconds(10));  // counted from 11, not from 0
  clock_.Advance(seconds(9));
  EXPECT_FALSE(b->TryAcquire().has_value());
  clock_.Advance(seconds(1));
  EXPECT_TRUE(b->TryAcquire().has_value());
}

TEST_F(BreakerTest, SlowButSuccessfulProbeReopens) {
  auto b =
      Make({.failure_threshold = 1, .slow_call_duration = seconds(2), .cooldown = seconds(10)});
  Trip(*b);
  clock_.Advance(seconds(10));
  Call(*b, Outcome::kSuccess, seconds(3));
  EXPECT_EQ(b->state(), State::kOpen);
  EXPECT_EQ(b->Snapshot().wasted_probes, 1U);
}

TEST_F(BreakerTest, TimeAloneNeverCloses) {
  auto b = Make({.failure_threshold = 1, .cooldown = seconds(10)});
  Trip(*b);
  clock_.Advance(seconds(10));
  auto batch = b->TryAcquire(Priority::kBatch);  // moves to HALF_OPEN, takes no probe
  EXPECT_FALSE(batch.has_value());
  EXPECT_EQ(b->state(), State::kHalfOpen);
  clock_.Advance(std::chrono::hours(24));
  EXPECT_EQ(b->state(), State::kHalfOpen);
  EXPECT_EQ(b->Snapshot().state, State::kHalfOpen);
}

TEST_F(BreakerTest, OverdueProbeTimesOutLazilyAtItsDeadline) {
  auto b = Make({.failure_threshold = 1, .call_timeout = seconds(7), .cooldown = seconds(10)});
  Trip(*b);
  clock_.Advance(seconds(10));
  auto probe = b->TryAcquire();  // t=10, deadline 17
  ASSERT_TRUE(probe.has_value());
  clock_.Set(At(20));
  auto next = b->TryAcquire();  // applies the timeout at 17: OPEN until 27
  ASSERT_FALSE(next.has_value());
  EXPECT_EQ(next.error().code, ReasonCode::kCircuitOpen);
  EXPECT_EQ(next.error().retry_after, seconds(7));
  const auto t = Transitions();
  ASSERT_GE(t.size(), 3U);
  EXPECT_EQ(t.back().to, State::kOpen);
  EXPECT_EQ(t.back().cause, TransitionCause::kProbeTimedOut);
  EXPECT_EQ(t.back().at, At(17));
  // The probe's own outcome arrives late and moves nothing.
  probe->Record(Outcome::kSuccess);
  EXPECT_EQ(b->state(), State::kOpen);
  EXPECT_EQ(b->Snapshot().late, 1U);
}

TEST_F(BreakerTest, OverdueProbeChainsIntoANewHalfOpenWhenItsCooldownAlsoPassed) {
  auto b = Make({.failure_threshold = 1, .call_timeout = seconds(7), .cooldown = seconds(10)});
  Trip(*b);
  clock_.Advance(seconds(10));
  auto probe = b->TryAcquire();  // t=10, overdue at 17, cooldown again until 27
  ASSERT_TRUE(probe.has_value());
  clock_.Set(At(30));
  auto next = b->TryAcquire();
  ASSERT_TRUE(next.has_value());
  EXPECT_TRUE(next->is_probe());
  const auto t = Transitions();
  ASSERT_EQ(t.size(), 4U);
  EXPECT_EQ(t[2].at, At(17));
  EXPECT_EQ(t[3].to, State::kHalfOpen);
  EXPECT_EQ(t[3].at, At(30));
}

TEST_F(BreakerTest, ProbeReportingPastItsBudgetReopensAtTheBudget) {
  auto b = Make({.failure_threshold = 1, .call_timeout = seconds(7), .cooldown = seconds(10)});
  Trip(*b);
  clock_.Advance(seconds(10));
  Call(*b, Outcome::kSuccess, seconds(9));  // nobody applied the timeout before it reported
  EXPECT_EQ(b->state(), State::kOpen);
  EXPECT_EQ(Transitions().back().at, At(17));
  EXPECT_EQ(b->retry_after(), seconds(8));  // 17 + 10 - 19
}

TEST_F(BreakerTest, IgnoredProbeReleasesItsSlot) {
  auto b = Make({.failure_threshold = 1, .cooldown = seconds(10)});
  Trip(*b);
  clock_.Advance(seconds(10));
  Call(*b, Outcome::kIgnored);
  EXPECT_EQ(b->state(), State::kHalfOpen);
  auto probe = b->TryAcquire();
  ASSERT_TRUE(probe.has_value());
  EXPECT_TRUE(probe->is_probe());
  EXPECT_EQ(b->Snapshot().good_probes, 0U);
}

TEST_F(BreakerTest, ProbeReportingIgnoredPastItsBudgetIsATimeoutAtItsDeadline) {
  auto b = Make({.failure_threshold = 1, .call_timeout = seconds(7), .cooldown = seconds(10)});
  Trip(*b);
  clock_.Advance(seconds(10));
  auto probe = b->TryAcquire();  // t=10, deadline 17
  ASSERT_TRUE(probe.has_value());
  ASSERT_TRUE(probe->is_probe());
  clock_.Set(At(20));
  probe->Record(Outcome::kIgnored);  // e.g. its caller gave up, after the budget
  EXPECT_EQ(b->state(), State::kOpen);
  EXPECT_EQ(Transitions().back().cause, TransitionCause::kProbeTimedOut);
  EXPECT_EQ(Transitions().back().at, At(17));
  EXPECT_EQ(b->retry_after(), seconds(7));  // 17 + 10 - 20
  EXPECT_EQ(b->Snapshot().wasted_probes, 1U);
}

TEST_F(BreakerTest, ProbeCancelledByItsCallerPastItsBudgetIsATimeout) {
  auto b = Make({.failure_threshold = 1, .call_timeout = seconds(7), .cooldown = seconds(10)});
  Trip(*b);
  clock_.Advance(seconds(10));
  std::stop_source caller;
  auto result = b->Call(
      [&](const CallContext&) {
        clock_.Advance(seconds(8));  // runs past its budget, then its caller gives up
        caller.request_stop();
        return 0;
      },
      [](const int&) { return Outcome::kSuccess; }, {.stop_token = caller.get_token()});
  EXPECT_FALSE(result.has_value());
  EXPECT_EQ(b->state(), State::kOpen);
  EXPECT_EQ(Transitions().back().at, At(17));
}

// The caller's elapsed says the probe ran past its budget, but the clock has not got there yet:
// the breaker reopens now, not at a deadline in the future (that would lengthen the cooldown).
TEST_F(BreakerTest, AnOverdueReportNeverReopensLaterThanNow) {
  auto b = Make({.failure_threshold = 1, .call_timeout = seconds(7), .cooldown = seconds(10)});
  Trip(*b);
  clock_.Advance(seconds(10));
  auto probe = b->TryAcquire();  // t=10, deadline 17
  ASSERT_TRUE(probe.has_value());
  clock_.Set(At(11));
  probe->Record(Outcome::kSuccess, seconds(8));
  EXPECT_EQ(b->state(), State::kOpen);
  EXPECT_EQ(Transitions().back().at, At(11));
  EXPECT_EQ(b->retry_after(), seconds(10));
}

TEST_F(BreakerTest, ProbeDeadlineIsItsStartPlusCallTimeout) {
  auto b = Make({.failure_threshold = 1, .call_timeout = seconds(7), .cooldown = seconds(10)});
  Trip(*b);
  clock_.Advance(seconds(12));
  auto probe = b->TryAcquire();
  ASSERT_TRUE(probe.has_value());
  ASSERT_TRUE(probe->is_probe());
  EXPECT_EQ(probe->start(), At(12));
  EXPECT_EQ(probe->deadline(), At(19));
}

// An outcome of one probe first applies another probe's overdue timeout: the breaker reopened at
// that probe's deadline, so the reporting probe is late.
TEST_F(BreakerTest, AnIncomingOutcomeAppliesAnotherProbesOverdueTimeout) {
  auto b = Make({.failure_threshold = 1,
                 .call_timeout = seconds(7),
                 .cooldown = seconds(10),
                 .half_open_max_probes = 2});
  Trip(*b);
  clock_.Advance(seconds(10));
  auto first = b->TryAcquire();  // t=10, overdue at 17
  clock_.Set(At(15));
  auto second = b->TryAcquire();  // t=15
  ASSERT_TRUE(first && second);
  ASSERT_TRUE(first->is_probe() && second->is_probe());
  clock_.Set(At(18));
  second->Record(Outcome::kSuccess);
  EXPECT_EQ(b->state(), State::kOpen);
  EXPECT_EQ(Transitions().back().cause, TransitionCause::kProbeTimedOut);
  EXPECT_EQ(Transitions().back().at, At(17));
  EXPECT_EQ(b->Snapshot().late, 1U);
  EXPECT_EQ(b->Snapshot().good_probes, 0U);
}

TEST_F(BreakerTest, SeveralProbesAllMustSucceed) {
  auto b = Make({.failure_threshold = 1, .cooldown = seconds(10), .half_open_max_probes = 3});
  Trip(*b);
  clock_.Advance(seconds(10));
  auto p1 = b->TryAcquire();
  auto p2 = b->TryAcquire();
  auto p3 = b->TryAcquire();
  ASSERT_TRUE(p1 && p2 && p3);
  EXPECT_FALSE(b->TryAcquire().has_value());
  p1->Record(Outcome::kSuccess);
  p2->Record(Outcome::kSuccess);
  EXPECT_EQ(b->state(), State::kHalfOpen);
  p3->Record(Outcome::kSuccess);
  EXPECT_EQ(b->state(), State::kClosed);
}

TEST_F(BreakerTest, OneBadProbeOfSeveralReopensAndTheRestAreLate) {
  auto b = Make({.failure_threshold = 1, .cooldown = seconds(10), .half_open_max_probes = 2});
  Trip(*b);
  clock_.Advance(seconds(10));
  auto p1 = b->TryAcquire();
  auto p2 = b->TryAcquire();
  ASSERT_TRUE(p1 && p2);
  p1->Record(Outcome::kFailure);
  EXPECT_EQ(b->state(), State::kOpen);
  p2->Record(Outcome::kSuccess);
  EXPECT_EQ(b->state(), State::kOpen);
  EXPECT_EQ(b->Snapshot().late, 1U);
}

TEST_F(BreakerTest, HalfOpenSuccessesCanExceedTheProbeCap) {
  auto b = Make({.failure_threshold = 1,
                 .cooldown = seconds(10),
                 .half_open_max_probes = 1,
                 .half_open_successes = 3});
  Trip(*b);
  clock_.Advance(seconds(10));
  Call(*b, Outcome::kSuccess);
  Call(*b, Outcome::kSuccess);
  EXPECT_EQ(b->state(), State::kHalfOpen);
  Call(*b, Outcome::kSuccess);
  EXPECT_EQ(b->state(), State::kClosed);
}

TEST_F(BreakerTest, BatchNeverTakesTheProbeSlot) {
  auto b = Make({.failure_threshold = 1, .cooldown = seconds(10)});
  Trip(*b);
  clock_.Advance(seconds(10));
  auto batch = b->TryAcquire(Priority::kBatch);
  ASSERT_FALSE(batch.has_value());
  EXPECT_EQ(batch.error().code, ReasonCode::kCircuitHalfOpen);
  EXPECT_EQ(b->state(), State::kHalfOpen);  // the batch call did move it
  auto interactive = b->TryAcquire(Priority::kInteractive);
  ASSERT_TRUE(interactive.has_value());
  EXPECT_TRUE(interactive->is_probe());
}

TEST_F(BreakerTest, BatchMayProbeWhenAllowed) {
  auto b = Make({.failure_threshold = 1, .cooldown = seconds(10), .batch_may_probe = true});
  Trip(*b);
  clock_.Advance(seconds(10));
  auto batch = b->TryAcquire(Priority::kBatch);
  ASSERT_TRUE(batch.has_value());
  EXPECT_TRUE(batch->is_probe());
  EXPECT_EQ(batch->priority(), Priority::kBatch);
}

// ---- generations ----

TEST_F(BreakerTest, LateOutcomeFromClosedDoesNotMoveOpen) {
  auto b = Make({.failure_threshold = 1, .cooldown = seconds(10)});
  auto slow_call = b->TryAcquire();
  ASSERT_TRUE(slow_call.has_value());
  Call(*b, Outcome::kFailure);  // trips
  ASSERT_EQ(b->state(), State::kOpen);
  clock_.Advance(seconds(10));
  auto probe = b->TryAcquire();
  ASSERT_TRUE(probe.has_value());
  slow_call->Record(Outcome::kSuccess);  // admitted in CLOSED: must not close HALF_OPEN
  EXPECT_EQ(b->state(), State::kHalfOpen);
  EXPECT_EQ(b->Snapshot().late, 1U);
  EXPECT_EQ(b->Snapshot().succeeded, 1U);  // still counted in the totals
}

TEST_F(BreakerTest, LateFailureDoesNotFillTheNewWindow) {
  auto b = Make({.failure_threshold = 2, .cooldown = seconds(10)});
  auto old1 = b->TryAcquire();
  auto old2 = b->TryAcquire();
  ASSERT_TRUE(old1 && old2);
  Trip(*b);
  clock_.Advance(seconds(10));
  Call(*b, Outcome::kSuccess);  // probe closes
  ASSERT_EQ(b->state(), State::kClosed);
  old1->Record(Outcome::kFailure);
  old2->Record(Outcome::kFailure);
  EXPECT_EQ(b->state(), State::kClosed);
  EXPECT_EQ(b->Snapshot().consecutive_failures, 0U);
}

// ---- windows ----

TEST_F(BreakerTest, CountWindowWaitsForMinimumCalls) {
  auto b = Make({.trip = TripPolicy::kCountWindow,
                 .window_size = 10,
                 .minimum_calls = 4,
                 .failure_rate_threshold = 0.5});
  Call(*b, Outcome::kFailure);
  Call(*b, Outcome::kFailure);
  Call(*b, Outcome::kFailure);
  EXPECT_EQ(b->state(), State::kClosed);  // 100% but only 3 calls
  Call(*b, Outcome::kSuccess);
  EXPECT_EQ(b->state(), State::kOpen);  // 3/4 >= 0.5
  EXPECT_EQ(Transitions().back().cause, TransitionCause::kFailureRate);
}

TEST_F(BreakerTest, CountWindowRateIsExactAtTheThreshold) {
  auto b = Make({.trip = TripPolicy::kCountWindow,
                 .window_size = 10,
                 .minimum_calls = 10,
                 .failure_rate_threshold = 0.3});
  for (int i = 0; i < 7; ++i) {
    Call(*b, Outcome::kSuccess);
  }
  Call(*b, Outcome::kFailure);
  Call(*b, Outcome::kFailure);
  EXPECT_EQ(b->state(), State::kClosed);
  Call(*b, Outcome::kFailure);  // 3/10 == 0.3
  EXPECT_EQ(b->state(), State::kOpen);
}

TEST_F(BreakerTest, CountWindowForgetsOutcomesThatFellOut) {
  auto b = Make({.trip = TripPolicy::kCountWindow,
                 .window_size = 4,
                 .minimum_calls = 4,
                 .failure_rate_threshold = 0.75});
  Call(*b, Outcome::kFailure);
  Call(*b, Outcome::kFailure);
  Call(*b, Outcome::kSuccess);
  Call(*b, Outcome::kSuccess);  // 2/4
  Call(*b, Outcome::kFailure);  // first failure evicted: 2/4
  EXPECT_EQ(b->state(), State::kClosed);
  EXPECT_EQ(b->Snapshot().window_failures, 2U);
  EXPECT_EQ(b->Snapshot().window_calls, 4U);
}

TEST_F(BreakerTest, CountWindowTripsOnSlowCallRate) {
  auto b = Make({.trip = TripPolicy::kCountWindow,
                 .window_size = 4,
                 .minimum_calls = 4,
                 .slow_call_duration = seconds(1),
                 .slow_call_rate_threshold = 0.5});
  Call(*b, Outcome::kSuccess, seconds(2));
  Call(*b, Outcome::kSuccess);
  Call(*b, Outcome::kSuccess);
  EXPECT_EQ(b->state(), State::kClosed);
  Call(*b, Outcome::kSuccess, seconds(1));
  EXPECT_EQ(b->state(), State::kOpen);
  EXPECT_EQ(Transitions().back().cause, TransitionCause::kSlowCallRate);
}

TEST_F(BreakerTest, TimeWindowDropsBucketsOlderThanTheWindow) {
  auto b = Make({.trip = TripPolicy::kTimeWindow,
                 .window_size = 5,
                 .minimum_calls = 4,
                 .failure_rate_threshold = 0.5});
  Call(*b, Outcome::kFailure);  // second 0
  Call(*b, Outcome::kFailure);
  Call(*b, Outcome::kFailure);
  clock_.Set(At(5));  // second 0 has left the window [1, 5]
  Call(*b, Outcome::kSuccess);
  EXPECT_EQ(b->state(), State::kClosed);
  EXPECT_EQ(b->Snapshot().window_calls, 1U);
  Call(*b, Outcome::kFailure);
  Call(*b, Outcome::kFailure);
  EXPECT_EQ(b->state(), State::kClosed);  // 2/3, below minimum_calls
  Call(*b, Outcome::kFailure);
  EXPECT_EQ(b->state(), State::kOpen);  // 3/4
}

TEST_F(BreakerTest, TimeWindowKeepsTheLastWindowSizeSeconds) {
  auto b = Make({.trip = TripPolicy::kTimeWindow,
                 .window_size = 5,
                 .minimum_calls = 4,
                 .failure_rate_threshold = 1.0});
  Call(*b, Outcome::kFailure);  // second 0
  clock_.Set(At(2.5));
  Call(*b, Outcome::kFailure);
  clock_.Set(At(4.999));
  Call(*b, Outcome::kFailure);  // window [0, 4] holds all three
  Call(*b, Outcome::kFailure);
  EXPECT_EQ(b->state(), State::kOpen);
}

TEST_F(BreakerTest, InflightSlowCallsTripBeforeTheyFinish) {
  auto b = Make({.trip = TripPolicy::kCountWindow,
                 .window_size = 10,
                 .minimum_calls = 3,
                 .slow_call_duration = seconds(2),
                 .slow_call_rate_threshold = 0.5,
                 .call_timeout = seconds(30),
                 .inflight_slow_accounting = true});
  auto hung1 = b->TryAcquire();
  auto hung2 = b->TryAcquire();
  ASSERT_TRUE(hung1 && hung2);
  Call(*b, Outcome::kSuccess);  // 1 call in window, 0 in-flight slow yet
  EXPECT_EQ(b->state(), State::kClosed);
  clock_.Advance(seconds(2));   // the two hung calls are now slow while running
  auto next = b->TryAcquire();  // 1 + 2 slow = 3 calls, 2/3 slow
  ASSERT_FALSE(next.has_value());
  EXPECT_EQ(next.error().code, ReasonCode::kCircuitOpen);
  EXPECT_EQ(Transitions().back().cause, TransitionCause::kSlowCallRate);
}

// The consecutive policy counts calls running slow in its run: a hang at two calls a second opens
// the breaker about 4 s in with a 3 s slow-call duration, though each call's budget is 7 s.
TEST_F(BreakerTest, ConsecutivePolicyCountsCallsRunningSlowInTheRun) {
  auto b = Make({.failure_threshold = 3,
                 .slow_call_duration = seconds(3),
                 .call_timeout = seconds(7),
                 .inflight_slow_accounting = true});
  std::vector<Permit> hung;
  TimePoint opened{};
  for (int i = 0; i < 20 && b->state() == State::kClosed; ++i) {
    auto permit = b->TryAcquire();
    if (!permit) {
      opened = clock_.Now();
      break;
    }
    hung.push_back(std::move(*permit));
    clock_.Advance(milliseconds(500));
  }
  ASSERT_EQ(b->state(), State::kOpen);
  EXPECT_EQ(Transitions().back().cause, TransitionCause::kConsecutiveFailures);
  // Calls admitted at 0, 0.5 and 1 s are running slow by 4 s: that arrival trips it.
  EXPECT_EQ(opened - TimePoint{}, seconds(4));
  EXPECT_EQ(hung.size(), 8U);
}

TEST_F(BreakerTest, ConsecutivePolicyCountsARunningSlowCallOnce) {
  auto b = Make(
      {.failure_threshold = 3, .slow_call_duration = seconds(2), .inflight_slow_accounting = true});
  auto hung = b->TryAcquire();
  ASSERT_TRUE(hung.has_value());
  clock_.Advance(seconds(3));
  Call(*b, Outcome::kFailure);  // run 1 + 1 running slow = 2
  EXPECT_EQ(b->state(), State::kClosed);
  hung->Record(Outcome::kTimeout);  // it leaves the running count and joins the run: 2
  EXPECT_EQ(b->state(), State::kClosed);
  EXPECT_EQ(b->Snapshot().consecutive_failures, 2U);
  Call(*b, Outcome::kSuccess);  // a success resets the run
  EXPECT_EQ(b->Snapshot().consecutive_failures, 0U);
  Call(*b, Outcome::kFailure);
  Call(*b, Outcome::kFailure);
  EXPECT_EQ(b->state(), State::kClosed);
  Call(*b, Outcome::kFailure);
  EXPECT_EQ(b->state(), State::kOpen);
}

TEST_F(BreakerTest, InflightSlowCallIsCountedOnce) {
  auto b = Make({.trip = TripPolicy::kCountWindow,
                 .window_size = 10,
                 .minimum_calls = 10,
                 .slow_call_duration = seconds(2),
                 .call_timeout = seconds(30),
                 .inflight_slow_accounting = true});
  auto hung = b->TryAcquire();
  ASSERT_TRUE(hung.has_value());
  clock_.Advance(seconds(3));
  Call(*b, Outcome::kSuccess);
  EXPECT_EQ(b->Snapshot().inflight_slow, 1U);
  hung->Record(Outcome::kSuccess);  // finishes slow: moves from in-flight to the window
  const MetricsSnapshot m = b->Snapshot();
  EXPECT_EQ(m.inflight_slow, 0U);
  EXPECT_EQ(m.window_slow, 1U);
  EXPECT_EQ(m.window_calls, 2U);
}

TEST_F(BreakerTest, InflightSlowCallsDoNotDiluteTheFailureRate) {
  auto b = Make({.trip = TripPolicy::kCountWindow,
                 .window_size = 10,
                 .minimum_calls = 4,
                 .failure_rate_threshold = 0.5,
                 .slow_call_duration = seconds(2),
                 .call_timeout = seconds(30),
                 .inflight_slow_accounting = true});
  auto hung1 = b->TryAcquire();
  auto hung2 = b->TryAcquire();
  ASSERT_TRUE(hung1 && hung2);
  clock_.Advance(seconds(3));  // both running past slow_call_duration
  Call(*b, Outcome::kSuccess);
  Call(*b, Outcome::kSuccess);
  Call(*b, Outcome::kFailure);
  EXPECT_EQ(b->state(), State::kClosed);  // 1/3 failed, under minimum_calls anyway
  Call(*b, Outcome::kFailure);            // 2/4 finished calls failed: the running ones don't count
  EXPECT_EQ(b->state(), State::kOpen);
  EXPECT_EQ(Transitions().back().cause, TransitionCause::kFailureRate);
}

TEST_F(BreakerTest, TimeWindowCountsInflightSlowCalls) {
  auto b = Make({.trip = TripPolicy::kTimeWindow,
                 .window_size = 10,
                 .minimum_calls = 3,
                 .slow_call_duration = seconds(2),
                 .slow_call_rate_threshold = 0.5,
                 .call_timeout = seconds(30),
                 .inflight_slow_accounting = true});
  auto hung1 = b->TryAcquire();
  auto hung2 = b->TryAcquire();
  ASSERT_TRUE(hung1 && hung2);
  Call(*b, Outcome::kSuccess);
  clock_.Advance(seconds(2));
  EXPECT_EQ(b->Snapshot().inflight_slow, 0U);  // not advanced until a call looks
  auto next = b->TryAcquire();                 // 1 finished + 2 running slow: 2/3 slow
  ASSERT_FALSE(next.has_value());
  EXPECT_EQ(Transitions().back().cause, TransitionCause::kSlowCallRate);
}

TEST(CircuitBreakerConfigTest, ACountWindowGateLargerThanTheWindowIsRefusedWithTheWindow) {
  // The default minimum_calls (10) with a count window of 5 could never trip.
  const auto error =
      CircuitBreakerConfig{.trip = TripPolicy::kCountWindow, .window_size = 5}.Validate();
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->message, "minimum_calls must be in [1, window_size (5)] (count_window), got 10");
  EXPECT_FALSE(
      (CircuitBreakerConfig{.trip = TripPolicy::kCountWindow, .window_size = 5, .minimum_calls = 5}
           .Validate()
           .has_value()));
  // A time window's second may hold any number of calls: its gate is not bounded by its size.
  EXPECT_FALSE(
      (CircuitBreakerConfig{.trip = TripPolicy::kTimeWindow, .window_size = 5, .minimum_calls = 50}
           .Validate()
           .has_value()));
}

TEST_F(BreakerTest, TimeWindowBucketsByCompletionTime) {
  auto b = Make({.trip = TripPolicy::kTimeWindow,
                 .window_size = 2,
                 .minimum_calls = 2,
                 .failure_rate_threshold = 0.5,
                 .call_timeout = seconds(30)});
  auto first = b->TryAcquire();  // both start in second 0
  auto second = b->TryAcquire();
  ASSERT_TRUE(first && second);
  clock_.Set(At(3.5));
  first->Record(Outcome::kFailure);
  second->Record(Outcome::kFailure);  // both in bucket 3: the window [2, 3] holds them
  EXPECT_EQ(b->state(), State::kOpen);
}

TEST_F(BreakerTest, TimeWindowTripsOnSlowCallRate) {
  auto b = Make({.trip = TripPolicy::kTimeWindow,
                 .window_size = 10,
                 .minimum_calls = 4,
                 .slow_call_duration = seconds(1),
                 .slow_call_rate_threshold = 0.5});
  Call(*b, Outcome::kSuccess, seconds(2));
  Call(*b, Outcome::kSuccess);
  Call(*b, Outcome::kSuccess);
  EXPECT_EQ(b->state(), State::kClosed);
  Call(*b, Outcome::kSuccess, seconds(1));  // 2/4 slow
  EXPECT_EQ(b->state(), State::kOpen);
  EXPECT_EQ(Transitions().back().cause, TransitionCause::kSlowCallRate);
}

TEST_F(BreakerTest, IgnoredOutcomesStayOutOfTheWindow) {
  auto b = Make({.trip = TripPolicy::kCountWindow, .window_size = 10, .minimum_calls = 1});
  for (int i = 0; i < 5; ++i) {
    Call(*b, Outcome::kIgnored, seconds(60));
  }
  const MetricsSnapshot m = b->Snapshot();
  EXPECT_EQ(m.window_calls, 0U);
  EXPECT_EQ(m.window_slow, 0U);
  EXPECT_EQ(m.ignored, 5U);
  EXPECT_EQ(b->state(), State::kClosed);
}

TEST_F(BreakerTest, ATimeoutIsSlowEvenWhenShorterThanSlowCallDuration) {
  auto b = Make({.trip = TripPolicy::kCountWindow,
                 .window_size = 10,
                 .minimum_calls = 2,
                 .failure_rate_threshold = 1.0,
                 .slow_call_duration = seconds(20),
                 .slow_call_rate_threshold = 0.5,
                 .call_timeout = seconds(7)});
  Call(*b, Outcome::kSuccess);
  Call(*b, Outcome::kTimeout, seconds(1));  // the op's own budget ran out early
  EXPECT_EQ(b->Snapshot().slow, 1U);
  EXPECT_EQ(b->state(), State::kOpen);  // 1/2 slow
  EXPECT_EQ(Transitions().back().cause, TransitionCause::kSlowCallRate);
}

TEST_F(BreakerTest, EnteringClosedFromHalfOpenClearsTheWindow) {
  auto b = Make({.trip = TripPolicy::kCountWindow,
                 .window_size = 10,
                 .minimum_calls = 4,
                 .failure_rate_threshold = 0.5,
                 .cooldown = seconds(10)});
  for (int i = 0; i < 4; ++i) {
    Call(*b, Outcome::kFailure);
  }
  ASSERT_EQ(b->state(), State::kOpen);
  clock_.Advance(seconds(10));
  Call(*b, Outcome::kSuccess);  // the good probe closes it
  ASSERT_EQ(b->state(), State::kClosed);
  EXPECT_EQ(b->Snapshot().window_calls, 0U);
  for (int i = 0; i < 3; ++i) {
    Call(*b, Outcome::kFailure);  // 3 failures: under minimum_calls of a fresh window
  }
  EXPECT_EQ(b->state(), State::kClosed);
}

TEST_F(BreakerTest, ResetClearsTheWindow) {
  auto b = Make({.trip = TripPolicy::kTimeWindow, .window_size = 10, .minimum_calls = 4});
  for (int i = 0; i < 3; ++i) {
    Call(*b, Outcome::kFailure);
  }
  ASSERT_EQ(b->Snapshot().window_failures, 3U);
  b->Reset();
  EXPECT_EQ(b->Snapshot().window_calls, 0U);
  Call(*b, Outcome::kFailure);  // 1 failure, not 4
  EXPECT_EQ(b->state(), State::kClosed);
}

TEST_F(BreakerTest, EnteringOpenResetsTheRun) {
  auto b = Make({.failure_threshold = 3, .cooldown = seconds(10)});
  Trip(*b);
  EXPECT_EQ(b->Snapshot().consecutive_failures, 0U);
}

// ---- cooldown growth and jitter ----

TEST_F(BreakerTest, CooldownGrowsPerFailedProbeUpToTheCap) {
  auto b = Make({.failure_threshold = 1,
                 .cooldown = seconds(10),
                 .cooldown_multiplier = 2.0,
                 .cooldown_max = seconds(35)});
  Trip(*b);
  EXPECT_EQ(b->retry_after(), seconds(10));
  std::vector<Duration> cooldowns;
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(b->retry_after());
    Call(*b, Outcome::kFailure);
    cooldowns.push_back(b->retry_after());
  }
  EXPECT_THAT(cooldowns, ::testing::ElementsAre(seconds(20), seconds(35), seconds(35)));
}

TEST_F(BreakerTest, CooldownGrowthResetsAfterStayingClosedForCooldownMax) {
  auto b = Make({.failure_threshold = 1,
                 .cooldown = seconds(10),
                 .cooldown_multiplier = 2.0,
                 .cooldown_max = seconds(60)});
  Trip(*b);
  clock_.Advance(seconds(10));
  Call(*b, Outcome::kFailure);  // next cooldown 20
  clock_.Advance(seconds(20));
  Call(*b, Outcome::kSuccess);  // closed at 30
  clock_.Advance(seconds(30));
  Call(*b, Outcome::kFailure);  // only 30 s closed: keeps 20
  EXPECT_EQ(b->retry_after(), seconds(20));
  clock_.Advance(seconds(20));
  Call(*b, Outcome::kSuccess);
  clock_.Advance(seconds(60));
  Call(*b, Outcome::kFailure);  // 60 s closed: back to 10
  EXPECT_EQ(b->retry_after(), seconds(10));
}

// The cooldowns of 20 OPEN periods in a row of a breaker named `name` with a 20% jitter, drawn
// from `rng` (null: the breaker's own generator).
std::vector<Duration> JitteredCooldowns(const std::string& name, Random* rng) {
  fusebox::testing::ManualClock clock;
  auto b = CircuitBreaker::Create(
               name, {.failure_threshold = 1, .cooldown = seconds(10), .cooldown_jitter = 0.2},
               {.clock = &clock, .random = rng})
               .value();
  std::vector<Duration> out;
  for (int i = 0; i < 20; ++i) {
    auto p = b->TryAcquire();
    EXPECT_TRUE(p.has_value());
    p->Record(Outcome::kFailure);
    out.push_back(b->retry_after());
    clock.Advance(b->retry_after());
  }
  return out;
}

TEST_F(BreakerTest, JitteredCooldownStaysInItsBandAndFollowsTheSeed) {
  SplitMix64Random rng_a(7);
  SplitMix64Random rng_b(7);
  const auto a = JitteredCooldowns("j", &rng_a);
  const auto c = JitteredCooldowns("j", &rng_b);
  EXPECT_EQ(a, c);
  bool varied = false;
  for (Duration d : a) {
    EXPECT_GE(d, seconds(8));
    EXPECT_LE(d, seconds(12));
    varied = varied || d != a.front();
  }
  EXPECT_TRUE(varied);
}

// Without an injected generator a breaker draws from its own, seeded by its name: the same name
// gives the same cooldowns (its generator is made with the breaker, before any listener or
// reconfiguration asked for the breaker's optional state).
TEST_F(BreakerTest, JitteredCooldownWithoutAnInjectedGeneratorFollowsTheName) {
  const auto a = JitteredCooldowns("shipping", nullptr);
  EXPECT_EQ(a, JitteredCooldowns("shipping", nullptr));
  EXPECT_NE(a, JitteredCooldowns("billing", nullptr));
  for (Duration d : a) {
    EXPECT_GE(d, seconds(8));
    EXPECT_LE(d, seconds(12));
  }
}

// ---- operator states ----

TEST_F(BreakerTest, ForcedOpenRejectsEverythingUntilClosedByCommand) {
  auto b = Make({.cooldown = seconds(10)});
  b->ForceOpen();
  EXPECT_EQ(b->state(), State::kForcedOpen);
  clock_.Advance(std::chrono::hours(1));
  auto r = b->TryAcquire();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ReasonCode::kCircuitOpen);
  b->ForceClose();
  EXPECT_TRUE(b->TryAcquire().has_value());
  EXPECT_EQ(Transitions().back().cause, TransitionCause::kOperator);
}

TEST_F(BreakerTest, DisabledAdmitsEverythingAndNeverTrips) {
  auto b = Make({.failure_threshold = 1});
  b->Disable();
  for (int i = 0; i < 10; ++i) {
    Call(*b, Outcome::kFailure);
  }
  EXPECT_EQ(b->state(), State::kDisabled);
}

TEST_F(BreakerTest, DisabledRecordsNothingIntoTheWindowOrTheRun) {
  auto consecutive = Make({.failure_threshold = 3});
  auto windowed = Make({.trip = TripPolicy::kCountWindow, .window_size = 10, .minimum_calls = 1});
  consecutive->Disable();
  windowed->Disable();
  for (int i = 0; i < 5; ++i) {
    Call(*consecutive, Outcome::kFailure);
    Call(*windowed, Outcome::kFailure, seconds(60));
  }
  EXPECT_EQ(consecutive->Snapshot().consecutive_failures, 0U);
  EXPECT_EQ(windowed->Snapshot().window_calls, 0U);
  EXPECT_EQ(windowed->Snapshot().window_failures, 0U);
  EXPECT_EQ(windowed->Snapshot().failed, 5U);  // still counted in the totals
}

TEST_F(BreakerTest, MetricsOnlyRecordsButNeverTrips) {
  auto b = Make({.trip = TripPolicy::kCountWindow, .window_size = 10, .minimum_calls = 2});
  b->MetricsOnly();
  for (int i = 0; i < 5; ++i) {
    Call(*b, Outcome::kFailure);
  }
  EXPECT_EQ(b->state(), State::kMetricsOnly);
  EXPECT_DOUBLE_EQ(b->Snapshot().failure_rate, 1.0);
}

TEST_F(BreakerTest, ForceCloseClearsTheWindow) {
  auto b = Make({.failure_threshold = 3});
  Call(*b, Outcome::kFailure);
  Call(*b, Outcome::kFailure);
  b->ForceClose();
  Call(*b, Outcome::kFailure);
  EXPECT_EQ(b->state(), State::kClosed);
}

TEST_F(BreakerTest, ResetClearsCooldownGrowth) {
  auto b = Make({.failure_threshold = 1, .cooldown = seconds(10), .cooldown_multiplier = 3.0});
  Trip(*b);
  clock_.Advance(seconds(10));
  Call(*b, Outcome::kFailure);
  EXPECT_EQ(b->retry_after(), seconds(30));
  b->Reset();
  EXPECT_EQ(b->state(), State::kClosed);
  Trip(*b);
  EXPECT_EQ(b->retry_after(), seconds(10));
}

TEST_F(BreakerTest, OperatorCommandsStartANewGeneration) {
  auto b = Make({.failure_threshold = 1});
  auto old = b->TryAcquire();
  ASSERT_TRUE(old.has_value());
  const std::uint64_t before = b->Snapshot().generation;
  b->ForceClose();
  EXPECT_GT(b->Snapshot().generation, before);
  old->Record(Outcome::kFailure);
  EXPECT_EQ(b->state(), State::kClosed);  // late
}

// ---- events ----

TEST_F(BreakerTest, EventsCarryIncreasingSequenceNumbers) {
  auto b = Make({.failure_threshold = 1, .cooldown = seconds(10)});
  Trip(*b);
  (void)b->TryAcquire();
  clock_.Advance(seconds(10));
  Call(*b, Outcome::kSuccess);
  ASSERT_GE(events_.size(), 6U);
  for (std::size_t i = 1; i < events_.size(); ++i) {
    EXPECT_EQ(events_[i].sequence, events_[i - 1].sequence + 1);
    EXPECT_EQ(events_[i].breaker, "test");
  }
  // The failure that tripped comes before its transition.
  EXPECT_TRUE(std::holds_alternative<OutcomeEvent>(events_[0].detail));
  EXPECT_TRUE(std::holds_alternative<TransitionEvent>(events_[1].detail));
  EXPECT_TRUE(std::holds_alternative<RejectionEvent>(events_[2].detail));
}

// A breaker made without listeners keeps no listener state until one is added: removing an id
// before then does nothing, and the first listener's events are numbered from 1.
TEST_F(BreakerTest, ListenersMayComeAfterCallsAndRemovalsOfUnknownIds) {
  auto b = CircuitBreaker::Create("late", {.failure_threshold = 1, .cooldown = seconds(10)},
                                  {.clock = &clock_})
               .value();
  b->RemoveListener(ListenerId{42});
  Call(*b, Outcome::kSuccess);
  std::vector<Event> seen;
  const ListenerId id = b->AddListener([&](const Event& e) { seen.push_back(e); });
  Call(*b, Outcome::kFailure);
  ASSERT_EQ(seen.size(), 2U);  // the outcome, then its transition
  EXPECT_EQ(seen[0].sequence, 1U);
  EXPECT_EQ(seen[1].sequence, 2U);
  b->RemoveListener(ListenerId{id + 1});  // not one of its ids: the listener stays
  (void)b->TryAcquire();
  EXPECT_EQ(seen.size(), 3U);  // the rejection
  b->RemoveListener(id);
  (void)b->TryAcquire();
  EXPECT_EQ(seen.size(), 3U);
}

TEST_F(BreakerTest, ListenerMayCallBackIntoTheBreaker) {
  auto b = Make({.failure_threshold = 1});
  State seen = State::kClosed;
  b->AddListener([&](const Event& e) {
    if (std::holds_alternative<TransitionEvent>(e.detail)) {
      seen = b->state();
      (void)b->Snapshot();
    }
  });
  Trip(*b);
  EXPECT_EQ(seen, State::kOpen);
}

TEST_F(BreakerTest, RemovedListenerHearsNothing) {
  auto b = Make({.failure_threshold = 1});
  int heard = 0;
  const ListenerId id = b->AddListener([&](const Event&) { ++heard; });
  Call(*b, Outcome::kSuccess);
  EXPECT_EQ(heard, 1);
  b->RemoveListener(id);
  Call(*b, Outcome::kSuccess);
  EXPECT_EQ(heard, 1);
}

TEST_F(BreakerTest, ThrowingListenerDoesNotBreakTheCallPath) {
  auto b = Make({.failure_threshold = 1});
  b->AddListener([](const Event&) { throw std::runtime_error("listener bug"); });
  Trip(*b);
  EXPECT_EQ(b->state(), State::kOpen);
}

// ---- the synchronous guarded call ----

TEST_F(BreakerTest, CallReturnsTheValueOnSuccess) {
  auto b = Make({});
  auto r = b->Call([](const CallContext&) { return 42; },
                   [](int v) { return v == 42 ? Outcome::kSuccess : Outcome::kFailure; });
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, 42);
  EXPECT_EQ(b->Snapshot().succeeded, 1U);
}

TEST_F(BreakerTest, CallHandsTheOperationItsDeadline) {
  auto b = Make({.call_timeout = seconds(3)});
  clock_.Set(At(5));
  TimePoint seen{};
  auto r = b->Call([&](const CallContext& ctx) {
    seen = ctx.deadline;
    return true;
  });
  EXPECT_TRUE(r.has_value());
  EXPECT_EQ(seen, At(8));
}

TEST_F(BreakerTest, CallMapsAClassifiedFailureToUpstreamError) {
  auto b = Make({});
  auto r = b->Call([](const CallContext&) { return false; });
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ReasonCode::kUpstreamError);
  EXPECT_EQ(b->Snapshot().failed, 1U);
}

TEST_F(BreakerTest, CallPastItsBudgetIsATimeout) {
  auto b = Make({.call_timeout = seconds(2)});
  auto r = b->Call([&](const CallContext&) {
    clock_.Advance(seconds(2));
    return true;
  });
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ReasonCode::kUpstreamSlow);
  EXPECT_EQ(b->Snapshot().timeouts, 1U);
}

TEST_F(BreakerTest, CallCancelledByTheCallerIsIgnored) {
  auto b = Make({.failure_threshold = 1});
  std::stop_source stop;
  auto r = b->Call(
      [&](const CallContext& ctx) {
        stop.request_stop();
        return !ctx.stop_token.stop_requested();
      },
      {.stop_token = stop.get_token()});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ReasonCode::kCancelled);
  EXPECT_EQ(b->Snapshot().ignored, 1U);
  EXPECT_EQ(b->state(), State::kClosed);
}

TEST_F(BreakerTest, CallWhileOpenRunsNothing) {
  auto b = Make({.failure_threshold = 1});
  Trip(*b);
  int runs = 0;
  auto r = b->Call([&](const CallContext&) { return ++runs > 0; });
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ReasonCode::kCircuitOpen);
  EXPECT_EQ(runs, 0);
}

TEST_F(BreakerTest, CallThatThrowsRecordsAFailureAndRethrows) {
  auto b = Make({.failure_threshold = 1});
  EXPECT_THROW((void)b->Call([](const CallContext&) -> bool { throw std::runtime_error("x"); }),
               std::runtime_error);
  EXPECT_EQ(b->state(), State::kOpen);
}

// ---- snapshot ----

TEST_F(BreakerTest, SnapshotCountsAddUp) {
  auto b = Make({.failure_threshold = 2, .cooldown = seconds(10)});
  Call(*b, Outcome::kSuccess);
  Call(*b, Outcome::kFailure);
  Call(*b, Outcome::kFailure);
  (void)b->TryAcquire();
  (void)b->TryAcquire();
  clock_.Advance(seconds(10));
  auto probe = b->TryAcquire();
  (void)b->TryAcquire();
  const MetricsSnapshot m = b->Snapshot();
  EXPECT_EQ(m.calls, 7U);
  EXPECT_EQ(m.allowed, 4U);
  EXPECT_EQ(m.rejected_open, 2U);
  EXPECT_EQ(m.rejected_half_open, 1U);
  EXPECT_EQ(m.calls, m.allowed + m.rejected_open + m.rejected_half_open);
  EXPECT_EQ(m.probes, 1U);
  EXPECT_EQ(m.opened, 1U);
  EXPECT_EQ(m.transitions, 2U);
}

// ---- the lesson (seeds/004): down from 10 s to 60 s, threshold 5, cooldown 10 s ----

TEST_F(BreakerTest, LessonTraceOutageAndAutomaticRecovery) {
  auto b = Make({.failure_threshold = 5, .cooldown = seconds(10)});
  for (int t = 0; t < 90; ++t) {
    clock_.Set(At(t));
    auto permit = b->TryAcquire();
    if (!permit) {
      continue;
    }
    const bool down = t >= 10 && t < 60;
    if (!down) {
      clock_.Set(At(t + 0.02));
    }
    permit->Record(down ? Outcome::kFailure : Outcome::kSuccess);
  }
  struct Expected {
    double t;
    State from;
    State to;
  };
  const std::vector<Expected> expected = {
      {14, State::kClosed, State::kOpen},       {24, State::kOpen, State::kHalfOpen},
      {24, State::kHalfOpen, State::kOpen},     {34, State::kOpen, State::kHalfOpen},
      {34, State::kHalfOpen, State::kOpen},     {44, State::kOpen, State::kHalfOpen},
      {44, State::kHalfOpen, State::kOpen},     {54, State::kOpen, State::kHalfOpen},
      {54, State::kHalfOpen, State::kOpen},     {64, State::kOpen, State::kHalfOpen},
      {64.02, State::kHalfOpen, State::kClosed}};
  const auto t = Transitions();
  ASSERT_EQ(t.size(), expected.size());
  for (std::size_t i = 0; i < t.size(); ++i) {
    EXPECT_EQ(t[i].at, At(expected[i].t)) << "transition " << i;
    EXPECT_EQ(t[i].from, expected[i].from) << "transition " << i;
    EXPECT_EQ(t[i].to, expected[i].to) << "transition " << i;
  }
  EXPECT_EQ(b->Snapshot().wasted_probes, 4U);
  EXPECT_EQ(b->Snapshot().probes, 5U);
}

}  // namespace
TEST(CircuitBreakerCallTest, TheContextSaysHowMuchOfTheBudgetIsLeft) {
  testing::ManualClock clock{TimePoint{} + std::chrono::seconds(10)};
  auto b =
      CircuitBreaker::Create("ctx", {.call_timeout = std::chrono::seconds(7)}, {.clock = &clock})
          .value();
  auto result = b->Call(
      [&](const CallContext& ctx) {
        EXPECT_EQ(ctx.remaining(), std::chrono::seconds(7));
        clock.Advance(std::chrono::seconds(5));
        EXPECT_EQ(ctx.remaining(), std::chrono::seconds(2));
        const auto steady_deadline = ctx.steady_deadline();
        const auto steady_left = steady_deadline - std::chrono::steady_clock::now();
        EXPECT_LE(steady_left, std::chrono::seconds(2));
        EXPECT_GT(steady_left, std::chrono::seconds(1));
        clock.Advance(std::chrono::seconds(3));
        EXPECT_EQ(ctx.remaining(), Duration::zero());  // past the deadline: zero, not negative
        return 1;
      },
      [](int) { return Outcome::kSuccess; });
  ASSERT_FALSE(result.has_value());  // it came back past its budget: a timeout
  EXPECT_EQ(result.error().code, ReasonCode::kUpstreamSlow);
}

TEST(CircuitBreakerCreateTest, AnEmptyNameIsRefused) {
  auto created = fusebox::CircuitBreaker::Create("", {});
  ASSERT_FALSE(created.has_value());
  EXPECT_EQ(created.error().field, "name");
}

}  // namespace fusebox

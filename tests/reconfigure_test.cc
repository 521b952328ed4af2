// CircuitBreaker::Reconfigure and DescribeChanges: each rule of docs/breaker-rules.md,
// "Reconfiguration", as a unit test in virtual time.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "fusebox/circuit_breaker.h"
#include "fusebox/testing/manual_clock.h"
#include "support/breaker_fixture.h"

namespace fusebox {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class ReconfigureTest : public fusebox::testing::BreakerFixture {
 protected:
  // Trips `b` (configured with `config`: failure threshold 1), waits out the cooldown, takes the
  // HALF_OPEN probe, then raises the probe cap to `cap`: this HALF_OPEN keeps its single slot,
  // which the probe holds. Returns the probe.
  Permit TakeTheProbeAndRaiseTheCap(CircuitBreaker& b, CircuitBreakerConfig config,
                                    std::uint32_t cap) {
    Call(b, Outcome::kFailure);
    clock_.Advance(config.cooldown);
    auto probe = b.TryAcquire();
    EXPECT_TRUE(probe.has_value() && probe->is_probe());
    config.half_open_max_probes = cap;
    Apply(b, config);
    EXPECT_FALSE(b.TryAcquire().has_value());  // the one slot is still taken
    return std::move(probe).value();
  }

  // Reconfigure that must succeed.
  static void Apply(CircuitBreaker& b, const CircuitBreakerConfig& config) {
    const auto error = b.Reconfigure(config);
    ASSERT_FALSE(error.has_value()) << error->message;
  }
};

// ---- DescribeChanges ----

TEST(DescribeChangesTest, EqualConfigsDescribeNothing) {
  EXPECT_TRUE(DescribeChanges({}, {}).empty());
}

TEST(DescribeChangesTest, NamesEachChangedFieldWithOldAndNewValue) {
  const CircuitBreakerConfig before;
  const CircuitBreakerConfig after{.trip = TripPolicy::kTimeWindow,
                                   .failure_threshold = 3,
                                   .window_size = 60,
                                   .minimum_calls = 20,
                                   .failure_rate_threshold = 0.25,
                                   .slow_call_duration = seconds(4),
                                   .slow_call_rate_threshold = 0.5,
                                   .call_timeout = milliseconds(7500),
                                   .cooldown = seconds(20),
                                   .half_open_max_probes = 3,
                                   .half_open_successes = 2,
                                   .batch_may_probe = true,
                                   .inflight_slow_accounting = true,
                                   .cooldown_multiplier = 2.0,
                                   .cooldown_max = seconds(600),
                                   .cooldown_jitter = 0.1};
  EXPECT_EQ(DescribeChanges(before, after), (std::vector<std::string>{
                                                "trip: consecutive -> time_window",
                                                "failure_threshold: 5 -> 3",
                                                "window_size: 100 -> 60",
                                                "minimum_calls: 10 -> 20",
                                                "failure_rate_threshold: 0.5 -> 0.25",
                                                "slow_call_duration: default -> 4s",
                                                "slow_call_rate_threshold: 1 -> 0.5",
                                                "call_timeout: 7s -> 7.5s",
                                                "cooldown: 10s -> 20s",
                                                "half_open_max_probes: 1 -> 3",
                                                "half_open_successes: default -> 2",
                                                "batch_may_probe: false -> true",
                                                "inflight_slow_accounting: false -> true",
                                                "cooldown_multiplier: 1 -> 2",
                                                "cooldown_max: default -> 600s",
                                                "cooldown_jitter: 0 -> 0.1",
                                            }));
  EXPECT_EQ(DescribeChanges(after, before).front(), "trip: time_window -> consecutive");
}

// ---- validation ----

TEST_F(ReconfigureTest, AnInvalidConfigIsRefusedAndChangesNothing) {
  auto b = Make({.failure_threshold = 3});
  Call(*b, Outcome::kFailure);
  const auto error = b->Reconfigure({.failure_threshold = 0});
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->field, "failure_threshold");
  EXPECT_EQ(b->config().failure_threshold, 3U);
  const MetricsSnapshot m = b->Snapshot();
  EXPECT_EQ(m.generation, 0U);
  EXPECT_EQ(m.consecutive_failures, 1U);
  Call(*b, Outcome::kFailure);
  Call(*b, Outcome::kFailure);
  EXPECT_EQ(b->state(), State::kOpen);  // still the old threshold
}

TEST_F(ReconfigureTest, TheSameConfigChangesNothing) {
  auto b = Make({.trip = TripPolicy::kCountWindow, .window_size = 10, .minimum_calls = 5});
  Call(*b, Outcome::kFailure);
  Apply(*b, b->config());
  const MetricsSnapshot m = b->Snapshot();
  EXPECT_EQ(m.generation, 0U);
  EXPECT_EQ(m.window_calls, 1U);
  EXPECT_TRUE(Transitions().empty());
}

// ---- at once, state kept ----

TEST_F(ReconfigureTest, ANewFailureThresholdAppliesAtOnceToTheRunKept) {
  auto b = Make({.failure_threshold = 5});
  for (int i = 0; i < 3; ++i) {
    Call(*b, Outcome::kFailure);
  }
  Apply(*b, {.failure_threshold = 4});
  EXPECT_EQ(b->Snapshot().consecutive_failures, 3U);
  EXPECT_EQ(b->Snapshot().generation, 0U);
  EXPECT_EQ(b->state(), State::kClosed);  // a reconfiguration is not an outcome: no trip yet
  Call(*b, Outcome::kFailure);
  EXPECT_EQ(b->state(), State::kOpen);
  ASSERT_EQ(Transitions().size(), 1U);
  EXPECT_EQ(Transitions()[0].cause, TransitionCause::kConsecutiveFailures);
}

TEST_F(ReconfigureTest, NewRatesApplyAtOnceToTheWindowKept) {
  const CircuitBreakerConfig loose{.trip = TripPolicy::kCountWindow,
                                   .window_size = 10,
                                   .minimum_calls = 4,
                                   .failure_rate_threshold = 0.9};
  auto b = Make(loose);
  Call(*b, Outcome::kFailure);
  Call(*b, Outcome::kSuccess);
  Call(*b, Outcome::kSuccess);
  CircuitBreakerConfig strict = loose;
  strict.failure_rate_threshold = 0.25;
  Apply(*b, strict);
  EXPECT_EQ(b->Snapshot().window_calls, 3U);
  EXPECT_EQ(b->Snapshot().generation, 0U);
  Call(*b, Outcome::kSuccess);  // 1 failure in 4 calls = 0.25
  EXPECT_EQ(b->state(), State::kOpen);
  EXPECT_EQ(Transitions().back().cause, TransitionCause::kFailureRate);
}

TEST_F(ReconfigureTest, ANewSlowCallDurationJudgesTheNextOutcomes) {
  auto b = Make({.failure_threshold = 2});
  Call(*b, Outcome::kSuccess, seconds(3));  // fast under the default 7 s
  EXPECT_EQ(b->Snapshot().slow, 0U);
  Apply(*b, {.failure_threshold = 2, .slow_call_duration = seconds(2)});
  Call(*b, Outcome::kSuccess, seconds(3));
  Call(*b, Outcome::kSuccess, seconds(3));
  EXPECT_EQ(b->Snapshot().slow, 2U);
  EXPECT_EQ(b->state(), State::kOpen);
}

TEST_F(ReconfigureTest, ANewCallTimeoutGivesNewPermitsTheNewDeadline) {
  auto b = Make({});
  auto before = b->TryAcquire();
  ASSERT_TRUE(before.has_value());
  Apply(*b, {.call_timeout = seconds(2)});
  auto after = b->TryAcquire();
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(before->deadline() - before->start(), seconds(7));  // kept
  EXPECT_EQ(after->deadline() - after->start(), seconds(2));
  before->Record(Outcome::kSuccess);
  after->Record(Outcome::kSuccess);
  EXPECT_EQ(b->Snapshot().late, 0U);  // same generation
}

TEST_F(ReconfigureTest, AProbeKeepsTheDeadlineItWasAdmittedWith) {
  auto b = Make({.failure_threshold = 1, .call_timeout = seconds(7), .cooldown = seconds(10)});
  Call(*b, Outcome::kFailure);
  clock_.Advance(seconds(10));
  auto probe = b->TryAcquire();
  ASSERT_TRUE(probe.has_value());
  ASSERT_TRUE(probe->is_probe());
  // Slowness is judged with the settings in force when the call reports: keep 7 s for that.
  Apply(*b, {.failure_threshold = 1,
             .slow_call_duration = seconds(7),
             .call_timeout = seconds(1),
             .cooldown = seconds(10)});
  clock_.Advance(seconds(3));  // past the new budget, within the probe's own
  auto other = b->TryAcquire();
  ASSERT_FALSE(other.has_value());
  EXPECT_EQ(other.error().code, ReasonCode::kCircuitHalfOpen);
  EXPECT_EQ(b->state(), State::kHalfOpen);
  probe->Record(Outcome::kSuccess);
  EXPECT_EQ(b->state(), State::kClosed);
}

TEST_F(ReconfigureTest, TheForcedOpenHintFollowsTheNewCooldownAtOnce) {
  auto b = Make({});
  b->ForceOpen();
  Apply(*b, {.cooldown = seconds(30)});
  auto rejected = b->TryAcquire();
  ASSERT_FALSE(rejected.has_value());
  EXPECT_EQ(rejected.error().retry_after, seconds(30));
  EXPECT_EQ(b->state(), State::kForcedOpen);
}

// ---- at the next OPEN ----

TEST_F(ReconfigureTest, ANewCooldownAppliesFromTheNextOpen) {
  auto b = Make({.failure_threshold = 1, .cooldown = seconds(10)});
  Call(*b, Outcome::kFailure);
  Apply(*b, {.failure_threshold = 1, .cooldown = seconds(20)});
  EXPECT_EQ(b->retry_after(), seconds(10));  // this OPEN keeps its deadline
  clock_.Advance(seconds(10));
  auto probe = b->TryAcquire();
  ASSERT_TRUE(probe.has_value());
  probe->Record(Outcome::kFailure);
  EXPECT_EQ(b->state(), State::kOpen);
  EXPECT_EQ(b->retry_after(), seconds(20));
  EXPECT_EQ(b->Snapshot().current_cooldown, seconds(20));
}

TEST_F(ReconfigureTest, AGrownCooldownIsKeptWithinTheNewRange) {
  const CircuitBreakerConfig growing{.failure_threshold = 1,
                                     .cooldown = seconds(10),
                                     .cooldown_multiplier = 4.0,
                                     .cooldown_max = seconds(100)};
  auto b = Make(growing);
  Call(*b, Outcome::kFailure);
  clock_.Advance(seconds(10));
  Call(*b, Outcome::kFailure);  // failed probe: next cooldown 40 s
  EXPECT_EQ(b->retry_after(), seconds(40));
  CircuitBreakerConfig capped = growing;
  capped.cooldown_max = seconds(50);
  Apply(*b, capped);
  clock_.Advance(seconds(40));
  Call(*b, Outcome::kFailure);  // failed probe: 40 * 4 = 160, capped at the new 50
  EXPECT_EQ(b->retry_after(), seconds(50));
}

// ---- at the next HALF_OPEN ----

TEST_F(ReconfigureTest, ProbeSettingsApplyFromTheNextHalfOpen) {
  const CircuitBreakerConfig one{.failure_threshold = 1, .cooldown = seconds(10)};
  auto b = Make(one);
  auto probe = TakeTheProbeAndRaiseTheCap(*b, one, 2);
  probe.Record(Outcome::kFailure);
  clock_.Advance(seconds(10));
  auto first = b->TryAcquire();
  auto second = b->TryAcquire();
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(second.has_value());
  EXPECT_TRUE(second->is_probe());
  first->Record(Outcome::kSuccess);
  EXPECT_EQ(b->state(), State::kHalfOpen);  // two good probes needed now
  second->Record(Outcome::kSuccess);
  EXPECT_EQ(b->state(), State::kClosed);
}

TEST_F(ReconfigureTest, ProbeSettingsOutsideHalfOpenApplyToTheNextOne) {
  auto b = Make({.failure_threshold = 1, .cooldown = seconds(10)});
  Apply(*b, {.failure_threshold = 1,
             .cooldown = seconds(10),
             .half_open_max_probes = 3,
             .half_open_successes = 1});
  Call(*b, Outcome::kFailure);
  clock_.Advance(seconds(10));
  auto a = b->TryAcquire();
  auto c = b->TryAcquire();
  auto d = b->TryAcquire();
  ASSERT_TRUE(a.has_value() && c.has_value() && d.has_value());
  EXPECT_FALSE(b->TryAcquire().has_value());
  a->Record(Outcome::kSuccess);
  EXPECT_EQ(b->state(), State::kClosed);
}

// Breakers configured alike share one immutable copy of the config: reconfiguring one must not
// change the other.
TEST_F(ReconfigureTest, BreakersConfiguredAlikeStayApartWhenOneIsReconfigured) {
  const CircuitBreakerConfig config{.failure_threshold = 1, .cooldown = seconds(10)};
  auto a = Make(config);
  auto b = Make(config);
  CircuitBreakerConfig raised = config;
  raised.failure_threshold = 3;
  Apply(*a, raised);
  EXPECT_EQ(a->config(), raised);
  EXPECT_EQ(b->config(), config);
  Call(*a, Outcome::kFailure);
  EXPECT_EQ(a->state(), State::kClosed);  // one failure of three
  Call(*b, Outcome::kFailure);
  EXPECT_EQ(b->state(), State::kOpen);  // still one failure of one
  auto c = Make(config);                // made after: alike to b, still its own breaker
  EXPECT_EQ(c->config(), config);
  EXPECT_EQ(c->state(), State::kClosed);
}

// The probe slots move to a larger block when the cap grows; a probe in flight keeps its slot
// and its deadline there: it still holds the only slot of this HALF_OPEN, and when it overruns
// its deadline the breaker reopens as for any probe that timed out.
TEST_F(ReconfigureTest, AProbeInFlightKeepsItsSlotWhenTheCapGrows) {
  const CircuitBreakerConfig one{
      .failure_threshold = 1, .call_timeout = seconds(2), .cooldown = seconds(10)};
  auto b = Make(one);
  auto probe = TakeTheProbeAndRaiseTheCap(*b, one, 64);
  clock_.Advance(seconds(3));   // past the probe's deadline (2 s)
  auto next = b->TryAcquire();  // applies the timeout, at the deadline
  ASSERT_FALSE(next.has_value());
  EXPECT_EQ(next.error().retry_after, seconds(9));
  ASSERT_FALSE(Transitions().empty());
  EXPECT_EQ(Transitions().back().cause, TransitionCause::kProbeTimedOut);
  probe.Record(Outcome::kSuccess);  // late: it belongs to the generation before
  clock_.Advance(seconds(9));
  std::vector<Permit> probes;
  for (int i = 0; i < 64; ++i) {
    auto p = b->TryAcquire();
    ASSERT_TRUE(p.has_value()) << i;
    probes.push_back(std::move(p).value());
  }
  EXPECT_FALSE(b->TryAcquire().has_value());
  Apply(*b, one);  // back to one slot from the next HALF_OPEN on
  for (Permit& p : probes) {
    p.Record(Outcome::kSuccess);
  }
  EXPECT_EQ(b->state(), State::kClosed);
  Call(*b, Outcome::kFailure);
  clock_.Advance(seconds(10));
  auto only = b->TryAcquire();
  ASSERT_TRUE(only.has_value());
  EXPECT_FALSE(b->TryAcquire().has_value());
}

// ---- new generation ----

TEST_F(ReconfigureTest, ANewTripPolicyInClosedStartsAGenerationAndClearsTheRun) {
  auto b = Make({.failure_threshold = 3});
  Call(*b, Outcome::kFailure);
  auto in_flight = b->TryAcquire();
  ASSERT_TRUE(in_flight.has_value());
  clock_.Advance(seconds(1));
  Apply(*b, {.trip = TripPolicy::kCountWindow, .window_size = 4, .minimum_calls = 2});
  MetricsSnapshot m = b->Snapshot();
  EXPECT_EQ(m.state, State::kClosed);
  EXPECT_EQ(m.generation, 1U);
  EXPECT_EQ(m.consecutive_failures, 0U);
  ASSERT_EQ(Transitions().size(), 1U);
  EXPECT_EQ(Transitions()[0].from, State::kClosed);
  EXPECT_EQ(Transitions()[0].to, State::kClosed);
  EXPECT_EQ(Transitions()[0].cause, TransitionCause::kReconfigured);
  EXPECT_EQ(Transitions()[0].generation, 1U);
  EXPECT_EQ(Transitions()[0].at, clock_.Now());
  in_flight->Record(Outcome::kFailure);  // admitted under the old policy: late
  m = b->Snapshot();
  EXPECT_EQ(m.late, 1U);
  EXPECT_EQ(m.window_calls, 0U);
  EXPECT_EQ(m.failed, 2U);  // the totals are kept
  Call(*b, Outcome::kFailure);
  Call(*b, Outcome::kFailure);
  EXPECT_EQ(b->state(), State::kOpen);
  EXPECT_EQ(Transitions().back().cause, TransitionCause::kFailureRate);
}

TEST_F(ReconfigureTest, ANewWindowSizeClearsTheWindow) {
  const CircuitBreakerConfig ten{
      .trip = TripPolicy::kTimeWindow, .window_size = 10, .minimum_calls = 5};
  auto b = Make(ten);
  Call(*b, Outcome::kFailure);
  Call(*b, Outcome::kFailure);
  CircuitBreakerConfig twenty = ten;
  twenty.window_size = 20;
  Apply(*b, twenty);
  const MetricsSnapshot m = b->Snapshot();
  EXPECT_EQ(m.window_calls, 0U);
  EXPECT_EQ(m.generation, 1U);
  EXPECT_EQ(m.state, State::kClosed);
}

TEST_F(ReconfigureTest, ANewWindowSizeUnderTheConsecutivePolicyKeepsTheGeneration) {
  auto b = Make({.failure_threshold = 3});
  Call(*b, Outcome::kFailure);
  Apply(*b, {.failure_threshold = 3, .window_size = 50});
  EXPECT_EQ(b->Snapshot().generation, 0U);
  EXPECT_EQ(b->Snapshot().consecutive_failures, 1U);
}

TEST_F(ReconfigureTest, InflightSlowAccountingStartsAGeneration) {
  const CircuitBreakerConfig plain{.trip = TripPolicy::kCountWindow,
                                   .window_size = 10,
                                   .minimum_calls = 1,
                                   .slow_call_duration = seconds(1),
                                   .slow_call_rate_threshold = 0.5};
  auto b = Make(plain);
  CircuitBreakerConfig counting = plain;
  counting.inflight_slow_accounting = true;
  Apply(*b, counting);
  EXPECT_EQ(b->Snapshot().generation, 1U);
  auto hung = b->TryAcquire();
  ASSERT_TRUE(hung.has_value());
  clock_.Advance(seconds(2));
  auto next = b->TryAcquire();  // the hung call counts as slow before it ends: trips
  EXPECT_FALSE(next.has_value());
  EXPECT_EQ(b->state(), State::kOpen);
  EXPECT_EQ(Transitions().back().cause, TransitionCause::kSlowCallRate);
}

TEST_F(ReconfigureTest, ANewTripPolicyInMetricsOnlyStaysMetricsOnly) {
  auto b = Make({});
  b->MetricsOnly();
  Apply(*b, {.trip = TripPolicy::kCountWindow, .window_size = 5, .minimum_calls = 1});
  EXPECT_EQ(b->state(), State::kMetricsOnly);
  EXPECT_EQ(b->Snapshot().generation, 2U);
  EXPECT_EQ(Transitions().back().cause, TransitionCause::kReconfigured);
  EXPECT_EQ(Transitions().back().to, State::kMetricsOnly);
}

TEST_F(ReconfigureTest, ANewTripPolicyWhileOpenKeepsStateAndGeneration) {
  auto b = Make({.failure_threshold = 1, .cooldown = seconds(10)});
  Call(*b, Outcome::kFailure);
  const std::size_t before = Transitions().size();
  Apply(*b, {.trip = TripPolicy::kCountWindow,
             .window_size = 4,
             .minimum_calls = 2,
             .cooldown = seconds(10)});
  EXPECT_EQ(Transitions().size(), before);
  EXPECT_EQ(b->state(), State::kOpen);
  EXPECT_EQ(b->Snapshot().generation, 1U);
  EXPECT_EQ(b->retry_after(), seconds(10));
  clock_.Advance(seconds(10));
  Call(*b, Outcome::kSuccess);  // the probe
  EXPECT_EQ(b->state(), State::kClosed);
  Call(*b, Outcome::kFailure);  // one failure no longer trips: the window policy rules now
  EXPECT_EQ(b->state(), State::kClosed);
  Call(*b, Outcome::kFailure);
  EXPECT_EQ(b->state(), State::kOpen);
}

TEST_F(ReconfigureTest, AReconfigurationDoesNotResetTheHealthyTimeOfCooldownGrowth) {
  // Growth resets after CLOSED lasted cooldown_max; a reconfiguration in between must not
  // restart that clock.
  const CircuitBreakerConfig growing{.failure_threshold = 1,
                                     .cooldown = seconds(10),
                                     .cooldown_multiplier = 2.0,
                                     .cooldown_max = seconds(60)};
  auto b = Make(growing);
  Call(*b, Outcome::kFailure);
  clock_.Advance(seconds(10));
  Call(*b, Outcome::kFailure);  // next cooldown 20 s
  clock_.Advance(seconds(20));
  Call(*b, Outcome::kSuccess);  // closes
  clock_.Advance(seconds(50));
  CircuitBreakerConfig window = growing;
  window.trip = TripPolicy::kCountWindow;
  window.window_size = 2;
  window.minimum_calls = 1;
  window.failure_rate_threshold = 1.0;
  Apply(*b, window);  // a new generation, CLOSED since 50 s ago still
  clock_.Advance(seconds(10));
  Call(*b, Outcome::kFailure);  // CLOSED for 60 s = cooldown_max: growth resets
  EXPECT_EQ(b->state(), State::kOpen);
  EXPECT_EQ(b->retry_after(), seconds(10));
}

}  // namespace
}  // namespace fusebox

// Active probing (probe_mode = active, TryAcquireProbe), the dependency's own wait (MinOpen) and
// the ramp's start share: each rule of docs/breaker-rules.md, "Active probing" and "The
// dependency's own wait", as a unit test in virtual time.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "fusebox/breaker_settings.h"
#include "fusebox/circuit_breaker.h"
#include "fusebox/events.h"
#include "fusebox/testing/manual_clock.h"
#include "support/breaker_fixture.h"

namespace fusebox {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Trips on one failure; probes every 2 s (growing x2 up to 8 s), each with a 1 s budget.
CircuitBreakerConfig Active() {
  return {.failure_threshold = 1,
          .call_timeout = seconds(7),
          .cooldown = seconds(20),
          .cooldown_multiplier = 2,
          .probe_mode = ProbeMode::kActive,
          .probe_interval = seconds(2),
          .probe_interval_max = seconds(8),
          .probe_budget = seconds(1)};
}

class ActiveProbeTest : public fusebox::testing::BreakerFixture {};

TEST_F(ActiveProbeTest, SettingsHaveRowsDefaultsAndRanges) {
  const CircuitBreakerConfig defaults;
  EXPECT_EQ(defaults.probe_mode, ProbeMode::kPassive);
  EXPECT_EQ(defaults.effective_probe_interval(), defaults.cooldown);
  EXPECT_EQ(defaults.effective_probe_budget(), defaults.call_timeout);
  EXPECT_DOUBLE_EQ(defaults.recovery_ramp_start, 0.1);
  EXPECT_EQ(ToString(ProbeMode::kActive), "active");
  EXPECT_EQ(ParseProbeMode("passive"), ProbeMode::kPassive);
  EXPECT_EQ(ParseProbeMode("Active"), std::nullopt);

  const auto budget = CircuitBreakerConfig{.probe_budget = seconds(0)}.Validate();
  ASSERT_TRUE(budget.has_value());
  EXPECT_EQ(budget->field, "probe_budget");
  EXPECT_EQ(budget->message, "probe_budget must be in (0s, 86400s], got 0s");
  // Longer than a call's budget: a probe gets the call's.
  EXPECT_EQ(CircuitBreakerConfig{.probe_budget = seconds(8)}.effective_probe_budget(), seconds(7));
  const auto cap =
      CircuitBreakerConfig{.probe_interval = seconds(3), .probe_interval_max = seconds(2)}
          .Validate();
  ASSERT_TRUE(cap.has_value());
  EXPECT_EQ(cap->message, "probe_interval_max must be in [probe interval (3s), 86400s], got 2s");
  const auto start = CircuitBreakerConfig{.recovery_ramp_start = 0}.Validate();
  ASSERT_TRUE(start.has_value());
  EXPECT_EQ(start->field, "recovery_ramp_start");
  EXPECT_FALSE(Active().Validate().has_value());
  EXPECT_EQ(DescribeChanges({}, {.probe_mode = ProbeMode::kActive}),
            std::vector<std::string>{"probe_mode: passive -> active"});
}

TEST_F(ActiveProbeTest, CallersAreRefusedWhileOpenEvenPastTheWait) {
  auto b = Make(Active());
  Trip(*b);
  auto early = b->TryAcquire();
  ASSERT_FALSE(early.has_value());
  EXPECT_EQ(early.error().code, ReasonCode::kCircuitOpen);
  EXPECT_EQ(early.error().retry_after, seconds(2));  // the probe interval, not the cooldown
  clock_.Advance(seconds(5));
  auto late = b->TryAcquire();
  ASSERT_FALSE(late.has_value());
  EXPECT_EQ(late.error().code, ReasonCode::kCircuitOpen);
  EXPECT_EQ(late.error().retry_after, CircuitBreaker::kProbeRetryHint);
  EXPECT_EQ(b->state(), State::kOpen);  // no caller moved it to HALF_OPEN
}

TEST_F(ActiveProbeTest, TheProberProbesOnceTheIntervalHasPassed) {
  auto b = Make(Active());
  Trip(*b);
  auto too_early = b->TryAcquireProbe();
  ASSERT_FALSE(too_early.has_value());
  EXPECT_EQ(too_early.error().code, ReasonCode::kCircuitOpen);
  EXPECT_EQ(too_early.error().retry_after, seconds(2));
  clock_.Advance(seconds(2));
  auto probe = b->TryAcquireProbe();
  ASSERT_TRUE(probe.has_value());
  EXPECT_TRUE(probe->is_probe());
  EXPECT_EQ(probe->deadline() - probe->start(), seconds(1));  // the probe budget
  EXPECT_EQ(b->state(), State::kHalfOpen);
  // Callers meanwhile: refused, the probe is the prober's.
  auto caller = b->TryAcquire();
  ASSERT_FALSE(caller.has_value());
  EXPECT_EQ(caller.error().code, ReasonCode::kCircuitHalfOpen);
  clock_.Advance(milliseconds(100));
  probe->Record(Outcome::kSuccess);
  EXPECT_EQ(b->state(), State::kClosed);
  EXPECT_TRUE(b->TryAcquire().has_value());
}

TEST_F(ActiveProbeTest, OneProbeInFlightAndTheNextAskWaitsForItsDeadline) {
  auto b = Make(Active());
  Trip(*b);
  clock_.Advance(seconds(2));
  auto probe = b->TryAcquireProbe();
  ASSERT_TRUE(probe.has_value());
  clock_.Advance(milliseconds(300));
  auto second = b->TryAcquireProbe();
  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(second.error().code, ReasonCode::kCircuitHalfOpen);
  EXPECT_EQ(second.error().retry_after, milliseconds(700));  // the first one's budget left
  EXPECT_EQ(b->Snapshot().probes_in_flight, 1U);
}

TEST_F(ActiveProbeTest, AProbeSilentPastItsBudgetTimesOutAtThatInstant) {
  auto b = Make(Active());
  Trip(*b);
  clock_.Advance(seconds(2));
  auto probe = b->TryAcquireProbe();
  ASSERT_TRUE(probe.has_value());
  const TimePoint budget_end = probe->deadline();
  clock_.Advance(seconds(3));
  auto next = b->TryAcquireProbe();  // applies the overdue probe first
  ASSERT_FALSE(next.has_value());
  EXPECT_EQ(b->state(), State::kOpen);
  const auto t = Transitions();
  ASSERT_FALSE(t.empty());
  EXPECT_EQ(t.back().cause, TransitionCause::kProbeTimedOut);
  EXPECT_EQ(t.back().at, budget_end);
  // The failed probe grew the interval: 4 s from the budget's end.
  EXPECT_EQ(next.error().retry_after, budget_end + seconds(4) - clock_.Now());
  probe->Record(Outcome::kSuccess);  // too late: it moves nothing
  EXPECT_EQ(b->state(), State::kOpen);
}

TEST_F(ActiveProbeTest, FailedProbesGrowTheIntervalUpToItsCap) {
  auto b = Make(Active());
  Trip(*b);
  std::vector<Duration> waits;
  for (int i = 0; i < 5; ++i) {
    waits.push_back(b->retry_after());
    clock_.Advance(b->retry_after());
    auto probe = b->TryAcquireProbe();
    ASSERT_TRUE(probe.has_value());
    probe->Record(Outcome::kFailure);
    ASSERT_EQ(b->state(), State::kOpen);
  }
  EXPECT_EQ(waits,
            (std::vector<Duration>{seconds(2), seconds(4), seconds(8), seconds(8), seconds(8)}));
}

TEST_F(ActiveProbeTest, ASlowProbeIsABadProbe) {
  CircuitBreakerConfig c = Active();
  c.slow_call_duration = milliseconds(500);
  auto b = Make(c);
  Trip(*b);
  clock_.Advance(seconds(2));
  auto probe = b->TryAcquireProbe();
  ASSERT_TRUE(probe.has_value());
  clock_.Advance(milliseconds(600));
  probe->Record(Outcome::kSuccess);
  EXPECT_EQ(b->state(), State::kOpen);
  EXPECT_EQ(Transitions().back().cause, TransitionCause::kProbeFailed);
}

TEST_F(ActiveProbeTest, NothingToProbeWhileClosed) {
  auto b = Make(Active());
  auto none = b->TryAcquireProbe();
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error().code, ReasonCode::kCancelled);
  b->ForceOpen();
  auto forced = b->TryAcquireProbe();
  ASSERT_FALSE(forced.has_value());
  EXPECT_EQ(forced.error().code, ReasonCode::kCircuitOpen);  // only an operator ends it
}

TEST_F(ActiveProbeTest, TheFleetsLeaseGatesTheProbe) {
  auto b = Make(Active());
  bool lease = false;
  b->SetCoordination({.on_transition = nullptr,
                      .may_probe = [&lease](std::uint64_t, std::uint32_t) { return lease; }});
  Trip(*b);
  clock_.Advance(seconds(2));
  auto refused = b->TryAcquireProbe();
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, ReasonCode::kCircuitHalfOpen);
  EXPECT_EQ(refused.error().retry_after, CircuitBreaker::kProbeRetryHint);
  lease = true;
  EXPECT_TRUE(b->TryAcquireProbe().has_value());
}

TEST_F(ActiveProbeTest, PassiveModeStillLetsAProberProbe) {
  auto b = Make({.failure_threshold = 1, .cooldown = seconds(10)});
  Trip(*b);
  clock_.Advance(seconds(10));
  auto probe = b->TryAcquireProbe();
  ASSERT_TRUE(probe.has_value());
  EXPECT_EQ(probe->deadline() - probe->start(), seconds(7));  // budget defaults to call_timeout
  probe->Record(Outcome::kSuccess);
  EXPECT_EQ(b->state(), State::kClosed);
}

TEST_F(ActiveProbeTest, ReconfiguringToActiveStopsCallersProbing) {
  auto b = Make({.failure_threshold = 1, .cooldown = seconds(10)});
  Trip(*b);
  CircuitBreakerConfig active = b->config();
  active.probe_mode = ProbeMode::kActive;
  ASSERT_FALSE(b->Reconfigure(active).has_value());
  clock_.Advance(seconds(10));  // the OPEN period keeps its deadline
  auto caller = b->TryAcquire();
  ASSERT_FALSE(caller.has_value());
  EXPECT_EQ(caller.error().code, ReasonCode::kCircuitOpen);
  EXPECT_TRUE(b->TryAcquireProbe().has_value());
}

// ---- the dependency's own wait ----

TEST_F(ActiveProbeTest, AHoldThatOpensKeepsTheBreakerOpenThatLongInPassiveMode) {
  auto b = Make({.failure_threshold = 1, .cooldown = seconds(10)});
  auto permit = b->TryAcquire();
  ASSERT_TRUE(permit.has_value());
  permit->Record(Outcome::kFailure, MinOpen{seconds(30)});
  ASSERT_EQ(b->state(), State::kOpen);
  EXPECT_EQ(b->retry_after(), seconds(30));
  EXPECT_EQ(b->Snapshot().retry_after, seconds(30));
  clock_.Advance(seconds(10));
  auto caller = b->TryAcquire();
  ASSERT_FALSE(caller.has_value());  // the cooldown is over, the hold is not: no probe
  EXPECT_EQ(caller.error().retry_after, seconds(20));
  clock_.Advance(seconds(20));
  auto probe = b->TryAcquire();
  ASSERT_TRUE(probe.has_value());
  EXPECT_TRUE(probe->is_probe());
}

TEST_F(ActiveProbeTest, AHoldKeepsTheProberAwayToo) {
  auto b = Make(Active());
  Trip(*b);
  clock_.Advance(seconds(2));
  auto probe = b->TryAcquireProbe();
  ASSERT_TRUE(probe.has_value());
  probe->Record(Outcome::kFailure, MinOpen{seconds(30)});  // a 429 with Retry-After: 30
  ASSERT_EQ(b->state(), State::kOpen);
  for (int s = 0; s < 30; s += 3) {
    auto refused = b->TryAcquireProbe();
    ASSERT_FALSE(refused.has_value()) << s;
    EXPECT_EQ(refused.error().retry_after, seconds(30 - s));
    clock_.Advance(seconds(3));
  }
  EXPECT_TRUE(b->TryAcquireProbe().has_value());
}

TEST_F(ActiveProbeTest, AHoldExtendsAnOpenPeriodAndAShorterOneChangesNothing) {
  auto b = Make({.failure_threshold = 1, .cooldown = seconds(10)});
  auto first = b->TryAcquire();
  auto second = b->TryAcquire();
  auto third = b->TryAcquire();
  ASSERT_TRUE(first.has_value() && second.has_value() && third.has_value());
  first->Record(Outcome::kFailure);
  ASSERT_EQ(b->state(), State::kOpen);
  second->Record(Outcome::kFailure, MinOpen{seconds(3)});  // late, and shorter
  EXPECT_EQ(b->retry_after(), seconds(10));
  clock_.Advance(seconds(1));
  third->Record(Outcome::kFailure, MinOpen{seconds(45)});  // late: still the dependency's word
  EXPECT_EQ(b->retry_after(), seconds(45));
  auto refused = b->TryAcquire();
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().retry_after, seconds(45));
  b->Reset();
  Trip(*b);
  EXPECT_EQ(b->retry_after(), seconds(10));  // Reset ended the hold
}

TEST_F(ActiveProbeTest, AHoldInClosedAppliesWhenTheBreakerOpensAndEndsOnClose) {
  auto b = Make({.failure_threshold = 2, .cooldown = seconds(10)});
  auto permit = b->TryAcquire();
  ASSERT_TRUE(permit.has_value());
  permit->Record(Outcome::kFailure, MinOpen{seconds(60)});
  EXPECT_EQ(b->state(), State::kClosed);  // one failure of two
  clock_.Advance(seconds(5));
  Call(*b, Outcome::kFailure);
  ASSERT_EQ(b->state(), State::kOpen);
  EXPECT_EQ(b->retry_after(), seconds(55));
  clock_.Advance(seconds(55));
  auto probe = b->TryAcquire();
  ASSERT_TRUE(probe.has_value());
  probe->Record(Outcome::kSuccess);
  ASSERT_EQ(b->state(), State::kClosed);
  Trip(*b);
  EXPECT_EQ(b->retry_after(), seconds(10));  // the hold ended with the close
}

// ---- the ramp's start share ----

TEST_F(ActiveProbeTest, AQuickProbeStartsTheRampFromTheConfiguredShare) {
  CircuitBreakerConfig c = Active();
  c.recovery_ramp = seconds(10);
  auto b = Make(c);
  Trip(*b);
  clock_.Advance(seconds(2));
  auto probe = b->TryAcquireProbe();
  ASSERT_TRUE(probe.has_value());
  probe->Record(Outcome::kSuccess);  // before any caller came: HALF_OPEN's share is 1
  ASSERT_EQ(b->state(), State::kClosed);
  const auto ramps = Details<RecoveryEvent>();
  ASSERT_EQ(ramps.size(), 1U);
  EXPECT_DOUBLE_EQ(ramps[0].start_share, 0.1);
  // A burst of 40 right after the close: about a tenth admitted, not all of them.
  int admitted = 0;
  for (int i = 0; i < 40; ++i) {
    if (auto p = b->TryAcquire()) {
      p->Record(Outcome::kSuccess);
      ++admitted;
    }
  }
  EXPECT_GE(admitted, 4);
  EXPECT_LE(admitted, 5);
}

TEST_F(ActiveProbeTest, TheStartShareIsAtMostWhatHalfOpenAdmitted) {
  auto b = Make({.failure_threshold = 1,
                 .cooldown = seconds(10),
                 .recovery_ramp = seconds(10),
                 .recovery_ramp_start = 0.5});
  Trip(*b);
  clock_.Advance(seconds(10));
  auto probe = b->TryAcquire();
  ASSERT_TRUE(probe.has_value());
  for (int i = 0; i < 9; ++i) {
    ASSERT_FALSE(b->TryAcquire().has_value());
  }
  probe->Record(Outcome::kSuccess);
  const auto ramps = Details<RecoveryEvent>();
  ASSERT_EQ(ramps.size(), 1U);
  EXPECT_DOUBLE_EQ(ramps[0].start_share, 0.1);  // 1 of 10, below the configured 0.5
}

// ---- transition observers ----

TEST(TransitionObserverTest, SeesTransitionsKeepsTheFastPathAndDiesWithTheBreaker) {
  testing::ManualClock clock;
  auto created = CircuitBreaker::Create("observed", {.failure_threshold = 1}, {.clock = &clock});
  ASSERT_TRUE(created.has_value());
  std::unique_ptr<CircuitBreaker> b = std::move(created).value();
  std::vector<State> seen;
  auto alive = std::make_shared<int>(1);
  std::weak_ptr<int> watch = alive;
  const ListenerId id = b->AddTransitionObserver(
      [&seen, keep = std::move(alive)](const TransitionEvent& t) { seen.push_back(t.to); });
  auto ok = b->TryAcquire();
  ASSERT_TRUE(ok.has_value());
  ok->Record(Outcome::kSuccess);
  EXPECT_TRUE(seen.empty());
  auto bad = b->TryAcquire();
  ASSERT_TRUE(bad.has_value());
  bad->Record(Outcome::kFailure);
  EXPECT_EQ(seen, std::vector<State>{State::kOpen});
  b->RemoveTransitionObserver(id);
  EXPECT_TRUE(watch.expired());  // removed: destroyed
  b->Reset();
  EXPECT_EQ(seen.size(), 1U);

  auto again = std::make_shared<int>(2);
  std::weak_ptr<int> watch_again = again;
  b->AddTransitionObserver([keep = std::move(again)](const TransitionEvent&) {});
  b.reset();
  EXPECT_TRUE(watch_again.expired());  // the breaker's end destroys its observers
}

}  // namespace
}  // namespace fusebox

// The recovery ramp (CircuitBreakerConfig::recovery_ramp): each rule of docs/breaker-rules.md,
// "Recovery ramp", as a unit test in virtual time.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fusebox/circuit_breaker.h"
#include "fusebox/metrics.h"
#include "fusebox/testing/manual_clock.h"
#include "support/breaker_fixture.h"

namespace fusebox {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

// Trips on one failure, cools down 10 s, ramps over 10 s from the share HALF_OPEN admitted
// (recovery_ramp_start 1: the start share's cap has its own tests in active_probe_test.cc).
CircuitBreakerConfig Ramped(Duration ramp = seconds(10)) {
  return {.failure_threshold = 1,
          .cooldown = seconds(10),
          .recovery_ramp = ramp,
          .recovery_ramp_start = 1.0};
}

class RecoveryRampTest : public fusebox::testing::BreakerFixture {
 protected:
  // Trips the breaker, waits out the cooldown, admits one probe and turns `extra` calls away in
  // HALF_OPEN (so HALF_OPEN admitted 1 of 1 + extra calls), then closes with the probe.
  void TripAndClose(CircuitBreaker& b, int extra) {
    auto first = b.TryAcquire();
    ASSERT_TRUE(first.has_value());
    first->Record(Outcome::kFailure);
    ASSERT_EQ(b.state(), State::kOpen);
    clock_.Advance(b.retry_after());
    auto probe = b.TryAcquire();
    ASSERT_TRUE(probe.has_value());
    ASSERT_TRUE(probe->is_probe());
    for (int i = 0; i < extra; ++i) {
      ASSERT_FALSE(b.TryAcquire().has_value());
    }
    probe->Record(Outcome::kSuccess);
    ASSERT_EQ(b.state(), State::kClosed);
  }

  // Which of `n` calls at this instant are admitted (each admitted one records a success).
  std::vector<bool> Admissions(CircuitBreaker& b, int n,
                               Priority priority = Priority::kInteractive) {
    std::vector<bool> out;
    for (int i = 0; i < n; ++i) {
      auto permit = b.TryAcquire(priority);
      if (permit) {
        permit->Record(Outcome::kSuccess);
      } else {
        EXPECT_EQ(permit.error().code, ReasonCode::kCircuitRecovering);
      }
      out.push_back(permit.has_value());
    }
    return out;
  }

  static int Count(const std::vector<bool>& v) {
    return static_cast<int>(std::count(v.begin(), v.end(), true));
  }

  std::vector<RecoveryEvent> RecoveryEvents() const { return Details<RecoveryEvent>(); }

  const TransitionEvent* LastTransition() const {
    for (auto it = events_.rbegin(); it != events_.rend(); ++it) {
      if (const auto* t = std::get_if<TransitionEvent>(&it->detail)) {
        return t;
      }
    }
    return nullptr;
  }
};

// ---- config ----

TEST(RecoveryRampConfigTest, DefaultsToNoRampAndChecksItsRange) {
  EXPECT_EQ(CircuitBreakerConfig{}.recovery_ramp, Duration::zero());
  EXPECT_FALSE(CircuitBreakerConfig{.recovery_ramp = std::chrono::hours(24)}.Validate());
  const auto negative = CircuitBreakerConfig{.recovery_ramp = seconds(-1)}.Validate();
  ASSERT_TRUE(negative.has_value());
  EXPECT_EQ(negative->field, "recovery_ramp");
  EXPECT_EQ(negative->message, "recovery_ramp must be in [0s, 86400s], got -1s");
  const auto long_ramp = CircuitBreakerConfig{.recovery_ramp = std::chrono::hours(25)}.Validate();
  ASSERT_TRUE(long_ramp.has_value());
  EXPECT_EQ(long_ramp->field, "recovery_ramp");
  EXPECT_EQ(DescribeChanges({}, {.recovery_ramp = seconds(60)}),
            std::vector<std::string>{"recovery_ramp: 0s -> 60s"});
  EXPECT_EQ(ToString(ReasonCode::kCircuitRecovering), "CIRCUIT_RECOVERING");
  EXPECT_EQ(ToString(TransitionCause::kRecoveryFailed), "recovery_failed");
}

// ---- admission ----

TEST_F(RecoveryRampTest, WithoutARampClosedAdmitsEverythingAtOnce) {
  auto b = Make(Ramped(Duration::zero()));
  TripAndClose(*b, 3);
  EXPECT_EQ(Count(Admissions(*b, 20)), 20);
  EXPECT_FALSE(b->recovery_progress().has_value());
  EXPECT_FALSE(b->Snapshot().recovering);
  EXPECT_TRUE(RecoveryEvents().empty());
}

TEST_F(RecoveryRampTest, StartsFromTheShareHalfOpenAdmitted) {
  auto b = Make(Ramped());
  TripAndClose(*b, 3);  // HALF_OPEN admitted 1 call of 4: a start share of 0.25
  const MetricsSnapshot m = b->Snapshot();
  EXPECT_TRUE(m.recovering);
  EXPECT_DOUBLE_EQ(m.recovery_progress, 0.0);
  EXPECT_DOUBLE_EQ(m.recovery_share, 0.25);
  ASSERT_TRUE(b->recovery_progress().has_value());
  EXPECT_DOUBLE_EQ(*b->recovery_progress(), 0.0);
  // The first call of the ramp is admitted, then one in four: deterministic, counter-based.
  EXPECT_EQ(Admissions(*b, 8),
            (std::vector<bool>{true, false, false, false, true, false, false, false}));
}

TEST_F(RecoveryRampTest, RejectionsSayRecoveringWithAShortRetryHint) {
  auto b = Make(Ramped());
  TripAndClose(*b, 3);
  ASSERT_TRUE(b->TryAcquire().has_value());
  auto rejected = b->TryAcquire();
  ASSERT_FALSE(rejected.has_value());
  EXPECT_EQ(rejected.error().code, ReasonCode::kCircuitRecovering);
  EXPECT_EQ(rejected.error().retry_after, seconds(1));
  clock_.Advance(milliseconds(9700));  // 0.3 s left in the ramp: the hint never passes its end
  std::optional<Error> late_rejection;
  for (int i = 0; i < 100 && !late_rejection; ++i) {
    auto p = b->TryAcquire();
    if (!p) {
      late_rejection = p.error();
    }
  }
  ASSERT_TRUE(late_rejection.has_value());
  EXPECT_EQ(late_rejection->retry_after, milliseconds(300));
  const MetricsSnapshot m = b->Snapshot();
  EXPECT_GE(m.rejected_recovering, 2U);
  EXPECT_EQ(m.calls, m.allowed + m.rejected_open + m.rejected_half_open + m.rejected_recovering);
}

TEST_F(RecoveryRampTest, TheShareGrowsLinearlyToAll) {
  auto b = Make(Ramped());
  TripAndClose(*b, 3);  // start share 0.25
  clock_.Advance(seconds(5));
  const MetricsSnapshot m = b->Snapshot();
  EXPECT_DOUBLE_EQ(m.recovery_progress, 0.5);
  EXPECT_DOUBLE_EQ(m.recovery_share, 0.625);
  EXPECT_NEAR(Count(Admissions(*b, 1000)), 625, 1);
  clock_.Advance(milliseconds(4000));  // 0.9 of the ramp: 0.25 + 0.75 * 0.9 = 0.925
  EXPECT_NEAR(Count(Admissions(*b, 1000)), 925, 1);
}

TEST_F(RecoveryRampTest, BatchCallsGetTheSameShare) {
  auto b = Make(Ramped());
  TripAndClose(*b, 1);  // start share 0.5
  EXPECT_EQ(Count(Admissions(*b, 100, Priority::kBatch)), 50);
}

TEST_F(RecoveryRampTest, EndsAtItsEndAndClosedAdmitsEverything) {
  auto b = Make(Ramped());
  TripAndClose(*b, 3);
  const TimePoint end = clock_.Now() + seconds(10);
  clock_.Advance(seconds(10));
  EXPECT_FALSE(b->recovery_progress().has_value());
  EXPECT_EQ(Count(Admissions(*b, 50)), 50);
  const auto recoveries = RecoveryEvents();
  ASSERT_EQ(recoveries.size(), 2U);
  EXPECT_EQ(recoveries[0].phase, RecoveryPhase::kStarted);
  EXPECT_DOUBLE_EQ(recoveries[0].start_share, 0.25);
  EXPECT_EQ(recoveries[0].ramp, seconds(10));
  EXPECT_EQ(recoveries[1].phase, RecoveryPhase::kCompleted);
  EXPECT_EQ(recoveries[1].at, end);
  EXPECT_EQ(b->Snapshot().generation, 3U);  // the ramp's end is not a transition
}

TEST_F(RecoveryRampTest, TheStartedEventFollowsTheClosingTransition) {
  auto b = Make(Ramped());
  TripAndClose(*b, 0);
  ASSERT_GE(events_.size(), 2U);
  const auto* t = std::get_if<TransitionEvent>(&events_[events_.size() - 2].detail);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->to, State::kClosed);
  const auto* r = std::get_if<RecoveryEvent>(&events_.back().detail);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->phase, RecoveryPhase::kStarted);
  EXPECT_DOUBLE_EQ(r->start_share, 1.0);  // HALF_OPEN saw only its probe
  EXPECT_EQ(r->at, t->at);
}

// The start share counts every call of the HALF_OPEN, also when the ramp (and the block that
// holds its state) came with a Reconfigure during it.
TEST_F(RecoveryRampTest, ARampAddedDuringHalfOpenStartsFromTheWholeHalfOpensShare) {
  auto b = CircuitBreaker::Create("plain", {.failure_threshold = 1, .cooldown = seconds(10)},
                                  {.clock = &clock_})
               .value();
  b->TryAcquire()->Record(Outcome::kFailure);
  clock_.Advance(seconds(10));
  auto probe = b->TryAcquire();
  ASSERT_TRUE(probe.has_value() && probe->is_probe());
  for (int i = 0; i < 3; ++i) {
    ASSERT_FALSE(b->TryAcquire().has_value());
  }
  CircuitBreakerConfig ramped = b->config();
  ramped.recovery_ramp = seconds(10);
  ramped.recovery_ramp_start = 1.0;
  ASSERT_FALSE(b->Reconfigure(ramped).has_value());
  b->AddListener([this](const Event& e) { events_.push_back(e); });
  probe->Record(Outcome::kSuccess);
  const auto recoveries = RecoveryEvents();
  ASSERT_EQ(recoveries.size(), 1U);
  EXPECT_DOUBLE_EQ(recoveries[0].start_share, 0.25);  // 1 probe of 4 calls
}

// A HALF_OPEN that turns away more calls than its counters hold: the share is the one of its
// first 65,535 calls.
TEST_F(RecoveryRampTest, AVeryLongHalfOpenTakesTheShareOfItsFirstCalls) {
  auto b = Make(Ramped());
  b->TryAcquire()->Record(Outcome::kFailure);
  clock_.Advance(seconds(10));
  auto probe = b->TryAcquire();
  ASSERT_TRUE(probe.has_value() && probe->is_probe());
  for (int i = 0; i < 99'999; ++i) {
    ASSERT_FALSE(b->TryAcquire().has_value());
  }
  probe->Record(Outcome::kSuccess);
  const auto recoveries = RecoveryEvents();
  ASSERT_EQ(recoveries.size(), 1U);
  EXPECT_DOUBLE_EQ(recoveries[0].start_share, 1.0 / 65'535);
}

// ---- strict judgment ----

TEST_F(RecoveryRampTest, OneFailureDuringTheRampReopensWithTheGrownCooldown) {
  CircuitBreakerConfig c = Ramped();
  c.failure_threshold = 3;  // the usual policy would need three in a row
  c.cooldown_multiplier = 2.0;
  auto b = Make(c);
  for (int i = 0; i < 3; ++i) {
    b->TryAcquire()->Record(Outcome::kFailure);
  }
  clock_.Advance(seconds(10));
  b->TryAcquire()->Record(Outcome::kSuccess);  // the probe closes
  ASSERT_EQ(b->state(), State::kClosed);
  clock_.Advance(seconds(2));
  b->TryAcquire()->Record(Outcome::kFailure);
  EXPECT_EQ(b->state(), State::kOpen);
  ASSERT_NE(LastTransition(), nullptr);
  EXPECT_EQ(LastTransition()->cause, TransitionCause::kRecoveryFailed);
  EXPECT_EQ(b->retry_after(), seconds(20));  // grown as after a failed probe
  EXPECT_EQ(RecoveryEvents().back().phase, RecoveryPhase::kAborted);
  EXPECT_FALSE(b->recovery_progress().has_value());
}

TEST_F(RecoveryRampTest, ASlowSuccessDuringTheRampReopens) {
  CircuitBreakerConfig c = Ramped();
  c.failure_threshold = 3;
  c.slow_call_duration = seconds(1);
  auto b = Make(c);
  for (int i = 0; i < 3; ++i) {
    b->TryAcquire()->Record(Outcome::kFailure);
  }
  clock_.Advance(seconds(10));
  b->TryAcquire()->Record(Outcome::kSuccess);
  auto permit = b->TryAcquire();
  ASSERT_TRUE(permit.has_value());
  clock_.Advance(seconds(2));
  permit->Record(Outcome::kSuccess);
  EXPECT_EQ(b->state(), State::kOpen);
  EXPECT_EQ(LastTransition()->cause, TransitionCause::kRecoveryFailed);
}

TEST_F(RecoveryRampTest, AnIgnoredCallDuringTheRampTeachesNothing) {
  auto b = Make(Ramped());
  TripAndClose(*b, 0);
  b->TryAcquire()->Record(Outcome::kIgnored);
  EXPECT_EQ(b->state(), State::kClosed);
  EXPECT_TRUE(b->recovery_progress().has_value());
}

TEST_F(RecoveryRampTest, AFailureAfterTheRampFollowsTheUsualPolicy) {
  CircuitBreakerConfig c = Ramped();
  c.failure_threshold = 2;
  auto b = Make(c);
  for (int i = 0; i < 2; ++i) {
    b->TryAcquire()->Record(Outcome::kFailure);
  }
  clock_.Advance(seconds(10));
  b->TryAcquire()->Record(Outcome::kSuccess);
  clock_.Advance(seconds(10));
  b->TryAcquire()->Record(Outcome::kFailure);  // the ramp ended: one of two
  EXPECT_EQ(b->state(), State::kClosed);
  b->TryAcquire()->Record(Outcome::kFailure);
  EXPECT_EQ(b->state(), State::kOpen);
  EXPECT_EQ(LastTransition()->cause, TransitionCause::kConsecutiveFailures);
}

TEST_F(RecoveryRampTest, AWindowPolicyIsJudgedStrictlyDuringTheRamp) {
  auto b = Make({.trip = TripPolicy::kCountWindow,
                 .window_size = 20,
                 .minimum_calls = 10,
                 .cooldown = seconds(10),
                 .recovery_ramp = seconds(10),
                 .recovery_ramp_start = 1.0});
  for (int i = 0; i < 10; ++i) {
    b->TryAcquire()->Record(Outcome::kFailure);
  }
  ASSERT_EQ(b->state(), State::kOpen);
  clock_.Advance(seconds(10));
  b->TryAcquire()->Record(Outcome::kSuccess);
  ASSERT_EQ(b->state(), State::kClosed);
  b->TryAcquire()->Record(Outcome::kFailure);  // 1 call in the window: below minimum_calls
  EXPECT_EQ(b->state(), State::kOpen);
  EXPECT_EQ(LastTransition()->cause, TransitionCause::kRecoveryFailed);
}

TEST_F(RecoveryRampTest, AProbeThatReportsAfterTheCloseIsLate) {
  CircuitBreakerConfig c = Ramped();
  c.half_open_max_probes = 2;
  c.half_open_successes = 1;
  auto b = Make(c);
  b->TryAcquire()->Record(Outcome::kFailure);
  clock_.Advance(seconds(10));
  auto a = b->TryAcquire();
  auto other = b->TryAcquire();
  ASSERT_TRUE(a.has_value() && other.has_value());
  a->Record(Outcome::kSuccess);
  ASSERT_EQ(b->state(), State::kClosed);
  other->Record(Outcome::kFailure);  // admitted in HALF_OPEN: late, moves nothing
  EXPECT_EQ(b->state(), State::kClosed);
  EXPECT_TRUE(b->recovery_progress().has_value());
}

// ---- what else starts or ends it ----

TEST_F(RecoveryRampTest, OperatorClosesDoNotRampAndAbortARamp) {
  auto b = Make(Ramped());
  b->TryAcquire()->Record(Outcome::kFailure);
  b->ForceClose();
  EXPECT_FALSE(b->recovery_progress().has_value());
  EXPECT_EQ(Count(Admissions(*b, 10)), 10);
  b->TryAcquire()->Record(Outcome::kFailure);
  clock_.Advance(seconds(10));
  b->TryAcquire()->Record(Outcome::kSuccess);
  ASSERT_TRUE(b->recovery_progress().has_value());
  b->Reset();
  EXPECT_FALSE(b->recovery_progress().has_value());
  EXPECT_EQ(RecoveryEvents().back().phase, RecoveryPhase::kAborted);
  EXPECT_EQ(Count(Admissions(*b, 10)), 10);
}

TEST_F(RecoveryRampTest, ReconfiguringTheRampAppliesAtTheNextClose) {
  auto b = Make(Ramped(Duration::zero()));
  ASSERT_FALSE(b->Reconfigure(Ramped(seconds(10))).has_value());
  TripAndClose(*b, 1);
  ASSERT_TRUE(b->recovery_progress().has_value());
  ASSERT_FALSE(b->Reconfigure(Ramped(Duration::zero())).has_value());
  clock_.Advance(seconds(5));
  EXPECT_DOUBLE_EQ(*b->recovery_progress(), 0.5);  // the ramp under way keeps its length
}

TEST_F(RecoveryRampTest, ANewTripPolicyDuringTheRampKeepsTheRamp) {
  auto b = Make(Ramped());
  TripAndClose(*b, 1);
  CircuitBreakerConfig window = Ramped();
  window.trip = TripPolicy::kCountWindow;
  window.window_size = 10;
  window.minimum_calls = 5;
  ASSERT_FALSE(b->Reconfigure(window).has_value());
  EXPECT_EQ(LastTransition()->cause, TransitionCause::kReconfigured);
  EXPECT_TRUE(b->Snapshot().recovering);
  EXPECT_EQ(Admissions(*b, 4), (std::vector<bool>{true, false, true, false}));
}

TEST_F(RecoveryRampTest, WithInflightAccountingTheLockedAdmissionRampsAlike) {
  auto b = Make({.trip = TripPolicy::kCountWindow,
                 .window_size = 20,
                 .minimum_calls = 1,
                 .failure_rate_threshold = 1.0,
                 .cooldown = seconds(10),
                 .inflight_slow_accounting = true,
                 .recovery_ramp = seconds(10),
                 .recovery_ramp_start = 1.0});
  TripAndClose(*b, 3);
  EXPECT_EQ(Admissions(*b, 8),
            (std::vector<bool>{true, false, false, false, true, false, false, false}));
}

TEST_F(RecoveryRampTest, MetricsShowTheRamp) {
  auto b = Make(Ramped());
  TripAndClose(*b, 3);
  clock_.Advance(seconds(5));
  (void)Admissions(*b, 4);
  std::string text;
  AppendPrometheus(text, b->Snapshot());
  EXPECT_THAT(text, HasSubstr("fusebox_recovering{breaker=\"test\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("fusebox_recovery_progress{breaker=\"test\"} 0.5\n"));
  EXPECT_THAT(
      text, HasSubstr("fusebox_rejections_total{breaker=\"test\",reason=\"CIRCUIT_RECOVERING\"} "));
}

}  // namespace
}  // namespace fusebox

// The breaker's parts in src/internal/ that hold its rules, each on its own: the trip rules, the
// recovery ramp, the probe slots and the delivery of events. The breaker's tests cover them
// through the state machine; these pin down each part's own contract.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "fusebox/circuit_breaker.h"
#include "fusebox/events.h"
#include "internal/event_batch.h"
#include "internal/event_dispatch.h"
#include "internal/probe_slots.h"
#include "internal/recovery_ramp.h"
#include "internal/trip_rule.h"

namespace fusebox::internal {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TimePoint At(int ms) { return TimePoint(milliseconds(ms)); }

// ---- trip rules ----

TEST(MinCountReachingTest, IsTheSmallestCountWhoseRateReachesTheThreshold) {
  EXPECT_EQ(MinCountReaching(10, 0.3), 3U);  // 3/10 == 0.3 as the division decides it
  EXPECT_EQ(MinCountReaching(10, 0.5), 5U);
  EXPECT_EQ(MinCountReaching(3, 0.5), 2U);
  EXPECT_EQ(MinCountReaching(7, 0.0), 0U);
  EXPECT_EQ(MinCountReaching(7, 1.0), 7U);
  EXPECT_EQ(MinCountReaching(4, 1.5), 5U);  // no count reaches it: calls + 1
}

TEST(ConsecutiveTripCauseTest, TheRunAndTheCallsRunningSlowReachTheThreshold) {
  EXPECT_FALSE(ConsecutiveTripCause(4, 0, 5).has_value());
  EXPECT_EQ(ConsecutiveTripCause(5, 0, 5), TransitionCause::kConsecutiveFailures);
  EXPECT_EQ(ConsecutiveTripCause(3, 2, 5), TransitionCause::kConsecutiveFailures);
  EXPECT_FALSE(ConsecutiveTripCause(0, 4, 5).has_value());
}

CircuitBreakerConfig WindowConfig(TripPolicy trip) {
  CircuitBreakerConfig config;
  config.trip = trip;
  config.window_size = 10;
  config.minimum_calls = 4;
  config.failure_rate_threshold = 0.5;
  config.slow_call_rate_threshold = 0.75;
  return config;
}

TEST(WindowRuleTest, TheConsecutivePolicyHasNoWindow) {
  EXPECT_EQ(WindowRule::For(CircuitBreakerConfig{}), nullptr);
}

TEST(WindowRuleTest, AFailureRateTripsOnlyFromTheMinimumCalls) {
  const CircuitBreakerConfig config = WindowConfig(TripPolicy::kCountWindow);
  std::unique_ptr<WindowRule> rule = WindowRule::For(config);
  ASSERT_NE(rule, nullptr);
  for (int i = 0; i < 3; ++i) {
    rule->Add({.failure = true, .slow = false}, At(0));
  }
  EXPECT_FALSE(rule->TripCause(config, rule->TotalsAt(At(0)), 0).has_value());  // 3 < 4 calls
  rule->Add({.failure = false, .slow = false}, At(0));
  EXPECT_EQ(rule->TripCause(config, rule->TotalsAt(At(0)), 0), TransitionCause::kFailureRate);
}

TEST(WindowRuleTest, CallsRunningSlowJoinTheSlowRateOnly) {
  const CircuitBreakerConfig config = WindowConfig(TripPolicy::kCountWindow);
  std::unique_ptr<WindowRule> rule = WindowRule::For(config);
  rule->Add({.failure = false, .slow = true}, At(0));
  rule->Add({.failure = false, .slow = false}, At(0));
  const WindowTotals t = rule->TotalsAt(At(0));
  EXPECT_FALSE(rule->TripCause(config, t, 1).has_value());  // 2 slow of 3: below 0.75
  EXPECT_EQ(rule->TripCause(config, t, 2), TransitionCause::kSlowCallRate);  // 3 slow of 4
}

TEST(WindowRuleTest, AddUnlessItTripsLeavesTheWindowAsItWasWhenItWouldTrip) {
  const CircuitBreakerConfig config = WindowConfig(TripPolicy::kTimeWindow);
  std::unique_ptr<WindowRule> rule = WindowRule::For(config);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(rule->AddUnlessItTrips(config, {.failure = i == 0, .slow = false}, At(0), true));
  }
  const WindowTotals before = rule->TotalsAt(At(0));
  EXPECT_FALSE(rule->AddUnlessItTrips(config, {.failure = true, .slow = false}, At(0), true));
  EXPECT_EQ(rule->TotalsAt(At(0)), before);
  // Where the breaker may not trip (METRICS_ONLY), the sample goes in.
  EXPECT_TRUE(rule->AddUnlessItTrips(config, {.failure = true, .slow = false}, At(0), false));
  EXPECT_EQ(rule->TotalsAt(At(0)).calls, 4U);
}

TEST(WindowRuleTest, ASnapshotSeesTheTimeWindowMoveWithoutMovingIt) {
  const CircuitBreakerConfig config = WindowConfig(TripPolicy::kTimeWindow);
  std::unique_ptr<WindowRule> rule = WindowRule::For(config);
  rule->Add({.failure = true, .slow = false}, At(0));
  EXPECT_EQ(rule->TotalsSeenAt(TimePoint(seconds(10))).calls, 0U);  // fell out of 10 s
  EXPECT_EQ(rule->TotalsSeenAt(TimePoint(seconds(9))).calls, 1U);
  rule->Clear();
  EXPECT_EQ(rule->TotalsSeenAt(At(0)).calls, 0U);
}

// ---- recovery ramp ----

TEST(RampAdmissionTest, StartsFromWhatHalfOpenAdmittedAtMostTheConfiguredShare) {
  EXPECT_DOUBLE_EQ(RecoveryRamp::StartShare(10, 1, 0.5), 0.1);
  EXPECT_DOUBLE_EQ(RecoveryRamp::StartShare(1, 1, 0.1), 0.1);  // a lone probe: capped
  EXPECT_DOUBLE_EQ(RecoveryRamp::StartShare(0, 0, 1.0), 1.0);
}

TEST(RampAdmissionTest, TheShareGrowsLinearlyToOneOverTheRamp) {
  RecoveryRamp ramp;
  ramp.Start(At(1000), seconds(10), 0.2);
  EXPECT_DOUBLE_EQ(ramp.ShareAt(At(1000)), 0.2);
  EXPECT_DOUBLE_EQ(ramp.ShareAt(At(6000)), 0.6);
  EXPECT_DOUBLE_EQ(ramp.ShareAt(At(20000)), 1.0);
  EXPECT_DOUBLE_EQ(ramp.ProgressAt(At(3500)), 0.25);
  EXPECT_EQ(ramp.end(), At(11000));
}

TEST(RampAdmissionTest, AdmitsTheFirstCallThenTheShareOfTheRest) {
  RecoveryRamp ramp;
  ramp.Start(At(0), seconds(10), 0.25);
  EXPECT_TRUE(ramp.Admits(At(0)));  // the first call of a ramp
  int admitted = 0;
  for (int i = 0; i < 400; ++i) {
    admitted += ramp.Admits(At(0)) ? 1 : 0;
  }
  EXPECT_EQ(admitted, 100);  // a quarter, to the call
}

TEST(RampAdmissionTest, RetryAfterIsShortAndNeverPastTheEnd) {
  RecoveryRamp ramp;
  ramp.Start(At(0), seconds(10), 0.5);
  EXPECT_EQ(ramp.RetryAfter(At(0)), seconds(1));
  EXPECT_EQ(ramp.RetryAfter(At(9800)), milliseconds(200));
  EXPECT_EQ(ramp.RetryAfter(At(20000)), Duration(1));
}

// ---- probe slots ----

TEST(ProbeSlotsTest, FindsAFreeSlotAndTheEarliestBusyDeadline) {
  std::vector<ProbeSlot> slots(3);
  slots[0] = ProbeSlot{At(500), true};
  slots[2] = ProbeSlot{At(300), true};
  EXPECT_EQ(FreeSlot(slots), &slots[1]);
  EXPECT_EQ(EarliestBusyDeadline(slots, kNoSlot), At(300));
  EXPECT_EQ(EarliestBusyDeadline(slots, 2), At(500));  // its own slot skipped
  slots[1] = ProbeSlot{At(100), true};
  EXPECT_EQ(FreeSlot(slots), nullptr);
  std::vector<ProbeSlot> idle(2);
  EXPECT_FALSE(EarliestBusyDeadline(idle, kNoSlot).has_value());
}

// ---- event delivery ----

TEST(DeliverTest, ObserversThenTheCoordinatorSeeTransitionsAndListenersEverything) {
  std::vector<std::string> heard;
  Subscribers to;
  to.observers = std::make_shared<const Subscribers::ObserverList>(
      Subscribers::ObserverList{{1, [&](const TransitionEvent&) { heard.push_back("observer"); }}});
  CircuitBreaker::Coordination coordination;
  coordination.on_transition = [&](const TransitionEvent&) { heard.push_back("coordinator"); };
  to.coordination = std::make_shared<const CircuitBreaker::Coordination>(coordination);
  to.listeners = std::make_shared<const Subscribers::ListenerList>(
      Subscribers::ListenerList{{1, [&](const Event&) { heard.push_back("listener"); }}});
  EventBatch batch;
  batch.Push(Event{1, "b",
                   TransitionEvent{State::kClosed, State::kOpen,
                                   TransitionCause::kConsecutiveFailures, 1, At(0)}});
  batch.Push(Event{
      2, "b", RejectionEvent{ReasonCode::kCircuitOpen, Priority::kInteractive, seconds(1), At(0)}});
  Deliver(batch, to);
  EXPECT_EQ(heard, (std::vector<std::string>{"observer", "coordinator", "listener", "listener"}));
}

TEST(DeliverTest, ASubscriberThatThrowsStopsNobodyElse) {
  int heard = 0;
  Subscribers to;
  to.listeners = std::make_shared<const Subscribers::ListenerList>(
      Subscribers::ListenerList{{1, [](const Event&) { throw std::runtime_error("listener"); }},
                                {2, [&](const Event&) { ++heard; }}});
  EventBatch batch;
  batch.Push(Event{
      1, "b", RejectionEvent{ReasonCode::kCircuitOpen, Priority::kInteractive, seconds(1), At(0)}});
  Deliver(batch, to);
  EXPECT_EQ(heard, 1);
}

}  // namespace
}  // namespace fusebox::internal

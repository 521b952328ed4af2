// tests/support/breaker_fixture.h
//
// The fixture of the breaker's unit tests: a CircuitBreaker on a ManualClock whose events are all
// kept, and the steps tests are written in (a call that takes so long and ends so, a trip).
//
// Example:
//   class MyTest : public fusebox::testing::BreakerFixture {};
//   TEST_F(MyTest, OpensAfterTheThreshold) {
//     auto b = Make({.failure_threshold = 2});
//     Trip(*b);
//     EXPECT_EQ(Details<TransitionEvent>().back().to, State::kOpen);
//   }
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <variant>
#include <vector>

#include "fusebox/circuit_breaker.h"
#include "fusebox/testing/manual_clock.h"

namespace fusebox::testing {

class BreakerFixture : public ::testing::Test {
 protected:
  // A breaker named "test" on clock_, its events appended to events_.
  std::unique_ptr<CircuitBreaker> Make(CircuitBreakerConfig config, Random* random = nullptr) {
    auto created = CircuitBreaker::Create("test", config, {.clock = &clock_, .random = random});
    EXPECT_TRUE(created.has_value());
    auto breaker = std::move(created).value();
    breaker->AddListener([this](const Event& e) { events_.push_back(e); });
    return breaker;
  }

  // Admits a call (it must be admitted) and records `outcome` after `latency`.
  void Call(CircuitBreaker& b, Outcome outcome, Duration latency = Duration::zero(),
            Priority priority = Priority::kInteractive) {
    auto permit = b.TryAcquire(priority);
    ASSERT_TRUE(permit.has_value()) << ToString(permit.error().code);
    clock_.Advance(latency);
    permit->Record(outcome);
  }

  // Failures in a row up to the threshold (the consecutive policy): the breaker must open.
  void Trip(CircuitBreaker& b) {
    for (std::uint32_t i = 0; i < b.config().failure_threshold; ++i) {
      Call(b, Outcome::kFailure);
    }
    ASSERT_EQ(b.state(), State::kOpen);
  }

  // The events of one kind (TransitionEvent, RecoveryEvent, ...) in the order delivered.
  template <typename Detail>
  std::vector<Detail> Details() const {
    std::vector<Detail> out;
    for (const Event& e : events_) {
      if (const auto* d = std::get_if<Detail>(&e.detail)) {
        out.push_back(*d);
      }
    }
    return out;
  }
  std::vector<TransitionEvent> Transitions() const { return Details<TransitionEvent>(); }

  ManualClock clock_;
  std::vector<Event> events_;
};

}  // namespace fusebox::testing

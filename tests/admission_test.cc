#include "fusebox/admission.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <utility>

#include "fusebox/random.h"
#include "fusebox/status.h"
#include "fusebox/testing/manual_clock.h"

namespace {

using fusebox::Admission;
using fusebox::Guards;
using fusebox::Outcome;
using fusebox::ReasonCode;
using fusebox::State;
using fusebox::TimePoint;
using std::chrono::seconds;

// Every piece on one manual clock: a breaker that opens on one failure, a bulkhead of one, an
// adaptive limit, and a throttle whose draws always refuse once it sheds at all.
class AdmissionTest : public ::testing::Test {
 protected:
  class ZeroRandom final : public fusebox::Random {
   public:
    std::uint64_t Next() noexcept override { return 0; }
  };

  AdmissionTest() {
    breaker_ = fusebox::CircuitBreaker::Create(
                   "dep", {.failure_threshold = 1, .cooldown = seconds(5)}, {.clock = &clock_})
                   .value();
    bulkhead_ = fusebox::Bulkhead::Create("dep", {.max_concurrent = 1}).value();
    limit_ = fusebox::AdaptiveLimit::Create("dep", {}, {.clock = &clock_, .on_change = {}}).value();
    throttle_ =
        fusebox::Throttle::Create("dep", {}, {.clock = &clock_, .random = &random_}).value();
  }
  Guards All() const {
    return {.breaker = breaker_.get(),
            .bulkhead = bulkhead_.get(),
            .limit = limit_.get(),
            .throttle = throttle_.get()};
  }
  // The throttle sheds from now on (its counts hold failures only).
  void MakeTheThrottleShed() {
    for (int i = 0; i < 10; ++i) {
      auto ticket = throttle_->TryAcquire();
      if (ticket) {
        ticket->Record(Outcome::kFailure);
      }
    }
    ASSERT_GT(throttle_->refusal_probability(), 0.5);
  }

  fusebox::testing::ManualClock clock_{TimePoint{} + seconds(100)};
  ZeroRandom random_;
  std::unique_ptr<fusebox::CircuitBreaker> breaker_;
  std::unique_ptr<fusebox::Bulkhead> bulkhead_;
  std::unique_ptr<fusebox::AdaptiveLimit> limit_;
  std::unique_ptr<fusebox::Throttle> throttle_;
};

TEST_F(AdmissionTest, AFullLimitRefusesBeforeTheBreakerIsAsked) {
  auto first = fusebox::Admit(All());
  ASSERT_TRUE(first.has_value());
  auto second = fusebox::Admit(All());
  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(second.error().code, ReasonCode::kOverloaded);
  EXPECT_EQ(limit_->in_flight(), 1U);
}

TEST_F(AdmissionTest, ABreakerRefusalGivesTheSlotsBack) {
  breaker_->ForceOpen();
  auto refused = fusebox::Admit(All());
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, ReasonCode::kCircuitOpen);
  EXPECT_EQ(bulkhead_->in_flight(), 0U);
  EXPECT_EQ(limit_->in_flight(), 0U);
  EXPECT_EQ(throttle_->Stats().admitted + throttle_->Stats().refused, 0U);  // never asked
}

TEST_F(AdmissionTest, AThrottleRefusalGivesEverythingBackAndTeachesTheBreakerNothing) {
  MakeTheThrottleShed();
  for (int i = 0; i < 5; ++i) {
    auto refused = fusebox::Admit(All());
    ASSERT_FALSE(refused.has_value());
    EXPECT_EQ(refused.error().code, ReasonCode::kThrottled);
  }
  EXPECT_EQ(breaker_->state(), State::kClosed);  // threshold 1, yet nothing recorded
  EXPECT_EQ(bulkhead_->in_flight(), 0U);
  EXPECT_EQ(limit_->in_flight(), 0U);
}

TEST_F(AdmissionTest, AProbeIsNeverThrottled) {
  MakeTheThrottleShed();
  {
    Guards no_throttle = All();
    no_throttle.throttle = nullptr;
    auto failing = fusebox::Admit(no_throttle);
    ASSERT_TRUE(failing.has_value());
    failing->Record(Outcome::kFailure);
  }
  ASSERT_EQ(breaker_->state(), State::kOpen);
  clock_.Advance(seconds(5));
  auto probe = fusebox::Admit(All());
  ASSERT_TRUE(probe.has_value());
  EXPECT_TRUE(probe->is_probe());
  probe->Record(Outcome::kSuccess);
  EXPECT_EQ(breaker_->state(), State::kClosed);
}

TEST_F(AdmissionTest, RecordTeachesEveryPiece) {
  auto admitted = fusebox::Admit(All());
  ASSERT_TRUE(admitted.has_value());
  EXPECT_EQ(limit_->in_flight(), 1U);
  admitted->Record(Outcome::kSuccess);
  EXPECT_EQ(throttle_->Stats().sent, 1U);
  EXPECT_EQ(throttle_->Stats().accepts, 1U);
  EXPECT_EQ(limit_->in_flight(), 0U);
  EXPECT_EQ(bulkhead_->in_flight(), 0U);
  admitted->Record(Outcome::kFailure);  // later calls do nothing
  EXPECT_EQ(breaker_->state(), State::kClosed);
  EXPECT_EQ(throttle_->Stats().sent, 1U);
}

TEST_F(AdmissionTest, ARefusalForLoadIsAFailureAndHoldsTheBreakerOpen) {
  auto admitted = fusebox::Admit(All());
  ASSERT_TRUE(admitted.has_value());
  admitted->RecordRefusedForLoad(fusebox::MinOpen{seconds(30)});
  EXPECT_EQ(breaker_->state(), State::kOpen);
  EXPECT_GE(breaker_->retry_after(), seconds(29));
  EXPECT_EQ(throttle_->Stats().sent, 1U);
  EXPECT_EQ(throttle_->Stats().accepts, 0U);
  EXPECT_EQ(limit_->in_flight(), 0U);
}

TEST_F(AdmissionTest, ATakenPermitIsRecordedByItsTaker) {
  auto admitted = fusebox::Admit(All());
  ASSERT_TRUE(admitted.has_value());
  fusebox::Permit permit = admitted->TakePermit();
  permit.Record(Outcome::kFailure);     // the runner's record
  admitted->Record(Outcome::kSuccess);  // the rest: the breaker is not asked again
  EXPECT_EQ(breaker_->state(), State::kOpen);
  EXPECT_EQ(throttle_->Stats().accepts, 1U);
}

TEST_F(AdmissionTest, OnlyTheBreakerIsRequired) {
  auto admitted = fusebox::Admit(
      {.breaker = breaker_.get(), .bulkhead = nullptr, .limit = nullptr, .throttle = nullptr});
  ASSERT_TRUE(admitted.has_value());
  admitted->Record(Outcome::kSuccess);
}

}  // namespace

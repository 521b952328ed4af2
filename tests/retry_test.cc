#include "fusebox/retry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <stop_token>
#include <utility>
#include <vector>

#include "fusebox/circuit_breaker.h"
#include "fusebox/outcome.h"
#include "fusebox/random.h"
#include "fusebox/status.h"
#include "fusebox/testing/manual_clock.h"

namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::seconds;

using fusebox::CallContext;
using fusebox::CallOptions;
using fusebox::CircuitBreaker;
using fusebox::Duration;
using fusebox::Error;
using fusebox::Outcome;
using fusebox::ReasonCode;
using fusebox::Retry;
using fusebox::RetryPolicy;
using fusebox::SplitMix64Random;
using fusebox::testing::ManualClock;

// Waits in virtual time: records each wait and advances the clock by it.
class FakeSleeper final : public fusebox::Sleeper {
 public:
  explicit FakeSleeper(ManualClock& clock) : clock_(clock) {}
  void SleepFor(Duration d) override {
    sleeps.push_back(d);
    clock_.Advance(d);
    if (on_sleep) {
      on_sleep();
    }
  }

  std::vector<Duration> sleeps;
  std::function<void()> on_sleep;

 private:
  ManualClock& clock_;
};

// A seeded Random that counts its draws.
class CountingRandom final : public fusebox::Random {
 public:
  explicit CountingRandom(std::uint64_t seed) : inner_(seed) {}
  std::uint64_t Next() noexcept override {
    ++draws;
    return inner_.Next();
  }
  int draws = 0;

 private:
  SplitMix64Random inner_;
};

RetryPolicy NoJitter(std::uint32_t max_attempts) {
  RetryPolicy policy;
  policy.max_attempts = max_attempts;
  policy.jitter = 0.0;
  return policy;
}

// ---- the policy: validation and the pure backoff schedule ----

TEST(RetryPolicyTest, DefaultsAreValidAndAsDocumented) {
  const RetryPolicy policy;
  EXPECT_EQ(policy.Validate(), std::nullopt);
  EXPECT_EQ(policy.max_attempts, 3U);
  EXPECT_EQ(policy.initial_backoff, milliseconds(100));
  EXPECT_EQ(policy.multiplier, 2.0);
  EXPECT_EQ(policy.max_backoff, seconds(10));
  EXPECT_EQ(policy.jitter, 1.0);
}

TEST(RetryPolicyTest, ValidateNamesMaxAttemptsAndItsRange) {
  RetryPolicy policy;
  policy.max_attempts = 0;
  auto error = policy.Validate();
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->field, "max_attempts");
  EXPECT_EQ(error->message, "max_attempts must be in [1, 100], got 0");
  policy.max_attempts = 101;
  EXPECT_EQ(policy.Validate()->field, "max_attempts");
  policy.max_attempts = 100;
  EXPECT_EQ(policy.Validate(), std::nullopt);
}

TEST(RetryPolicyTest, ValidateRefusesNegativeOrHugeInitialBackoff) {
  RetryPolicy policy;
  policy.initial_backoff = milliseconds(-1);
  EXPECT_EQ(policy.Validate()->field, "initial_backoff");
  policy.initial_backoff = hours(25);
  policy.max_backoff = hours(25);
  EXPECT_EQ(policy.Validate()->field, "initial_backoff");
  policy.initial_backoff = Duration::zero();
  policy.max_backoff = Duration::zero();
  EXPECT_EQ(policy.Validate(), std::nullopt);
}

TEST(RetryPolicyTest, ValidateRefusesMultiplierOutsideOneToHundredAndNaN) {
  RetryPolicy policy;
  policy.multiplier = 0.5;
  auto error = policy.Validate();
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->field, "multiplier");
  EXPECT_EQ(error->message, "multiplier must be in [1, 100], got 0.5");
  policy.multiplier = 100.5;
  EXPECT_EQ(policy.Validate()->field, "multiplier");
  policy.multiplier = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(policy.Validate()->field, "multiplier");
}

TEST(RetryPolicyTest, ValidateRefusesMaxBackoffBelowInitialBackoff) {
  RetryPolicy policy;
  policy.initial_backoff = seconds(2);
  policy.max_backoff = seconds(1);
  auto error = policy.Validate();
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->field, "initial_backoff");
  EXPECT_EQ(error->message,
            "initial_backoff (2s) must not exceed max_backoff (1s): raise max_backoff or lower "
            "initial_backoff");
}

// Setting only initial_backoff above the default cap blames the field that was set, and says
// the cap is the default.
TEST(RetryPolicyTest, AnInitialBackoffAboveTheDefaultCapNamesBoth) {
  RetryPolicy policy;
  policy.initial_backoff = seconds(20);
  auto error = policy.Validate();
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->field, "initial_backoff");
  EXPECT_EQ(error->message,
            "initial_backoff (20s) must not exceed max_backoff (10s, the default): raise "
            "max_backoff or lower initial_backoff");
  // Lowering only the cap below the default initial backoff blames the cap.
  RetryPolicy low_cap;
  low_cap.max_backoff = std::chrono::milliseconds(50);
  EXPECT_EQ(low_cap.Validate()->field, "max_backoff");
}

TEST(RetryPolicyTest, ValidateRefusesJitterOutsideZeroToOne) {
  RetryPolicy policy;
  policy.jitter = -0.1;
  EXPECT_EQ(policy.Validate()->field, "jitter");
  policy.jitter = 1.5;
  EXPECT_EQ(policy.Validate()->field, "jitter");
  policy.jitter = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(policy.Validate()->field, "jitter");
  policy.jitter = 0.0;
  EXPECT_EQ(policy.Validate(), std::nullopt);
}

TEST(RetryPolicyTest, CeilingGrowsByTheMultiplierFromTheInitialBackoff) {
  const RetryPolicy policy;  // 100 ms, x2
  EXPECT_EQ(policy.BackoffCeiling(1), milliseconds(100));
  EXPECT_EQ(policy.BackoffCeiling(2), milliseconds(200));
  EXPECT_EQ(policy.BackoffCeiling(3), milliseconds(400));
  EXPECT_EQ(policy.BackoffCeiling(4), milliseconds(800));
}

TEST(RetryPolicyTest, CeilingIsCappedAtMaxBackoff) {
  RetryPolicy policy;
  policy.initial_backoff = seconds(1);
  policy.multiplier = 10.0;
  policy.max_backoff = seconds(5);
  EXPECT_EQ(policy.BackoffCeiling(1), seconds(1));
  EXPECT_EQ(policy.BackoffCeiling(2), seconds(5));
  EXPECT_EQ(policy.BackoffCeiling(3), seconds(5));
}

TEST(RetryPolicyTest, CeilingStaysAtTheCapWhenTheGrowthOverflows) {
  RetryPolicy policy;
  policy.multiplier = 100.0;
  // 100^4294967294 is +inf in double: the cap must absorb it.
  EXPECT_EQ(policy.BackoffCeiling(std::numeric_limits<std::uint32_t>::max()), seconds(10));
}

TEST(RetryPolicyTest, AttemptZeroCountsAsTheFirst) {
  const RetryPolicy policy;
  EXPECT_EQ(policy.BackoffCeiling(0), policy.BackoffCeiling(1));
}

TEST(RetryPolicyTest, MultiplierOneKeepsTheBackoffConstant) {
  RetryPolicy policy;
  policy.multiplier = 1.0;
  EXPECT_EQ(policy.BackoffCeiling(1), milliseconds(100));
  EXPECT_EQ(policy.BackoffCeiling(50), milliseconds(100));
}

TEST(RetryPolicyTest, ZeroInitialBackoffStaysZero) {
  RetryPolicy policy;
  policy.initial_backoff = Duration::zero();
  policy.multiplier = 100.0;
  EXPECT_EQ(policy.BackoffCeiling(1000), Duration::zero());
}

TEST(RetryPolicyTest, NoJitterWaitsExactlyTheCeilingAndDrawsNothing) {
  const RetryPolicy policy = NoJitter(3);
  CountingRandom random(7);
  EXPECT_EQ(policy.BackoffFor(1, random), milliseconds(100));
  EXPECT_EQ(policy.BackoffFor(3, random), milliseconds(400));
  EXPECT_EQ(random.draws, 0);
}

TEST(RetryPolicyTest, JitterDrawsExactlyOneNumberPerBackoff) {
  const RetryPolicy policy;
  CountingRandom random(7);
  (void)policy.BackoffFor(1, random);
  (void)policy.BackoffFor(2, random);
  EXPECT_EQ(random.draws, 2);
}

TEST(RetryPolicyTest, FullJitterStaysWithinZeroAndTheCeilingAndSpreadsOverIt) {
  const RetryPolicy policy;  // jitter 1
  SplitMix64Random random(42);
  const Duration ceiling = policy.BackoffCeiling(4);
  Duration lowest = ceiling;
  Duration highest = Duration::zero();
  for (int i = 0; i < 2000; ++i) {
    const Duration wait = policy.BackoffFor(4, random);
    ASSERT_GE(wait, Duration::zero());
    ASSERT_LE(wait, ceiling);
    lowest = std::min(lowest, wait);
    highest = std::max(highest, wait);
  }
  // Full jitter uses the whole range, not a band near the ceiling.
  EXPECT_LT(lowest, ceiling / 10);
  EXPECT_GT(highest, ceiling * 9 / 10);
}

TEST(RetryPolicyTest, PartialJitterStaysInTheUpperBandOfTheCeiling) {
  RetryPolicy policy;
  policy.jitter = 0.25;
  SplitMix64Random random(42);
  for (std::uint32_t attempt = 1; attempt <= 10; ++attempt) {
    const Duration ceiling = policy.BackoffCeiling(attempt);
    for (int i = 0; i < 200; ++i) {
      const Duration wait = policy.BackoffFor(attempt, random);
      ASSERT_GE(wait, ceiling * 3 / 4) << "attempt " << attempt;
      ASSERT_LE(wait, ceiling) << "attempt " << attempt;
    }
  }
}

TEST(RetryPolicyTest, JitteredBackoffNeverExceedsMaxBackoff) {
  RetryPolicy policy;
  policy.max_backoff = seconds(1);
  SplitMix64Random random(3);
  for (std::uint32_t attempt = 1; attempt <= 40; ++attempt) {
    ASSERT_LE(policy.BackoffFor(attempt, random), seconds(1));
  }
}

TEST(RetryPolicyTest, SameSeedGivesTheSameSchedule) {
  const RetryPolicy policy;
  SplitMix64Random a(1234);
  SplitMix64Random b(1234);
  SplitMix64Random c(4321);
  std::vector<Duration> schedule_a;
  std::vector<Duration> schedule_b;
  std::vector<Duration> schedule_c;
  for (std::uint32_t attempt = 1; attempt <= 8; ++attempt) {
    schedule_a.push_back(policy.BackoffFor(attempt, a));
    schedule_b.push_back(policy.BackoffFor(attempt, b));
    schedule_c.push_back(policy.BackoffFor(attempt, c));
  }
  EXPECT_EQ(schedule_a, schedule_b);
  EXPECT_NE(schedule_a, schedule_c);
}

TEST(RetryRuleTest, OnlyFailuresAndTimeoutsAreRetryable) {
  EXPECT_TRUE(fusebox::IsRetryable(ReasonCode::kUpstreamError));
  EXPECT_TRUE(fusebox::IsRetryable(ReasonCode::kUpstreamSlow));
  EXPECT_FALSE(fusebox::IsRetryable(ReasonCode::kCircuitOpen));
  EXPECT_FALSE(fusebox::IsRetryable(ReasonCode::kCircuitHalfOpen));
  EXPECT_FALSE(fusebox::IsRetryable(ReasonCode::kOverloaded));
  EXPECT_FALSE(fusebox::IsRetryable(ReasonCode::kThrottled));
  EXPECT_FALSE(fusebox::IsRetryable(ReasonCode::kCancelled));
}

TEST(RetryRuleTest, OnlyFailureAndTimeoutOutcomesAreRetryable) {
  EXPECT_TRUE(fusebox::IsRetryable(Outcome::kFailure));
  EXPECT_TRUE(fusebox::IsRetryable(Outcome::kTimeout));
  EXPECT_FALSE(fusebox::IsRetryable(Outcome::kSuccess));
  EXPECT_FALSE(fusebox::IsRetryable(Outcome::kIgnored));
}

TEST(RetryRuleTest, NextBackoffWaitsAfterARetryableErrorBeforeTheLastAttempt) {
  const RetryPolicy policy = NoJitter(3);
  SplitMix64Random random(1);
  EXPECT_EQ(policy.NextBackoff(1, Error{ReasonCode::kUpstreamError}, random), milliseconds(100));
  EXPECT_EQ(policy.NextBackoff(2, Error{ReasonCode::kUpstreamSlow}, random), milliseconds(200));
}

TEST(RetryRuleTest, NextBackoffEndsAfterTheLastAttempt) {
  const RetryPolicy policy = NoJitter(3);
  SplitMix64Random random(1);
  EXPECT_EQ(policy.NextBackoff(3, Error{ReasonCode::kUpstreamError}, random), std::nullopt);
  EXPECT_EQ(policy.NextBackoff(4, Error{ReasonCode::kUpstreamError}, random), std::nullopt);
}

TEST(RetryRuleTest, NextBackoffEndsOnFinalErrorsWithoutDrawing) {
  const RetryPolicy policy;  // jitter 1: a wait would draw
  CountingRandom random(1);
  for (ReasonCode code :
       {ReasonCode::kCircuitOpen, ReasonCode::kCircuitHalfOpen, ReasonCode::kOverloaded,
        ReasonCode::kThrottled, ReasonCode::kCancelled}) {
    EXPECT_EQ(policy.NextBackoff(1, Error{code}, random), std::nullopt) << fusebox::ToString(code);
  }
  EXPECT_EQ(random.draws, 0);
}

TEST(RetryRuleTest, ARecoveryRampRejectionIsFinal) {
  const RetryPolicy policy;
  CountingRandom random(1);
  EXPECT_FALSE(fusebox::IsRetryable(ReasonCode::kCircuitRecovering));
  EXPECT_EQ(policy.NextBackoff(1, Error{ReasonCode::kCircuitRecovering}, random), std::nullopt);
  EXPECT_EQ(random.draws, 0);
}

// ---- the synchronous retried call, in virtual time ----

class RetryCallTest : public ::testing::Test {
 protected:
  std::unique_ptr<CircuitBreaker> MakeBreaker(std::uint32_t failure_threshold,
                                              Duration cooldown = seconds(10)) {
    fusebox::CircuitBreakerConfig config;
    config.failure_threshold = failure_threshold;
    config.cooldown = cooldown;
    config.call_timeout = seconds(7);
    auto created =
        CircuitBreaker::Create("upstream", config, {.clock = &clock_, .random = &breaker_random_});
    EXPECT_TRUE(created.has_value());
    return std::move(created).value();
  }

  std::unique_ptr<Retry> MakeRetry(const RetryPolicy& policy) {
    auto created = Retry::Create(policy, retry_random_, sleeper_);
    EXPECT_TRUE(created.has_value());
    return std::move(created).value();
  }

  // An op that fails (returns false) `failures` times, then succeeds; counts its invocations.
  auto FailingTimes(int failures) {
    return [this, failures](const CallContext&) { return ++op_calls_ > failures; };
  }

  ManualClock clock_;
  SplitMix64Random breaker_random_{1};
  SplitMix64Random retry_random_{2};
  FakeSleeper sleeper_{clock_};
  int op_calls_ = 0;
};

TEST_F(RetryCallTest, CreateRefusesAnInvalidPolicy) {
  RetryPolicy policy;
  policy.max_attempts = 0;
  auto created = Retry::Create(policy, retry_random_, sleeper_);
  ASSERT_FALSE(created.has_value());
  EXPECT_EQ(created.error().field, "max_attempts");
}

TEST_F(RetryCallTest, SuccessOnTheFirstAttemptDoesNotWait) {
  auto breaker = MakeBreaker(5);
  auto retry = MakeRetry(NoJitter(3));
  auto result = retry->Call(*breaker, FailingTimes(0));
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(op_calls_, 1);
  EXPECT_TRUE(sleeper_.sleeps.empty());
}

TEST_F(RetryCallTest, RetriesFailuresWithTheBackoffScheduleUntilSuccess) {
  auto breaker = MakeBreaker(5);
  auto retry = MakeRetry(NoJitter(3));
  auto result = retry->Call(*breaker, FailingTimes(2));
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(op_calls_, 3);
  EXPECT_EQ(sleeper_.sleeps, (std::vector<Duration>{milliseconds(100), milliseconds(200)}));
  EXPECT_EQ(clock_.Now().time_since_epoch(), milliseconds(300));
}

TEST_F(RetryCallTest, EveryAttemptTakesABreakerPermitAndIsRecorded) {
  auto breaker = MakeBreaker(5);
  auto retry = MakeRetry(NoJitter(3));
  (void)retry->Call(*breaker, FailingTimes(2));
  const fusebox::MetricsSnapshot m = breaker->Snapshot();
  EXPECT_EQ(m.calls, 3U);
  EXPECT_EQ(m.allowed, 3U);
  EXPECT_EQ(m.failed, 2U);
  EXPECT_EQ(m.succeeded, 1U);
}

TEST_F(RetryCallTest, ReturnsTheLastErrorWhenAttemptsRunOut) {
  auto breaker = MakeBreaker(100);
  auto retry = MakeRetry(NoJitter(4));
  auto result = retry->Call(*breaker, FailingTimes(1000));
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code, ReasonCode::kUpstreamError);
  EXPECT_EQ(op_calls_, 4);
  EXPECT_EQ(sleeper_.sleeps.size(), 3U);  // no wait after the last attempt
}

TEST_F(RetryCallTest, MaxAttemptsOneNeverRetries) {
  auto breaker = MakeBreaker(100);
  auto retry = MakeRetry(NoJitter(1));
  auto result = retry->Call(*breaker, FailingTimes(1000));
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(op_calls_, 1);
  EXPECT_TRUE(sleeper_.sleeps.empty());
}

TEST_F(RetryCallTest, TimeoutsAreRetried) {
  auto breaker = MakeBreaker(5);
  auto retry = MakeRetry(NoJitter(3));
  auto result = retry->Call(*breaker, [&](const CallContext& ctx) {
    if (++op_calls_ == 1) {
      clock_.Set(ctx.deadline);  // the first attempt uses its whole budget
    }
    return true;
  });
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(op_calls_, 2);
  EXPECT_EQ(breaker->Snapshot().timeouts, 1U);
}

TEST_F(RetryCallTest, LastTimeoutIsReturnedAsUpstreamSlow) {
  auto breaker = MakeBreaker(100);
  auto retry = MakeRetry(NoJitter(2));
  auto result = retry->Call(*breaker, [&](const CallContext& ctx) {
    ++op_calls_;
    clock_.Set(ctx.deadline);
    return true;
  });
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code, ReasonCode::kUpstreamSlow);
  EXPECT_EQ(op_calls_, 2);
}

TEST_F(RetryCallTest, BreakerRejectionStopsRetriesAtOnceWithoutWaiting) {
  auto breaker = MakeBreaker(2);  // trips on the second failure
  auto retry = MakeRetry(NoJitter(5));
  auto result = retry->Call(*breaker, FailingTimes(1000));
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code, ReasonCode::kCircuitOpen);
  EXPECT_EQ(result.error().retry_after, seconds(10));  // the breaker's own answer
  EXPECT_EQ(op_calls_, 2);
  // One wait between the two failures; none before the rejected third attempt.
  EXPECT_EQ(sleeper_.sleeps, (std::vector<Duration>{milliseconds(100)}));
  EXPECT_EQ(breaker->Snapshot().rejected_open, 1U);
}

TEST_F(RetryCallTest, OpenBreakerRejectsTheFirstAttemptWithoutRunningTheOp) {
  auto breaker = MakeBreaker(5);
  breaker->ForceOpen();
  auto retry = MakeRetry(NoJitter(3));
  auto result = retry->Call(*breaker, FailingTimes(0));
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code, ReasonCode::kCircuitOpen);
  EXPECT_EQ(op_calls_, 0);
  EXPECT_TRUE(sleeper_.sleeps.empty());
  EXPECT_EQ(retry->Snapshot().attempts, 1U);
}

TEST_F(RetryCallTest, HalfOpenRejectionStopsRetriesAtOnce) {
  auto breaker = MakeBreaker(1, seconds(1));
  (void)breaker->Call([](const CallContext&) { return false; });  // trips
  clock_.Advance(seconds(1));
  auto probe = breaker->TryAcquire();  // takes the only probe slot and holds it
  ASSERT_TRUE(probe.has_value());
  ASSERT_TRUE(probe->is_probe());

  auto retry = MakeRetry(NoJitter(3));
  auto result = retry->Call(*breaker, FailingTimes(0));
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code, ReasonCode::kCircuitHalfOpen);
  EXPECT_EQ(op_calls_, 0);
  EXPECT_TRUE(sleeper_.sleeps.empty());
}

TEST_F(RetryCallTest, BackoffLongerThanTheCooldownWaitsAndTheRetryProbes) {
  auto breaker = MakeBreaker(1, seconds(1));  // opens on the first failure, 1 s cooldown
  RetryPolicy policy = NoJitter(2);
  policy.initial_backoff = seconds(5);
  auto retry = MakeRetry(policy);
  auto result = retry->Call(*breaker, FailingTimes(1));
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(op_calls_, 2);
  EXPECT_EQ(sleeper_.sleeps, (std::vector<Duration>{seconds(5)}));
  EXPECT_EQ(breaker->state(), fusebox::State::kClosed);  // the retry was the good probe
  EXPECT_EQ(breaker->Snapshot().probes, 1U);
}

TEST_F(RetryCallTest, CancellationIsNotRetried) {
  auto breaker = MakeBreaker(5);
  auto retry = MakeRetry(NoJitter(3));
  std::stop_source stop;
  CallOptions options;
  options.stop_token = stop.get_token();
  auto result = retry->Call(
      *breaker,
      [&](const CallContext&) {
        ++op_calls_;
        stop.request_stop();  // the caller gives up while the attempt runs
        return false;
      },
      options);
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code, ReasonCode::kCancelled);
  EXPECT_EQ(op_calls_, 1);
  EXPECT_TRUE(sleeper_.sleeps.empty());
  EXPECT_EQ(breaker->Snapshot().ignored, 1U);
}

TEST_F(RetryCallTest, IgnoredOutcomeIsNotRetried) {
  auto breaker = MakeBreaker(5);
  auto retry = MakeRetry(NoJitter(3));
  auto result = retry->Call(
      *breaker,
      [&](const CallContext&) {
        ++op_calls_;
        return 0;
      },
      [](const int&) { return Outcome::kIgnored; });
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code, ReasonCode::kCancelled);
  EXPECT_EQ(op_calls_, 1);
}

TEST_F(RetryCallTest, StopDuringABackoffEndsTheRetries) {
  auto breaker = MakeBreaker(5);
  auto retry = MakeRetry(NoJitter(3));
  std::stop_source stop;
  sleeper_.on_sleep = [&] { stop.request_stop(); };
  CallOptions options;
  options.stop_token = stop.get_token();
  auto result = retry->Call(*breaker, FailingTimes(1000), options);
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code, ReasonCode::kCancelled);
  EXPECT_EQ(op_calls_, 1);
  EXPECT_EQ(sleeper_.sleeps.size(), 1U);
  EXPECT_EQ(retry->Snapshot().cancelled, 1U);
}

TEST_F(RetryCallTest, ExceptionsPropagateAndAreNotRetried) {
  auto breaker = MakeBreaker(5);
  auto retry = MakeRetry(NoJitter(3));
  EXPECT_THROW((void)retry->Call(*breaker,
                                 [&](const CallContext&) -> bool {
                                   ++op_calls_;
                                   throw std::runtime_error("boom");
                                 }),
               std::runtime_error);
  EXPECT_EQ(op_calls_, 1);
  EXPECT_EQ(breaker->Snapshot().failed, 1U);
}

TEST_F(RetryCallTest, ClassifierDecidesWhatIsAFailure) {
  auto breaker = MakeBreaker(5);
  auto retry = MakeRetry(NoJitter(3));
  auto result = retry->Call(
      *breaker, [&](const CallContext&) { return ++op_calls_ == 1 ? 503 : 200; },
      [](const int& status) { return status < 500 ? Outcome::kSuccess : Outcome::kFailure; });
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(*result, 200);
  EXPECT_EQ(op_calls_, 2);
}

TEST_F(RetryCallTest, JitteredWaitsFollowTheSeededSchedule) {
  auto breaker = MakeBreaker(100);
  const RetryPolicy policy;  // full jitter
  auto retry = MakeRetry(policy);
  (void)retry->Call(*breaker, FailingTimes(1000));

  SplitMix64Random replay(2);  // the seed of retry_random_
  std::vector<Duration> expected;
  for (std::uint32_t attempt = 1; attempt < policy.max_attempts; ++attempt) {
    expected.push_back(policy.BackoffFor(attempt, replay));
  }
  EXPECT_EQ(sleeper_.sleeps, expected);
}

TEST_F(RetryCallTest, MetricsCountCallsAttemptsAndEndings) {
  auto breaker = MakeBreaker(100);
  auto retry = MakeRetry(NoJitter(3));
  (void)retry->Call(*breaker, FailingTimes(1));  // success after one retry
  op_calls_ = 0;
  (void)retry->Call(*breaker, FailingTimes(1000));  // exhausted after three attempts
  breaker->ForceOpen();
  (void)retry->Call(*breaker, FailingTimes(0));  // rejected

  const fusebox::RetryMetrics m = retry->Snapshot();
  EXPECT_EQ(m.calls, 3U);
  EXPECT_EQ(m.attempts, 6U);
  EXPECT_EQ(m.retries, 3U);
  EXPECT_EQ(m.succeeded, 1U);
  EXPECT_EQ(m.exhausted, 1U);
  EXPECT_EQ(m.rejected, 1U);
  EXPECT_EQ(m.cancelled, 0U);
}

}  // namespace

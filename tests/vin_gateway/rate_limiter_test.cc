#include "service/rate_limiter.h"

#include <chrono>

#include <gtest/gtest.h>

#include "fusebox/testing/manual_clock.h"

namespace {

using namespace std::chrono_literals;

TEST(RateLimiterTest, BurstThenOneTokenPerInterval) {
  fusebox::testing::ManualClock clock;
  fusebox::gateway::RateLimiter limiter(2, 3, clock);
  EXPECT_FALSE(limiter.TryTake("a"));
  EXPECT_FALSE(limiter.TryTake("a"));
  EXPECT_FALSE(limiter.TryTake("a"));
  const auto wait = limiter.TryTake("a");
  ASSERT_TRUE(wait.has_value());
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(*wait), 500ms);
  clock.Advance(500ms);
  EXPECT_FALSE(limiter.TryTake("a"));
  EXPECT_EQ(limiter.rejected(), 1U);
}

TEST(RateLimiterTest, ClientsHaveTheirOwnBuckets) {
  fusebox::testing::ManualClock clock;
  fusebox::gateway::RateLimiter limiter(1, 1, clock);
  EXPECT_FALSE(limiter.TryTake("a"));
  EXPECT_TRUE(limiter.TryTake("a"));
  EXPECT_FALSE(limiter.TryTake("b"));
}

// A batch of 50 against a bucket of 2 used to take the 2 and decode all 50: every VIN sent upstream
// takes its own token, however large the batch.
TEST(RateLimiterTest, BatchLargerThanTheBucketGetsOnlyTheTokensThere) {
  fusebox::testing::ManualClock clock;
  fusebox::gateway::RateLimiter limiter(1, 2, clock);
  const fusebox::gateway::RateLimiter::Grant first = limiter.TakeUpTo("a", 50);
  EXPECT_EQ(first.taken, 2U);
  // The rest would need a full bucket (2 tokens): 2 s at 1 token/s.
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(first.retry_after), 2000ms);
  const fusebox::gateway::RateLimiter::Grant empty = limiter.TakeUpTo("a", 50);
  EXPECT_EQ(empty.taken, 0U);
  EXPECT_TRUE(limiter.TryTake("a").has_value());
  clock.Advance(1500ms);  // 1.5 tokens: one whole one
  EXPECT_EQ(limiter.TakeUpTo("a", 50).taken, 1U);
  clock.Advance(500ms);  // the half left over and half a second: one more
  EXPECT_EQ(limiter.TakeUpTo("a", 50).taken, 1U);
  EXPECT_EQ(limiter.rejected(), 5U);
}

TEST(RateLimiterTest, TakeUpToTakesAllWhenTheBucketHoldsThem) {
  fusebox::testing::ManualClock clock;
  fusebox::gateway::RateLimiter limiter(1, 5, clock);
  const fusebox::gateway::RateLimiter::Grant all = limiter.TakeUpTo("a", 4);
  EXPECT_EQ(all.taken, 4U);
  EXPECT_EQ(all.retry_after, fusebox::Duration::zero());
  const fusebox::gateway::RateLimiter::Grant part = limiter.TakeUpTo("a", 3);
  EXPECT_EQ(part.taken, 1U);
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(part.retry_after), 2000ms);
  EXPECT_EQ(limiter.TakeUpTo("a", 0).taken, 0U);
  EXPECT_EQ(limiter.rejected(), 1U);
}

TEST(RateLimiterTest, ZeroRateDisablesTheLimit) {
  fusebox::testing::ManualClock clock;
  fusebox::gateway::RateLimiter limiter(0, 1, clock);
  EXPECT_FALSE(limiter.enabled());
  for (int i = 0; i < 100; ++i) {
    EXPECT_FALSE(limiter.TryTake("a"));
  }
  EXPECT_EQ(limiter.TakeUpTo("a", 50).taken, 50U);
}

TEST(RateLimiterTest, TracksAtMostMaxClients) {
  fusebox::testing::ManualClock clock;
  fusebox::gateway::RateLimiter limiter(1, 1, clock, 4);
  for (int i = 0; i < 20; ++i) {
    (void)limiter.TryTake("client-" + std::to_string(i));
  }
  EXPECT_LE(limiter.tracked_clients(), 4U);
}

}  // namespace

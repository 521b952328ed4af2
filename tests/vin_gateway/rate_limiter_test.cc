#include "service/rate_limiter.h"

#include <chrono>

#include <gtest/gtest.h>

#include "fusebox/testing/manual_clock.h"

namespace {

using namespace std::chrono_literals;

TEST(RateLimiterTest, BurstThenOneTokenPerInterval) {
  fusebox::testing::ManualClock clock;
  vin_gateway::RateLimiter limiter(2, 3, clock);
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
  vin_gateway::RateLimiter limiter(1, 1, clock);
  EXPECT_FALSE(limiter.TryTake("a"));
  EXPECT_TRUE(limiter.TryTake("a"));
  EXPECT_FALSE(limiter.TryTake("b"));
}

TEST(RateLimiterTest, TakesAllOrNothing) {
  fusebox::testing::ManualClock clock;
  vin_gateway::RateLimiter limiter(1, 5, clock);
  EXPECT_FALSE(limiter.TryTake("a", 4));
  EXPECT_TRUE(limiter.TryTake("a", 2));
  EXPECT_FALSE(limiter.TryTake("a", 1));
}

TEST(RateLimiterTest, ZeroRateDisablesTheLimit) {
  fusebox::testing::ManualClock clock;
  vin_gateway::RateLimiter limiter(0, 1, clock);
  EXPECT_FALSE(limiter.enabled());
  for (int i = 0; i < 100; ++i) {
    EXPECT_FALSE(limiter.TryTake("a"));
  }
}

TEST(RateLimiterTest, TracksAtMostMaxClients) {
  fusebox::testing::ManualClock clock;
  vin_gateway::RateLimiter limiter(1, 1, clock, 4);
  for (int i = 0; i < 20; ++i) {
    (void)limiter.TryTake("client-" + std::to_string(i));
  }
  EXPECT_LE(limiter.tracked_clients(), 4U);
}

}  // namespace

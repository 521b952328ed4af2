#include "fusebox/adaptive_limit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "fusebox/status.h"
#include "fusebox/testing/manual_clock.h"

namespace {

using fusebox::AdaptiveLimit;
using fusebox::AdaptiveLimitConfig;
using fusebox::AdaptivePermit;
using fusebox::Duration;
using fusebox::LimitChange;
using fusebox::Outcome;
using fusebox::ReasonCode;
using fusebox::TimePoint;
using std::chrono::milliseconds;
using std::chrono::seconds;

// A limit on a manual clock, with windows of one round (100 ms) and one call each. A window opens
// at its first record and closes at the first record that finds it due, so a round's calls form
// one window, which the next round's first record (or Settle) closes.
class AdaptiveLimitTest : public ::testing::Test {
 protected:
  std::unique_ptr<AdaptiveLimit> Make(AdaptiveLimitConfig config) {
    auto created = AdaptiveLimit::Create(
        "test", config,
        {.clock = &clock_, .on_change = [this](const LimitChange& c) { changes_.push_back(c); }});
    EXPECT_TRUE(created.has_value());
    return std::move(created).value();
  }
  static AdaptiveLimitConfig Config() {
    return {.min_limit = 2,
            .max_limit = 500,
            .initial_limit = 16,
            .sample_window = milliseconds(100),
            .min_window_samples = 1};
  }

  // One round: every caller that the limit admits (at most `callers`) calls at once; the calls
  // take `latency(n)` for n in flight, then all record `outcome`. Returns how many ran.
  template <typename Latency>
  std::uint32_t Round(AdaptiveLimit& limit, std::uint32_t callers, Latency latency,
                      Outcome outcome = Outcome::kSuccess) {
    std::vector<AdaptivePermit> permits;
    for (std::uint32_t i = 0; i < callers; ++i) {
      auto permit = limit.TryAcquire();
      if (!permit) {
        break;
      }
      permits.push_back(std::move(permit).value());
    }
    const auto n = static_cast<std::uint32_t>(permits.size());
    clock_.Advance(latency(n));
    for (auto& permit : permits) {
      permit.Record(outcome);
    }
    return n;
  }

  // Closes the window of the last round: one window's length later, one more call as long as
  // the round's (so the next window's mean is unchanged), whose record finds the window due.
  void Settle(AdaptiveLimit& limit, Duration latency) {
    clock_.Advance(limit.config().sample_window);
    auto permit = limit.TryAcquire();
    ASSERT_TRUE(permit.has_value());
    clock_.Advance(latency);
    permit->Record(Outcome::kSuccess);
  }

  fusebox::testing::ManualClock clock_{TimePoint(seconds(1000))};
  std::vector<LimitChange> changes_;
};

// A dependency that serves `capacity` calls at once in `base`; beyond, calls queue and the
// latency grows with the queue.
auto Queueing(std::uint32_t capacity, Duration base) {
  return [capacity, base](std::uint32_t n) { return n <= capacity ? base : base * n / capacity; };
}

TEST(AdaptiveLimitConfigTest, DefaultsAreValidAndEachRangeNamesItsField) {
  EXPECT_EQ(AdaptiveLimitConfig{}.Validate(), std::nullopt);
  const std::vector<std::pair<AdaptiveLimitConfig, std::string>> bad = {
      {{.min_limit = 0}, "min_limit"},
      {{.min_limit = 20, .max_limit = 10, .initial_limit = 10}, "max_limit"},
      {{.max_limit = 100'001}, "max_limit"},
      {{.initial_limit = 2000}, "initial_limit"},
      {{.sample_window = Duration(0)}, "sample_window"},
      {{.min_window_samples = 0}, "min_window_samples"},
      {{.tolerance = 0.9}, "tolerance"},
      {{.smoothing = 0.0}, "smoothing"},
      {{.backoff_ratio = 1.0}, "backoff_ratio"},
      {{.no_load_reset = milliseconds(10)}, "no_load_reset"},
  };
  for (const auto& [config, field] : bad) {
    auto error = config.Validate();
    ASSERT_TRUE(error.has_value()) << field;
    EXPECT_EQ(error->field, field);
    EXPECT_NE(error->message.find(field + " must be in "), std::string::npos) << error->message;
  }
  auto created = AdaptiveLimit::Create("x", {.tolerance = 20});
  ASSERT_FALSE(created.has_value());
  EXPECT_EQ(created.error().field, "tolerance");
}

TEST_F(AdaptiveLimitTest, AdmitsUpToTheLimitAndRefusesTypedBeyond) {
  auto limit = Make(Config());
  std::vector<AdaptivePermit> held;
  for (int i = 0; i < 16; ++i) {
    auto permit = limit->TryAcquire();
    ASSERT_TRUE(permit.has_value()) << i;
    held.push_back(std::move(permit).value());
  }
  auto refused = limit->TryAcquire();
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, ReasonCode::kOverloaded);
  EXPECT_EQ(refused.error().retry_after, AdaptiveLimit::kRetryAfter);
  EXPECT_EQ(limit->in_flight(), 16U);
  held.pop_back();  // destroyed without Record: the slot comes back, nothing is learnt
  EXPECT_EQ(limit->in_flight(), 15U);
  EXPECT_TRUE(limit->TryAcquire().has_value());
  const auto stats = limit->Stats();
  EXPECT_EQ(stats.admitted, 17U);
  EXPECT_EQ(stats.rejected, 1U);
  EXPECT_EQ(stats.windows, 0U);
}

TEST_F(AdaptiveLimitTest, GrowsWhileCallsComeBackAtTheNoLoadLatencyAndStopsAtTheMaximum) {
  auto config = Config();
  config.max_limit = 60;
  auto limit = Make(config);
  const auto fast = [](std::uint32_t) { return milliseconds(100); };
  std::uint32_t previous = limit->limit();
  for (int round = 0; round < 200; ++round) {
    Round(*limit, 1000, fast);
    Settle(*limit, milliseconds(100));
    EXPECT_GE(limit->limit(), previous) << "round " << round;
    EXPECT_LE(limit->limit(), 60U);
    previous = limit->limit();
  }
  EXPECT_EQ(limit->limit(), 60U);
  EXPECT_EQ(limit->Stats().no_load_latency, milliseconds(100));
  ASSERT_FALSE(changes_.empty());
  EXPECT_EQ(changes_.front().old_limit, 16U);
  EXPECT_GT(changes_.front().new_limit, 16U);
  EXPECT_FALSE(changes_.front().drop);
}

TEST_F(AdaptiveLimitTest, CallersUsingUnderHalfTheLimitMoveNothing) {
  auto limit = Make(Config());
  for (int round = 0; round < 50; ++round) {
    Round(*limit, 7, [](std::uint32_t) { return milliseconds(100); });
  }
  Settle(*limit, milliseconds(100));
  EXPECT_EQ(limit->limit(), 16U);
  EXPECT_EQ(limit->Stats().windows, 50U);
  EXPECT_TRUE(changes_.empty());
}

TEST_F(AdaptiveLimitTest, ComesDownWhenCallsQueueAtTheDependency) {
  auto config = Config();
  config.initial_limit = 200;
  auto limit = Make(config);
  Round(*limit, 1, [](std::uint32_t) { return milliseconds(100); });  // the no-load latency
  Settle(*limit, milliseconds(100));
  ASSERT_EQ(limit->limit(), 200U);  // one caller: under half the limit, no change
  std::uint32_t previous = limit->limit();
  for (int round = 0; round < 10; ++round) {
    Round(*limit, 1000, [](std::uint32_t) { return milliseconds(400); });
    Settle(*limit, milliseconds(400));
    EXPECT_LT(limit->limit(), previous) << "round " << round;
    previous = limit->limit();
  }
  EXPECT_EQ(limit->Stats().no_load_latency, milliseconds(100));
}

TEST_F(AdaptiveLimitTest, ADropCutsTheLimitByTheBackoffRatioDownToTheMinimum) {
  auto limit = Make(Config());
  Round(
      *limit, 1000, [](std::uint32_t) { return milliseconds(100); }, Outcome::kTimeout);
  Settle(*limit, milliseconds(100));
  EXPECT_EQ(limit->limit(), 14U);  // floor(16 * 0.9)
  ASSERT_EQ(changes_.size(), 1U);
  EXPECT_TRUE(changes_[0].drop);
  EXPECT_EQ(changes_[0].old_limit, 16U);
  EXPECT_EQ(changes_[0].new_limit, 14U);
  // A refusal for load is a drop too; a failure that came back is not.
  {
    auto permit = limit->TryAcquire();
    ASSERT_TRUE(permit.has_value());
    clock_.Advance(milliseconds(100));
    permit->RecordDrop();
  }
  Settle(*limit, milliseconds(100));
  EXPECT_EQ(limit->limit(), 12U);  // floor(14.4 * 0.9)
  for (int round = 0; round < 100; ++round) {
    Round(
        *limit, 1000, [](std::uint32_t) { return milliseconds(100); }, Outcome::kTimeout);
  }
  Settle(*limit, milliseconds(100));
  EXPECT_EQ(limit->limit(), 2U);
}

TEST_F(AdaptiveLimitTest, FailuresThatCameBackAreLatencySamplesNotDrops) {
  auto limit = Make(Config());
  for (int round = 0; round < 3; ++round) {
    Round(
        *limit, 1000, [](std::uint32_t) { return milliseconds(100); }, Outcome::kFailure);
  }
  Settle(*limit, milliseconds(100));
  EXPECT_GT(limit->limit(), 16U);
  EXPECT_TRUE(changes_.empty() || !changes_.back().drop);
  EXPECT_EQ(limit->Stats().no_load_latency, milliseconds(100));
}

TEST_F(AdaptiveLimitTest, AWindowClosesOnlyWhenOldEnoughAndFullEnough) {
  auto config = Config();
  config.min_window_samples = 3;
  config.sample_window = milliseconds(500);
  auto limit = Make(config);
  const auto fast = [](std::uint32_t) { return milliseconds(100); };
  for (int i = 0; i < 5; ++i) {  // records at 100..500 ms; the window opened at 100 ms
    Round(*limit, 16, fast);
  }
  EXPECT_EQ(limit->Stats().windows, 0U);
  Round(*limit, 16, fast);  // at 600 ms: due, closed by this round's first record
  EXPECT_EQ(limit->Stats().windows, 1U);
  // Old enough but with fewer than 3 calls, a window stays open.
  clock_.Advance(seconds(1));
  Round(*limit, 1, fast);  // closes the window of the last round; opens one
  Round(*limit, 1, fast);
  Settle(*limit, milliseconds(100));
  EXPECT_EQ(limit->Stats().windows, 2U);
}

TEST_F(AdaptiveLimitTest, TheNoLoadLatencyStartsAfreshAfterItsResetInterval) {
  auto config = Config();
  config.no_load_reset = seconds(10);
  auto limit = Make(config);
  Round(*limit, 1, [](std::uint32_t) { return milliseconds(50); });
  Settle(*limit, milliseconds(50));
  EXPECT_EQ(limit->Stats().no_load_latency, milliseconds(50));
  // The dependency is now slower for good: 80 ms. Until the reset, its old best stands.
  for (int round = 0; round < 100; ++round) {  // 8 s
    Round(*limit, 1, [](std::uint32_t) { return milliseconds(80); });
  }
  EXPECT_EQ(limit->Stats().no_load_latency, milliseconds(50));
  for (int round = 0; round < 30; ++round) {  // 2.4 s more: past the reset
    Round(*limit, 1, [](std::uint32_t) { return milliseconds(80); });
  }
  Settle(*limit, milliseconds(80));
  EXPECT_EQ(limit->Stats().no_load_latency, milliseconds(80));
}

// Under steady load every window has queued, so the smallest window mean would only be the no-load
// latency if it had been seen once. Every no_load_reset the limit is pinned to its minimum for one
// window, whose calls see the dependency unloaded; then it goes back where it was.
TEST_F(AdaptiveLimitTest, MeasuresTheNoLoadLatencyAfreshWithTheLimitPinned) {
  auto config = Config();
  config.no_load_reset = seconds(10);
  auto limit = Make(config);
  const auto dependency = Queueing(20, milliseconds(100));
  for (int round = 0; round < 60; ++round) {  // settles above 20, calls queued
    Round(*limit, 1000, dependency);
  }
  const std::uint32_t settled = limit->limit();
  ASSERT_GT(settled, 20U);
  std::vector<std::uint32_t> ran;
  for (int round = 0; round < 100 && ran.size() < 3; ++round) {
    const std::uint32_t n = Round(*limit, 1000, dependency);
    if (n == config.min_limit || !ran.empty()) {
      ran.push_back(n);
    }
  }
  ASSERT_EQ(ran.size(), 3U) << "no window was pinned";
  EXPECT_EQ(ran[0], 2U);   // the pinned window: the minimum in flight
  EXPECT_GT(ran[2], 20U);  // then back to where it was (the window after it closes it)
  EXPECT_EQ(limit->Stats().no_load_latency, milliseconds(100));  // the unloaded latency
  EXPECT_NEAR(limit->limit(), settled, settled / 5.0);
}

// The limit follows a dependency's capacity: it settles above the capacity (the queue the
// tolerance allows plus the headroom) and well below where latency would run away, then follows
// the capacity down and back up.
TEST_F(AdaptiveLimitTest, FollowsTheCapacityOfAQueueingDependency) {
  auto limit = Make(Config());
  const auto settle = [&](std::uint32_t capacity) {
    std::uint32_t low = 1'000'000;
    std::uint32_t high = 0;
    for (int round = 0; round < 400; ++round) {
      Round(*limit, 1000, Queueing(capacity, milliseconds(100)));
      if (round >= 300) {
        low = std::min(low, limit->limit());
        high = std::max(high, limit->limit());
      }
    }
    return std::pair{low, high};
  };
  for (const std::uint32_t capacity : {40U, 20U, 80U}) {
    const auto [low, high] = settle(capacity);
    EXPECT_GE(low, capacity) << "capacity " << capacity;
    EXPECT_LE(high, capacity * 2) << "capacity " << capacity;
    EXPECT_LE(high - low, capacity / 4 + 2) << "capacity " << capacity;  // settled, not swinging
  }
}

TEST(AdaptiveLimitConcurrencyTest, ManyThreadsNeverPassTheLimitAndGiveEverySlotBack) {
  fusebox::testing::ManualClock clock{TimePoint(seconds(1))};
  auto limit = AdaptiveLimit::Create("threads",
                                     {.min_limit = 4,
                                      .max_limit = 8,
                                      .initial_limit = 8,
                                      .sample_window = milliseconds(1),
                                      .min_window_samples = 1},
                                     {.clock = &clock, .on_change = {}})
                   .value();
  std::atomic<std::uint32_t> peak{0};
  std::atomic<std::uint64_t> tries{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5000; ++i) {
        tries.fetch_add(1, std::memory_order_relaxed);
        auto permit = limit->TryAcquire();
        if (!permit) {
          continue;
        }
        std::uint32_t now = limit->in_flight();
        std::uint32_t seen = peak.load();
        while (now > seen && !peak.compare_exchange_weak(seen, now)) {
        }
        if (t == 0) {
          clock.Advance(milliseconds(1));
        }
        permit->Record((i % 7 == 0) ? Outcome::kTimeout : Outcome::kSuccess);
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  const auto stats = limit->Stats();
  EXPECT_EQ(stats.in_flight, 0U);
  EXPECT_EQ(stats.admitted + stats.rejected, tries.load());
  EXPECT_LE(peak.load(), 8U);
  EXPECT_GE(stats.limit, 4U);
  EXPECT_LE(stats.limit, 8U);
}

}  // namespace

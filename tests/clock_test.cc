// CachedClock and ClockTicker (fusebox/clock.h), and the breaker on a CachedClock: its readings
// are published in increasing order only, and a slow-call threshold measured with it is exact to
// within the refresh period (docs/breaker-rules.md, "Clock and ordering").
#include "fusebox/clock.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "fusebox/circuit_breaker.h"
#include "fusebox/testing/manual_clock.h"

namespace fusebox {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::seconds;

// A source that may go backwards (no real clock does; a racing refresher's late reading looks
// like it): the CachedClock must not follow it.
class SettableClock final : public Clock {
 public:
  TimePoint Now() const noexcept override { return TimePoint(Duration(ns.load())); }
  std::atomic<Duration::rep> ns{0};
};

TEST(CachedClockTest, ReturnsTheLastPublishedReadingUntilRefreshed) {
  testing::ManualClock truth(TimePoint(seconds(5)));
  CachedClock clock(&truth);
  EXPECT_EQ(clock.Now(), TimePoint(seconds(5)));
  truth.Advance(milliseconds(3));
  EXPECT_EQ(clock.Now(), TimePoint(seconds(5)));  // not refreshed yet
  EXPECT_EQ(clock.Refresh(), TimePoint(seconds(5) + milliseconds(3)));
  EXPECT_EQ(clock.Now(), TimePoint(seconds(5) + milliseconds(3)));
}

TEST(CachedClockTest, NeverPublishesAnEarlierReading) {
  SettableClock source;
  source.ns = 1'000;
  CachedClock clock(&source);
  source.ns = 400;  // an earlier reading
  EXPECT_EQ(clock.Refresh(), TimePoint(Duration(1'000)));
  EXPECT_EQ(clock.Now(), TimePoint(Duration(1'000)));
  source.ns = 2'000;
  EXPECT_EQ(clock.Refresh(), TimePoint(Duration(2'000)));
}

TEST(CachedClockTest, DefaultSourceIsTheMonotonicClock) {
  PreciseMonotonicClock precise;
  const TimePoint before = precise.Now();
  CachedClock clock;
  EXPECT_GE(clock.Now(), before);
  const TimePoint refreshed = clock.Refresh();
  EXPECT_LE(refreshed, precise.Now());
  EXPECT_GE(refreshed, before);
}

TEST(CachedClockTest, AManualClockIsACachedClockThatRefreshLeavesAlone) {
  testing::ManualClock manual(TimePoint(seconds(1)));
  CachedClock& cached = manual;
  EXPECT_EQ(cached.Refresh(), TimePoint(seconds(1)));
  manual.Advance(seconds(1));
  EXPECT_EQ(cached.Now(), TimePoint(seconds(2)));
}

// Two refreshers race (as a ticker and an event loop would) while readers check that no thread
// ever sees time go back.
TEST(CachedClockTest, NowNeverGoesBackwardsOnAnyThread) {
  CachedClock clock;
  std::atomic<bool> stop{false};
  std::atomic<int> backwards{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        clock.Refresh();
      }
    });
  }
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&] {
      TimePoint last = clock.Now();
      for (int n = 0; n < 200'000; ++n) {
        const TimePoint now = clock.Now();
        if (now < last) {
          backwards.fetch_add(1);
        }
        last = now;
      }
    });
  }
  threads[2].join();
  threads[3].join();
  stop = true;
  threads[0].join();
  threads[1].join();
  EXPECT_EQ(backwards.load(), 0);
}

TEST(ClockTickerTest, RefreshesTheClockUntilDestroyed) {
  CachedClock clock;
  {
    ClockTicker ticker(clock, microseconds(200));
    EXPECT_EQ(ticker.period(), microseconds(200));
    const TimePoint start = clock.Now();
    // Real time on a shared machine: wait for a refresh, with a generous bound.
    const auto give_up = std::chrono::steady_clock::now() + seconds(5);
    while (clock.Now() == start && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(microseconds(100));
    }
    EXPECT_GT(clock.Now(), start);
  }
  const TimePoint stopped = clock.Now();
  std::this_thread::sleep_for(milliseconds(5));
  EXPECT_EQ(clock.Now(), stopped);  // the ticker's thread is gone
}

TEST(ClockTickerTest, RaisesAPeriodBelowTheMinimum) {
  CachedClock clock;
  ClockTicker ticker(clock, Duration(1));
  EXPECT_EQ(ticker.period(), microseconds(100));
}

// A ticker in virtual time: `truth` is the real time; the breaker's CachedClock is refreshed each
// time truth crosses a multiple of the period, as a ClockTicker would.
class TickedClock {
 public:
  explicit TickedClock(Duration period) : period_(period), cached_(&truth_) {}

  CachedClock& clock() { return cached_; }
  TimePoint truth() const { return truth_.Now(); }

  // Moves the truth forward in steps finer than the period, refreshing on every tick crossed.
  void Advance(Duration d) {
    const TimePoint end = truth_.Now() + d;
    while (truth_.Now() < end) {
      const TimePoint next_tick =
          TimePoint((truth_.Now().time_since_epoch() / period_ + 1) * period_);
      truth_.Set(std::min(end, next_tick));
      if (truth_.Now() == next_tick) {
        cached_.Refresh();
      }
    }
  }

 private:
  const Duration period_;
  testing::ManualClock truth_;
  CachedClock cached_;
};

// A call that really took d is measured as (end tick - start tick), within one period of d: so
// with the threshold T and the period R, every call of d >= T + R is slow and every call of
// d <= T - R is not, whatever the phase of its start within a tick.
TEST(CachedClockBreakerTest, SlowCallClassificationIsExactWithinTheRefreshPeriod) {
  constexpr Duration kPeriod = milliseconds(1);
  constexpr Duration kThreshold = milliseconds(300);
  TickedClock ticked(kPeriod);
  auto breaker = CircuitBreaker::Create(
                     "slow", {.failure_threshold = 1'000'000, .slow_call_duration = kThreshold},
                     {.clock = &ticked.clock()})
                     .value();
  std::uint64_t slow_before = 0;
  int checked = 0;
  for (Duration phase = Duration::zero(); phase < kPeriod; phase += microseconds(125)) {
    for (Duration d : {kThreshold - kPeriod - microseconds(1), kThreshold - kPeriod,
                       kThreshold + kPeriod, kThreshold + kPeriod + microseconds(1),
                       kThreshold - milliseconds(50), kThreshold + milliseconds(50)}) {
      // Start the call at `phase` past a tick.
      const Duration into_tick = ticked.truth().time_since_epoch() % kPeriod;
      ticked.Advance(kPeriod - into_tick + phase);
      auto permit = breaker->TryAcquire();
      ASSERT_TRUE(permit.has_value());
      ticked.Advance(d);
      permit->Record(Outcome::kSuccess);
      const std::uint64_t slow_now = breaker->Snapshot().slow;
      const bool counted_slow = slow_now != slow_before;
      slow_before = slow_now;
      EXPECT_EQ(counted_slow, d >= kThreshold) << "d=" << d.count() << " phase=" << phase.count();
      ++checked;
    }
  }
  EXPECT_EQ(checked, 48);
  EXPECT_EQ(breaker->state(), State::kClosed);
}

// The breaker on a CachedClock kept by a ClockTicker, in real time: it trips, rejects during the
// cooldown, and admits a probe once the ticker has carried the clock past it.
TEST(CachedClockBreakerTest, AdmitsAProbeAfterTheCooldownOnATickingClock) {
  CachedClock clock;
  ClockTicker ticker(clock);
  auto breaker =
      CircuitBreaker::Create("ticking", {.failure_threshold = 1, .cooldown = milliseconds(20)},
                             {.clock = &clock})
          .value();
  breaker->TryAcquire()->Record(Outcome::kFailure);
  auto rejected = breaker->TryAcquire();
  ASSERT_FALSE(rejected.has_value());
  EXPECT_EQ(rejected.error().code, ReasonCode::kCircuitOpen);
  const auto give_up = std::chrono::steady_clock::now() + seconds(5);
  auto probe = breaker->TryAcquire();
  while (!probe.has_value() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(milliseconds(2));
    probe = breaker->TryAcquire();
  }
  ASSERT_TRUE(probe.has_value());
  EXPECT_TRUE(probe->is_probe());
  probe->Record(Outcome::kSuccess);
  EXPECT_EQ(breaker->state(), State::kClosed);
}

}  // namespace
}  // namespace fusebox

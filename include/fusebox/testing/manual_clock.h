// fusebox/testing/manual_clock.h
//
// A Clock that only moves when told to: tests advance it instead of sleeping, and the simulator
// sets it to each event's time. Starts at `TimePoint{}` (zero) unless given a start.
//
// Thread safety: all members may be called concurrently (the time is one atomic). Moving the
// clock backwards is refused (it would break the Clock contract): `Set` to an earlier time is a
// no-op that returns false.
//
// Example:
//   fusebox::testing::ManualClock clock;
//   auto breaker = fusebox::CircuitBreaker::Create("shipping", config, {.clock = &clock});
//   clock.Advance(std::chrono::seconds(10));   // cooldown passes, no sleep
#pragma once

#include <atomic>

#include "fusebox/clock.h"

namespace fusebox::testing {

class ManualClock final : public Clock {
 public:
  ManualClock() = default;
  explicit ManualClock(TimePoint start) : now_ns_(start.time_since_epoch().count()) {}

  TimePoint Now() const noexcept override {
    return TimePoint(Duration(now_ns_.load(std::memory_order_acquire)));
  }

  // Moves time forward by `d` (negative durations are ignored).
  void Advance(Duration d) noexcept {
    if (d.count() > 0) {
      now_ns_.fetch_add(d.count(), std::memory_order_acq_rel);
    }
  }

  // Sets the time to `t` if it is not earlier than now. Returns whether the time was set.
  bool Set(TimePoint t) noexcept {
    auto target = t.time_since_epoch().count();
    auto cur = now_ns_.load(std::memory_order_acquire);
    while (cur <= target) {
      if (now_ns_.compare_exchange_weak(cur, target, std::memory_order_acq_rel)) {
        return true;
      }
    }
    return false;
  }

 private:
  std::atomic<Duration::rep> now_ns_{0};
};

}  // namespace fusebox::testing

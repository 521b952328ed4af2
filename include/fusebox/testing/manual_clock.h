// fusebox/testing/manual_clock.h
//
// A Clock that only moves when told to: tests advance it instead of sleeping, and the simulator
// sets it to each event's time. Starts at `TimePoint{}` (zero) unless given a start.
//
// It is a CachedClock whose reading is published by hand (Refresh() publishes nothing), so a
// breaker on it takes the same clock path as on a CachedClock refreshed by a ClockTicker.
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

#include "fusebox/clock.h"

namespace fusebox::testing {

class ManualClock final : public CachedClock {
 public:
  ManualClock() noexcept : ManualClock(TimePoint{}) {}
  explicit ManualClock(TimePoint start) noexcept : CachedClock(NoSource{}, start) {}

  // Moves time forward by `d` (negative durations are ignored).
  void Advance(Duration d) noexcept { PublishAdvance(d); }

  // Sets the time to `t` if it is not earlier than now. Returns whether the time was set.
  bool Set(TimePoint t) noexcept { return PublishAtLeast(t); }
};

}  // namespace fusebox::testing

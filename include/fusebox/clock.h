// fusebox/clock.h
//
// The only source of time in fusebox. Every component takes a `Clock&` instead of calling
// `std::chrono::steady_clock::now()`, so that tests and the simulator can drive time by hand
// (see fusebox/testing/manual_clock.h) and production can choose the clock's cost.
//
// Time is a monotonic `TimePoint` in nanoseconds since the clock's own epoch. Only differences and
// whole seconds since the epoch (for time-window buckets) carry meaning.
//
// Two production clocks are provided:
//   - `CoarseMonotonicClock` (the default): CLOCK_MONOTONIC_COARSE, about 3 ns a read, with the
//     kernel tick as resolution (1-4 ms). Cooldowns, budgets and slow thresholds are whole seconds
//     or hundreds of milliseconds, so a few milliseconds of resolution change no decision that
//     matters, and the breaker's hot path pays for two reads per call.
//   - `PreciseMonotonicClock`: CLOCK_MONOTONIC, about 20 ns a read, nanosecond resolution.
//
// Thread safety: `Now()` may be called from any thread at any time.
//
// Example:
//   fusebox::CoarseMonotonicClock clock;
//   fusebox::TimePoint start = clock.Now();
//   ...
//   fusebox::Duration elapsed = clock.Now() - start;
#pragma once

#include <time.h>  // NOLINT(modernize-deprecated-headers): clock_gettime is POSIX

#include <chrono>
#include <cstdint>

namespace fusebox {

using Duration = std::chrono::nanoseconds;

// A point on a Clock's monotonic timeline. Comparable and subtractable like any time_point.
struct ClockTag {};
using TimePoint = std::chrono::time_point<ClockTag, Duration>;

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic: never returns a value smaller than an earlier call returned (on any thread).
  virtual TimePoint Now() const noexcept = 0;
};

class CoarseMonotonicClock final : public Clock {
 public:
  TimePoint Now() const noexcept override { return Read(); }
  // The same reading without a virtual call; the breaker uses it when this is its clock.
  static TimePoint Read() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return TimePoint(Duration(static_cast<Duration::rep>(ts.tv_sec) * 1'000'000'000 +
                              static_cast<Duration::rep>(ts.tv_nsec)));
  }
};

class PreciseMonotonicClock final : public Clock {
 public:
  TimePoint Now() const noexcept override;
};

// The process-wide default clock (a CoarseMonotonicClock). Lives forever.
Clock& DefaultClock() noexcept;

// Whole seconds since the clock's epoch (rounded down); the bucket index of time windows.
constexpr std::int64_t WholeSecondsSinceEpoch(TimePoint t) noexcept {
  return std::chrono::floor<std::chrono::seconds>(t.time_since_epoch()).count();
}

// Seconds as a double, for reports and Retry-After headers.
constexpr double ToSeconds(Duration d) noexcept { return std::chrono::duration<double>(d).count(); }

}  // namespace fusebox

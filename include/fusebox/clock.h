// fusebox/clock.h: the only source of time in fusebox.
//
// Every component takes a `Clock&` instead of calling steady_clock::now(), so tests and the
// simulator drive time by hand (fusebox/testing/manual_clock.h). A TimePoint is monotonic, in
// nanoseconds since the clock's own epoch: only differences (and whole seconds, for time-window
// buckets) carry meaning. The production clocks: CoarseMonotonicClock (the default, the kernel
// tick as resolution, a few ns a read), PreciseMonotonicClock (nanoseconds, 20 ns or more a read)
// and CachedClock (one atomic load a read, of what Refresh() last published: a ClockTicker thread
// or the program's own event loop must refresh it). When a CachedClock may be a breaker's clock:
// docs/breaker-rules.md ("The cached clock"); why it is opt-in: docs/architecture.md ("Time").
//
// Thread safety: Now() may be called from any thread and never goes backwards on any thread;
// Refresh() may be called from any number of threads.
//
// Example:
//   fusebox::CachedClock clock;               // refreshed from CLOCK_MONOTONIC
//   fusebox::ClockTicker ticker(clock);       // every 1 ms, until ticker is destroyed
//   auto breaker = fusebox::CircuitBreaker::Create("shipping", config, {.clock = &clock});
//   // (destroy the breakers before the ticker and the clock)
#pragma once

#include <time.h>  // NOLINT(modernize-deprecated-headers): clock_gettime is POSIX

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

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

// A clock read with one atomic load of the last published reading (see the top of this file).
// Same epoch as the monotonic clocks above when refreshed from its default source.
//
// testing::ManualClock is a CachedClock published by hand, so tests and the simulator run the
// breaker through this clock's path. Aligned to a cache line of its own: the refresher writes it
// every period, and nothing else should share that line.
class alignas(64) CachedClock : public Clock {
 public:
  // Refreshed from `source` (which must outlive this clock), or from CLOCK_MONOTONIC when null;
  // starts at the source's current reading. A pointer, not a reference: a reference to another
  // CachedClock would select the (deleted) copy constructor.
  explicit CachedClock(const Clock* source = nullptr) noexcept;
  CachedClock(const CachedClock&) = delete;
  CachedClock& operator=(const CachedClock&) = delete;

  TimePoint Now() const noexcept final { return Read(); }
  // The same reading without a virtual call; the breaker uses it when this is its clock.
  TimePoint Read() const noexcept {
    return TimePoint(Duration(now_ns_.load(std::memory_order_acquire)));
  }

  // Reads the source and publishes the reading unless a later one was published meanwhile.
  // Returns the time published now (never earlier than before the call).
  TimePoint Refresh() noexcept;

 protected:
  // For clocks published by other means (testing::ManualClock): no source, Refresh() publishes
  // nothing.
  struct NoSource {};
  CachedClock(NoSource /*unused*/, TimePoint start) noexcept;
  // Publishes `t` if it is not earlier than the current reading. Returns whether it did.
  bool PublishAtLeast(TimePoint t) noexcept;
  // Moves the published reading forward by `d` (ignored unless positive).
  void PublishAdvance(Duration d) noexcept;

 private:
  std::atomic<Duration::rep> now_ns_;
  const Clock* const source_;  // null: CLOCK_MONOTONIC, or no source (see has_source_)
  const bool has_source_;
};

// Refreshes a CachedClock every `period` on a thread of its own, from construction until it is
// destroyed (the destructor stops the thread and joins it). The clock must outlive the ticker.
// A period below 100 us is raised to 100 us.
class ClockTicker {
 public:
  explicit ClockTicker(CachedClock& clock, Duration period = std::chrono::milliseconds(1));
  ~ClockTicker();
  ClockTicker(const ClockTicker&) = delete;
  ClockTicker& operator=(const ClockTicker&) = delete;

  Duration period() const noexcept { return period_; }

 private:
  struct Thread;  // the thread and what stops it (clock.cc)
  const Duration period_;
  std::unique_ptr<Thread> thread_;
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

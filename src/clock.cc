#include "fusebox/clock.h"

#include <time.h>  // NOLINT(modernize-deprecated-headers): clock_gettime is POSIX, not in <ctime>

namespace fusebox {
namespace {

TimePoint ReadClock(clockid_t id) noexcept {
  timespec ts{};
  clock_gettime(id, &ts);
  return TimePoint(Duration(static_cast<Duration::rep>(ts.tv_sec) * 1'000'000'000 +
                            static_cast<Duration::rep>(ts.tv_nsec)));
}

}  // namespace

TimePoint PreciseMonotonicClock::Now() const noexcept { return ReadClock(CLOCK_MONOTONIC); }

Clock& DefaultClock() noexcept {
  // Never destroyed: breakers may outlive static destruction order.
  static auto* clock = new CoarseMonotonicClock();
  return *clock;
}

}  // namespace fusebox

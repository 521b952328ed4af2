#include "common/rate.h"

#include <fmt/format.h>

namespace fusebox::app {

Result<double, ReadError> CheckCallRate(double rate) {
  if (rate <= 0.0) {
    return ReadError{fmt::format("must be > 0 calls per second, got {}", rate)};
  }
  if (rate < kMinCallRate || rate > kMaxCallRate) {
    // Arrivals are whole microseconds: a mean gap below 1 us cannot be simulated, and one above
    // kMaxDuration does not fit the clock.
    return ReadError{
        fmt::format("must be in [{:g}, {:g}] calls per second (a mean gap between arrivals from "
                    "1 us, the simulator's time resolution, to {} s), got {:g}",
                    kMinCallRate, kMaxCallRate, kMaxDuration / kMicrosPerSecond, rate)};
  }
  return rate;
}

}  // namespace fusebox::app

// apps/common/rate.h
//
// Call rates in calls per second, as the apps' traffic settings take them. Time in the apps is
// integer microseconds, so a rate is in [kMinCallRate, kMaxCallRate]: its mean gap between calls
// is at least 1 us (the time resolution) and at most kMaxDuration.
#pragma once

#include "common/duration.h"
#include "common/toml_read.h"
#include "fusebox/status.h"

namespace fusebox::app {

inline constexpr double kMinCallRate = 1e-9;
inline constexpr double kMaxCallRate = 1e6;

// `rate` if it is > 0 and in [kMinCallRate, kMaxCallRate]; else why not ("must be > 0 calls per
// second, got 0", "must be in [1e-09, 1e+06] calls per second (...), got 2e+06").
Result<double, ReadError> CheckCallRate(double rate);

}  // namespace fusebox::app

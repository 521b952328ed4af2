// A WallClock that only moves when told to, for cache TTL and fetched_at tests.
#pragma once

#include <chrono>

#include "core/decode.h"
#include "fusebox/thread_annotations.h"

namespace fusebox::gateway::testing {

class ManualWallClock final : public WallClock {
 public:
  // 2024-05-01T00:00:00Z.
  ManualWallClock() : now_(std::chrono::sys_days(std::chrono::year(2024) / 5 / 1)) {}
  WallTime Now() const noexcept override {
    fusebox::Locked lock(mu_);
    return now_;
  }
  void Advance(std::chrono::nanoseconds d) {
    fusebox::Locked lock(mu_);
    now_ += std::chrono::duration_cast<WallTime::duration>(d);
  }

 private:
  mutable fusebox::Mutex mu_;
  WallTime now_ FUSEBOX_GUARDED_BY(mu_);
};

}  // namespace fusebox::gateway::testing

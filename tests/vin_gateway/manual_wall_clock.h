// A WallClock that only moves when told to, for cache TTL and fetched_at tests.
#pragma once

#include <chrono>
#include <mutex>

#include "core/decode.h"

namespace fusebox::gateway::testing {

class ManualWallClock final : public WallClock {
 public:
  // 2024-05-01T00:00:00Z.
  ManualWallClock() : now_(std::chrono::sys_days(std::chrono::year(2024) / 5 / 1)) {}
  WallTime Now() const noexcept override {
    std::lock_guard<std::mutex> lock(mu_);
    return now_;
  }
  void Advance(std::chrono::nanoseconds d) {
    std::lock_guard<std::mutex> lock(mu_);
    now_ += std::chrono::duration_cast<WallTime::duration>(d);
  }

 private:
  mutable std::mutex mu_;
  WallTime now_;  // Guarded by mu_.
};

}  // namespace fusebox::gateway::testing

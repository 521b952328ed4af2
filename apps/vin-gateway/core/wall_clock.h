// vin-gateway/core/wall_clock.h
//
// Wall-clock time, as the gateway shows it to people and compares it with the cache TTL:
// `fetched_at` of a decode, the times of the breaker's recent transitions, log timestamps. The
// breaker, budgets and rate limit use fusebox::Clock (monotonic) instead; only what a person
// reads or what must survive a restart (a cached decode's age) is wall-clock time.
//
// The clock is injected like fusebox::Clock so that TTLs and `fetched_at` are testable.
//
// Thread safety: Now() may be called concurrently; FormatRfc3339 is pure. Time: reads the
// system clock (SystemWallClock) or whatever the test injects.
//
// Example:
//   fusebox::gateway::SystemWallClock wall_clock;
//   std::string at = fusebox::gateway::FormatRfc3339(wall_clock.Now());   // "2024-05-01T12:34:56Z"
#pragma once

#include <chrono>
#include <string>

namespace fusebox::gateway {

using WallTime = std::chrono::system_clock::time_point;

class WallClock {
 public:
  virtual ~WallClock() = default;
  virtual WallTime Now() const noexcept = 0;
};

class SystemWallClock final : public WallClock {
 public:
  WallTime Now() const noexcept override { return std::chrono::system_clock::now(); }
};

// "2024-05-01T12:34:56Z" (UTC, whole seconds).
std::string FormatRfc3339(WallTime t);

}  // namespace fusebox::gateway

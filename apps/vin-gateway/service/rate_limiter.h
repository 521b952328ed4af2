// vin-gateway/service/rate_limiter.h
//
// The per-client rate limit: one token bucket per client address, so that one client cannot
// spend everyone's vPIC allowance (docs/http-api.md, "Limits"). Only requests that would start an
// upstream call take tokens (a cache hit or a single-flight follower takes none); a batch takes
// one per VIN that misses the cache, capped at the bucket size so that a full bucket always admits
// one maximal batch.
//
//   TryTake(client, n): refill at `rate` tokens/s up to `burst`; if n tokens are there, take them
//                       (nullopt), else take nothing and return the wait until they would be.
//
// A rate of 0 disables the limit. Buckets of idle clients are dropped when more than
// `max_clients` are tracked (a full bucket is the same as no bucket).
//
// Thread safety: all members may be called concurrently (one mutex). Time: reads only the
// injected fusebox::Clock.
//
// Example:
//   RateLimiter limiter(20, 40, clock);
//   if (auto wait = limiter.TryTake(peer_address)) return RateLimited(*wait);   // 429
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "fusebox/clock.h"

namespace vin_gateway {

class RateLimiter {
 public:
  RateLimiter(double rate_per_second, double burst, fusebox::Clock& clock,
              std::size_t max_clients = 65536);

  // nullopt when `n` tokens were taken; otherwise the time until they would be available.
  std::optional<fusebox::Duration> TryTake(std::string_view client, double n = 1);

  bool enabled() const noexcept { return rate_ > 0; }
  std::uint64_t rejected() const noexcept { return rejected_.load(std::memory_order_relaxed); }
  std::size_t tracked_clients() const;

 private:
  struct Bucket {
    double tokens = 0;
    fusebox::TimePoint updated{};
  };
  void RefillLocked(Bucket& bucket, fusebox::TimePoint now) const;
  void PruneLocked(fusebox::TimePoint now);

  const double rate_;
  const double burst_;
  fusebox::Clock& clock_;
  const std::size_t max_clients_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Bucket> buckets_;  // Guarded by mu_.
  std::atomic<std::uint64_t> rejected_{0};
};

}  // namespace vin_gateway

// vin-gateway/service/rate_limiter.h
//
// The per-client rate limit: one token bucket per client key (an address, or an IPv6 network:
// client_address.h), so that one client cannot spend everyone's vPIC allowance
// (docs/http-api.md, "Limits"). Only requests that would start an upstream call take tokens (a
// cache hit or a single-flight follower takes none); a batch takes one per VIN it sends upstream,
// with no cap: a batch larger than what the bucket holds is answered in part, never let through
// whole (else batches of 50 would buy 50 upstream decodes for a bucket of 2).
//
//   both refill at `rate` tokens/s up to `burst`, then:
//   TryTake(client):      take one token (nullopt), or nothing and return the wait until one is
//                         there;
//   TakeUpTo(client, n):  take as many whole tokens as are there, at most n; when fewer than n,
//                         also the wait until the bucket holds the rest (at most a full bucket).
//
// A rate of 0 disables the limit. Buckets of idle clients are dropped when more than
// `max_clients` are tracked (a full bucket is the same as no bucket).
//
// Thread safety: all members may be called concurrently (one mutex). Time: reads only the
// injected fusebox::Clock.
//
// Example:
//   RateLimiter limiter(20, 40, clock);
//   if (auto wait = limiter.TryTake(client_key)) return RateLimited(*wait);     // 429
//   auto grant = limiter.TakeUpTo(client_key, 50);   // the first grant.taken VINs go upstream
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "fusebox/clock.h"
#include "fusebox/thread_annotations.h"

namespace fusebox::gateway {

class RateLimiter {
 public:
  RateLimiter(double rate_per_second, double burst, fusebox::Clock& clock,
              std::size_t max_clients = 65536);

  // nullopt when a token was taken; otherwise the time until one is there.
  std::optional<fusebox::Duration> TryTake(std::string_view client);

  struct Grant {
    std::size_t taken = 0;  // tokens taken, in [0, n]; n when the limit is off
    // When taken < n: the time until the bucket holds min(n - taken, burst) tokens, so that
    // a retry of the rest then gets as many as it can. Zero otherwise.
    fusebox::Duration retry_after{0};
  };
  // Up to `n` tokens: as many whole ones as the bucket holds now.
  Grant TakeUpTo(std::string_view client, std::size_t n);

  bool enabled() const noexcept { return rate_ > 0; }
  std::uint64_t rejected() const noexcept { return rejected_.load(std::memory_order_relaxed); }
  std::size_t tracked_clients() const;

 private:
  struct Bucket {
    double tokens = 0;
    fusebox::TimePoint updated{};
  };
  void RefillLocked(Bucket& bucket, fusebox::TimePoint now) const FUSEBOX_REQUIRES(mu_);
  void PruneLocked(fusebox::TimePoint now) FUSEBOX_REQUIRES(mu_);

  const double rate_;
  const double burst_;
  fusebox::Clock& clock_;
  const std::size_t max_clients_;
  mutable fusebox::Mutex mu_;
  std::unordered_map<std::string, Bucket> buckets_ FUSEBOX_GUARDED_BY(mu_);
  std::atomic<std::uint64_t> rejected_{0};
};

}  // namespace fusebox::gateway

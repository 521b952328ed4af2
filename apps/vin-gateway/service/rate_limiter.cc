#include "service/rate_limiter.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace fusebox::gateway {

RateLimiter::RateLimiter(double rate_per_second, double burst, fusebox::Clock& clock,
                         std::size_t max_clients)
    : rate_(rate_per_second),
      burst_(std::max(1.0, burst)),
      clock_(clock),
      max_clients_(std::max<std::size_t>(1, max_clients)) {}

void RateLimiter::RefillLocked(Bucket& bucket, fusebox::TimePoint now) const {
  if (now > bucket.updated) {
    const double elapsed = fusebox::ToSeconds(now - bucket.updated);
    bucket.tokens = std::min(burst_, bucket.tokens + elapsed * rate_);
    bucket.updated = now;
  }
}

void RateLimiter::PruneLocked(fusebox::TimePoint now) {
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    RefillLocked(it->second, now);
    if (it->second.tokens >= burst_) {
      it = buckets_.erase(it);
    } else {
      ++it;
    }
  }
  // Every tracked client is active: forget some (arbitrary ones) rather than grow without bound.
  while (buckets_.size() >= max_clients_) {
    buckets_.erase(buckets_.begin());
  }
}

std::optional<fusebox::Duration> RateLimiter::TryTake(std::string_view client) {
  const Grant grant = TakeUpTo(client, 1);
  if (grant.taken == 1) {
    return std::nullopt;
  }
  return grant.retry_after;
}

RateLimiter::Grant RateLimiter::TakeUpTo(std::string_view client, std::size_t n) {
  if (!enabled() || n == 0) {
    return Grant{n, fusebox::Duration::zero()};
  }
  const fusebox::TimePoint now = clock_.Now();
  fusebox::Locked lock(mu_);
  auto it = buckets_.find(std::string(client));
  if (it == buckets_.end()) {
    if (buckets_.size() >= max_clients_) {
      PruneLocked(now);
    }
    it = buckets_.emplace(std::string(client), Bucket{burst_, now}).first;
  }
  Bucket& bucket = it->second;
  RefillLocked(bucket, now);
  // Whole tokens only (a refill a hair short of one still counts as one).
  const double whole = std::floor(bucket.tokens + 1e-9);
  const std::size_t taken =
      whole >= static_cast<double>(n) ? n : static_cast<std::size_t>(std::max(whole, 0.0));
  bucket.tokens = std::max(0.0, bucket.tokens - static_cast<double>(taken));
  if (taken == n) {
    return Grant{n, fusebox::Duration::zero()};
  }
  rejected_.fetch_add(1, std::memory_order_relaxed);
  const double want = std::min(static_cast<double>(n - taken), burst_);
  const double wait_s = (want - bucket.tokens) / rate_;
  return Grant{taken, std::chrono::duration_cast<fusebox::Duration>(
                          std::chrono::duration<double>(std::max(wait_s, 0.0)))};
}

std::size_t RateLimiter::tracked_clients() const {
  fusebox::Locked lock(mu_);
  return buckets_.size();
}

}  // namespace fusebox::gateway

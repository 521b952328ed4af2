#include "service/rate_limiter.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace vin_gateway {

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

std::optional<fusebox::Duration> RateLimiter::TryTake(std::string_view client, double n) {
  if (!enabled()) {
    return std::nullopt;
  }
  const double need = std::min(std::max(n, 0.0), burst_);
  const fusebox::TimePoint now = clock_.Now();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = buckets_.find(std::string(client));
  if (it == buckets_.end()) {
    if (buckets_.size() >= max_clients_) {
      PruneLocked(now);
    }
    it = buckets_.emplace(std::string(client), Bucket{burst_, now}).first;
  }
  Bucket& bucket = it->second;
  RefillLocked(bucket, now);
  if (bucket.tokens + 1e-9 >= need) {
    bucket.tokens = std::max(0.0, bucket.tokens - need);
    return std::nullopt;
  }
  rejected_.fetch_add(1, std::memory_order_relaxed);
  const double wait_s = (need - bucket.tokens) / rate_;
  return std::chrono::duration_cast<fusebox::Duration>(
      std::chrono::duration<double>(std::max(wait_s, 0.0)));
}

std::size_t RateLimiter::tracked_clients() const {
  std::lock_guard<std::mutex> lock(mu_);
  return buckets_.size();
}

}  // namespace vin_gateway

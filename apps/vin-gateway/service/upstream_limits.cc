#include "service/upstream_limits.h"

#include <algorithm>
#include <utility>

namespace fusebox::gateway {

fusebox::Result<std::unique_ptr<UpstreamLimits>, fusebox::ConfigError> UpstreamLimits::Create(
    const UpstreamLimitsConfig& config, fusebox::Clock& clock) {
  std::unique_ptr<UpstreamLimits> limits(new UpstreamLimits());
  if (config.fixed) {
    auto bulkhead = fusebox::Bulkhead::Create("vpic", {.max_concurrent = *config.fixed});
    if (!bulkhead) {
      return bulkhead.error();
    }
    limits->bulkhead_ = std::move(*bulkhead);
  } else {
    fusebox::AdaptiveLimitConfig adaptive;
    adaptive.min_limit = config.min;
    adaptive.max_limit = config.max;
    adaptive.initial_limit =
        std::clamp(kInitialAdaptiveLimit, config.min, std::max(config.min, config.max));
    auto limit =
        fusebox::AdaptiveLimit::Create("vpic", adaptive, {.clock = &clock, .on_change = {}});
    if (!limit) {
      return limit.error();
    }
    limits->adaptive_ = std::move(*limit);
  }
  if (config.throttle_k > 0) {
    auto throttle = fusebox::Throttle::Create(
        "vpic", {.k = config.throttle_k, .window = config.throttle_window},
        {.clock = &clock, .random = nullptr});
    if (!throttle) {
      return throttle.error();
    }
    limits->throttle_ = std::move(*throttle);
  }
  return limits;
}

std::unique_ptr<UpstreamLimits> UpstreamLimits::Fixed(std::uint32_t n) {
  std::unique_ptr<UpstreamLimits> limits(new UpstreamLimits());
  limits->bulkhead_ = fusebox::Bulkhead::Create("vpic", {.max_concurrent = n}).value();
  return limits;
}

std::uint32_t UpstreamLimits::limit() const noexcept {
  return adaptive_ ? adaptive_->limit() : bulkhead_->max_concurrent();
}

std::uint32_t UpstreamLimits::in_flight() const noexcept {
  return adaptive_ ? adaptive_->in_flight() : bulkhead_->in_flight();
}

std::uint64_t UpstreamLimits::admitted() const {
  return adaptive_ ? adaptive_->Stats().admitted : bulkhead_->admitted();
}

std::uint64_t UpstreamLimits::rejected() const {
  return adaptive_ ? adaptive_->Stats().rejected : bulkhead_->rejected();
}

std::optional<fusebox::Duration> UpstreamLimits::no_load_latency() const {
  if (!adaptive_) {
    return std::nullopt;
  }
  const fusebox::Duration d = adaptive_->Stats().no_load_latency;
  if (d == fusebox::Duration::zero()) {
    return std::nullopt;
  }
  return d;
}

}  // namespace fusebox::gateway

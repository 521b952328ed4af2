#include "upstream_guards.h"

#include <fmt/format.h>

#include <utility>

namespace fusebox::sim {

Result<UpstreamGuards, std::string> UpstreamGuards::Create(const Scenario& scenario,
                                                           CircuitBreaker& breaker, Clock& clock,
                                                           OnLimitChange on_limit_change) {
  UpstreamGuards guards;
  guards.guards_.breaker = &breaker;
  if (!scenario.limit) {
    return guards;
  }
  const Limit& spec = *scenario.limit;
  if (spec.has_throttle()) {
    // Its own sequence, so that a throttle changes no other draw (the cooldown jitter's).
    guards.throttle_random_ =
        std::make_unique<SplitMix64Random>(scenario.seed ^ 0x7468726f74746c65ULL);
    auto throttle = Throttle::Create("throttle", spec.throttle,
                                     {.clock = &clock, .random = guards.throttle_random_.get()});
    if (!throttle) {
      return fmt::format("the throttle refused the config: {}", throttle.error().message);
    }
    guards.throttle_ = std::move(*throttle);
    guards.guards_.throttle = guards.throttle_.get();
  }
  if (!spec.has_concurrency_limit()) {
    return guards;
  }
  if (!spec.adaptive) {
    auto bulkhead = Bulkhead::Create("limit", {.max_concurrent = spec.max_in_flight});
    if (!bulkhead) {
      return fmt::format("the bulkhead refused the limit: {}", bulkhead.error().message);
    }
    guards.bulkhead_ = std::move(*bulkhead);
    guards.guards_.bulkhead = guards.bulkhead_.get();
    return guards;
  }
  AdaptiveLimitDeps deps{.clock = &clock, .on_change = {}};
  if (on_limit_change) {
    deps.on_change = [on_change = std::move(on_limit_change)](const LimitChange& change) {
      on_change(change.new_limit);
    };
  }
  auto adaptive = AdaptiveLimit::Create("limit", spec.adaptive_config, std::move(deps));
  if (!adaptive) {
    return fmt::format("the adaptive limit refused the config: {}", adaptive.error().message);
  }
  guards.adaptive_ = std::move(*adaptive);
  guards.guards_.limit = guards.adaptive_.get();
  return guards;
}

std::optional<std::uint32_t> UpstreamGuards::limit() const {
  if (bulkhead_) {
    return bulkhead_->max_concurrent();
  }
  if (adaptive_) {
    return adaptive_->limit();
  }
  return std::nullopt;
}

}  // namespace fusebox::sim

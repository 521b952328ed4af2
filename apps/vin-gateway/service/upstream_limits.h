// vin-gateway/service/upstream_limits.h
//
// How much the gateway sends vPIC besides what the breaker allows: a cap on calls in flight,
// fixed (--max-in-flight N: a fusebox::Bulkhead) or adaptive (--max-in-flight auto: a
// fusebox::AdaptiveLimit between --max-in-flight-min and --max-in-flight-max that starts at 16),
// and an optional client-side throttle (--throttle K: fusebox::Throttle over --throttle-window).
// Guards() hands them, with the breaker, to fusebox::Admit, which takes them in the library's
// order (docs/composition.md): the cap, the breaker, the throttle.
//
// Thread safety: the pieces are thread-safe; the object is immutable once made. Time: the
// injected fusebox::Clock; the throttle's draws from its own generator seeded from its name.
//
// Example:
//   auto limits = UpstreamLimits::Create({.fixed = 16, ...}, clock).value();
//   fusebox::Result<fusebox::Admission> a = fusebox::Admit(limits->Guards(breaker), priority);
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "fusebox/adaptive_limit.h"
#include "fusebox/admission.h"
#include "fusebox/bulkhead.h"
#include "fusebox/clock.h"
#include "fusebox/status.h"
#include "fusebox/throttle.h"

namespace fusebox::gateway {

struct UpstreamLimitsConfig {
  std::optional<std::uint32_t> fixed = 16;  // nullopt: adaptive, within [min, max]
  std::uint32_t min = 3;
  std::uint32_t max = 256;
  double throttle_k = 0;  // 0: no throttle
  fusebox::Duration throttle_window = std::chrono::seconds(30);
};

class UpstreamLimits {
 public:
  // The adaptive limit starts here (clamped into [min, max]): the fixed default.
  static constexpr std::uint32_t kInitialAdaptiveLimit = 16;

  // Refuses a config the library's pieces refuse (their ConfigError).
  static fusebox::Result<std::unique_ptr<UpstreamLimits>, fusebox::ConfigError> Create(
      const UpstreamLimitsConfig& config, fusebox::Clock& clock);

  // A fixed cap of `n` (in [1, 1000000]) and no throttle.
  static std::unique_ptr<UpstreamLimits> Fixed(std::uint32_t n);

  fusebox::Guards Guards(fusebox::CircuitBreaker& breaker) const noexcept {
    return {.breaker = &breaker,
            .bulkhead = bulkhead_.get(),
            .limit = adaptive_.get(),
            .throttle = throttle_.get()};
  }

  bool adaptive() const noexcept { return adaptive_ != nullptr; }
  // The cap in force (the adaptive limit's current value), calls holding a slot, and totals.
  std::uint32_t limit() const noexcept;
  std::uint32_t in_flight() const noexcept;
  std::uint64_t admitted() const;
  std::uint64_t rejected() const;
  // The adaptive limit's estimate of vPIC's no-load latency; nullopt when fixed or not yet known.
  std::optional<fusebox::Duration> no_load_latency() const;
  const fusebox::AdaptiveLimit* adaptive_limit() const noexcept { return adaptive_.get(); }
  const fusebox::Throttle* throttle() const noexcept { return throttle_.get(); }

 private:
  UpstreamLimits() = default;

  std::unique_ptr<fusebox::Bulkhead> bulkhead_;
  std::unique_ptr<fusebox::AdaptiveLimit> adaptive_;
  std::unique_ptr<fusebox::Throttle> throttle_;
};

}  // namespace fusebox::gateway

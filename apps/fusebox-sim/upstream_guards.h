// apps/fusebox-sim/upstream_guards.h
//
// The pieces in front of the simulated upstream, as a service would stack them: the library's
// own, taken in the library's one order by fusebox::Admit (fusebox/admission.h). The breaker is
// the scenario's; a [limit] adds a fusebox::Bulkhead (a fixed max_in_flight) or a
// fusebox::AdaptiveLimit ("auto") before it and a fusebox::Throttle (throttle_k) after it, on the
// simulation's clock; the throttle draws from its own generator, seeded from the scenario's seed.
// The simulator only asks Admit for each arrival and records each admitted call's outcome on its
// Admission.
//
// Thread safety: none beyond the library's (one simulation owns it). Time: the Clock given.
//
// Example:
//   auto guards = UpstreamGuards::Create(scenario, *breaker, clock, on_change);
//   Result<Admission> admitted = guards->Admit(Priority::kInteractive);
//   if (!admitted) return Count(admitted.error().code);  // OVERLOADED, CIRCUIT_OPEN, ...
//   admitted->Record(outcome);  // or RecordRefusedForLoad() for a refuse upstream's refusal
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "fusebox/adaptive_limit.h"
#include "fusebox/admission.h"
#include "fusebox/bulkhead.h"
#include "fusebox/circuit_breaker.h"
#include "fusebox/clock.h"
#include "fusebox/random.h"
#include "fusebox/status.h"
#include "fusebox/throttle.h"
#include "scenario.h"

namespace fusebox::sim {

class UpstreamGuards {
 public:
  // Called at each change of an adaptive limit, with the new limit (on the recording call).
  using OnLimitChange = std::function<void(std::uint32_t)>;

  // The guards of `scenario` in front of `breaker` (both outlive them). Fails with the library's
  // refusal of a config (the loader has checked it, so only a bug gets there).
  static Result<UpstreamGuards, std::string> Create(const Scenario& scenario,
                                                    CircuitBreaker& breaker, Clock& clock,
                                                    OnLimitChange on_limit_change);

  // The pieces in order: the limit's slot, the breaker's permit, the throttle's ticket (never for
  // a probe); or the first refusal.
  Result<Admission> Admit(Priority priority) noexcept { return fusebox::Admit(guards_, priority); }

  // Whether the breaker is the only piece (no [limit]): Admit then is the breaker's TryAcquire.
  bool breaker_only() const noexcept {
    return guards_.bulkhead == nullptr && guards_.limit == nullptr && guards_.throttle == nullptr;
  }

  // The [limit]'s value now; nullopt without a [limit].
  std::optional<std::uint32_t> limit() const;

 private:
  UpstreamGuards() = default;

  std::unique_ptr<Bulkhead> bulkhead_;
  std::unique_ptr<AdaptiveLimit> adaptive_;
  std::unique_ptr<SplitMix64Random> throttle_random_;
  std::unique_ptr<Throttle> throttle_;
  Guards guards_;
};

}  // namespace fusebox::sim

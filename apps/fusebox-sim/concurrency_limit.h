// apps/fusebox-sim/concurrency_limit.h
//
// The concurrency limit of a scenario's [limit] table, as the simulator runs it: the library's
// own pieces, not a model of them. A fixed max_in_flight is a fusebox::Bulkhead of that size;
// "auto" is a fusebox::AdaptiveLimit on the simulation's clock, which hears every call's outcome (a
// latency sample, a timeout or a refusal for load: a drop) and moves its limit as the library
// does. A call takes its slot before the breaker's permit; a call the breaker then refuses gives
// the slot back unrecorded.
//
// Thread safety: none beyond the library's (one simulation owns it). Time: the Clock given.
//
// Example:
//   auto limit = ConcurrencyLimit::Create(*scenario.limit, clock, on_change);
//   std::optional<ConcurrencyLimit::Slot> slot = limit->TryAcquire();
//   if (!slot) return Overloaded();
//   ...
//   slot->Record(outcome, /*drop=*/refused_for_load);
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "fusebox/adaptive_limit.h"
#include "fusebox/bulkhead.h"
#include "fusebox/clock.h"
#include "fusebox/outcome.h"
#include "fusebox/status.h"
#include "scenario.h"

namespace fusebox::sim {

class ConcurrencyLimit {
 public:
  // One admitted call's place under the limit. Move-only; destroying it unrecorded gives the
  // place back and teaches the limit nothing.
  class Slot {
   public:
    explicit Slot(BulkheadPermit permit) : fixed_(std::move(permit)) {}
    explicit Slot(AdaptivePermit permit) : adaptive_(std::move(permit)) {}

    // The call ended with `outcome`; `drop`: the upstream refused it for load. An adaptive limit
    // learns a latency sample (success, failure), a drop (timeout, refusal for load) or nothing
    // (ignored).
    void Record(Outcome outcome, bool drop);

   private:
    std::optional<BulkheadPermit> fixed_;
    std::optional<AdaptivePermit> adaptive_;
  };

  // Called at each change of an adaptive limit, with the new limit (on the recording call).
  using OnChange = std::function<void(std::uint32_t)>;

  // The limit of `spec` (valid: the loader checked it); the library's refusal otherwise.
  static Result<ConcurrencyLimit, std::string> Create(const Limit& spec, Clock& clock,
                                                      OnChange on_change);

  // A slot now, or nullopt when the limit is reached (the library's kOverloaded).
  std::optional<Slot> TryAcquire();
  // The limit now.
  std::uint32_t limit() const;

 private:
  ConcurrencyLimit() = default;

  std::unique_ptr<Bulkhead> fixed_;
  std::unique_ptr<AdaptiveLimit> adaptive_;
};

}  // namespace fusebox::sim

// apps/fusebox-sim/upstream_model.h
//
// What the simulated upstream does with a call (docs/scenario-format.md, "Exact rules" 3 and 4):
// the phase in force when the call is admitted decides its fate. Most modes fix the outcome and
// the time to answer at once; a fragile or warming upstream also decides whether this call
// knocks it over; a refuse upstream refuses a call beyond its capacity at once; a queue upstream
// hands the call to its servers (server_queue.h), and the simulator learns its end from them.
//
// Thread safety: none (one simulation owns it). Time: the caller's instants, which never go back.
//
// Example:
//   UpstreamModel upstream(scenario);
//   const UpstreamFate fate = upstream.Decide(t, calls_in_flight);
//   if (fate.kind == FateKind::kQueued) queue.Join(...);
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "fusebox/outcome.h"
#include "scenario.h"

namespace fusebox::sim {

enum class FateKind : std::uint8_t {
  kAnswers,  // answers with `outcome` after `latency` (kTimeout: never answers)
  kRefused,  // refused for load at once (refuse mode): a failure, and a drop for a limit
  kQueued,   // joins the queue upstream's line; `latency` is its service time
};

struct UpstreamFate {
  Outcome outcome = Outcome::kSuccess;
  Micros latency = 0;
  FateKind kind = FateKind::kAnswers;
};

class UpstreamModel {
 public:
  explicit UpstreamModel(const Scenario& scenario);

  // The fate of a call admitted at `t` while `in_flight` other calls (of any phase) are in flight.
  // A hang answers never: kTimeout, for the caller to end at its budget. A fragile or warming
  // upstream may collapse here (a relapse).
  UpstreamFate Decide(Micros t, std::uint32_t in_flight);

  // The queue upstream's servers at `t`: the capacity of the latest queue phase started at or
  // before `t` (so calls still waiting after a queue phase drain at its capacity), 0 before any.
  std::uint32_t QueueCapacity(Micros t);

  // Collapses of a fragile or warming upstream, [from, to) (clipped to their phase).
  const std::vector<std::pair<Micros, Micros>>& collapses() const noexcept { return collapses_; }

 private:
  const Phase* PhaseAt(Micros t);
  std::uint32_t WarmCapacity(const Phase& phase, Micros t) const;
  UpstreamFate FragileFate(const Phase& phase, std::uint32_t capacity, std::uint32_t in_flight,
                           Micros t);

  const Scenario& scenario_;
  std::size_t phase_cursor_ = 0;  // PhaseAt(): instants never go back
  std::size_t queue_cursor_ = 0;  // QueueCapacity(): the next phase to look at
  std::uint32_t queue_capacity_ = 0;
  const Phase* collapsed_phase_ = nullptr;
  Micros collapsed_until_ = 0;
  std::vector<std::pair<Micros, Micros>> collapses_;
};

}  // namespace fusebox::sim

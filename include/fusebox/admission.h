// fusebox/admission.h: the pieces in front of one dependency, taken in the one right order.
//
// A call to a guarded dependency passes, in this order (docs/composition.md, "The order"):
//
//   retry            outside: every attempt is admitted afresh, and no refusal below is retried
//   concurrency      a Bulkhead or an AdaptiveLimit slot, or OVERLOADED (nothing else asked)
//   breaker          a permit, or CIRCUIT_OPEN / CIRCUIT_HALF_OPEN / CIRCUIT_RECOVERING
//   throttle         a ticket, or THROTTLED; a probe is never throttled
//   the call
//
// Why this order: a call that cannot run for want of a slot must not take the breaker's probe
// slot; the throttle comes after the breaker so that it counts only calls that would really have
// been sent (while the breaker is OPEN it sees nothing, and its counts age out), and so that it
// never sheds the probe that would close the breaker. A piece refused further down gives back
// what the pieces above gave, recording nothing.
//
//   Admission a = Admit(guards, priority)  -> every piece's permit, or the first refusal
//   a.Record(outcome)                      -> each piece learns the outcome: the breaker, the
//                                             adaptive limit (latency, or a drop on a timeout),
//                                             the throttle (accepted or not)
//   a.RecordRefusedForLoad(hold)           -> the dependency said "too busy" (HTTP 429 or 503):
//                                             a failure for the breaker and the throttle, a drop
//                                             for the adaptive limit, `hold` for the breaker
//
// An asynchronous caller hands the breaker's permit to fusebox::asio::RunAdmitted with
// TakePermit() (RunAdmitted records it), then records the rest with Record.
//
// Thread safety: Admit may be called concurrently (each piece is thread-safe); an Admission is
// one call's and is used by one thread at a time. Lifetime: the pieces outlive their admissions.
//
// Example:
//   fusebox::Guards guards{.breaker = breaker.get(), .bulkhead = nullptr,
//                          .limit = limit.get(), .throttle = throttle.get()};
//   fusebox::Result<fusebox::Admission> admitted = fusebox::Admit(guards);
//   if (!admitted) return Reject(admitted.error());
//   Reply reply = CallShipping(admitted->permit().deadline());
//   admitted->Record(reply.ok() ? fusebox::Outcome::kSuccess : fusebox::Outcome::kFailure);
#pragma once

#include <optional>

#include "fusebox/adaptive_limit.h"
#include "fusebox/bulkhead.h"
#include "fusebox/circuit_breaker.h"
#include "fusebox/outcome.h"
#include "fusebox/status.h"
#include "fusebox/throttle.h"

namespace fusebox {

// The pieces guarding one dependency. The breaker is required; the others are optional (null:
// not used). With both a bulkhead and a limit, both are taken, the bulkhead first.
struct Guards {
  CircuitBreaker* breaker = nullptr;
  Bulkhead* bulkhead = nullptr;
  AdaptiveLimit* limit = nullptr;
  Throttle* throttle = nullptr;
};

// One admitted call: the permit of every piece it passed. Move-only; destroying it unrecorded
// gives everything back as an ignored outcome.
class [[nodiscard]] Admission {
 public:
  Admission(Admission&&) noexcept = default;
  Admission& operator=(Admission&&) noexcept = default;
  Admission(const Admission&) = delete;
  Admission& operator=(const Admission&) = delete;
  ~Admission() = default;

  // The breaker's permit (its deadline, whether it is a probe). Only before TakePermit and
  // Record (after them: std::logic_error).
  Permit& permit();
  // Moves the breaker's permit out, for a runner that records it (asio::RunAdmitted); Record
  // then records the other pieces only. Once, before Record (else std::logic_error).
  Permit TakePermit();
  bool is_probe() const noexcept { return probe_; }

  // Records `outcome` with every piece still held, then gives everything back. Later calls do
  // nothing.
  void Record(Outcome outcome) noexcept;
  // The dependency refused the call for load: kFailure for the breaker (with `hold`, as
  // Permit::Record(outcome, MinOpen)) and the throttle, a drop for an adaptive limit.
  void RecordRefusedForLoad(MinOpen hold = {}) noexcept;

 private:
  friend Result<Admission> Admit(const Guards& guards, Priority priority) noexcept;
  Admission() = default;
  void Release() noexcept;  // after recording: drops the recorded permits, then the slot

  std::optional<BulkheadPermit> slot_;
  std::optional<AdaptivePermit> adaptive_;
  std::optional<Permit> permit_;
  std::optional<ThrottleTicket> ticket_;
  bool probe_ = false;
};

// Takes the pieces of `guards` in order; the first refusal is returned, and whatever was taken
// before it is given back. Never blocks.
Result<Admission> Admit(const Guards& guards, Priority priority = Priority::kInteractive) noexcept;

}  // namespace fusebox

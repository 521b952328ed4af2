// The printable names of fusebox's enums. They appear in logs, metrics, HTTP bodies and traces,
// so they are part of the contract (docs/breaker-rules.md, "Reason codes").
#include <optional>
#include <string_view>

#include "fusebox/circuit_breaker.h"
#include "fusebox/events.h"
#include "fusebox/outcome.h"
#include "fusebox/status.h"

namespace fusebox {

std::string_view ToString(ReasonCode code) noexcept {
  switch (code) {
    case ReasonCode::kCircuitOpen:
      return "CIRCUIT_OPEN";
    case ReasonCode::kCircuitHalfOpen:
      return "CIRCUIT_HALF_OPEN";
    case ReasonCode::kUpstreamSlow:
      return "UPSTREAM_SLOW";
    case ReasonCode::kUpstreamError:
      return "UPSTREAM_ERROR";
    case ReasonCode::kOverloaded:
      return "OVERLOADED";
    case ReasonCode::kCancelled:
      return "CANCELLED";
    case ReasonCode::kCircuitRecovering:
      return "CIRCUIT_RECOVERING";
    case ReasonCode::kThrottled:
      return "THROTTLED";
  }
  return "UNKNOWN";
}

std::string_view ToString(Outcome outcome) noexcept {
  switch (outcome) {
    case Outcome::kSuccess:
      return "success";
    case Outcome::kFailure:
      return "failure";
    case Outcome::kTimeout:
      return "timeout";
    case Outcome::kIgnored:
      return "ignored";
  }
  return "unknown";
}

std::string_view ToString(Priority priority) noexcept {
  return priority == Priority::kBatch ? "batch" : "interactive";
}

std::string_view ToString(State state) noexcept {
  switch (state) {
    case State::kClosed:
      return "CLOSED";
    case State::kOpen:
      return "OPEN";
    case State::kHalfOpen:
      return "HALF_OPEN";
    case State::kDisabled:
      return "DISABLED";
    case State::kMetricsOnly:
      return "METRICS_ONLY";
    case State::kForcedOpen:
      return "FORCED_OPEN";
  }
  return "UNKNOWN";
}

std::string_view ToString(TransitionCause cause) noexcept {
  switch (cause) {
    case TransitionCause::kConsecutiveFailures:
      return "consecutive_failures";
    case TransitionCause::kFailureRate:
      return "failure_rate";
    case TransitionCause::kSlowCallRate:
      return "slow_call_rate";
    case TransitionCause::kCooldownElapsed:
      return "cooldown_elapsed";
    case TransitionCause::kProbeFailed:
      return "probe_failed";
    case TransitionCause::kProbeTimedOut:
      return "probe_timed_out";
    case TransitionCause::kProbesSucceeded:
      return "probes_succeeded";
    case TransitionCause::kOperator:
      return "operator";
    case TransitionCause::kReconfigured:
      return "reconfigured";
    case TransitionCause::kRecoveryFailed:
      return "recovery_failed";
    case TransitionCause::kFleet:
      return "fleet";
  }
  return "unknown";
}

std::string_view ToString(TripPolicy policy) noexcept {
  switch (policy) {
    case TripPolicy::kConsecutive:
      return "consecutive";
    case TripPolicy::kCountWindow:
      return "count_window";
    case TripPolicy::kTimeWindow:
      return "time_window";
  }
  return "unknown";
}

std::optional<TripPolicy> ParseTripPolicy(std::string_view name) noexcept {
  for (TripPolicy p :
       {TripPolicy::kConsecutive, TripPolicy::kCountWindow, TripPolicy::kTimeWindow}) {
    if (ToString(p) == name) {
      return p;
    }
  }
  return std::nullopt;
}

std::string_view ToString(ProbeMode mode) noexcept {
  switch (mode) {
    case ProbeMode::kPassive:
      return "passive";
    case ProbeMode::kActive:
      return "active";
  }
  return "unknown";
}

std::optional<ProbeMode> ParseProbeMode(std::string_view name) noexcept {
  for (ProbeMode m : {ProbeMode::kPassive, ProbeMode::kActive}) {
    if (ToString(m) == name) {
      return m;
    }
  }
  return std::nullopt;
}

}  // namespace fusebox

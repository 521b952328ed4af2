// fusebox/events.h
//
// What a breaker tells its listeners: state transitions, rejections, outcomes and the recovery
// ramp's start and end.
//
// Listeners are called on the thread that caused the event, after the breaker released its lock
// (as resilience4j publishes after the state swap), so a listener may call back into the breaker.
// Two threads may therefore deliver events concurrently and out of order; every event carries
// the breaker's sequence number so a listener can restore the order. A listener must be
// thread-safe and quick: it runs on the caller's call path.
//
// Example:
//   breaker.AddListener([](const fusebox::Event& e) {
//     if (auto* t = std::get_if<fusebox::TransitionEvent>(&e.detail)) {
//       log("{} {} -> {}", e.breaker, ToString(t->from), ToString(t->to));
//     }
//   });
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <variant>

#include "fusebox/clock.h"
#include "fusebox/outcome.h"
#include "fusebox/status.h"

namespace fusebox {

// CLOSED, OPEN and HALF_OPEN are the automatic states. DISABLED (admit everything, record
// nothing that trips), METRICS_ONLY (admit everything, record, never trip) and FORCED_OPEN
// (reject everything) are entered and left only by an operator command.
enum class State : std::uint8_t {
  kClosed,
  kOpen,
  kHalfOpen,
  kDisabled,
  kMetricsOnly,
  kForcedOpen,
};

// "CLOSED", "OPEN", "HALF_OPEN", "DISABLED", "METRICS_ONLY", "FORCED_OPEN".
std::string_view ToString(State state) noexcept;

// Why a transition happened.
enum class TransitionCause : std::uint8_t {
  kConsecutiveFailures,  // CLOSED -> OPEN: the run of failures/slow calls reached the threshold
  kFailureRate,          // CLOSED -> OPEN: failure rate over the window
  kSlowCallRate,         // CLOSED -> OPEN: slow-call rate over the window
  kCooldownElapsed,      // OPEN -> HALF_OPEN: first call after the cooldown
  kProbeFailed,          // HALF_OPEN -> OPEN: a probe failed, timed out or was slow
  kProbeTimedOut,        // HALF_OPEN -> OPEN: a probe held its slot past call_timeout (lazy)
  kProbesSucceeded,      // HALF_OPEN -> CLOSED: enough good probes
  kOperator,             // an operator command
  kReconfigured,         // CLOSED -> CLOSED, METRICS_ONLY -> METRICS_ONLY: Reconfigure changed
                         // the trip policy or the window, which starts afresh
  kRecoveryFailed,       // CLOSED -> OPEN: a failure or slow call during the recovery ramp
  kFleet,                // adopted from a peer (CircuitBreaker::Adopt, fusebox/fleet.h)
};

// "consecutive_failures", "failure_rate", "slow_call_rate", "cooldown_elapsed", "probe_failed",
// "probe_timed_out", "probes_succeeded", "operator", "reconfigured", "recovery_failed", "fleet".
std::string_view ToString(TransitionCause cause) noexcept;

struct TransitionEvent {
  State from = State::kClosed;
  State to = State::kClosed;
  TransitionCause cause = TransitionCause::kOperator;
  std::uint64_t generation = 0;  // the generation the transition starts
  TimePoint at{};                // the instant of the transition (may precede the call that
                                 // applied it lazily, e.g. a probe's timeout instant)
};

// The recovery ramp (CircuitBreakerConfig::recovery_ramp): started when HALF_OPEN closed (right
// after that TransitionEvent), completed when a call or outcome first finds its end passed
// (`at` is then the end itself), aborted by any transition while it runs (recovery_failed,
// operator; right after that TransitionEvent).
enum class RecoveryPhase : std::uint8_t { kStarted, kCompleted, kAborted };

struct RecoveryEvent {
  RecoveryPhase phase = RecoveryPhase::kStarted;
  double start_share = 0.0;  // the share of calls admitted when the ramp started
  Duration ramp{0};          // its length
  TimePoint at{};
};

struct RejectionEvent {
  ReasonCode code = ReasonCode::kCircuitOpen;  // kCircuitOpen, kCircuitHalfOpen or
                                               // kCircuitRecovering
  Priority priority = Priority::kInteractive;
  Duration retry_after{0};
  TimePoint at{};
};

struct OutcomeEvent {
  Outcome outcome = Outcome::kSuccess;
  Duration duration{0};
  bool slow = false;
  bool probe = false;  // the call was admitted in HALF_OPEN
  bool late = false;   // admitted in an earlier generation: counted, moved nothing
  Priority priority = Priority::kInteractive;
  TimePoint at{};
};

struct Event {
  std::uint64_t sequence = 0;  // per breaker, strictly increasing in the order of the facts
  std::string_view breaker;    // the breaker's name (valid while the breaker lives)
  std::variant<TransitionEvent, RejectionEvent, OutcomeEvent, RecoveryEvent> detail;
};

using Listener = std::function<void(const Event&)>;
using ListenerId = std::uint64_t;

}  // namespace fusebox

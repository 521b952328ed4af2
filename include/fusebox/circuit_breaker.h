// fusebox/circuit_breaker.h
//
// A CircuitBreaker guards calls to one dependency and fails fast while it looks sick:
//
//   CLOSED --trip policy--> OPEN --cooldown, next call--> HALF_OPEN
//   HALF_OPEN --enough good probes--> CLOSED;  any bad probe --> OPEN (fresh cooldown)
//
//   Operator states, entered and left only by command: DISABLED (admit all, nothing trips),
//   METRICS_ONLY (admit all, record, never trip), FORCED_OPEN (reject all with CIRCUIT_OPEN).
//
// The rules (trip policies, probes, active probing, the dependency's own wait, the recovery
// ramp, generations, reconfiguration) are in docs/breaker-rules.md; how the code keeps its hot
// paths lock-free, in docs/architecture.md.
//
// Thread safety: all members may be called concurrently. The CLOSED path of the consecutive
// policy (admit, record a fast success) and the OPEN reject path take no lock and write only
// memory owned by the calling thread; everything else takes one short internal lock.
// Listeners run after the lock is released.
//
// Time: reads only the injected Clock (DefaultClock() unless given), twice per admitted call and
// once per rejection; a CachedClock (fusebox/clock.h) makes a read one atomic load. No exceptions
// and, but for the in-flight list and a thread's first counter block, no allocation on the
// admit/record/reject paths.
//
// Memory: 240 bytes a breaker (docs/benchmarks.md), plus 80 bytes per thread that calls it.
//
// Lifetime: the breaker must outlive its permits.
//
// Example:
//   auto created = fusebox::CircuitBreaker::Create("shipping", {.failure_threshold = 5});
//   if (!created) die(created.error().message);
//   fusebox::CircuitBreaker& breaker = **created;
//
//   auto permit = breaker.TryAcquire(fusebox::Priority::kInteractive);
//   if (!permit) return Reject(permit.error());  // kCircuitOpen carries retry_after
//   bool ok = CallShipping(permit->deadline());
//   permit->Record(ok ? fusebox::Outcome::kSuccess : fusebox::Outcome::kFailure);
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "fusebox/clock.h"
#include "fusebox/events.h"
#include "fusebox/metrics.h"
#include "fusebox/outcome.h"
#include "fusebox/random.h"
#include "fusebox/status.h"

namespace fusebox {

enum class TripPolicy : std::uint8_t { kConsecutive, kCountWindow, kTimeWindow };

// "consecutive", "count_window", "time_window".
std::string_view ToString(TripPolicy policy) noexcept;
// Parses the names above; nullopt for anything else.
std::optional<TripPolicy> ParseTripPolicy(std::string_view name) noexcept;

// Who runs the HALF_OPEN probe. kPassive: the first callers after the cooldown (their own calls
// are the probes). kActive: only a prober the application runs (TryAcquireProbe;
// fusebox/asio_prober.h runs one on Boost.Asio): callers are refused while the breaker is not
// CLOSED, so no user's call ever waits on a sick dependency to find out whether it is back.
enum class ProbeMode : std::uint8_t { kPassive, kActive };

// "passive", "active".
std::string_view ToString(ProbeMode mode) noexcept;
// Parses the names above; nullopt for anything else.
std::optional<ProbeMode> ParseProbeMode(std::string_view name) noexcept;

// Permit::Record's second argument when the dependency said how long to stay away (an HTTP
// 429's or 503's Retry-After): the breaker stays OPEN at least that long from the outcome.
struct MinOpen {
  Duration duration{};
};

struct CircuitBreakerConfig {
  // How CLOSED decides to trip. Default kConsecutive.
  TripPolicy trip = TripPolicy::kConsecutive;
  // kConsecutive: trip when this many failures or slow calls come in a row. Default 5,
  // range [1, 1000000].
  std::uint32_t failure_threshold = 5;
  // Window policies: outcomes kept (kCountWindow) or one-second buckets (kTimeWindow).
  // Default 100, range [1, 1000000] (calls) or [1, 3600] (seconds).
  std::uint32_t window_size = 100;
  // Window policies: no rate trips before this many outcomes are in the window. Default 10,
  // range [1, 1000000], and at most window_size for kCountWindow (a count window never holds
  // more outcomes than that, so a larger gate would never open: Validate() refuses it).
  std::uint32_t minimum_calls = 10;
  // Window policies: trip when failures / calls >= this. Default 0.5, range (0, 1].
  double failure_rate_threshold = 0.5;
  // A call is slow when its duration is >= this. Default: call_timeout (only timeouts are slow).
  // Range (0, 1 day].
  std::optional<Duration> slow_call_duration = std::nullopt;
  // Window policies: trip when slow / calls >= this. Default 1.0, range (0, 1].
  double slow_call_rate_threshold = 1.0;
  // The per-call budget: a call that reaches it is aborted and recorded as a timeout.
  // Default 7 s, range (0, 1 day].
  Duration call_timeout = std::chrono::seconds(7);
  // How long OPEN rejects before a probe may run. Default 10 s, range (0, 1 day].
  Duration cooldown = std::chrono::seconds(10);
  // Probes in flight at once in HALF_OPEN. Default 1, range [1, 10000].
  std::uint32_t half_open_max_probes = 1;
  // Good probes needed to close. Default: half_open_max_probes. Range [1, 10000].
  std::optional<std::uint32_t> half_open_successes = std::nullopt;
  // Whether a batch call may take a probe slot. Default false.
  bool batch_may_probe = false;
  // Calls still running past slow_call_duration count as slow before they finish, each once:
  // kConsecutive adds them to the run of failures and slow calls; the window policies to the
  // calls and slow calls of the slow-call rate (and its minimum_calls gate; the failure rate
  // never sees them: a call still running has not failed). So a hung dependency trips the
  // breaker before its calls' budgets run out. Default false. Admission then takes the lock.
  bool inflight_slow_accounting = false;
  // After each failed probe the next cooldown is the previous one times this, capped at
  // cooldown_max. Default 1 (no growth), range [1, 100].
  double cooldown_multiplier = 1.0;
  // Cap of the grown cooldown; growth resets after the breaker stayed CLOSED this long.
  // Default: 5 min, or the cooldown when that is longer. Range [cooldown, 1 day].
  std::optional<Duration> cooldown_max = std::nullopt;
  // Each cooldown is drawn uniformly from [c*(1-jitter), c*(1+jitter)]. Default 0, range [0, 1].
  double cooldown_jitter = 0.0;
  // After HALF_OPEN closes, the share of calls admitted grows linearly over this long, from the
  // share HALF_OPEN admitted to all of them; the rest are rejected with kCircuitRecovering. One
  // failure or slow call during the ramp reopens the breaker as a failed probe would. Default 0
  // (no ramp: CLOSED admits everything at once), range [0, 1 day].
  Duration recovery_ramp = Duration::zero();
  // The recovery ramp starts from the smaller of this share and the share HALF_OPEN admitted,
  // so a quick probe (which HALF_OPEN admits before any other call arrives, a share of 1) does
  // not let the whole flood in at once. Default 0.1, range (0, 1]; 1 starts from HALF_OPEN's
  // share alone.
  double recovery_ramp_start = 0.1;
  // Who probes: kPassive (default), the first callers after the cooldown; kActive, only
  // TryAcquireProbe (an application's prober), and callers are refused until CLOSED.
  ProbeMode probe_mode = ProbeMode::kPassive;
  // kActive: how long OPEN waits before each probe, in place of `cooldown` (grown by
  // cooldown_multiplier up to probe_interval_max, jittered by cooldown_jitter, as the cooldown
  // is in passive mode). Default: cooldown. Range (0, 1 day].
  std::optional<Duration> probe_interval = std::nullopt;
  // kActive: cap of the grown probe interval, in place of cooldown_max. Default: the larger of
  // 5 min and the probe interval. Range [probe interval, 1 day].
  std::optional<Duration> probe_interval_max = std::nullopt;
  // The budget of a probe taken with TryAcquireProbe (its deadline is its start plus this, or
  // plus call_timeout when that is shorter), so a probe into a hang costs less than a call's
  // whole budget. Default: call_timeout. Range (0, 1 day].
  std::optional<Duration> probe_budget = std::nullopt;

  // The first field outside its valid range, or nullopt when the config is valid.
  std::optional<ConfigError> Validate() const;

  // Field by field (an unset optional differs from one set to its default value).
  bool operator==(const CircuitBreakerConfig&) const = default;

  Duration effective_slow_call_duration() const noexcept {
    return slow_call_duration.value_or(call_timeout);
  }
  Duration effective_cooldown_max() const noexcept {
    if (cooldown_max.has_value()) {
      return *cooldown_max;
    }
    return std::max<Duration>(std::chrono::minutes(5), cooldown);
  }
  std::uint32_t effective_half_open_successes() const noexcept {
    return half_open_successes.value_or(half_open_max_probes);
  }
  Duration effective_probe_interval() const noexcept { return probe_interval.value_or(cooldown); }
  Duration effective_probe_interval_max() const noexcept {
    if (probe_interval_max.has_value()) {
      return *probe_interval_max;
    }
    return std::max<Duration>(std::chrono::minutes(5), effective_probe_interval());
  }
  Duration effective_probe_budget() const noexcept {
    return std::min(probe_budget.value_or(call_timeout), call_timeout);
  }
  // The wait before a probe in the mode in force (cooldown, or probe_interval when active), and
  // its cap.
  Duration open_wait() const noexcept {
    return probe_mode == ProbeMode::kActive ? effective_probe_interval() : cooldown;
  }
  Duration open_wait_max() const noexcept {
    return probe_mode == ProbeMode::kActive ? effective_probe_interval_max()
                                            : effective_cooldown_max();
  }
};

// What differs between two configs, one line per changed field in declaration order, as
// "field: old -> new" (durations in seconds, e.g. "cooldown: 10s -> 20s"; an unset optional
// prints as "default"). Empty when nothing differs. Meant for the log line of a live
// reconfiguration (CircuitBreaker::Reconfigure).
std::vector<std::string> DescribeChanges(const CircuitBreakerConfig& before,
                                         const CircuitBreakerConfig& after);

// What the breaker needs from outside. Null members take the defaults.
struct CircuitBreakerDeps {
  Clock* clock = nullptr;    // default: DefaultClock()
  Random* random = nullptr;  // cooldown jitter; default: a SplitMix64 seeded from the name
};

class CircuitBreaker;

// The right to make one call. Records exactly one outcome: the first Record() wins, later ones
// are ignored, and a permit destroyed without a Record() records kIgnored. Move-only.
class [[nodiscard]] Permit {
 public:
  Permit(Permit&& other) noexcept
      : breaker_(std::exchange(other.breaker_, nullptr)),
        generation_(other.generation_),
        start_(other.start_),
        deadline_(other.deadline_),
        flags_(other.flags_),
        ticket_(other.ticket_) {}
  Permit& operator=(Permit&& other) noexcept;
  Permit(const Permit&) = delete;
  Permit& operator=(const Permit&) = delete;
  ~Permit() {
    if (breaker_ != nullptr) {
      Record(Outcome::kIgnored);
    }
  }

  // Records the outcome; the duration is measured with the breaker's clock.
  inline void Record(Outcome outcome) noexcept;
  // Records the outcome with a duration the caller measured.
  void Record(Outcome outcome, Duration elapsed) noexcept;
  // Records the outcome, and that the dependency asked to be left alone for `hold` (a
  // Retry-After): the breaker stays OPEN at least until now + hold.duration, whether this outcome
  // opens it, it is open already, or it opens later while the hold lasts; no probe, passive or
  // active, runs before then. A transition to CLOSED ends the hold. Applied even when the outcome
  // is late (it is the dependency's word, whatever the generation). Zero or negative: Record().
  void Record(Outcome outcome, MinOpen hold) noexcept;

  TimePoint start() const noexcept { return start_; }
  // start + call_timeout: the operation must give up by then.
  TimePoint deadline() const noexcept { return deadline_; }
  bool is_probe() const noexcept { return (flags_ & kProbe) != 0; }
  Priority priority() const noexcept {
    return (flags_ & kBatch) != 0 ? Priority::kBatch : Priority::kInteractive;
  }
  std::uint64_t generation() const noexcept { return generation_; }
  bool recorded() const noexcept { return breaker_ == nullptr; }

 private:
  friend class CircuitBreaker;
  static constexpr std::uint32_t kProbe = 1U;
  static constexpr std::uint32_t kBatch = 2U;
  static constexpr std::uint32_t kTracked = 4U;  // in the in-flight list (slow accounting)

  Permit(CircuitBreaker* breaker, std::uint64_t generation, TimePoint start, TimePoint deadline,
         std::uint32_t flags, std::uint64_t ticket) noexcept
      : breaker_(breaker),
        generation_(generation),
        start_(start),
        deadline_(deadline),
        flags_(flags),
        ticket_(ticket) {}

  CircuitBreaker* breaker_;  // null once recorded or moved from
  std::uint64_t generation_;
  TimePoint start_;
  TimePoint deadline_;
  std::uint32_t flags_;
  std::uint64_t ticket_;  // probe slot index, or in-flight list ticket
};

// Per-call options of the guarded call.
struct CallOptions {
  Priority priority = Priority::kInteractive;
  // The caller's own cancellation. A call whose token is stop-requested by the time it returns
  // records kIgnored and yields kCancelled.
  std::stop_token stop_token{};
};

// What a guarded operation receives: its deadline (start + call_timeout), which it must honour
// (socket timeouts, poll deadlines...), and the caller's stop token.
struct CallContext {
  TimePoint deadline{};  // on the breaker's clock
  std::stop_token stop_token{};
  bool probe = false;
  const Clock* clock = nullptr;  // the breaker's clock, which `deadline` is on

  // The time left until the deadline (zero once it has passed, or without a clock).
  Duration remaining() const noexcept {
    return clock == nullptr ? Duration::zero()
                            : std::max(Duration::zero(), deadline - clock->Now());
  }
  // The deadline as a steady_clock time point, for a timer or a timed wait (a socket's, a
  // condition variable's, FlightWaitOptions::deadline): steady_clock::now() + remaining().
  std::chrono::steady_clock::time_point steady_deadline() const noexcept {
    return std::chrono::steady_clock::now() + remaining();
  }
};

class CircuitBreaker {
 public:
  using Config = CircuitBreakerConfig;

  // Refuses an empty name (field "name") and an invalid config (the ConfigError of Validate()).
  static Result<std::unique_ptr<CircuitBreaker>, ConfigError> Create(std::string name,
                                                                     Config config,
                                                                     CircuitBreakerDeps deps = {});
  ~CircuitBreaker();
  CircuitBreaker(const CircuitBreaker&) = delete;
  // One allocation holds the breaker and, right after it, its state: a call on a breaker that is
  // not in the cache then misses on adjacent lines rather than following a pointer.
  // (Public for the unique_ptr's delete; only Create() constructs a breaker.)
  static void* operator new(std::size_t size);
  static void operator delete(void* block) noexcept;
  CircuitBreaker& operator=(const CircuitBreaker&) = delete;

  // Asks to make one call now. Either a Permit, or an Error with kCircuitOpen (retry_after = time
  // until a probe may run), kCircuitHalfOpen (no probe slot for this call) or kCircuitRecovering
  // (the recovery ramp turned this call away).
  // With probe_mode kActive the OPEN and HALF_OPEN states refuse every call here (kCircuitOpen,
  // retry_after = time to the next probe, at least kProbeRetryHint once it is due; or
  // kCircuitHalfOpen while the probe runs).
  Result<Permit> TryAcquire(Priority priority = Priority::kInteractive) noexcept;

  // A probe's permit, for a prober (in either probe mode): in OPEN once the wait before a probe
  // has passed (moving to HALF_OPEN), or in HALF_OPEN when a probe slot is free and the fleet
  // coordinator, if any, grants it. Its deadline is start + probe_budget; it is scored as any
  // HALF_OPEN probe (slow is bad). Otherwise an Error saying when to ask again: kCircuitOpen
  // (retry_after = the wait left; the configured cooldown in FORCED_OPEN), kCircuitHalfOpen (no
  // free slot, or a peer holds the fleet's probe: retry_after = when the earliest probe in flight
  // is due, or kProbeRetryHint), kCancelled when nothing needs a probe (CLOSED, METRICS_ONLY,
  // DISABLED; retry_after zero).
  Result<Permit> TryAcquireProbe() noexcept;
  // The hint given when a probe is due or running and no exact time is known.
  static constexpr Duration kProbeRetryHint = std::chrono::seconds(1);

  // The dependency asked to be left alone for `duration` from now (an HTTP Retry-After): the
  // breaker stays OPEN at least until then, whether it is open already or opens later while the
  // hold lasts, and no probe, passive or active, runs before then. A transition to CLOSED (or
  // Reset) ends the hold. Permit::Record(outcome, MinOpen) is this and Record(outcome) in one;
  // call this one before recording when the outcome is recorded elsewhere (fusebox::asio::Run
  // records it): an outcome that opens the breaker then opens it for the hold at least.
  void HoldOpen(Duration duration) noexcept;

  // The synchronous guarded call. Acquires a permit, runs `op(const CallContext&)`, and records:
  //   - kIgnored and returns kCancelled when options.stop_token was stop-requested;
  //   - kTimeout and returns kUpstreamSlow when the op returned at or after its deadline (the op
  //     must honour ctx.deadline; the breaker cannot abort a synchronous call by itself);
  //   - otherwise classify(result): kSuccess returns the result, kFailure returns
  //     kUpstreamError, kTimeout returns kUpstreamSlow, kIgnored returns kCancelled.
  // If op throws, kFailure is recorded and the exception propagates.
  template <typename Op, typename Classify>
  auto Call(Op&& op, Classify&& classify, CallOptions options = {})
      -> Result<std::invoke_result_t<Op&, const CallContext&>>;

  // Call() for ops whose result converts to bool: true is a success, false a failure.
  template <typename Op>
  auto Call(Op&& op, CallOptions options = {})
      -> Result<std::invoke_result_t<Op&, const CallContext&>>;

  // The stored state. The lazy moves (OPEN -> HALF_OPEN, an overdue probe's timeout) happen on
  // the next call, so right after a cooldown this still says kOpen; see retry_after().
  State state() const noexcept;
  // Time left until a probe may be admitted: positive only in OPEN before the cooldown ends.
  Duration retry_after() const noexcept;
  // The share of the recovery ramp elapsed (0 to 1), or nullopt when no ramp runs.
  std::optional<double> recovery_progress() const noexcept;
  MetricsSnapshot Snapshot() const;

  // Operator commands (each starts a new generation and emits a transition with kOperator).
  void ForceOpen();    // -> FORCED_OPEN
  void Disable();      // -> DISABLED
  void MetricsOnly();  // -> METRICS_ONLY
  void ForceClose();   // -> CLOSED under the normal rules, window cleared
  void Reset();        // -> CLOSED, window, run counter, probes and cooldown growth cleared

  // Applies a new config to the live breaker. An invalid config changes nothing and its
  // ConfigError is returned. A valid one keeps the state, the generation, the totals, the run of
  // failures and the window, except where the window cannot be reinterpreted: a changed `trip`,
  // `window_size` (window policies) or `inflight_slow_accounting` clears the window and, in
  // CLOSED or METRICS_ONLY, starts a new generation in the same state (a TransitionEvent with
  // cause kReconfigured). Which field applies when is in docs/breaker-rules.md
  // ("Reconfiguration"); DescribeChanges() says what changed. Callable from any thread while
  // calls run; the hot paths take no lock for it.
  std::optional<ConfigError> Reconfigure(const Config& config);

  ListenerId AddListener(Listener listener);
  void RemoveListener(ListenerId id);

  // Transitions only, for components that act on the state (a prober): unlike a Listener, an
  // observer does not take the CLOSED path off its lock-free course. Called after every
  // transition, on the thread that caused it, after the lock is released; must not block. The
  // function is destroyed when removed or when the breaker is (so an observer may learn of the
  // breaker's end from its captures' destructors).
  using TransitionObserver = std::function<void(const TransitionEvent&)>;
  ListenerId AddTransitionObserver(TransitionObserver observer);
  void RemoveTransitionObserver(ListenerId id);

  // ---- Coordination with peers (fusebox/fleet.h; docs/breaker-rules.md, "Fleet") ----
  // What a coordinator such as fusebox::Fleet plugs into a breaker. Unlike a Listener it sees
  // transitions only, so the CLOSED path stays lock-free and calls out to nobody.
  struct Coordination {
    // Called after every transition (any cause), on the thread that caused it, after the lock
    // is released, like a Listener.
    std::function<void(const TransitionEvent&)> on_transition;
    // Asked under the breaker's lock before a HALF_OPEN probe slot is granted, with the
    // HALF_OPEN generation and the probes already in flight: false answers kCircuitHalfOpen.
    // Must be quick and non-blocking, and must not call into the breaker.
    std::function<bool(std::uint64_t generation, std::uint32_t probes_in_flight)> may_probe;
  };
  // Installs the coordinator (an empty Coordination removes it). Callable while calls run; a
  // transition already being delivered may still reach the previous one.
  void SetCoordination(Coordination coordination);
  // Applies a transition decided elsewhere, with cause kFleet: OPEN with `remaining_cooldown`
  // (from now, at most the breaker's own cooldown_max, or probe_interval_max when probing
  // actively; the cooldown growth is untouched), or CLOSED or an operator state as the operator
  // commands enter them. HALF_OPEN is refused (returns false): each breaker enters it on its own.
  bool Adopt(State to, Duration remaining_cooldown = Duration::zero());

  const std::string& name() const noexcept;
  // The config in force (a copy: Reconfigure may replace it at any moment).
  Config config() const;
  Clock& clock() const noexcept { return *clock_; }

 private:
  friend class Permit;
  struct Impl;
  CircuitBreaker(std::string name, Config config, CircuitBreakerDeps deps);
  void OnOutcome(const Permit& permit, Outcome outcome, TimePoint now, Duration elapsed) noexcept;
  [[gnu::noinline]] void OnOutcomeSlow(const Permit& permit, Outcome outcome, TimePoint now,
                                       Duration elapsed) noexcept;
  // `slow`: as OnOutcomeSlow classified the call, once (a Reconfigure in between cannot make
  // the two paths judge one outcome differently).
  [[gnu::noinline]] void OnOutcomeLocked(const Permit& permit, Outcome outcome, TimePoint now,
                                         Duration elapsed, bool slow) noexcept;
  [[gnu::noinline]] Result<Permit> TryAcquireLocked(Priority priority) noexcept;
  void Command(State to, bool reset_growth);

  // The clock reading of the hot paths, without a virtual call for the two clocks made for them:
  // one atomic load for a CachedClock (testing::ManualClock included), a direct coarse read for
  // the default CoarseMonotonicClock; otherwise the injected clock's Now().
  TimePoint Now() const noexcept {
    if (cached_clock_ != nullptr) {
      return cached_clock_->Read();
    }
    return coarse_clock_ ? CoarseMonotonicClock::Read() : clock_->Now();
  }

  // The state, in this object's allocation right after it (operator new): its address is
  // computed, not loaded, and the fields the hot paths read, from clock_ on, are contiguous with
  // the state's lock-free group.
  Impl& impl() const noexcept;
  std::string name_;
  Clock* clock_;  // the breaker's clock; here so that Permit::Record reads it without a call
  // clock_ when it is a CachedClock, else null. Decided once at construction.
  const CachedClock* cached_clock_;
  bool coarse_clock_;  // clock_ is a CoarseMonotonicClock
};

// ---- inline and template implementations ----

// Inline: it is half of every call's hot path.
inline void Permit::Record(Outcome outcome) noexcept {
  if (breaker_ == nullptr) {
    return;
  }
  CircuitBreaker* breaker = std::exchange(breaker_, nullptr);
  const TimePoint now = breaker->Now();
  breaker->OnOutcome(*this, outcome, now, now - start_);
}

template <typename Op, typename Classify>
auto CircuitBreaker::Call(Op&& op, Classify&& classify, CallOptions options)
    -> Result<std::invoke_result_t<Op&, const CallContext&>> {
  auto permit = TryAcquire(options.priority);
  if (!permit) {
    return permit.error();
  }
  const CallContext ctx{permit->deadline(), std::move(options.stop_token), permit->is_probe(),
                        &clock()};
  std::optional<std::invoke_result_t<Op&, const CallContext&>> result;
  try {
    result.emplace(std::invoke(op, ctx));
  } catch (...) {
    permit->Record(Outcome::kFailure);
    throw;
  }
  if (ctx.stop_token.stop_requested()) {
    permit->Record(Outcome::kIgnored);
    return Error{ReasonCode::kCancelled};
  }
  if (Now() >= ctx.deadline) {
    permit->Record(Outcome::kTimeout);
    return Error{ReasonCode::kUpstreamSlow};
  }
  const Outcome outcome = std::invoke(classify, std::as_const(*result));
  permit->Record(outcome);
  switch (outcome) {
    case Outcome::kSuccess:
      return std::move(*result);
    case Outcome::kFailure:
      return Error{ReasonCode::kUpstreamError};
    case Outcome::kTimeout:
      return Error{ReasonCode::kUpstreamSlow};
    case Outcome::kIgnored:
      break;
  }
  return Error{ReasonCode::kCancelled};
}

template <typename Op>
auto CircuitBreaker::Call(Op&& op, CallOptions options)
    -> Result<std::invoke_result_t<Op&, const CallContext&>> {
  return Call(
      std::forward<Op>(op),
      [](const auto& r) { return static_cast<bool>(r) ? Outcome::kSuccess : Outcome::kFailure; },
      std::move(options));
}

}  // namespace fusebox

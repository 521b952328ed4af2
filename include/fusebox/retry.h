// fusebox/retry.h
//
// Bounded retries with exponential backoff and jitter, built *around* a CircuitBreaker: every
// attempt asks the breaker for a permit, so a sick dependency is not hammered by retries, and a
// breaker rejection (kCircuitOpen, kCircuitHalfOpen, kCircuitRecovering) ends the retries at once
// and is returned.
//
//   attempt 1 --failure/timeout--> wait BackoffFor(1) --> attempt 2 --> ... --> attempt N: give up
//       |                                                    |
//       +--success, cancel, breaker rejection: return it ----+
//
// Only failures and timeouts (kUpstreamError, kUpstreamSlow) are retried. A success, a
// cancellation or ignored outcome (kCancelled), a breaker rejection and a full bulkhead
// (kOverloaded) are final. See `IsRetryable()`.
//
// The backoff grows exponentially to a cap and is jittered from an injected, seeded Random, so a
// test or the simulator gets the same schedule every run (RetryPolicy::BackoffFor); the Asio twin
// in fusebox/asio.h reuses it. Retry::Call waits through an injected Sleeper: the default,
// ThreadSleeper, is the only place in fusebox that sleeps; tests pass one that advances a
// ManualClock.
//
// Thread safety: RetryPolicy is a plain value. A Retry may be used by many threads at once (its
// counters are atomics; its Random must be thread-safe, as fusebox::Random requires). Time: Retry
// has no clock of its own; the breaker measures each attempt, and answers retry_after(), with its
// injected Clock.
//
// Lifetime: the Random and the Sleeper passed to Retry::Create must outlive the Retry.
//
// Example:
//   fusebox::SplitMix64Random rng(seed_from_main);
//   auto retry = fusebox::Retry::Create({.max_attempts = 3}, rng);
//   if (!retry) die(retry.error().message);
//   fusebox::Result<Reply> reply = (*retry)->Call(
//       breaker, [&](const fusebox::CallContext& ctx) { return CallShipping(ctx.deadline); },
//       [](const Reply& r) { return r.ok() ? fusebox::Outcome::kSuccess
//                                          : fusebox::Outcome::kFailure; });
//   if (!reply) return Reject(reply.error());  // kCircuitOpen ends retries at once
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "fusebox/circuit_breaker.h"
#include "fusebox/clock.h"
#include "fusebox/outcome.h"
#include "fusebox/random.h"
#include "fusebox/status.h"

namespace fusebox {

// The retry rule, shared by the synchronous and the asynchronous guarded calls.
// Retryable: kUpstreamError (a failure) and kUpstreamSlow (a timeout). Final: kCircuitOpen,
// kCircuitHalfOpen and kCircuitRecovering (the breaker said no: retrying would defeat it),
// kOverloaded and kThrottled (load shedding: retrying adds the load that was shed), kCancelled
// (the caller gave up or the call was ignored).
constexpr bool IsRetryable(ReasonCode code) noexcept {
  return code == ReasonCode::kUpstreamError || code == ReasonCode::kUpstreamSlow;
}

// The same rule for outcomes: kFailure and kTimeout are retryable; kSuccess and kIgnored are not.
constexpr bool IsRetryable(Outcome outcome) noexcept {
  return outcome == Outcome::kFailure || outcome == Outcome::kTimeout;
}

struct RetryPolicy {
  // Attempts in all, the first one included (1 = no retry). Default 3, range [1, 100].
  std::uint32_t max_attempts = 3;
  // Backoff ceiling before the second attempt. Default 100 ms, range [0, 1 day].
  Duration initial_backoff = std::chrono::milliseconds(100);
  // Each further backoff ceiling is the previous one times this. Default 2, range [1, 100].
  double multiplier = 2.0;
  // Cap of the backoff ceiling. Default 10 s, range [initial_backoff, 1 day].
  Duration max_backoff = std::chrono::seconds(10);
  // Fraction of the ceiling that is randomized: the wait is uniform in
  // [ceiling * (1 - jitter), ceiling]. 1 is "full jitter" (uniform in [0, ceiling]), which spreads
  // the retries of many clients best and is the default; 0 waits exactly the ceiling.
  // Default 1, range [0, 1].
  double jitter = 1.0;

  // The first field outside its valid range, or nullopt when the policy is valid.
  std::optional<ConfigError> Validate() const;

  // The un-jittered backoff after attempt `attempt` (1-based) failed, before attempt + 1:
  // min(max_backoff, initial_backoff * multiplier^(attempt - 1)). An `attempt` of 0 counts as 1.
  // Precondition: Validate() passed.
  Duration BackoffCeiling(std::uint32_t attempt) const noexcept;

  // The jittered backoff after attempt `attempt` failed: uniform in
  // [BackoffCeiling(attempt) * (1 - jitter), BackoffCeiling(attempt)]. Draws exactly one number
  // from `random` when jitter > 0 and none when jitter == 0. Precondition: Validate() passed.
  Duration BackoffFor(std::uint32_t attempt, Random& random) const noexcept;

  // The whole decision after attempt `attempt` (1-based) ended with `error`: the wait before the
  // next attempt, or nullopt when the retries end (the error is not retryable, or `attempt` was
  // the last allowed). Draws from `random` only when it returns a wait.
  std::optional<Duration> NextBackoff(std::uint32_t attempt, const Error& error,
                                      Random& random) const noexcept;
};

// How the synchronous retry waits between attempts. Tests inject a fake that advances a
// testing::ManualClock; production uses DefaultSleeper().
class Sleeper {
 public:
  virtual ~Sleeper() = default;
  // Blocks the calling thread for `d` (d <= 0 returns at once). Must be safe to call from several
  // threads at once.
  virtual void SleepFor(Duration d) = 0;
};

// The real sleeper: std::this_thread::sleep_for. This is the only place in fusebox that sleeps.
// The sleep is not interrupted by a stop token; Retry::Call checks the token when it wakes.
class ThreadSleeper final : public Sleeper {
 public:
  void SleepFor(Duration d) override;
};

// The process-wide ThreadSleeper. Lives forever.
Sleeper& DefaultSleeper() noexcept;

// Totals of one Retry since creation (relaxed counters: a snapshot taken while calls run may lag).
struct RetryMetrics {
  std::uint64_t calls = 0;      // Retry::Call invocations that returned
  std::uint64_t attempts = 0;   // breaker permits asked for (each attempt asks for one)
  std::uint64_t retries = 0;    // attempts after the first
  std::uint64_t succeeded = 0;  // calls that ended in a value
  std::uint64_t exhausted = 0;  // calls whose last allowed attempt failed or timed out
  std::uint64_t rejected = 0;   // calls ended by a breaker rejection (open or half-open)
  std::uint64_t cancelled = 0;  // calls ended by cancellation or an ignored outcome
};

// A validated RetryPolicy bound to its Random and Sleeper, with the synchronous retried call.
class Retry {
 public:
  // Refuses an invalid policy with the ConfigError of Validate(). `random` draws the jitter (seed
  // it yourself: fusebox never seeds from the time or the OS, and two processes with the same seed
  // would retry in step); `sleeper` waits between attempts.
  static Result<std::unique_ptr<Retry>, ConfigError> Create(RetryPolicy policy, Random& random,
                                                            Sleeper& sleeper = DefaultSleeper());

  Retry(const Retry&) = delete;
  Retry& operator=(const Retry&) = delete;
  ~Retry() = default;

  // Runs `op(const CallContext&)` through `breaker.Call(op, classify, options)` up to
  // policy().max_attempts times. Each attempt asks the breaker for a permit and is classified and
  // recorded by the breaker exactly as one CircuitBreaker::Call. Returns:
  //   - the first success;
  //   - at once, a breaker rejection (kCircuitOpen with retry_after, kCircuitHalfOpen or
  //     kCircuitRecovering);
  //   - at once, kCancelled (options.stop_token stopped, or classify said kIgnored), also when
  //     the stop token is found stopped after a backoff (no further attempt is made);
  //   - the last kUpstreamError / kUpstreamSlow when every attempt failed or timed out.
  // Between attempts it waits NextBackoff() through the Sleeper, except when the breaker reports
  // that it will still be open when that wait ends (retry_after() > wait): then the next attempt
  // is made at once, so the breaker's own rejection ends the retries without a useless wait.
  // If op or classify throws, that attempt is recorded as a failure (by the breaker) and the
  // exception propagates: exceptions are never retried.
  template <typename Op, typename Classify>
    requires std::is_invocable_r_v<Outcome, Classify&,
                                   const std::invoke_result_t<Op&, const CallContext&>&>
  auto Call(CircuitBreaker& breaker, Op&& op, Classify&& classify, CallOptions options = {})
      -> Result<std::invoke_result_t<Op&, const CallContext&>>;

  // Call() for ops whose result converts to bool: true is a success, false a failure.
  template <typename Op>
  auto Call(CircuitBreaker& breaker, Op&& op, CallOptions options = {})
      -> Result<std::invoke_result_t<Op&, const CallContext&>>;

  const RetryPolicy& policy() const noexcept { return policy_; }
  RetryMetrics Snapshot() const noexcept;

 private:
  Retry(RetryPolicy policy, Random& random, Sleeper& sleeper) noexcept
      : policy_(policy), random_(random), sleeper_(sleeper) {}

  // What to do after attempt `attempt` failed with `error`: nullopt to return the error, else
  // the wait (possibly zero) before the next attempt. Counts the ending when it returns nullopt.
  std::optional<Duration> AfterFailure(CircuitBreaker& breaker, std::uint32_t attempt,
                                       const Error& error, const CallOptions& options) noexcept;
  void CountAttempt(std::uint32_t attempt) noexcept;
  void CountSuccess() noexcept;

  const RetryPolicy policy_;
  Random& random_;
  Sleeper& sleeper_;

  // Statistics only (relaxed): no decision reads them.
  std::atomic<std::uint64_t> calls_{0};
  std::atomic<std::uint64_t> attempts_{0};
  std::atomic<std::uint64_t> retries_{0};
  std::atomic<std::uint64_t> succeeded_{0};
  std::atomic<std::uint64_t> exhausted_{0};
  std::atomic<std::uint64_t> rejected_{0};
  std::atomic<std::uint64_t> cancelled_{0};
};

// ---- implementation of the templates ----

template <typename Op, typename Classify>
  requires std::is_invocable_r_v<Outcome, Classify&,
                                 const std::invoke_result_t<Op&, const CallContext&>&>
auto Retry::Call(CircuitBreaker& breaker, Op&& op, Classify&& classify, CallOptions options)
    -> Result<std::invoke_result_t<Op&, const CallContext&>> {
  for (std::uint32_t attempt = 1;; ++attempt) {
    CountAttempt(attempt);
    // op and classify are passed as lvalues: they are invoked once per attempt.
    auto result = breaker.Call(op, classify, options);
    if (result) {
      CountSuccess();
      return result;
    }
    const std::optional<Duration> wait = AfterFailure(breaker, attempt, result.error(), options);
    if (!wait) {
      return result;
    }
    if (wait->count() > 0) {
      sleeper_.SleepFor(*wait);
    }
    if (options.stop_token.stop_requested()) {
      cancelled_.fetch_add(1, std::memory_order_relaxed);
      calls_.fetch_add(1, std::memory_order_relaxed);
      return Error{ReasonCode::kCancelled};
    }
  }
}

template <typename Op>
auto Retry::Call(CircuitBreaker& breaker, Op&& op, CallOptions options)
    -> Result<std::invoke_result_t<Op&, const CallContext&>> {
  return Call(
      breaker, std::forward<Op>(op),
      [](const auto& r) { return static_cast<bool>(r) ? Outcome::kSuccess : Outcome::kFailure; },
      std::move(options));
}

}  // namespace fusebox

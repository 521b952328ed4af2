// internal/trip_rule.h (not installed: the breaker's trip rules)
//
// When CLOSED gives way to OPEN, by policy (docs/breaker-rules.md, "Trip policies"):
//   - consecutive: the run of failed or slow calls, plus the calls still running past
//     slow_call_duration (in-flight slow accounting), reaches failure_threshold
//     (ConsecutiveTripCause; the run itself is the breaker's lock-free counter);
//   - count or time window: over at least minimum_calls, the failure rate or the slow-call rate
//     (the calls running slow joining the latter) reaches its threshold (WindowRule).
// The rate tests are exact: the smallest count that reaches a threshold is found once per window
// size and compared as an integer.
//
// Thread safety: none; the breaker calls these under its lock. Time: told, never read.
//
// Example:
//   std::unique_ptr<WindowRule> rule = WindowRule::For(config);  // null: consecutive
//   rule->Add({.failure = true}, now);
//   if (auto cause = rule->TripCause(config, rule->TotalsAt(now), 0)) { /* open, for *cause */ }
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "fusebox/circuit_breaker.h"
#include "fusebox/clock.h"
#include "fusebox/events.h"
#include "internal/sliding_window.h"

namespace fusebox::internal {

// The smallest count c in [0, calls] with c / calls >= threshold, decided exactly as the
// division decides it (3/10 rounds to the same double as the literal 0.3, where 0.3 * 10 does
// not); calls + 1 when no count reaches it.
std::uint64_t MinCountReaching(std::uint64_t calls, double threshold) noexcept;

// Why a consecutive run of `run` bad calls, with `running_slow` calls running slow, trips a
// breaker with this threshold, if it does (each call counted once: it leaves the running count
// when it reports).
inline std::optional<TransitionCause> ConsecutiveTripCause(std::uint64_t run,
                                                           std::uint64_t running_slow,
                                                           std::uint32_t threshold) noexcept {
  if (run + running_slow >= threshold) {
    return TransitionCause::kConsecutiveFailures;
  }
  return std::nullopt;
}

// The window of a count- or time-window policy, and the cache of its rate boundaries.
class WindowRule {
 public:
  // The rule of `config`'s policy; null under the consecutive policy.
  static std::unique_ptr<WindowRule> For(const CircuitBreakerConfig& config);

  void Add(Sample sample, TimePoint now) noexcept {
    if (count_) {
      count_->Add(sample);
    } else {
      time_->Add(WholeSecondsSinceEpoch(now), sample);
    }
  }
  // The window's totals at `now` (a time window drops the seconds that fell out).
  WindowTotals TotalsAt(TimePoint now) noexcept {
    return count_ ? count_->totals() : time_->TotalsAt(WholeSecondsSinceEpoch(now));
  }
  // The totals at `now` without changing the window (for a snapshot): a time window's seconds
  // that fell out are dropped from a copy.
  WindowTotals TotalsSeenAt(TimePoint now) const;
  void Clear() noexcept;
  // The thresholds may have changed (Reconfigure): the cached boundaries are computed afresh.
  void ForgetBoundaries() noexcept {
    failure_boundary_ = {};
    slow_boundary_ = {};
  }

  // Why totals `t` trip the breaker, if they do. `running_slow` calls still running past
  // slow_call_duration join the slow-call rate only: a call that has not finished has not failed.
  std::optional<TransitionCause> TripCause(const CircuitBreakerConfig& config,
                                           const WindowTotals& t,
                                           std::uint64_t running_slow) noexcept;

  // Adds `sample` unless, with `may_trip`, the totals it would make trip the breaker: then
  // returns false, having changed nothing (the caller takes the full path, which trips).
  bool AddUnlessItTrips(const CircuitBreakerConfig& config, Sample sample, TimePoint now,
                        bool may_trip) noexcept;

 private:
  // The trip boundary for one window size: a full count window has the same number of calls on
  // every record, so the comparison is two integer compares instead of two divisions.
  struct RateBoundary {
    std::uint64_t calls = 0;      // 0: not computed yet
    std::uint64_t min_count = 0;  // the fewest failures (or slow calls) that reach the threshold
  };

  std::unique_ptr<CountWindow> count_;  // the policy's window: one of the two, the other null
  std::unique_ptr<TimeWindow> time_;
  RateBoundary failure_boundary_;
  RateBoundary slow_boundary_;
};

// Inline, as the rest of the breaker's locked path: a window breaker runs them on every outcome.
inline std::optional<TransitionCause> WindowRule::TripCause(const CircuitBreakerConfig& config,
                                                            const WindowTotals& t,
                                                            std::uint64_t running_slow) noexcept {
  if (t.calls != 0 && t.calls >= config.minimum_calls) {
    if (failure_boundary_.calls != t.calls) {
      failure_boundary_ = {t.calls, MinCountReaching(t.calls, config.failure_rate_threshold)};
    }
    if (t.failures >= failure_boundary_.min_count) {
      return TransitionCause::kFailureRate;
    }
  }
  const std::uint64_t calls = t.calls + running_slow;
  if (calls != 0 && calls >= config.minimum_calls) {
    if (slow_boundary_.calls != calls) {
      slow_boundary_ = {calls, MinCountReaching(calls, config.slow_call_rate_threshold)};
    }
    if (t.slow + running_slow >= slow_boundary_.min_count) {
      return TransitionCause::kSlowCallRate;
    }
  }
  return std::nullopt;
}

inline bool WindowRule::AddUnlessItTrips(const CircuitBreakerConfig& config, Sample sample,
                                         TimePoint now, bool may_trip) noexcept {
  if (count_) {
    if (may_trip && TripCause(config, count_->TotalsWith(sample), 0)) {
      return false;
    }
    count_->Add(sample);
    return true;
  }
  const std::int64_t second = WholeSecondsSinceEpoch(now);
  WindowTotals t = time_->TotalsAt(second);
  t.calls += 1;
  t.failures += sample.failure ? 1U : 0U;
  t.slow += sample.slow ? 1U : 0U;
  if (may_trip && TripCause(config, t, 0)) {
    return false;
  }
  time_->Add(second, sample);
  return true;
}

}  // namespace fusebox::internal

#include "fusebox/retry.h"

#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>

namespace fusebox {
namespace {

constexpr Duration kOneDay = std::chrono::hours(24);

// Same formats as CircuitBreakerConfig::Validate: "%g" numbers, durations in seconds.
std::string Number(double v) {
  std::array<char, 32> buf{};
  std::snprintf(buf.data(), buf.size(), "%g", v);
  return buf.data();
}

std::string Seconds(Duration d) { return Number(ToSeconds(d)) + "s"; }

ConfigError RangeError(const char* field, const std::string& range, const std::string& got) {
  return ConfigError{field, std::string(field) + " must be in " + range + ", got " + got};
}

}  // namespace

std::optional<ConfigError> RetryPolicy::Validate() const {
  if (max_attempts < 1 || max_attempts > 100) {
    return RangeError("max_attempts", "[1, 100]", std::to_string(max_attempts));
  }
  if (initial_backoff < Duration::zero() || initial_backoff > kOneDay) {
    return RangeError("initial_backoff", "[0s, 86400s]", Seconds(initial_backoff));
  }
  // Written so that NaN fails too.
  if (!(multiplier >= 1.0 && multiplier <= 100.0)) {
    return RangeError("multiplier", "[1, 100]", Number(multiplier));
  }
  if (max_backoff > kOneDay) {
    return RangeError("max_backoff", "[initial_backoff, 86400s]", Seconds(max_backoff));
  }
  if (max_backoff < initial_backoff) {
    // Either may be the one the caller set (the other left at its default): the field is the
    // one that differs from its default, and the message names both.
    const RetryPolicy defaults;
    const bool initial_set = initial_backoff != defaults.initial_backoff;
    return ConfigError{initial_set ? "initial_backoff" : "max_backoff",
                       "initial_backoff (" + Seconds(initial_backoff) +
                           ") must not exceed max_backoff (" + Seconds(max_backoff) +
                           (max_backoff == defaults.max_backoff ? ", the default" : "") +
                           "): raise max_backoff or lower initial_backoff"};
  }
  if (!(jitter >= 0.0 && jitter <= 1.0)) {
    return RangeError("jitter", "[0, 1]", Number(jitter));
  }
  return std::nullopt;
}

Duration RetryPolicy::BackoffCeiling(std::uint32_t attempt) const noexcept {
  if (attempt < 1) {
    attempt = 1;
  }
  if (initial_backoff <= Duration::zero()) {
    return Duration::zero();  // avoids 0 * inf below
  }
  // In double: multiplier^(attempt - 1) may overflow to +inf, which the cap absorbs. The result is
  // <= max_backoff <= 1 day, so the conversion back to nanoseconds cannot overflow.
  const double grown = static_cast<double>(initial_backoff.count()) *
                       std::pow(multiplier, static_cast<double>(attempt - 1));
  const double cap = static_cast<double>(max_backoff.count());
  if (!(grown < cap)) {
    return max_backoff;
  }
  return Duration(static_cast<Duration::rep>(grown));
}

Duration RetryPolicy::BackoffFor(std::uint32_t attempt, Random& random) const noexcept {
  const Duration ceiling = BackoffCeiling(attempt);
  if (jitter <= 0.0) {
    return ceiling;
  }
  // u in [0, 1): the wait is in (ceiling * (1 - jitter), ceiling].
  const double u = random.Uniform01();
  const double wait = static_cast<double>(ceiling.count()) * (1.0 - jitter * u);
  return Duration(static_cast<Duration::rep>(wait));
}

std::optional<Duration> RetryPolicy::NextBackoff(std::uint32_t attempt, const Error& error,
                                                 Random& random) const noexcept {
  if (!IsRetryable(error.code) || attempt >= max_attempts) {
    return std::nullopt;
  }
  return BackoffFor(attempt, random);
}

void ThreadSleeper::SleepFor(Duration d) {
  // The one sleep in fusebox (see retry.h): the synchronous retry's wait between attempts.
  if (d > Duration::zero()) {
    std::this_thread::sleep_for(d);
  }
}

Sleeper& DefaultSleeper() noexcept {
  static ThreadSleeper sleeper;
  return sleeper;
}

Result<std::unique_ptr<Retry>, ConfigError> Retry::Create(RetryPolicy policy, Random& random,
                                                          Sleeper& sleeper) {
  if (auto error = policy.Validate()) {
    return *std::move(error);
  }
  return std::unique_ptr<Retry>(new Retry(policy, random, sleeper));
}

RetryMetrics Retry::Snapshot() const noexcept {
  RetryMetrics m;
  m.calls = calls_.load(std::memory_order_relaxed);
  m.attempts = attempts_.load(std::memory_order_relaxed);
  m.retries = retries_.load(std::memory_order_relaxed);
  m.succeeded = succeeded_.load(std::memory_order_relaxed);
  m.exhausted = exhausted_.load(std::memory_order_relaxed);
  m.rejected = rejected_.load(std::memory_order_relaxed);
  m.cancelled = cancelled_.load(std::memory_order_relaxed);
  return m;
}

void Retry::CountAttempt(std::uint32_t attempt) noexcept {
  attempts_.fetch_add(1, std::memory_order_relaxed);
  if (attempt > 1) {
    retries_.fetch_add(1, std::memory_order_relaxed);
  }
}

void Retry::CountSuccess() noexcept {
  succeeded_.fetch_add(1, std::memory_order_relaxed);
  calls_.fetch_add(1, std::memory_order_relaxed);
}

std::optional<Duration> Retry::AfterFailure(CircuitBreaker& breaker, std::uint32_t attempt,
                                            const Error& error,
                                            const CallOptions& options) noexcept {
  std::optional<Duration> wait;
  if (!options.stop_token.stop_requested()) {
    wait = policy_.NextBackoff(attempt, error, random_);
  }
  if (!wait) {
    switch (error.code) {
      case ReasonCode::kCircuitOpen:
      case ReasonCode::kCircuitHalfOpen:
      case ReasonCode::kCircuitRecovering:
        rejected_.fetch_add(1, std::memory_order_relaxed);
        break;
      case ReasonCode::kUpstreamError:
      case ReasonCode::kUpstreamSlow:
        if (options.stop_token.stop_requested()) {
          cancelled_.fetch_add(1, std::memory_order_relaxed);
        } else {
          exhausted_.fetch_add(1, std::memory_order_relaxed);
        }
        break;
      case ReasonCode::kCancelled:
        cancelled_.fetch_add(1, std::memory_order_relaxed);
        break;
      case ReasonCode::kOverloaded:
      case ReasonCode::kThrottled:
        break;
    }
    calls_.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  // The breaker will still be open when the wait ends: try now, so that its rejection (with the
  // true retry_after) ends the retries without sleeping for nothing.
  if (breaker.retry_after() > *wait) {
    return Duration::zero();
  }
  return wait;
}

}  // namespace fusebox

// fusebox/status.h
//
// Typed reasons and the `Result<T>` that the call path returns instead of throwing.
//
// Every "no" that fusebox gives has a distinct `ReasonCode`, because users and operators need to
// tell them apart: "the dependency is down, we are not even trying" (kCircuitOpen) is not
// "recovery is being tested, try again in a moment" (kCircuitHalfOpen), which is not "the
// dependency was too slow" (kUpstreamSlow), and none of them is ever "your input was invalid".
// The codes print as the upper-case names used in logs, metrics and HTTP bodies
// (`ToString(ReasonCode::kCircuitOpen) == "CIRCUIT_OPEN"`).
//
// `Result<T>` holds either a value or an `Error`. It never allocates beyond what T itself does.
//
// Example:
//   fusebox::Result<Permit> permit = breaker.TryAcquire();
//   if (!permit) {
//     log(ToString(permit.error().code), permit.error().retry_after);
//     return;
//   }
//   permit->Record(fusebox::Outcome::kSuccess);
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include "fusebox/clock.h"

namespace fusebox {

enum class ReasonCode : std::uint8_t {
  kCircuitOpen,        // OPEN (or FORCED_OPEN): rejected at once, no work started.
  kCircuitHalfOpen,    // HALF_OPEN and no probe slot for this call ("probe cap").
  kUpstreamSlow,       // the call reached its budget and was aborted (a timeout).
  kUpstreamError,      // the call ran and the classifier called it a failure.
  kOverloaded,         // the bulkhead was full.
  kCancelled,          // the caller cancelled (an ignored outcome).
  kCircuitRecovering,  // CLOSED during the recovery ramp: not this call's share of the traffic.
  kThrottled,          // the client-side throttle shed the call (the dependency refuses many).
};

// "CIRCUIT_OPEN", "CIRCUIT_HALF_OPEN", "UPSTREAM_SLOW", "UPSTREAM_ERROR", "OVERLOADED",
// "CANCELLED", "CIRCUIT_RECOVERING", "THROTTLED".
std::string_view ToString(ReasonCode code) noexcept;

// Why a call did not produce a value.
struct Error {
  ReasonCode code = ReasonCode::kUpstreamError;
  // For kCircuitOpen: time left until a probe may be admitted (0 when it may be admitted now;
  // the configured cooldown for FORCED_OPEN, which only an operator ends). For kCircuitHalfOpen,
  // kOverloaded and kThrottled: a short hint (at least 1 s is a sound Retry-After). For
  // kCircuitRecovering: 1 s, or the time left in the ramp when shorter. Otherwise zero.
  Duration retry_after{0};

  friend bool operator==(const Error&, const Error&) = default;
};

// A configuration value outside its valid range: names the field and the range.
struct ConfigError {
  std::string field;    // e.g. "failure_threshold"
  std::string message;  // e.g. "failure_threshold must be in [1, 1000000], got 0"

  friend bool operator==(const ConfigError&, const ConfigError&) = default;
};

// Either a T or an E. Modelled on std::expected (C++23), reduced to what fusebox needs.
template <typename T, typename E = Error>
class [[nodiscard]] Result {
 public:
  using value_type = T;
  using error_type = E;

  // Implicit on purpose: `return value;` and `return Error{...};` both read naturally.
  template <typename U = T, typename = std::enable_if_t<std::is_constructible_v<T, U&&> &&
                                                        !std::is_same_v<std::decay_t<U>, E> &&
                                                        !std::is_same_v<std::decay_t<U>, Result>>>
  Result(U&& value) : storage_(std::in_place_index<0>, std::forward<U>(value)) {}  // NOLINT
  Result(E error) : storage_(std::in_place_index<1>, std::move(error)) {}          // NOLINT

  bool has_value() const noexcept { return storage_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }

  // Precondition: has_value().
  T& value() & { return std::get<0>(storage_); }
  const T& value() const& { return std::get<0>(storage_); }
  T&& value() && { return std::get<0>(std::move(storage_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  // Precondition: !has_value().
  const E& error() const { return std::get<1>(storage_); }

 private:
  std::variant<T, E> storage_;
};

}  // namespace fusebox

// vin-gateway/core/decode_status.h
//
// The `status` of a decode answer and what it means on the wire (docs/http-api.md): one code per
// distinct reason a decode ended as it did, the HTTP status that carries it, whether a
// Retry-After goes with it, its user-facing sentence, and whether a last-good decode may stand in
// for it ("stale serving").
//
//   OK 200 | VIN_INVALID 422 | CIRCUIT_OPEN 503 | CIRCUIT_HALF_OPEN 503 | CIRCUIT_RECOVERING 503
//   UPSTREAM_SLOW 504 | UPSTREAM_ERROR 502 | OVERLOADED 503 | RATE_LIMITED 429
//   LOCAL_OVERLOADED 503 | UPSTREAM_LATE 504
//
// UPSTREAM_LATE is the answer deadline's (--answer-deadline): the live decode had not answered
// by then, so a stale copy or an offline decode was served (always with one: 200), while the
// live call goes on within its own budget and fills the cache.
//
// CIRCUIT_RECOVERING is the recovery ramp's refusal (--recovery-ramp): the breaker closed, and
// traffic is let back in gradually; this call was not among the share admitted yet.
//
// LOCAL_OVERLOADED is the gateway's own shortage (no file descriptor, no memory for the upstream
// call): neither the vehicle database's fault nor the bulkhead's policy, and never counted by the
// breaker.
//
// These are the domain's statuses only. What the HTTP layer answers about the request itself
// (BAD_REQUEST, NOT_FOUND, METHOD_NOT_ALLOWED, UNAUTHORIZED, PAYLOAD_TOO_LARGE, HEADERS_TOO_LARGE,
// SHUTTING_DOWN, REQUEST_TIMEOUT, TOO_MANY_ATTEMPTS, UNSUPPORTED_MEDIA_TYPE) is
// http/transport_status.h; the two share the wire's `status` field and never a spelling, except OK.
//
// An upstream problem is never reported as VIN_INVALID: only local validation produces it.
//
// Thread safety: pure functions. Time: none.
//
// Example:
//   DecodeStatus s = FromReason(fusebox::ReasonCode::kCircuitOpen);    // kCircuitOpen
//   response.result(HttpStatus(s));                                    // 503
//   body["message"] = DefaultMessage(s);
#pragma once

#include <cstdint>
#include <string_view>

#include "fusebox/status.h"

namespace fusebox::gateway {

enum class DecodeStatus : std::uint8_t {
  kOk,
  kVinInvalid,
  kCircuitOpen,
  kCircuitHalfOpen,
  kCircuitRecovering,
  kUpstreamSlow,
  kUpstreamError,
  kOverloaded,
  kRateLimited,
  kLocalOverloaded,
  kUpstreamLate,
  kThrottled,
};

inline constexpr DecodeStatus kAllDecodeStatuses[] = {
    DecodeStatus::kOk,
    DecodeStatus::kVinInvalid,
    DecodeStatus::kCircuitOpen,
    DecodeStatus::kCircuitHalfOpen,
    DecodeStatus::kCircuitRecovering,
    DecodeStatus::kUpstreamSlow,
    DecodeStatus::kUpstreamError,
    DecodeStatus::kOverloaded,
    DecodeStatus::kRateLimited,
    DecodeStatus::kLocalOverloaded,
    DecodeStatus::kUpstreamLate,
    DecodeStatus::kThrottled,
};

// What the vehicle database did when its decodes last failed: answered with errors (an HTTP
// error status, a body that is not vPIC's), or did not answer in time or at all (a timeout, a
// slow answer, a refused or reset connection). The words of CIRCUIT_OPEN and CIRCUIT_HALF_OPEN
// follow it.
enum class UpstreamProblem : std::uint8_t { kUnknown, kErrors, kSlow };

// "errors", "slow" ("" for kUnknown).
std::string_view ToString(UpstreamProblem problem) noexcept;

// DefaultMessage, with the vehicle database's problem in the words where the status has one
// (CIRCUIT_OPEN, CIRCUIT_HALF_OPEN): "returning errors" or "not responding".
std::string_view MessageFor(DecodeStatus status, UpstreamProblem problem) noexcept;

// "OK", "VIN_INVALID", "CIRCUIT_OPEN", ... (the wire spelling).
std::string_view ToString(DecodeStatus status) noexcept;

// The HTTP status code that carries `status`.
unsigned HttpStatus(DecodeStatus status) noexcept;

// Whether answers with this status carry a Retry-After header.
bool HasRetryAfter(DecodeStatus status) noexcept;

// One human sentence, fit to show in a form.
std::string_view DefaultMessage(DecodeStatus status) noexcept;

// The message of a stale (last-good) decode served in place of a live one.
inline constexpr std::string_view kStaleMessage = "Cached earlier; live refresh paused.";

// The message of an offline decode (docs/offline-decode.md).
inline constexpr std::string_view kOfflineMessage =
    "Decoded from NHTSA's offline database; live decoding is paused.";

// Whether a last-good decode may be served (200, stale) when the live decode ends with `status`:
// true for CIRCUIT_OPEN, CIRCUIT_HALF_OPEN, CIRCUIT_RECOVERING, UPSTREAM_SLOW, UPSTREAM_ERROR,
// OVERLOADED and LOCAL_OVERLOADED.
bool AllowsStale(DecodeStatus status) noexcept;

// "Retry-After" seconds: whole seconds, rounded up, at least 1.
std::int64_t RetryAfterSeconds(fusebox::Duration retry_after) noexcept;

// The status of a fusebox rejection or failure. kCancelled (the caller went away) maps to
// UPSTREAM_ERROR: it is never shown to anyone who is still waiting.
DecodeStatus FromReason(fusebox::ReasonCode code) noexcept;

}  // namespace fusebox::gateway

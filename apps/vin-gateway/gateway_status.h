// vin-gateway/gateway_status.h
//
// The `status` of every gateway answer and what it means on the wire (gateway-api.md): one code
// per distinct reason, its HTTP status, whether a Retry-After header goes with it, its user-facing
// sentence, and whether a last-good decode may stand in for it ("stale serving").
//
//   OK 200 | VIN_INVALID 422 | CIRCUIT_OPEN 503 | CIRCUIT_HALF_OPEN 503 | UPSTREAM_SLOW 504
//   UPSTREAM_ERROR 502 | OVERLOADED 503 | RATE_LIMITED 429 | BAD_REQUEST 400
//   and for the transport around them: NOT_FOUND 404, METHOD_NOT_ALLOWED 405, UNAUTHORIZED 401,
//   PAYLOAD_TOO_LARGE 413, HEADERS_TOO_LARGE 431, SHUTTING_DOWN 503
//
// An upstream problem is never reported as VIN_INVALID: only local validation produces it.
//
// Thread safety: pure functions. Time: none.
//
// Example:
//   GatewayStatus s = FromReason(fusebox::ReasonCode::kCircuitOpen);   // kCircuitOpen
//   response.result(HttpStatus(s));                                    // 503
//   body["message"] = DefaultMessage(s);
#pragma once

#include <cstdint>
#include <string_view>

#include "fusebox/status.h"

namespace vin_gateway {

enum class GatewayStatus : std::uint8_t {
  kOk,
  kVinInvalid,
  kCircuitOpen,
  kCircuitHalfOpen,
  kUpstreamSlow,
  kUpstreamError,
  kOverloaded,
  kRateLimited,
  kBadRequest,
  kNotFound,
  kMethodNotAllowed,
  kUnauthorized,
  kPayloadTooLarge,
  kHeadersTooLarge,
  kShuttingDown,
};

inline constexpr GatewayStatus kAllStatuses[] = {
    GatewayStatus::kOk,
    GatewayStatus::kVinInvalid,
    GatewayStatus::kCircuitOpen,
    GatewayStatus::kCircuitHalfOpen,
    GatewayStatus::kUpstreamSlow,
    GatewayStatus::kUpstreamError,
    GatewayStatus::kOverloaded,
    GatewayStatus::kRateLimited,
    GatewayStatus::kBadRequest,
    GatewayStatus::kNotFound,
    GatewayStatus::kMethodNotAllowed,
    GatewayStatus::kUnauthorized,
    GatewayStatus::kPayloadTooLarge,
    GatewayStatus::kHeadersTooLarge,
    GatewayStatus::kShuttingDown,
};

// "OK", "VIN_INVALID", "CIRCUIT_OPEN", ... (the wire spelling).
std::string_view ToString(GatewayStatus status) noexcept;

// The HTTP status code that carries `status`.
unsigned HttpStatus(GatewayStatus status) noexcept;

// Whether answers with this status carry a Retry-After header.
bool HasRetryAfter(GatewayStatus status) noexcept;

// One human sentence, fit to show in a form.
std::string_view DefaultMessage(GatewayStatus status) noexcept;

// The message of a stale (last-good) decode served in place of a live one.
inline constexpr std::string_view kStaleMessage = "Cached earlier; live refresh paused.";

// Whether a last-good decode may be served (200, stale) when the live decode ends with `status`:
// true for CIRCUIT_OPEN, CIRCUIT_HALF_OPEN, UPSTREAM_SLOW, UPSTREAM_ERROR and OVERLOADED.
bool AllowsStale(GatewayStatus status) noexcept;

// "Retry-After" seconds: whole seconds, rounded up, at least 1.
std::int64_t RetryAfterSeconds(fusebox::Duration retry_after) noexcept;

// The status of a fusebox rejection or failure. kCancelled (the caller went away) maps to
// UPSTREAM_ERROR: it is never shown to anyone who is still waiting.
GatewayStatus FromReason(fusebox::ReasonCode code) noexcept;

}  // namespace vin_gateway

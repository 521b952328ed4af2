#include "gateway_status.h"

#include <algorithm>
#include <chrono>

namespace vin_gateway {

std::string_view ToString(GatewayStatus status) noexcept {
  switch (status) {
    case GatewayStatus::kOk:
      return "OK";
    case GatewayStatus::kVinInvalid:
      return "VIN_INVALID";
    case GatewayStatus::kCircuitOpen:
      return "CIRCUIT_OPEN";
    case GatewayStatus::kCircuitHalfOpen:
      return "CIRCUIT_HALF_OPEN";
    case GatewayStatus::kUpstreamSlow:
      return "UPSTREAM_SLOW";
    case GatewayStatus::kUpstreamError:
      return "UPSTREAM_ERROR";
    case GatewayStatus::kOverloaded:
      return "OVERLOADED";
    case GatewayStatus::kRateLimited:
      return "RATE_LIMITED";
    case GatewayStatus::kBadRequest:
      return "BAD_REQUEST";
    case GatewayStatus::kNotFound:
      return "NOT_FOUND";
    case GatewayStatus::kMethodNotAllowed:
      return "METHOD_NOT_ALLOWED";
    case GatewayStatus::kUnauthorized:
      return "UNAUTHORIZED";
    case GatewayStatus::kPayloadTooLarge:
      return "PAYLOAD_TOO_LARGE";
    case GatewayStatus::kHeadersTooLarge:
      return "HEADERS_TOO_LARGE";
    case GatewayStatus::kShuttingDown:
      return "SHUTTING_DOWN";
  }
  return "UPSTREAM_ERROR";
}

unsigned HttpStatus(GatewayStatus status) noexcept {
  switch (status) {
    case GatewayStatus::kOk:
      return 200;
    case GatewayStatus::kVinInvalid:
      return 422;
    case GatewayStatus::kCircuitOpen:
    case GatewayStatus::kCircuitHalfOpen:
    case GatewayStatus::kOverloaded:
    case GatewayStatus::kShuttingDown:
      return 503;
    case GatewayStatus::kUpstreamSlow:
      return 504;
    case GatewayStatus::kUpstreamError:
      return 502;
    case GatewayStatus::kRateLimited:
      return 429;
    case GatewayStatus::kBadRequest:
      return 400;
    case GatewayStatus::kNotFound:
      return 404;
    case GatewayStatus::kMethodNotAllowed:
      return 405;
    case GatewayStatus::kUnauthorized:
      return 401;
    case GatewayStatus::kPayloadTooLarge:
      return 413;
    case GatewayStatus::kHeadersTooLarge:
      return 431;
  }
  return 502;
}

bool HasRetryAfter(GatewayStatus status) noexcept {
  switch (status) {
    case GatewayStatus::kCircuitOpen:
    case GatewayStatus::kCircuitHalfOpen:
    case GatewayStatus::kOverloaded:
    case GatewayStatus::kRateLimited:
    case GatewayStatus::kShuttingDown:
      return true;
    default:
      return false;
  }
}

std::string_view DefaultMessage(GatewayStatus status) noexcept {
  switch (status) {
    case GatewayStatus::kOk:
      return "Decoded.";
    case GatewayStatus::kVinInvalid:
      return "This is not a valid VIN.";
    case GatewayStatus::kCircuitOpen:
      return "Decode temporarily unavailable \u2014 the vehicle database is not responding; try "
             "again shortly.";
    case GatewayStatus::kCircuitHalfOpen:
      return "Decode recovering \u2014 testing the vehicle database; try again shortly.";
    case GatewayStatus::kUpstreamSlow:
      return "Decode timed out \u2014 the vehicle database is slow right now.";
    case GatewayStatus::kUpstreamError:
      return "Decode failed \u2014 the vehicle database returned an error.";
    case GatewayStatus::kOverloaded:
      return "Too many decodes in progress; try again shortly.";
    case GatewayStatus::kRateLimited:
      return "Too many decodes from your address; try again shortly.";
    case GatewayStatus::kBadRequest:
      return "The request is malformed.";
    case GatewayStatus::kNotFound:
      return "No such resource.";
    case GatewayStatus::kMethodNotAllowed:
      return "This method is not allowed here.";
    case GatewayStatus::kUnauthorized:
      return "A valid bearer token is required.";
    case GatewayStatus::kPayloadTooLarge:
      return "The request body is too large (at most 64 KiB).";
    case GatewayStatus::kHeadersTooLarge:
      return "The request line and headers are too large (at most 8 KiB).";
    case GatewayStatus::kShuttingDown:
      return "The gateway is shutting down; try again shortly.";
  }
  return "Decode failed.";
}

bool AllowsStale(GatewayStatus status) noexcept {
  switch (status) {
    case GatewayStatus::kCircuitOpen:
    case GatewayStatus::kCircuitHalfOpen:
    case GatewayStatus::kUpstreamSlow:
    case GatewayStatus::kUpstreamError:
    case GatewayStatus::kOverloaded:
      return true;
    default:
      return false;
  }
}

std::int64_t RetryAfterSeconds(fusebox::Duration retry_after) noexcept {
  const auto seconds = std::chrono::ceil<std::chrono::seconds>(retry_after).count();
  return std::max<std::int64_t>(1, seconds);
}

GatewayStatus FromReason(fusebox::ReasonCode code) noexcept {
  switch (code) {
    case fusebox::ReasonCode::kCircuitOpen:
      return GatewayStatus::kCircuitOpen;
    case fusebox::ReasonCode::kCircuitHalfOpen:
      return GatewayStatus::kCircuitHalfOpen;
    case fusebox::ReasonCode::kUpstreamSlow:
      return GatewayStatus::kUpstreamSlow;
    case fusebox::ReasonCode::kUpstreamError:
    case fusebox::ReasonCode::kCancelled:
      return GatewayStatus::kUpstreamError;
    case fusebox::ReasonCode::kOverloaded:
      return GatewayStatus::kOverloaded;
  }
  return GatewayStatus::kUpstreamError;
}

}  // namespace vin_gateway

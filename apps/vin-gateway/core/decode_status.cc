#include "core/decode_status.h"

#include <algorithm>
#include <chrono>

namespace fusebox::gateway {

std::string_view ToString(DecodeStatus status) noexcept {
  switch (status) {
    case DecodeStatus::kOk:
      return "OK";
    case DecodeStatus::kVinInvalid:
      return "VIN_INVALID";
    case DecodeStatus::kCircuitOpen:
      return "CIRCUIT_OPEN";
    case DecodeStatus::kCircuitHalfOpen:
      return "CIRCUIT_HALF_OPEN";
    case DecodeStatus::kCircuitRecovering:
      return "CIRCUIT_RECOVERING";
    case DecodeStatus::kUpstreamSlow:
      return "UPSTREAM_SLOW";
    case DecodeStatus::kUpstreamError:
      return "UPSTREAM_ERROR";
    case DecodeStatus::kOverloaded:
      return "OVERLOADED";
    case DecodeStatus::kRateLimited:
      return "RATE_LIMITED";
    case DecodeStatus::kLocalOverloaded:
      return "LOCAL_OVERLOADED";
    case DecodeStatus::kUpstreamLate:
      return "UPSTREAM_LATE";
    case DecodeStatus::kThrottled:
      return "THROTTLED";
  }
  return "UPSTREAM_ERROR";
}

unsigned HttpStatus(DecodeStatus status) noexcept {
  switch (status) {
    case DecodeStatus::kOk:
      return 200;
    case DecodeStatus::kVinInvalid:
      return 422;
    case DecodeStatus::kCircuitOpen:
    case DecodeStatus::kCircuitHalfOpen:
    case DecodeStatus::kCircuitRecovering:
    case DecodeStatus::kOverloaded:
    case DecodeStatus::kLocalOverloaded:
    case DecodeStatus::kThrottled:
      return 503;
    case DecodeStatus::kUpstreamSlow:
    case DecodeStatus::kUpstreamLate:
      return 504;
    case DecodeStatus::kUpstreamError:
      return 502;
    case DecodeStatus::kRateLimited:
      return 429;
  }
  return 502;
}

bool HasRetryAfter(DecodeStatus status) noexcept {
  switch (status) {
    case DecodeStatus::kCircuitOpen:
    case DecodeStatus::kCircuitHalfOpen:
    case DecodeStatus::kCircuitRecovering:
    case DecodeStatus::kOverloaded:
    case DecodeStatus::kRateLimited:
    case DecodeStatus::kLocalOverloaded:
    case DecodeStatus::kThrottled:
      return true;
    default:
      return false;
  }
}

std::string_view DefaultMessage(DecodeStatus status) noexcept {
  switch (status) {
    case DecodeStatus::kOk:
      return "Decoded.";
    case DecodeStatus::kVinInvalid:
      return "This is not a valid VIN.";
    case DecodeStatus::kCircuitOpen:
      return "Decode temporarily unavailable \u2014 the vehicle database is not responding; try "
             "again shortly.";
    case DecodeStatus::kCircuitHalfOpen:
      return "Decode recovering \u2014 testing the vehicle database; try again shortly.";
    case DecodeStatus::kCircuitRecovering:
      return "Decode recovering \u2014 the vehicle database is back and traffic is being let in "
             "gradually.";
    case DecodeStatus::kUpstreamSlow:
      return "Decode timed out \u2014 the vehicle database is slow right now.";
    case DecodeStatus::kUpstreamError:
      return "Decode failed \u2014 the vehicle database returned an error.";
    case DecodeStatus::kOverloaded:
      return "Too many decodes in progress; try again shortly.";
    case DecodeStatus::kRateLimited:
      return "Too many decodes from your address; try again shortly.";
    case DecodeStatus::kLocalOverloaded:
      return "The gateway is short of resources right now; try again shortly.";
    case DecodeStatus::kUpstreamLate:
      return "Live decode late \u2014 the vehicle database has not answered yet; a copy was "
             "served and the live answer will refresh it.";
    case DecodeStatus::kThrottled:
      return "Decode held back \u2014 the vehicle database is refusing many decodes, so fewer "
             "are being sent; try again shortly.";
  }
  return "Decode failed.";
}

std::string_view ToString(UpstreamProblem problem) noexcept {
  switch (problem) {
    case UpstreamProblem::kErrors:
      return "errors";
    case UpstreamProblem::kSlow:
      return "slow";
    case UpstreamProblem::kUnknown:
      break;
  }
  return "";
}

std::string_view MessageFor(DecodeStatus status, UpstreamProblem problem) noexcept {
  if (problem == UpstreamProblem::kErrors) {
    if (status == DecodeStatus::kCircuitOpen) {
      return "Decode temporarily unavailable \u2014 the vehicle database is returning errors; "
             "try again shortly.";
    }
    if (status == DecodeStatus::kCircuitHalfOpen) {
      return "Decode recovering \u2014 the vehicle database was returning errors and is being "
             "tested; try again shortly.";
    }
  }
  if (problem == UpstreamProblem::kSlow && status == DecodeStatus::kCircuitOpen) {
    return "Decode temporarily unavailable \u2014 the vehicle database is not responding or too "
           "slow; try again shortly.";
  }
  return DefaultMessage(status);
}

bool AllowsStale(DecodeStatus status) noexcept {
  switch (status) {
    case DecodeStatus::kCircuitOpen:
    case DecodeStatus::kCircuitHalfOpen:
    case DecodeStatus::kCircuitRecovering:
    case DecodeStatus::kUpstreamSlow:
    case DecodeStatus::kUpstreamError:
    case DecodeStatus::kOverloaded:
    case DecodeStatus::kLocalOverloaded:
    case DecodeStatus::kUpstreamLate:
    case DecodeStatus::kThrottled:
      return true;
    default:
      return false;
  }
}

std::int64_t RetryAfterSeconds(fusebox::Duration retry_after) noexcept {
  const auto seconds = std::chrono::ceil<std::chrono::seconds>(retry_after).count();
  return std::max<std::int64_t>(1, seconds);
}

DecodeStatus FromReason(fusebox::ReasonCode code) noexcept {
  switch (code) {
    case fusebox::ReasonCode::kCircuitOpen:
      return DecodeStatus::kCircuitOpen;
    case fusebox::ReasonCode::kCircuitHalfOpen:
      return DecodeStatus::kCircuitHalfOpen;
    case fusebox::ReasonCode::kCircuitRecovering:
      return DecodeStatus::kCircuitRecovering;
    case fusebox::ReasonCode::kUpstreamSlow:
      return DecodeStatus::kUpstreamSlow;
    case fusebox::ReasonCode::kUpstreamError:
    case fusebox::ReasonCode::kCancelled:
      return DecodeStatus::kUpstreamError;
    case fusebox::ReasonCode::kOverloaded:
      return DecodeStatus::kOverloaded;
    case fusebox::ReasonCode::kThrottled:
      return DecodeStatus::kThrottled;
  }
  return DecodeStatus::kUpstreamError;
}

}  // namespace fusebox::gateway

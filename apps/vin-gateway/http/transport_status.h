// vin-gateway/http/transport_status.h
//
// The `status` of the answers the HTTP layer gives about the request itself, not about a decode
// (docs/http-api.md): the request was malformed, went nowhere, was refused before any decode, or
// the gateway is going away. Separate from the decode statuses (core/decode_status.h) so that
// the domain never has to know about methods, header limits or shutdown.
//
//   OK 200 (operations and envelopes: /healthz, /status, a batch's envelope, admin commands)
//   BAD_REQUEST 400 | NOT_FOUND 404 | METHOD_NOT_ALLOWED 405 | UNAUTHORIZED 401
//   PAYLOAD_TOO_LARGE 413 | HEADERS_TOO_LARGE 431 | SHUTTING_DOWN 503
//   UNSUPPORTED_MEDIA_TYPE 415 (a batch whose body is not declared application/json)
//   REQUEST_TIMEOUT 408 (the client did not send a whole request in time)
//   TOO_MANY_ATTEMPTS 429 (too many failed admin bearer tokens from one address)
//
// Every such answer is a JSON body {"status": ..., "message": ...} (ErrorBody, StatusJson).
//
// Thread safety: pure functions. Time: none.
//
// Example:
//   response.status = HttpStatus(TransportStatus::kNotFound);   // 404
//   response.body = ErrorBody(TransportStatus::kNotFound);      // {"status":"NOT_FOUND",...}
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>

namespace fusebox::gateway {

enum class TransportStatus : std::uint8_t {
  kOk,
  kBadRequest,
  kNotFound,
  kMethodNotAllowed,
  kUnauthorized,
  kPayloadTooLarge,
  kHeadersTooLarge,
  kShuttingDown,
  kRequestTimeout,
  kTooManyAttempts,
  kUnsupportedMediaType,
};

inline constexpr TransportStatus kAllTransportStatuses[] = {
    TransportStatus::kOk,
    TransportStatus::kBadRequest,
    TransportStatus::kNotFound,
    TransportStatus::kMethodNotAllowed,
    TransportStatus::kUnauthorized,
    TransportStatus::kPayloadTooLarge,
    TransportStatus::kHeadersTooLarge,
    TransportStatus::kShuttingDown,
    TransportStatus::kRequestTimeout,
    TransportStatus::kTooManyAttempts,
    TransportStatus::kUnsupportedMediaType,
};

// "OK", "BAD_REQUEST", "NOT_FOUND", ... (the wire spelling).
std::string_view ToString(TransportStatus status) noexcept;

// The HTTP status code that carries `status`.
unsigned HttpStatus(TransportStatus status) noexcept;

// One human sentence, fit to show in a form.
std::string_view DefaultMessage(TransportStatus status) noexcept;

// {"status": ..., "message": ...}; message defaults to DefaultMessage(status).
boost::json::object StatusJson(TransportStatus status, std::string_view message = {});
// The same, serialized, with `message` sanitized to valid UTF-8 (it may echo the request).
std::string ErrorBody(TransportStatus status, std::string_view message = {});

}  // namespace fusebox::gateway

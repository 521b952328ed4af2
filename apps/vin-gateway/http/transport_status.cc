#include "http/transport_status.h"

#include <boost/json/serialize.hpp>

#include "core/answer_json.h"
#include "core/decode.h"

namespace fusebox::gateway {

std::string_view ToString(TransportStatus status) noexcept {
  switch (status) {
    case TransportStatus::kOk:
      return "OK";
    case TransportStatus::kBadRequest:
      return "BAD_REQUEST";
    case TransportStatus::kNotFound:
      return "NOT_FOUND";
    case TransportStatus::kMethodNotAllowed:
      return "METHOD_NOT_ALLOWED";
    case TransportStatus::kUnauthorized:
      return "UNAUTHORIZED";
    case TransportStatus::kPayloadTooLarge:
      return "PAYLOAD_TOO_LARGE";
    case TransportStatus::kHeadersTooLarge:
      return "HEADERS_TOO_LARGE";
    case TransportStatus::kShuttingDown:
      return "SHUTTING_DOWN";
    case TransportStatus::kRequestTimeout:
      return "REQUEST_TIMEOUT";
    case TransportStatus::kTooManyAttempts:
      return "TOO_MANY_ATTEMPTS";
    case TransportStatus::kUnsupportedMediaType:
      return "UNSUPPORTED_MEDIA_TYPE";
  }
  return "BAD_REQUEST";
}

unsigned HttpStatus(TransportStatus status) noexcept {
  switch (status) {
    case TransportStatus::kOk:
      return 200;
    case TransportStatus::kBadRequest:
      return 400;
    case TransportStatus::kNotFound:
      return 404;
    case TransportStatus::kMethodNotAllowed:
      return 405;
    case TransportStatus::kUnauthorized:
      return 401;
    case TransportStatus::kPayloadTooLarge:
      return 413;
    case TransportStatus::kHeadersTooLarge:
      return 431;
    case TransportStatus::kShuttingDown:
      return 503;
    case TransportStatus::kRequestTimeout:
      return 408;
    case TransportStatus::kTooManyAttempts:
      return 429;
    case TransportStatus::kUnsupportedMediaType:
      return 415;
  }
  return 400;
}

std::string_view DefaultMessage(TransportStatus status) noexcept {
  switch (status) {
    case TransportStatus::kOk:
      return "Done.";
    case TransportStatus::kBadRequest:
      return "The request is malformed.";
    case TransportStatus::kNotFound:
      return "No such resource.";
    case TransportStatus::kMethodNotAllowed:
      return "This method is not allowed here.";
    case TransportStatus::kUnauthorized:
      return "A valid bearer token is required.";
    case TransportStatus::kPayloadTooLarge:
      return "The request body is too large (at most 64 KiB).";
    case TransportStatus::kHeadersTooLarge:
      return "The request line and headers are too large (at most 8 KiB).";
    case TransportStatus::kShuttingDown:
      return "The gateway is shutting down; try again shortly.";
    case TransportStatus::kRequestTimeout:
      return "The request did not arrive in time; the connection is closed.";
    case TransportStatus::kTooManyAttempts:
      return "Too many failed admin attempts from this address; try again later.";
    case TransportStatus::kUnsupportedMediaType:
      return "The body must be sent as Content-Type: application/json.";
  }
  return "The request is malformed.";
}

boost::json::object StatusJson(TransportStatus status, std::string_view message) {
  return Envelope(ToString(status), message.empty() ? DefaultMessage(status) : message);
}

std::string ErrorBody(TransportStatus status, std::string_view message) {
  return boost::json::serialize(StatusJson(status, SanitizeUtf8(message)));
}

}  // namespace fusebox::gateway

// vin-gateway/http/http_message.h
//
// The HTTP layer's own request and response, independent of the HTTP library: the server
// (http_server.h) turns each Beast request into an `HttpRequest`, calls its handler (the Router),
// and writes the `HttpResponse`. Responses also carry what the request's access log line says
// (status spelling, VIN, source, upstream latency).
//
// A handler answers at once when it has all it needs (every route but the batch; of the decodes,
// a fresh hit in the in-process front, an invalid VIN, a bad parameter, an offline decode): then
// no coroutine frame is made for the request. Only a request that must wait (the cache backend,
// the upstream) returns an awaitable.
//
// Thread safety: value types; the helpers are pure. Time: none.
//
// Example:
//   HttpResponse r = ErrorResponse(TransportStatus::kNotFound);    // 404, JSON body
//   HttpResponse ok = JsonResponse(200, StatusJson(TransportStatus::kOk, "Ready."), "OK");
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>

#include "fusebox/clock.h"
#include "http/transport_status.h"

namespace fusebox::gateway {

struct HttpRequest {
  std::string method;         // "GET", "POST", ...
  std::string target;         // origin form: "/api/v1/vin/1FT...?modelyear=2021"
  std::string authorization;  // the Authorization header, if any
  std::string if_none_match;  // the If-None-Match header, if any (conditional GET of the page)
  // A POST's every Content-Type field, joined by ", " in order ("" when there is none, and for
  // any other method): one field is its value as sent; two never read as one media type (the
  // batch route refuses them).
  std::string content_type;
  std::string body;
  // Who the client is for the rate limit and the admin throttle: ClientKey (client_address.h),
  // its address, or for IPv6 its /--client-ipv6-prefix network ("2001:db8:1:2::/64").
  std::string client;
};

struct HttpResponse {
  unsigned status = 200;
  std::string content_type = "application/json";
  std::string body;
  // A body shared with its keeper instead of copied (a fresh hit's rendered body); when set it
  // is the body and `body` is ignored.
  std::shared_ptr<const std::string> shared_body;
  std::vector<std::pair<std::string, std::string>> headers;  // e.g. {"Retry-After", "12"}

  // For the request's log line.
  std::string log_status;  // the status spelling ("OK", "CIRCUIT_OPEN", "NOT_FOUND", ...)
  std::string log_vin;
  std::string log_source;  // "live", "cache", "" ; "cache-stale" for stale copies
  std::optional<fusebox::Duration> upstream_latency;
  std::string log_detail;  // why the upstream call failed
  // What the request did with the upstream: "call" (its own call), "joined" (another request's
  // call, single-flight), "" (none); and what the breaker recorded of its own call ("success",
  // "failure", "timeout", "ignored"; "" when none or not ended).
  std::string log_upstream;
  std::string log_upstream_outcome;

  // The bytes of the body: shared_body's when set, else body's.
  std::string_view body_bytes() const noexcept {
    return shared_body != nullptr ? std::string_view(*shared_body) : std::string_view(body);
  }
};

// What a handler gives back: the answer, or an awaitable that yields it.
using HandlerResult = std::variant<HttpResponse, boost::asio::awaitable<HttpResponse>>;

// The response of `result`, awaited when it must be (for callers that await anyway).
boost::asio::awaitable<HttpResponse> Awaited(HandlerResult result);

// `status`'s HTTP code and JSON body ({"status", "message"}; message sanitized, default
// DefaultMessage(status)).
HttpResponse ErrorResponse(TransportStatus status, std::string_view message = {});

// A JSON body with the given HTTP status.
HttpResponse JsonResponse(unsigned status, const boost::json::object& body, std::string log_status);

}  // namespace fusebox::gateway

// vin-gateway/http/router.h
//
// The gateway's routes, independent of the HTTP library: the server (http_server.h) turns each
// request into an `HttpRequest` (http_message.h), calls `Router::Handle` (awaiting its answer only
// when it must wait), and writes the `HttpResponse`. The router dispatches and answers the decode
// routes itself; the page and its assets are static_assets.h, the admin commands admin_route.h,
// /readyz and /status status_route.h, /metrics metrics_route.h.
//
//   GET  /api/v1/vin/{vin}[?modelyear=YYYY]    one decode (DecodeService::Decode)
//   POST /api/v1/vin/batch                     {"vins": [...1..50], "modelyear": YYYY}, sent as
//                                              Content-Type: application/json (else 415, so
//                                              that no other site's page can send one through
//                                              a browser without a CORS preflight)
//   GET  /healthz                              200 while the process serves
//   GET  /readyz                               200 once listening (body: cache health);
//                                              503 SHUTTING_DOWN while draining
//   GET  /status                               breakers (with the decode breaker's
//                                              recent_transitions), cache, bulkhead, single-flight
//   GET  /metrics                              Prometheus text
//   POST /admin/breakers/{name}/{command}      force-open, force-close, disable, metrics-only,
//                                              reset; Bearer FUSEBOX_ADMIN_TOKEN (404 when unset,
//                                              401 when missing or wrong; constant-time compare;
//                                              429 once an address failed too often)
//   GET  /  (and /index.html)                  the VIN form (web/, embedded: web_assets.h), with
//                                              a strict Content-Security-Policy
//   GET  /assets/{name}                        its script, style sheet and icon; versioned names
//                                              (app.<hash>.js) are cacheable for good
// HEAD is accepted wherever GET is (same answer; the server sends no body). Anything else is a JSON
// NOT_FOUND (404) or METHOD_NOT_ALLOWED (405, with `Allow`). Every error is JSON, with a transport
// status (transport_status.h); decode answers carry a decode status.
//
// Thread safety: Handle may be called concurrently. Time: none of its own.
//
// Example:
//   Router router(deps);
//   HandlerResult result = router.Handle(std::move(request));   // the answer, or one to await:
//   HttpResponse response = co_await Awaited(std::move(result));
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <boost/asio/awaitable.hpp>

#include "core/decode_answer.h"
#include "http/http_message.h"
#include "http/route_deps.h"

namespace fusebox::gateway {

// Batches hold 1 to this many VINs.
inline constexpr std::size_t kMaxBatch = kMaxBatchVins;

class Router {
 public:
  explicit Router(RouterDeps deps) : deps_(std::move(deps)) {}

  // The answer at once where nothing needs awaiting (every route but the two decode routes, and a
  // decode answered by DecodeService::Begin); an awaitable otherwise.
  HandlerResult Handle(HttpRequest request);

 private:
  HandlerResult DecodeOne(const HttpRequest& request, std::string_view raw_vin,
                          const std::optional<std::string>& modelyear,
                          const std::optional<std::string>& source);
  boost::asio::awaitable<HttpResponse> DecodeLater(DecodeService::Step step, std::string client);
  boost::asio::awaitable<HttpResponse> DecodeBatch(HttpRequest request);

  RouterDeps deps_;
};

// The response for a decode answer: status, JSON body (the rendered one shared, not copied),
// Retry-After when the status has one.
HttpResponse AnswerResponse(DecodeAnswer answer);

}  // namespace fusebox::gateway

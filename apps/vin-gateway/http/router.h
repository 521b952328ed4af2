// vin-gateway/http/router.h
//
// The gateway's routes, independent of the HTTP library: the server (http_server.h) turns each
// request into an `HttpRequest`, awaits `Router::Handle`, and writes the `HttpResponse`.
//
//   GET  /api/v1/vin/{vin}[?modelyear=YYYY]    one decode (DecodeService::Decode)
//   POST /api/v1/vin/batch                     {"vins": [...1..50], "modelyear": YYYY}
//   GET  /healthz                              200 while the process serves
//   GET  /readyz                               200 once listening (body: cache health);
//                                              503 SHUTTING_DOWN while draining
//   GET  /status                               breakers (with the decode breaker's
//                                              recent_transitions), cache, bulkhead, single-flight
//   GET  /metrics                              Prometheus text
//   POST /admin/breakers/{name}/{command}      force-open, force-close, disable, metrics-only,
//                                              reset; Bearer FUSEBOX_ADMIN_TOKEN (404 when unset,
//                                              401 when missing or wrong; constant-time compare)
//   GET  /  (and /index.html)                  the VIN form (web/, embedded: web_assets.h), with
//                                              a strict Content-Security-Policy
//   GET  /assets/{name}                        its script, style sheet and icon; versioned names
//                                              (app.<hash>.js) are cacheable for good
// Anything else is a JSON NOT_FOUND (404) or METHOD_NOT_ALLOWED (405). Every error is JSON.
//
// Thread safety: Handle may be called concurrently. Time: none of its own.
//
// Example:
//   Router router(deps);
//   HttpResponse response = co_await router.Handle(std::move(request));
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "fusebox/bulkhead.h"
#include "fusebox/registry.h"
#include "service/cache.h"
#include "service/decode_service.h"
#include "service/gateway_metrics.h"
#include "service/rate_limiter.h"
#include "service/vpic_client.h"

namespace vin_gateway {

// Batches hold 1 to this many VINs.
inline constexpr std::size_t kMaxBatch = 50;

struct HttpRequest {
  std::string method;         // "GET", "POST", ...
  std::string target;         // origin form: "/api/v1/vin/1FT...?modelyear=2021"
  std::string authorization;  // the Authorization header, if any
  std::string if_none_match;  // the If-None-Match header, if any (conditional GET of the page)
  std::string body;
  std::string client;  // the peer's address (the rate limit's key)
};

struct HttpResponse {
  unsigned status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // e.g. {"Retry-After", "12"}

  // For the request's log line.
  std::string log_status;  // the status spelling ("OK", "CIRCUIT_OPEN", "NOT_FOUND", ...)
  std::string log_vin;
  std::string log_source;  // "live", "cache", "" ; "cache-stale" for stale copies
  std::optional<fusebox::Duration> upstream_latency;
  std::string log_detail;  // why the upstream call failed
};

struct RouterDeps {
  DecodeService& service;
  fusebox::Registry& registry;
  Cache& cache;
  fusebox::Bulkhead& bulkhead;
  GatewayMetrics& metrics;
  RateLimiter& limiter;
  VpicClient& client;
  std::optional<std::string> admin_token;  // FUSEBOX_ADMIN_TOKEN; nullopt: admin routes are 404
  std::function<bool()> draining;          // true once SIGTERM was received (may be empty)
};

class Router {
 public:
  explicit Router(RouterDeps deps) : deps_(std::move(deps)) {}

  boost::asio::awaitable<HttpResponse> Handle(HttpRequest request);

 private:
  boost::asio::awaitable<HttpResponse> DecodeOne(const HttpRequest& request,
                                                 std::string_view raw_vin,
                                                 std::optional<std::string> modelyear);
  boost::asio::awaitable<HttpResponse> DecodeBatch(const HttpRequest& request);
  HttpResponse Status() const;
  HttpResponse Metrics() const;
  HttpResponse Ready() const;
  HttpResponse Admin(const HttpRequest& request, std::string_view name, std::string_view command);

  RouterDeps deps_;
};

// Whether `authorization` is "Bearer <token>" with exactly `token`. Compares SHA-256 digests with
// CRYPTO_memcmp, so the time taken says nothing about the token.
bool BearerMatches(std::string_view authorization, std::string_view token);

// The response for a decode answer: status, JSON body, Retry-After when the status has one.
HttpResponse AnswerResponse(const DecodeAnswer& answer);

}  // namespace vin_gateway

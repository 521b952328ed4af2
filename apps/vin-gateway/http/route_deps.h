// vin-gateway/http/route_deps.h
//
// What the routes read and drive: the decode service (decodes), and for the operations routes
// (/readyz, /status, /metrics, /admin) the breaker registry, the cache, the bulkhead, the gateway's
// counters, the rate limiter and the upstream client; for /admin the token and the brute-force
// throttle (admin_route.h). All owned by main; the routes hold references.
//
// Thread safety: the referenced objects are all safe for concurrent use. Time: none.
//
// Example:
//   RouterDeps deps{service, registry, *cache, *bulkhead, metrics, limiter, *client, token,
//                   admin_throttle, [&] { return server->shutting_down(); }};
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "fusebox/bulkhead.h"
#include "fusebox/registry.h"
#include "service/cache.h"
#include "service/decode_service.h"
#include "service/gateway_metrics.h"
#include "service/rate_limiter.h"
#include "service/vpic_client.h"

namespace vin_gateway {

class AdminThrottle;  // admin_route.h

struct RouterDeps {
  DecodeService& service;
  fusebox::Registry& registry;
  Cache& cache;
  fusebox::Bulkhead& bulkhead;
  GatewayMetrics& metrics;
  RateLimiter& limiter;
  VpicClient& client;
  std::optional<std::string> admin_token;  // FUSEBOX_ADMIN_TOKEN; nullopt: admin routes are 404
  AdminThrottle& admin_throttle;           // failed bearer attempts per client address
  std::function<bool()> draining;          // true once SIGTERM was received (may be empty)
};

}  // namespace vin_gateway

// vin-gateway/http/route_deps.h
//
// What the routes read and drive: the decode service (decodes), and for the operations routes
// (/readyz, /status, /metrics, /admin) the breaker registry, the cache, the upstream limits, the
// gateway's counters, the rate limiter and the upstream client; for /admin the token and the
// brute-force throttle (admin_route.h). All owned by main; the routes hold references.
//
// Thread safety: the referenced objects are all safe for concurrent use. Time: none.
//
// Example:
//   RouterDeps deps{service, registry, *cache, *limits, metrics, limiter, *client, token,
//                   admin_throttle, [&] { return server->shutting_down(); }};
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "fusebox/fleet.h"
#include "fusebox/registry.h"
#include "service/cache.h"
#include "service/decode_service.h"
#include "service/gateway_metrics.h"
#include "service/rate_limiter.h"
#include "service/upstream_limits.h"
#include "service/vpic_client.h"

namespace fusebox::gateway {

class AdminThrottle;  // admin_route.h

// Fleet mode (docs/fleet.md): what /status ("fleet") and /metrics report about it.
struct FleetReport {
  std::string url;
  std::string instance;
  fusebox::FleetStats stats;
  std::optional<std::string> probe_lease_holder;
  std::uint64_t malformed = 0;  // messages from Redis that did not parse or were too large
  // Why the link is down ("connect: ...", "AUTH: WRONGPASS ..."); "" when it is up.
  std::string last_error;
  // With --fleet-secret-file: messages dropped for a missing or bad signature, or too old.
  std::uint64_t unauthenticated = 0;
  bool signed_messages = false;
  // --fleet-quorum, and the peers whose report of vPIC failing counts towards it now.
  std::uint32_t quorum = 1;
  std::size_t failing_peers = 0;
  bool tls = false;  // rediss://
  // The Redis server in use (host:port; with Sentinel, the primary the sentinels named), how often
  // it changed (failovers) and when last; "" / nullopt before the first connection or change.
  std::string primary = {};
  std::uint64_t primary_changes = 0;
  std::optional<WallTime> last_primary_change = std::nullopt;
};

struct RouterDeps {
  DecodeService& service;
  fusebox::Registry& registry;
  Cache& cache;
  const UpstreamLimits& limits;  // the cap on vPIC calls in flight, and the throttle
  GatewayMetrics& metrics;
  RateLimiter& limiter;
  VpicClient& client;
  std::optional<std::string> admin_token;  // FUSEBOX_ADMIN_TOKEN; nullopt: admin routes are 404
  AdminThrottle& admin_throttle;           // failed bearer attempts per client key
  std::function<bool()> draining;          // true once SIGTERM was received (may be empty)
  // Fleet mode: nullopt (or empty) without --fleet.
  std::function<std::optional<FleetReport>()> fleet = nullptr;
};

}  // namespace fusebox::gateway

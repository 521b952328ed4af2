// vin-gateway/http/status_route.h
//
// The JSON the operations routes show (docs/http-api.md):
//   GET /readyz   200 once listening, with the cache's health; 503 SHUTTING_DOWN (Retry-After 1)
//                 while draining
//   GET /status   every breaker (the decode breaker with its recent_transitions), the cache, the
//                 bulkhead, single-flight, the rate limit, the upstream client and answers by
//                 status
// and one breaker's figures (BreakerJson), which admin commands answer with: its counters, the
// policy and settings in force (a SIGHUP may have changed them), and for a window policy the
// window's current rates.
//
// Thread safety: reads only thread-safe state. Time: none of its own (retry_after_s comes from the
// breaker, transition times from the decode service's wall clock).
//
// Example:
//   co_return StatusResponse(deps);
#pragma once

#include <vector>

#include <boost/json/object.hpp>

#include "fusebox/circuit_breaker.h"
#include "http/http_message.h"
#include "http/route_deps.h"
#include "service/cache.h"
#include "service/transition_log.h"

namespace fusebox::gateway {

// One breaker's figures and configuration; `transitions`: its recent transitions, when kept
// (the decode service's breaker).
boost::json::object BreakerJson(const fusebox::CircuitBreaker& breaker,
                                const std::vector<TransitionRecord>* transitions = nullptr);

// The cache's health and counters (not its file's path: these routes are public).
boost::json::object CacheJson(const CacheStats& stats);

HttpResponse ReadyResponse(const RouterDeps& deps);
HttpResponse StatusResponse(const RouterDeps& deps);

}  // namespace fusebox::gateway

// vin-gateway/http/metrics_route.h
//
// GET /metrics: Prometheus text (version 0.0.4) of every breaker (fusebox::AppendPrometheus), the
// gateway's own counters (service/gateway_metrics.h), the cache, the bulkhead and the rate limit.
//
// Thread safety: reads only thread-safe counters. Time: none.
//
// Example:
//   co_return MetricsResponse(deps);
#pragma once

#include "http/http_message.h"
#include "http/route_deps.h"

namespace fusebox::gateway {

HttpResponse MetricsResponse(const RouterDeps& deps);

}  // namespace fusebox::gateway

#include "http/metrics_route.h"

#include <fmt/format.h>

#include "fusebox/metrics.h"

namespace vin_gateway {

HttpResponse MetricsResponse(const RouterDeps& deps) {
  HttpResponse response;
  response.content_type = "text/plain; version=0.0.4; charset=utf-8";
  std::string& out = response.body;
  bool first = true;
  for (const auto& breaker : deps.registry.All()) {
    fusebox::AppendPrometheus(out, breaker->Snapshot(), first);
    first = false;
  }
  deps.metrics.AppendPrometheus(out);
  const CacheStats cache = deps.cache.Stats();
  out += fmt::format(
      "# HELP vin_gateway_cache_entries Decodes stored in the cache.\n"
      "# TYPE vin_gateway_cache_entries gauge\nvin_gateway_cache_entries{{backend=\"{}\"}} {}\n"
      "# HELP vin_gateway_cache_healthy 1 when the cache backend works.\n"
      "# TYPE vin_gateway_cache_healthy gauge\nvin_gateway_cache_healthy{{backend=\"{}\"}} {}\n"
      "# HELP vin_gateway_cache_evictions_total Decodes evicted (least recently used).\n"
      "# TYPE vin_gateway_cache_evictions_total counter\n"
      "vin_gateway_cache_evictions_total{{backend=\"{}\"}} {}\n"
      "# HELP vin_gateway_cache_errors_total Cache backend operations that failed.\n"
      "# TYPE vin_gateway_cache_errors_total counter\n"
      "vin_gateway_cache_errors_total{{backend=\"{}\"}} {}\n",
      cache.backend, cache.entries, cache.backend, cache.healthy ? 1 : 0, cache.backend,
      cache.evictions, cache.backend, cache.errors);
  out += fmt::format(
      "# HELP vin_gateway_bulkhead_in_flight Upstream calls holding a bulkhead slot.\n"
      "# TYPE vin_gateway_bulkhead_in_flight gauge\nvin_gateway_bulkhead_in_flight {}\n"
      "# HELP vin_gateway_bulkhead_rejected_total Calls refused with OVERLOADED.\n"
      "# TYPE vin_gateway_bulkhead_rejected_total counter\n"
      "vin_gateway_bulkhead_rejected_total {}\n"
      "# HELP vin_gateway_rate_limited_total Requests refused with RATE_LIMITED.\n"
      "# TYPE vin_gateway_rate_limited_total counter\nvin_gateway_rate_limited_total {}\n",
      deps.bulkhead.in_flight(), deps.bulkhead.rejected(), deps.limiter.rejected());
  if (const std::optional<FleetReport> fleet = deps.fleet ? deps.fleet() : std::nullopt) {
    // Fleet mode (docs/fleet.md).
    out += fmt::format(
        "# HELP vin_gateway_fleet_connected 1 while the fleet link to Redis is up.\n"
        "# TYPE vin_gateway_fleet_connected gauge\nvin_gateway_fleet_connected {}\n"
        "# HELP vin_gateway_fleet_peers_seen Other instances heard from.\n"
        "# TYPE vin_gateway_fleet_peers_seen gauge\nvin_gateway_fleet_peers_seen {}\n"
        "# HELP vin_gateway_fleet_messages_sent_total Breaker transitions sent to the fleet.\n"
        "# TYPE vin_gateway_fleet_messages_sent_total counter\n"
        "vin_gateway_fleet_messages_sent_total {}\n"
        "# HELP vin_gateway_fleet_messages_received_total Peers' transitions received.\n"
        "# TYPE vin_gateway_fleet_messages_received_total counter\n"
        "vin_gateway_fleet_messages_received_total {}\n"
        "# HELP vin_gateway_fleet_messages_stale_total Received but older than known: dropped.\n"
        "# TYPE vin_gateway_fleet_messages_stale_total counter\n"
        "vin_gateway_fleet_messages_stale_total {}\n"
        "# HELP vin_gateway_fleet_messages_malformed_total Received but unparsable: dropped.\n"
        "# TYPE vin_gateway_fleet_messages_malformed_total counter\n"
        "vin_gateway_fleet_messages_malformed_total {}\n"
        "# HELP vin_gateway_fleet_leases_won_total Probe leases this instance won.\n"
        "# TYPE vin_gateway_fleet_leases_won_total counter\nvin_gateway_fleet_leases_won_total "
        "{}\n",
        fleet->stats.connected ? 1 : 0, fleet->stats.peers_seen, fleet->stats.messages_sent,
        fleet->stats.messages_received, fleet->stats.messages_stale, fleet->malformed,
        fleet->stats.leases_won);
  }
  response.log_status = "OK";
  return response;
}

}  // namespace vin_gateway

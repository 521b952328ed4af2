#include "http/metrics_route.h"

#include <string>

#include <fmt/format.h>

#include "fusebox/circuit_breaker.h"
#include "fusebox/metrics.h"
#include "fusebox/version.h"

namespace fusebox::gateway {

HttpResponse MetricsResponse(const RouterDeps& deps) {
  HttpResponse response;
  response.content_type = "text/plain; version=0.0.4; charset=utf-8";
  std::string& out = response.body;
  out += fmt::format(
      "# HELP vin_gateway_build_info The running vin-gateway's version (1).\n"
      "# TYPE vin_gateway_build_info gauge\nvin_gateway_build_info{{version=\"{}\"}} 1\n",
      fusebox::kVersion);
  // The library's series per breaker, then the gateway's own breaker series, each family
  // grouped under its HELP and TYPE lines.
  std::string policy =
      "# HELP vin_gateway_breaker_policy The breaker's trip policy in force (1).\n"
      "# TYPE vin_gateway_breaker_policy gauge\n";
  std::string window_calls =
      "# HELP vin_gateway_breaker_window_calls Outcomes in the breaker's trip window.\n"
      "# TYPE vin_gateway_breaker_window_calls gauge\n";
  std::string inflight_slow =
      "# HELP vin_gateway_breaker_inflight_slow Calls running past the slow-call duration.\n"
      "# TYPE vin_gateway_breaker_inflight_slow gauge\n";
  bool first = true;
  for (const auto& breaker : deps.registry.All()) {
    const fusebox::MetricsSnapshot m = breaker->Snapshot();
    fusebox::AppendPrometheus(out, m, first);
    first = false;
    policy += fmt::format("vin_gateway_breaker_policy{{breaker=\"{}\",policy=\"{}\"}} 1\n", m.name,
                          fusebox::ToString(breaker->config().trip));
    window_calls += fmt::format("vin_gateway_breaker_window_calls{{breaker=\"{}\"}} {}\n", m.name,
                                m.window_calls);
    inflight_slow += fmt::format("vin_gateway_breaker_inflight_slow{{breaker=\"{}\"}} {}\n", m.name,
                                 m.inflight_slow);
  }
  out += policy;
  out += window_calls;
  out += inflight_slow;
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
      "vin_gateway_cache_errors_total{{backend=\"{}\"}} {}\n"
      "# HELP vin_gateway_cache_refused_total Entries found but out of bounds: read as misses.\n"
      "# TYPE vin_gateway_cache_refused_total counter\n"
      "vin_gateway_cache_refused_total{{backend=\"{}\"}} {}\n",
      cache.backend, cache.entries, cache.backend, cache.healthy ? 1 : 0, cache.backend,
      cache.evictions, cache.backend, cache.errors, cache.backend, cache.refused);
  out += fmt::format(
      "# HELP vin_gateway_bulkhead_in_flight Upstream calls holding a slot of the cap.\n"
      "# TYPE vin_gateway_bulkhead_in_flight gauge\nvin_gateway_bulkhead_in_flight {}\n"
      "# HELP vin_gateway_bulkhead_rejected_total Calls refused with OVERLOADED.\n"
      "# TYPE vin_gateway_bulkhead_rejected_total counter\n"
      "vin_gateway_bulkhead_rejected_total {}\n"
      "# HELP vin_gateway_concurrency_limit The cap on upstream calls in flight (moves with "
      "--max-in-flight auto).\n"
      "# TYPE vin_gateway_concurrency_limit gauge\nvin_gateway_concurrency_limit{{mode=\"{}\"}} "
      "{}\n"
      "# HELP vin_gateway_rate_limited_total Requests refused with RATE_LIMITED.\n"
      "# TYPE vin_gateway_rate_limited_total counter\nvin_gateway_rate_limited_total {}\n",
      deps.limits.in_flight(), deps.limits.rejected(), deps.limits.adaptive() ? "auto" : "fixed",
      deps.limits.limit(), deps.limiter.rejected());
  if (const std::optional<fusebox::Duration> no_load = deps.limits.no_load_latency()) {
    out += fmt::format(
        "# HELP vin_gateway_no_load_latency_seconds The adaptive limit's estimate of vPIC's "
        "latency without load.\n"
        "# TYPE vin_gateway_no_load_latency_seconds gauge\n"
        "vin_gateway_no_load_latency_seconds {}\n",
        std::chrono::duration<double>(*no_load).count());
  }
  if (const fusebox::Throttle* throttle = deps.limits.throttle()) {
    const fusebox::ThrottleStats stats = throttle->Stats();
    out += fmt::format(
        "# HELP vin_gateway_throttle_refusal_probability The share of vPIC calls the throttle "
        "sheds now.\n"
        "# TYPE vin_gateway_throttle_refusal_probability gauge\n"
        "vin_gateway_throttle_refusal_probability {}\n"
        "# HELP vin_gateway_throttle_refused_total Calls refused with THROTTLED.\n"
        "# TYPE vin_gateway_throttle_refused_total counter\n"
        "vin_gateway_throttle_refused_total {}\n",
        stats.refusal_probability, stats.refused);
  }
  if (const std::optional<std::string> snapshot = deps.service.offline_snapshot()) {
    out += fmt::format(
        "# HELP vin_gateway_offline_snapshot_info The offline vPIC database's snapshot date.\n"
        "# TYPE vin_gateway_offline_snapshot_info gauge\n"
        "vin_gateway_offline_snapshot_info{{date=\"{}\"}} 1\n",
        *snapshot);
  }
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
        "# HELP vin_gateway_fleet_messages_malformed_total Received but unparsable or too large: "
        "dropped.\n"
        "# TYPE vin_gateway_fleet_messages_malformed_total counter\n"
        "vin_gateway_fleet_messages_malformed_total {}\n"
        "# HELP vin_gateway_fleet_messages_refused_total Received but out of bounds: dropped.\n"
        "# TYPE vin_gateway_fleet_messages_refused_total counter\n"
        "vin_gateway_fleet_messages_refused_total {}\n"
        "# HELP vin_gateway_fleet_messages_unauthenticated_total Received without a valid "
        "signature of the fleet's secret, or too old: dropped (--fleet-secret-file).\n"
        "# TYPE vin_gateway_fleet_messages_unauthenticated_total counter\n"
        "vin_gateway_fleet_messages_unauthenticated_total {}\n"
        "# HELP vin_gateway_fleet_leases_won_total Probe leases this instance won.\n"
        "# TYPE vin_gateway_fleet_leases_won_total counter\nvin_gateway_fleet_leases_won_total "
        "{}\n"
        "# HELP vin_gateway_fleet_failing_peers Peers whose report of vPIC failing counts towards "
        "the quorum now (--fleet-quorum).\n"
        "# TYPE vin_gateway_fleet_failing_peers gauge\nvin_gateway_fleet_failing_peers {}\n"
        "# HELP vin_gateway_fleet_opens_below_quorum_total Peers' trips not followed: fewer than "
        "the quorum reported vPIC failing.\n"
        "# TYPE vin_gateway_fleet_opens_below_quorum_total counter\n"
        "vin_gateway_fleet_opens_below_quorum_total {}\n"
        "# HELP vin_gateway_fleet_trips_kept_local_total Trips of this instance's own network "
        "trouble, not sent to the fleet.\n"
        "# TYPE vin_gateway_fleet_trips_kept_local_total counter\n"
        "vin_gateway_fleet_trips_kept_local_total {}\n"
        "# HELP vin_gateway_fleet_tls 1 when the fleet link to Redis uses TLS (rediss://).\n"
        "# TYPE vin_gateway_fleet_tls gauge\nvin_gateway_fleet_tls {}\n"
        "# HELP vin_gateway_fleet_primary_changes_total Times the fleet link moved to another "
        "Redis server (a Sentinel failover).\n"
        "# TYPE vin_gateway_fleet_primary_changes_total counter\n"
        "vin_gateway_fleet_primary_changes_total {}\n",
        fleet->stats.connected ? 1 : 0, fleet->stats.peers_seen, fleet->stats.messages_sent,
        fleet->stats.messages_received, fleet->stats.messages_stale, fleet->malformed,
        fleet->stats.messages_refused, fleet->unauthenticated, fleet->stats.leases_won,
        fleet->failing_peers, fleet->stats.opens_below_quorum, fleet->stats.trips_kept_local,
        fleet->tls ? 1 : 0, fleet->primary_changes);
  }
  response.log_status = "OK";
  return response;
}

}  // namespace fusebox::gateway

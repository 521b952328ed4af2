#include "http/status_route.h"

#include <chrono>
#include <cstdint>
#include <string>

#include <boost/json/array.hpp>

#include "core/decode.h"
#include "core/decode_status.h"
#include "core/wall_clock.h"
#include "fusebox/metrics.h"

namespace fusebox::gateway {
namespace {

namespace json = boost::json;

std::int64_t CeilSeconds(fusebox::Duration d) {
  return std::chrono::ceil<std::chrono::seconds>(d).count();
}

// A window policy's settings and the window's figures now. `calls`, `failures` and `slow` are
// the recorded outcomes in the window; `inflight_slow` the calls still running past the slow-call
// duration (counted as slow by the slow-call rate when `count_in_flight_slow`).
json::object WindowJson(const fusebox::CircuitBreakerConfig& config,
                        const fusebox::MetricsSnapshot& m) {
  json::object w;
  w["size"] = config.window_size;
  w["unit"] = config.trip == fusebox::TripPolicy::kTimeWindow ? "seconds" : "calls";
  w["minimum_calls"] = config.minimum_calls;
  w["failure_rate_threshold"] = config.failure_rate_threshold;
  w["slow_call_rate_threshold"] = config.slow_call_rate_threshold;
  w["count_in_flight_slow"] = config.inflight_slow_accounting;
  w["calls"] = m.window_calls;
  w["failures"] = m.window_failures;
  w["slow"] = m.window_slow;
  w["inflight_slow"] = m.inflight_slow;
  w["failure_rate"] = m.failure_rate;
  w["slow_call_rate"] = m.slow_call_rate;
  return w;
}

}  // namespace

json::object BreakerJson(const fusebox::CircuitBreaker& breaker,
                         const std::vector<TransitionRecord>* transitions) {
  const fusebox::MetricsSnapshot m = breaker.Snapshot();
  json::object b;
  b["name"] = m.name;
  b["state"] = fusebox::ToString(m.state);
  b["calls"] = m.calls;
  b["allowed"] = m.allowed;
  b["rejected_open"] = m.rejected_open;
  b["rejected_half_open"] = m.rejected_half_open;
  b["succeeded"] = m.succeeded;
  b["failed"] = m.failed;
  b["timeouts"] = m.timeouts;
  b["slow"] = m.slow;
  b["ignored"] = m.ignored;
  b["late"] = m.late;
  b["probes"] = m.probes;
  b["wasted_probes"] = m.wasted_probes;
  b["transitions"] = m.transitions;
  b["opened"] = m.opened;
  b["consecutive_failures"] = m.consecutive_failures;
  b["probes_in_flight"] = m.probes_in_flight;
  const fusebox::CircuitBreakerConfig config = breaker.config();
  b["policy"] = fusebox::ToString(config.trip);
  b["failure_threshold"] = config.failure_threshold;
  b["cooldown_s"] =
      fusebox::ToSeconds(m.current_cooldown.count() > 0 ? m.current_cooldown : config.cooldown);
  b["call_timeout_s"] = fusebox::ToSeconds(config.call_timeout);
  b["slow_call_duration_s"] = fusebox::ToSeconds(config.effective_slow_call_duration());
  b["half_open_probes"] = config.half_open_max_probes;
  b["probes_to_close"] = config.effective_half_open_successes();
  b["cooldown_growth"] = config.cooldown_multiplier;
  b["max_cooldown_s"] = fusebox::ToSeconds(config.effective_cooldown_max());
  b["cooldown_jitter"] = config.cooldown_jitter;
  b["recovery_ramp_s"] = fusebox::ToSeconds(config.recovery_ramp);
  b["recovery_ramp_start"] = config.recovery_ramp_start;
  b["probe_mode"] = fusebox::ToString(config.probe_mode);
  b["probe_interval_s"] = fusebox::ToSeconds(config.effective_probe_interval());
  b["max_probe_interval_s"] = fusebox::ToSeconds(config.effective_probe_interval_max());
  b["probe_budget_s"] = fusebox::ToSeconds(config.effective_probe_budget());
  b["rejected_recovering"] = m.rejected_recovering;
  // The ramp's progress while one runs: the share of its length elapsed and the share of decodes
  // let through now; null otherwise.
  if (m.recovering) {
    json::object ramp;
    ramp["progress"] = m.recovery_progress;
    ramp["share"] = m.recovery_share;
    b["recovery"] = std::move(ramp);
  } else {
    b["recovery"] = nullptr;
  }
  if (config.trip != fusebox::TripPolicy::kConsecutive) {
    b["window"] = WindowJson(config, m);
  }
  if (m.state == fusebox::State::kOpen || m.state == fusebox::State::kForcedOpen) {
    b["retry_after_s"] =
        CeilSeconds(m.state == fusebox::State::kForcedOpen ? config.cooldown : m.retry_after);
  }
  if (transitions != nullptr) {
    json::array recent;
    for (const TransitionRecord& t : *transitions) {
      json::object entry;
      entry["from"] = fusebox::ToString(t.from);
      entry["to"] = fusebox::ToString(t.to);
      entry["cause"] = fusebox::ToString(t.cause);
      entry["at"] = FormatRfc3339(t.at);
      recent.push_back(std::move(entry));
    }
    b["recent_transitions"] = std::move(recent);
  }
  return b;
}

// `gets` and `hits` are the backend's (reads the in-process front did not answer);
// `fresh_hits` counts every fresh answer from the cache, front included, as
// vin_gateway_cache_hits_total does.
json::object CacheJson(const CacheStats& s, std::uint64_t fresh_hits) {
  json::object c;
  // Not the location: the file's path says too much about the host to anyone who can reach
  // /status or /readyz (the startup log line names it for the operator).
  c["backend"] = s.backend;
  c["healthy"] = s.healthy;
  if (!s.error.empty()) {
    c["error"] = SanitizeUtf8(s.error);
  }
  c["entries"] = s.entries;
  c["max_entries"] = s.max_entries;
  c["gets"] = s.gets;
  c["hits"] = s.hits;
  c["fresh_hits"] = fresh_hits;
  c["puts"] = s.puts;
  c["evictions"] = s.evictions;
  c["errors"] = s.errors;
  c["refused"] = s.refused;
  return c;
}

HttpResponse ReadyResponse(const RouterDeps& deps) {
  if (deps.draining && deps.draining()) {
    HttpResponse response = ErrorResponse(TransportStatus::kShuttingDown);
    response.headers.emplace_back("Retry-After", "1");
    return response;
  }
  json::object body = StatusJson(TransportStatus::kOk, "Ready.");
  body["ready"] = true;
  body["cache"] = CacheJson(deps.cache.Stats(), deps.metrics.fresh_hits());
  return JsonResponse(200, body, "OK");
}

namespace {

// Fleet mode (docs/fleet.md): null without --fleet.
json::value FleetJson(const RouterDeps& deps) {
  const std::optional<FleetReport> report = deps.fleet ? deps.fleet() : std::nullopt;
  if (!report) {
    return nullptr;
  }
  json::object fleet;
  fleet["url"] = report->url;
  fleet["instance"] = report->instance;
  fleet["connected"] = report->stats.connected;
  // Why it is not: a refused connection, a refused login (the password never appears).
  fleet["last_error"] =
      report->last_error.empty() ? json::value(nullptr) : json::value(report->last_error);
  fleet["peers_seen"] = report->stats.peers_seen;
  if (report->probe_lease_holder) {
    fleet["probe_lease_holder"] = *report->probe_lease_holder;
  } else {
    fleet["probe_lease_holder"] = nullptr;
  }
  fleet["messages_sent"] = report->stats.messages_sent;
  fleet["messages_received"] = report->stats.messages_received;
  // Dropped as out of bounds (docs/fleet.md, "Bounds"): by the fleet's checks, and by the link
  // for what does not parse or is too large to read.
  fleet["messages_refused"] = report->stats.messages_refused;
  fleet["messages_malformed"] = report->malformed;
  // --fleet-secret-file: whether messages are signed, and how many failed the check.
  fleet["signed"] = report->signed_messages;
  fleet["messages_unauthenticated"] = report->unauthenticated;
  // --fleet-quorum: peers' OPENs follow only once `quorum` peers reported vPIC failing; trips
  // of this instance's own trouble (its network) stay here.
  fleet["quorum"] = report->quorum;
  fleet["failing_peers"] = report->failing_peers;
  fleet["opens_below_quorum"] = report->stats.opens_below_quorum;
  fleet["trips_kept_local"] = report->stats.trips_kept_local;
  // rediss:// or not; the server in use, and the last failover (redis+sentinel://).
  fleet["tls"] = report->tls;
  fleet["primary"] = report->primary.empty() ? json::value(nullptr) : json::value(report->primary);
  fleet["primary_changes"] = report->primary_changes;
  fleet["last_primary_change"] = report->last_primary_change
                                     ? json::value(FormatRfc3339(*report->last_primary_change))
                                     : json::value(nullptr);
  return fleet;
}

// The cap on vPIC calls in flight: `max_in_flight` is the cap in force (the adaptive limit's
// current value with --max-in-flight auto).
json::object LimitsJson(const UpstreamLimits& limits) {
  json::object out;
  out["mode"] = limits.adaptive() ? "auto" : "fixed";
  out["max_in_flight"] = limits.limit();
  out["in_flight"] = limits.in_flight();
  out["admitted"] = limits.admitted();
  out["rejected"] = limits.rejected();
  if (const fusebox::AdaptiveLimit* adaptive = limits.adaptive_limit()) {
    out["min"] = adaptive->config().min_limit;
    out["max"] = adaptive->config().max_limit;
    const std::optional<fusebox::Duration> no_load = limits.no_load_latency();
    out["no_load_latency_ms"] =
        no_load ? json::value(std::chrono::duration<double, std::milli>(*no_load).count())
                : json::value(nullptr);
  }
  return out;
}

json::object ThrottleJson(const fusebox::Throttle& throttle) {
  const fusebox::ThrottleStats stats = throttle.Stats();
  json::object out;
  out["k"] = throttle.config().k;
  out["window_s"] = std::chrono::duration<double>(throttle.config().window).count();
  out["refusal_probability"] = stats.refusal_probability;
  out["sent_in_window"] = stats.sent;
  out["accepted_in_window"] = stats.accepts;
  out["refused_in_window"] = stats.refused_in_window;
  out["refused"] = stats.refused;
  return out;
}

}  // namespace

HttpResponse StatusResponse(const RouterDeps& deps) {
  json::object body = StatusJson(TransportStatus::kOk, "Gateway status.");
  json::array breakers;
  const std::vector<TransitionRecord> transitions = deps.service.recent_transitions();
  for (const auto& breaker : deps.registry.All()) {
    const bool ours = breaker.get() == &deps.service.breaker();
    breakers.push_back(BreakerJson(*breaker, ours ? &transitions : nullptr));
  }
  body["breakers"] = std::move(breakers);
  body["cache"] = CacheJson(deps.cache.Stats(), deps.metrics.fresh_hits());
  body["bulkhead"] = LimitsJson(deps.limits);
  if (const fusebox::Throttle* throttle = deps.limits.throttle()) {
    body["throttle"] = ThrottleJson(*throttle);
  }
  json::object flights;
  flights["in_flight"] = deps.service.single_flight_in_flight();
  flights["leaders"] = deps.metrics.leaders();
  flights["joins"] = deps.metrics.joins();
  body["single_flight"] = std::move(flights);
  json::object rate;
  rate["enabled"] = deps.limiter.enabled();
  rate["rejected"] = deps.limiter.rejected();
  rate["clients"] = deps.limiter.tracked_clients();
  body["rate_limit"] = std::move(rate);
  const VpicClientStats client = deps.client.Stats();
  json::object upstream;
  upstream["requests"] = client.requests;
  upstream["connections_opened"] = client.connections_opened;
  upstream["connections_reused"] = client.connections_reused;
  upstream["idle_connections"] = client.idle_connections;
  upstream["in_flight"] = deps.metrics.upstream_in_flight();
  upstream["hold_s"] = fusebox::ToSeconds(deps.service.upstream_hold());
  body["upstream"] = std::move(upstream);
  // The gateway's own probes (active probing): how many, the last one, and when the next runs
  // (null unless the breaker is OPEN in active mode).
  json::object probing;
  const fusebox::CircuitBreaker& breaker = deps.service.breaker();
  const bool active = breaker.config().probe_mode == fusebox::ProbeMode::kActive;
  probing["mode"] = active ? "active" : "passive";
  probing["sent"] = deps.metrics.probes_sent();
  const std::optional<fusebox::Outcome> last = deps.metrics.last_probe_outcome();
  probing["last_outcome"] = last ? json::value(fusebox::ToString(*last)) : json::value(nullptr);
  probing["last_latency_ms"] =
      last ? json::value(fusebox::ToSeconds(deps.metrics.last_probe_latency()) * 1000)
           : json::value(nullptr);
  probing["next_in_s"] = active && breaker.state() == fusebox::State::kOpen
                             ? json::value(fusebox::ToSeconds(breaker.retry_after()))
                             : json::value(nullptr);
  body["probing"] = std::move(probing);
  json::object answers;
  for (DecodeStatus status : kAllDecodeStatuses) {
    if (const std::uint64_t n = deps.metrics.answers(status); n > 0) {
      answers[ToString(status)] = n;
    }
  }
  body["answers"] = std::move(answers);
  // The offline decoder (docs/offline-decode.md): its snapshot, what it served, how fast.
  json::object offline;
  const std::optional<std::string> snapshot = deps.service.offline_snapshot();
  offline["enabled"] = snapshot.has_value();
  offline["snapshot"] = snapshot ? json::value(*snapshot) : json::value(nullptr);
  offline["served"] = deps.metrics.offline_answers();
  offline["decode_mean_ms"] = deps.metrics.offline_mean_ms();
  body["offline"] = std::move(offline);
  body["fleet"] = FleetJson(deps);
  return JsonResponse(200, body, "OK");
}

}  // namespace fusebox::gateway

#include "service/gateway_metrics.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

namespace fusebox::gateway {
namespace {

std::size_t Index(DecodeStatus status) noexcept { return static_cast<std::size_t>(status); }

void Help(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

}  // namespace

std::string_view ToString(UpstreamResult result) noexcept {
  switch (result) {
    case UpstreamResult::kOk:
      return "ok";
    case UpstreamResult::kHttpError:
      return "http_error";
    case UpstreamResult::kBadBody:
      return "bad_body";
    case UpstreamResult::kTransport:
      return "transport";
    case UpstreamResult::kTimeout:
      return "timeout";
    case UpstreamResult::kLocal:
      return "local";
    case UpstreamResult::kCount:
      break;
  }
  return "unknown";
}

void GatewayMetrics::CountAnswer(DecodeStatus status, Source source, bool stale) noexcept {
  Add(answers_[Index(status)][static_cast<std::size_t>(source)]);
  if (stale) {
    Add(stale_);
  }
}

void GatewayMetrics::ObserveUpstream(UpstreamResult result, fusebox::Duration latency) noexcept {
  Add(upstream_[static_cast<std::size_t>(result)]);
  const double seconds = fusebox::ToSeconds(latency);
  std::size_t bucket = 0;
  while (bucket < kLatencyBuckets.size() && seconds > kLatencyBuckets[bucket]) {
    ++bucket;
  }
  Add(latency_buckets_[bucket]);
  Add(latency_count_);
  latency_sum_us_.fetch_add(
      static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::microseconds>(latency).count()),
      std::memory_order_relaxed);
}

std::string_view ToString(GatewayMetrics::Route route) noexcept {
  using Route = GatewayMetrics::Route;
  switch (route) {
    case Route::kDecode:
      return "decode";
    case Route::kBatch:
      return "batch";
    case Route::kForm:
      return "form";
    case Route::kOps:
      return "ops";
    case Route::kAdmin:
      return "admin";
    case Route::kOther:
    case Route::kCount:
      break;
  }
  return "other";
}

GatewayMetrics::Route GatewayMetrics::RouteOf(std::string_view target) noexcept {
  const std::string_view path = target.substr(0, target.find('?'));
  if (path == "/api/v1/vin/batch") {
    return Route::kBatch;
  }
  if (path.starts_with("/api/v1/vin/")) {
    return Route::kDecode;
  }
  if (path == "/" || path == "/index.html" || path.starts_with("/assets/")) {
    return Route::kForm;
  }
  if (path == "/status" || path == "/metrics" || path == "/healthz" || path == "/readyz") {
    return Route::kOps;
  }
  if (path.starts_with("/admin/")) {
    return Route::kAdmin;
  }
  return Route::kOther;
}

void GatewayMetrics::ObserveRequest(Route route, fusebox::Duration elapsed) noexcept {
  const auto r = static_cast<std::size_t>(route);
  if (r >= kRoutes) {
    return;
  }
  const double seconds = fusebox::ToSeconds(elapsed);
  std::size_t bucket = 0;
  while (bucket < kLatencyBuckets.size() && seconds > kLatencyBuckets[bucket]) {
    ++bucket;
  }
  Add(request_buckets_[r][bucket]);
  Add(request_count_[r]);
  request_sum_us_[r].fetch_add(
      static_cast<std::uint64_t>(std::max<std::int64_t>(
          0, std::chrono::duration_cast<std::chrono::microseconds>(elapsed).count())),
      std::memory_order_relaxed);
}

void GatewayMetrics::ObserveOffline(fusebox::Duration latency) noexcept {
  const double seconds = fusebox::ToSeconds(latency);
  std::size_t bucket = 0;
  while (bucket < kOfflineLatencyBuckets.size() && seconds > kOfflineLatencyBuckets[bucket]) {
    ++bucket;
  }
  Add(offline_buckets_[bucket]);
  Add(offline_count_);
  offline_sum_ns_.fetch_add(
      static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(latency).count()),
      std::memory_order_relaxed);
}

std::uint64_t GatewayMetrics::answers(DecodeStatus status) const noexcept {
  std::uint64_t total = 0;
  for (const auto& c : answers_[Index(status)]) {
    total += Get(c);
  }
  return total;
}

std::uint64_t GatewayMetrics::upstream_calls(UpstreamResult result) const noexcept {
  return Get(upstream_[static_cast<std::size_t>(result)]);
}

void GatewayMetrics::AppendPrometheus(std::string& out) const {
  Help(out, "vin_gateway_answers_total", "counter",
       "Decode answers by status and source (stale copies included).");
  for (DecodeStatus status : kAllDecodeStatuses) {
    for (Source source : {Source::kNone, Source::kLive, Source::kCache, Source::kOffline}) {
      const std::uint64_t n = Get(answers_[Index(status)][static_cast<std::size_t>(source)]);
      if (n == 0 && (status != DecodeStatus::kOk || source == Source::kOffline)) {
        continue;
      }
      // An answer without a decode (a refusal, an invalid VIN) is source="none": Prometheus
      // reads an empty label value as no label at all.
      const std::string_view label = source == Source::kNone ? "none" : ToString(source);
      out += fmt::format("vin_gateway_answers_total{{status=\"{}\",source=\"{}\"}} {}\n",
                         ToString(status), label, n);
    }
  }
  Help(out, "vin_gateway_stale_answers_total", "counter",
       "Last-good decodes served because the live decode was impossible.");
  out += fmt::format("vin_gateway_stale_answers_total {}\n", Get(stale_));
  Help(out, "vin_gateway_cache_hits_total", "counter",
       "Decodes answered from the cache within the TTL (no upstream call).");
  out += fmt::format("vin_gateway_cache_hits_total {}\n", Get(fresh_hits_));
  Help(out, "vin_gateway_cache_misses_total", "counter",
       "Decodes the cache could not answer fresh.");
  out += fmt::format("vin_gateway_cache_misses_total {}\n", Get(misses_));
  Help(out, "vin_gateway_single_flight_joins_total", "counter",
       "Requests that joined an in-flight decode of the same VIN instead of calling upstream.");
  out += fmt::format("vin_gateway_single_flight_joins_total {}\n", Get(joins_));
  Help(out, "vin_gateway_single_flight_leaders_total", "counter",
       "Decodes that led a flight (at most one upstream call each).");
  out += fmt::format("vin_gateway_single_flight_leaders_total {}\n", Get(leaders_));
  Help(out, "vin_gateway_upstream_calls_total", "counter", "Upstream calls by result.");
  for (std::size_t i = 0; i < kResults; ++i) {
    out += fmt::format("vin_gateway_upstream_calls_total{{result=\"{}\"}} {}\n",
                       ToString(static_cast<UpstreamResult>(i)), Get(upstream_[i]));
  }
  Help(out, "vin_gateway_upstream_in_flight", "gauge", "Upstream calls running now.");
  out += fmt::format("vin_gateway_upstream_in_flight {}\n",
                     in_flight_.load(std::memory_order_relaxed));
  Help(out, "vin_gateway_upstream_latency_seconds", "histogram",
       "Latency of upstream calls (timeouts included, at the budget).");
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < kLatencyBuckets.size(); ++i) {
    cumulative += Get(latency_buckets_[i]);
    out += fmt::format("vin_gateway_upstream_latency_seconds_bucket{{le=\"{}\"}} {}\n",
                       kLatencyBuckets[i], cumulative);
  }
  cumulative += Get(latency_buckets_[kLatencyBuckets.size()]);
  out += fmt::format("vin_gateway_upstream_latency_seconds_bucket{{le=\"+Inf\"}} {}\n", cumulative);
  out += fmt::format("vin_gateway_upstream_latency_seconds_sum {}\n",
                     static_cast<double>(Get(latency_sum_us_)) / 1e6);
  out += fmt::format("vin_gateway_upstream_latency_seconds_count {}\n", Get(latency_count_));
  Help(out, "vin_gateway_request_duration_seconds", "histogram",
       "Time from a request's first byte to its answer's last, by route (decode, batch, form, "
       "ops: /status /metrics /healthz /readyz, admin, other).");
  for (std::size_t r = 0; r < kRoutes; ++r) {
    const std::string_view route = ToString(static_cast<Route>(r));
    cumulative = 0;
    for (std::size_t i = 0; i < kLatencyBuckets.size(); ++i) {
      cumulative += Get(request_buckets_[r][i]);
      out +=
          fmt::format("vin_gateway_request_duration_seconds_bucket{{route=\"{}\",le=\"{}\"}} {}\n",
                      route, kLatencyBuckets[i], cumulative);
    }
    cumulative += Get(request_buckets_[r][kLatencyBuckets.size()]);
    out +=
        fmt::format("vin_gateway_request_duration_seconds_bucket{{route=\"{}\",le=\"+Inf\"}} {}\n",
                    route, cumulative);
    out += fmt::format("vin_gateway_request_duration_seconds_sum{{route=\"{}\"}} {}\n", route,
                       static_cast<double>(Get(request_sum_us_[r])) / 1e6);
    out += fmt::format("vin_gateway_request_duration_seconds_count{{route=\"{}\"}} {}\n", route,
                       Get(request_count_[r]));
  }
  Help(out, "vin_gateway_offline_decode_seconds", "histogram",
       "Time the offline decoder took per decode served from NHTSA's vPIC snapshot.");
  cumulative = 0;
  for (std::size_t i = 0; i < kOfflineLatencyBuckets.size(); ++i) {
    cumulative += Get(offline_buckets_[i]);
    out += fmt::format("vin_gateway_offline_decode_seconds_bucket{{le=\"{}\"}} {}\n",
                       kOfflineLatencyBuckets[i], cumulative);
  }
  cumulative += Get(offline_buckets_[kOfflineLatencyBuckets.size()]);
  out += fmt::format("vin_gateway_offline_decode_seconds_bucket{{le=\"+Inf\"}} {}\n", cumulative);
  out += fmt::format("vin_gateway_offline_decode_seconds_sum {}\n",
                     static_cast<double>(Get(offline_sum_ns_)) / 1e9);
  out += fmt::format("vin_gateway_offline_decode_seconds_count {}\n", Get(offline_count_));
  Help(out, "vin_gateway_probes_total", "counter",
       "Probes the gateway sent vPIC itself (active probing), by recorded outcome.");
  for (fusebox::Outcome outcome : {fusebox::Outcome::kSuccess, fusebox::Outcome::kFailure,
                                   fusebox::Outcome::kTimeout, fusebox::Outcome::kIgnored}) {
    out += fmt::format("vin_gateway_probes_total{{outcome=\"{}\"}} {}\n",
                       fusebox::ToString(outcome), probes(outcome));
  }
}

void GatewayMetrics::ObserveProbe(fusebox::Outcome outcome, fusebox::Duration latency) noexcept {
  Add(probes_[static_cast<std::size_t>(outcome)]);
  last_probe_ns_.store(latency.count(), std::memory_order_relaxed);
  last_probe_outcome_.store(static_cast<int>(outcome), std::memory_order_relaxed);
}

std::uint64_t GatewayMetrics::probes_sent() const noexcept {
  std::uint64_t sum = 0;
  for (const auto& count : probes_) {
    sum += Get(count);
  }
  return sum;
}

std::optional<fusebox::Outcome> GatewayMetrics::last_probe_outcome() const noexcept {
  const int last = last_probe_outcome_.load(std::memory_order_relaxed);
  if (last < 0) {
    return std::nullopt;
  }
  return static_cast<fusebox::Outcome>(last);
}

}  // namespace fusebox::gateway

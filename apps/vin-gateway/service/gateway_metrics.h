// vin-gateway/service/gateway_metrics.h
//
// The gateway's own counters, next to the breaker's (fusebox::AppendPrometheus): answers by
// status and source, cache hits, single-flight joins, upstream calls by result and their latency
// histogram, upstream calls in flight. Rendered as Prometheus text at /metrics and as figures in
// /status.
//
// Thread safety: all members may be called concurrently (relaxed atomics: these are statistics
// and no decision reads them). Time: none; latencies are measured by the caller.
//
// Example:
//   metrics.CountAnswer(DecodeStatus::kOk, Source::kCache);
//   metrics.ObserveUpstream(UpstreamResult::kOk, 35ms);
//   std::string text = metrics.Prometheus();
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/decode_answer.h"
#include "core/decode_status.h"
#include "fusebox/clock.h"
#include "fusebox/outcome.h"

namespace fusebox::gateway {

// How one upstream call ended (as the classifier and the budget saw it).
enum class UpstreamResult : std::uint8_t {
  kOk,         // a vPIC answer (however sparse)
  kHttpError,  // 5xx, 429 or another non-200 status
  kBadBody,    // 200 but not vPIC JSON, or the VIN echo did not match
  kTransport,  // connect, TLS, reset, protocol, body too large
  kTimeout,    // the budget ran out
  kLocal,      // the gateway was short of descriptors or memory: not the upstream's doing
  kCount,
};

// "ok", "http_error", "bad_body", "transport", "timeout", "local".
std::string_view ToString(UpstreamResult result) noexcept;

class GatewayMetrics {
 public:
  // Upper bounds of the latency histogram, in seconds.
  static constexpr std::array<double, 13> kLatencyBuckets = {
      0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 7.5, 10, 30};

  void CountAnswer(DecodeStatus status, Source source, bool stale) noexcept;
  void CountFreshHit() noexcept { Add(fresh_hits_); }
  void CountMiss() noexcept { Add(misses_); }
  void CountJoin() noexcept { Add(joins_); }
  void CountLeader() noexcept { Add(leaders_); }
  void ObserveUpstream(UpstreamResult result, fusebox::Duration latency) noexcept;
  void UpstreamStarted() noexcept { in_flight_.fetch_add(1, std::memory_order_relaxed); }
  void UpstreamFinished() noexcept { in_flight_.fetch_sub(1, std::memory_order_relaxed); }
  // One offline decode served (docs/offline-decode.md) and how long the decoder took.
  static constexpr std::array<double, 8> kOfflineLatencyBuckets = {0.00005, 0.0001, 0.00025, 0.0005,
                                                                   0.001,   0.0025, 0.01,    0.1};
  void ObserveOffline(fusebox::Duration latency) noexcept;
  // One HTTP request answered, from its first byte read to its answer's last byte written (the
  // access log's elapsed_ms), by the route class of its target (RouteOf).
  enum class Route : std::uint8_t { kDecode, kBatch, kForm, kOps, kAdmin, kOther, kCount };
  static Route RouteOf(std::string_view target) noexcept;
  void ObserveRequest(Route route, fusebox::Duration elapsed) noexcept;
  std::uint64_t requests(Route route) const noexcept {
    return Get(request_count_[static_cast<std::size_t>(route)]);
  }
  // One probe the gateway sent itself (active probing): its recorded outcome and duration.
  void ObserveProbe(fusebox::Outcome outcome, fusebox::Duration latency) noexcept;
  std::uint64_t probes(fusebox::Outcome outcome) const noexcept {
    return Get(probes_[static_cast<std::size_t>(outcome)]);
  }
  std::uint64_t probes_sent() const noexcept;
  // The last probe's outcome (nullopt before the first) and duration.
  std::optional<fusebox::Outcome> last_probe_outcome() const noexcept;
  fusebox::Duration last_probe_latency() const noexcept {
    return fusebox::Duration(last_probe_ns_.load(std::memory_order_relaxed));
  }
  std::uint64_t offline_answers() const noexcept { return Get(offline_count_); }
  // Mean offline decode time in milliseconds; 0 before the first.
  double offline_mean_ms() const noexcept {
    const std::uint64_t n = Get(offline_count_);
    return n == 0 ? 0.0 : static_cast<double>(Get(offline_sum_ns_)) / 1e6 / static_cast<double>(n);
  }

  std::uint64_t answers(DecodeStatus status) const noexcept;
  std::uint64_t stale_answers() const noexcept { return Get(stale_); }
  std::uint64_t fresh_hits() const noexcept { return Get(fresh_hits_); }
  std::uint64_t misses() const noexcept { return Get(misses_); }
  std::uint64_t joins() const noexcept { return Get(joins_); }
  std::uint64_t leaders() const noexcept { return Get(leaders_); }
  std::uint64_t upstream_calls(UpstreamResult result) const noexcept;
  std::int64_t upstream_in_flight() const noexcept {
    return in_flight_.load(std::memory_order_relaxed);
  }

  // The gateway's series in Prometheus text format (HELP/TYPE lines included).
  void AppendPrometheus(std::string& out) const;

 private:
  static void Add(std::atomic<std::uint64_t>& c) noexcept {
    c.fetch_add(1, std::memory_order_relaxed);
  }
  static std::uint64_t Get(const std::atomic<std::uint64_t>& c) noexcept {
    return c.load(std::memory_order_relaxed);
  }

  static constexpr std::size_t kStatuses = std::size(kAllDecodeStatuses);
  static constexpr std::size_t kResults = static_cast<std::size_t>(UpstreamResult::kCount);

  std::array<std::array<std::atomic<std::uint64_t>, 4>, kStatuses> answers_{};
  std::atomic<std::uint64_t> stale_{0};
  std::atomic<std::uint64_t> fresh_hits_{0};
  std::atomic<std::uint64_t> misses_{0};
  std::atomic<std::uint64_t> joins_{0};
  std::atomic<std::uint64_t> leaders_{0};
  std::array<std::atomic<std::uint64_t>, kResults> upstream_{};
  std::array<std::atomic<std::uint64_t>, kLatencyBuckets.size() + 1> latency_buckets_{};
  std::atomic<std::uint64_t> latency_count_{0};
  std::atomic<std::uint64_t> latency_sum_us_{0};
  static constexpr std::size_t kRoutes = static_cast<std::size_t>(Route::kCount);
  std::array<std::array<std::atomic<std::uint64_t>, kLatencyBuckets.size() + 1>, kRoutes>
      request_buckets_{};
  std::array<std::atomic<std::uint64_t>, kRoutes> request_count_{};
  std::array<std::atomic<std::uint64_t>, kRoutes> request_sum_us_{};
  std::array<std::atomic<std::uint64_t>, kOfflineLatencyBuckets.size() + 1> offline_buckets_{};
  std::atomic<std::uint64_t> offline_count_{0};
  std::atomic<std::uint64_t> offline_sum_ns_{0};
  std::atomic<std::int64_t> in_flight_{0};
  std::array<std::atomic<std::uint64_t>, 4> probes_{};  // by fusebox::Outcome
  std::atomic<int> last_probe_outcome_{-1};
  std::atomic<fusebox::Duration::rep> last_probe_ns_{0};
};

// "decode", "batch", "form", "ops", "admin", "other": the `route` label.
std::string_view ToString(GatewayMetrics::Route route) noexcept;

}  // namespace fusebox::gateway

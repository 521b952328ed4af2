#include "http/router.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <array>
#include <charconv>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/url/parse.hpp>

#include "core/answer_json.h"
#include "fusebox/metrics.h"
#include "http/transport_status.h"
#include "http/web_assets.h"

namespace vin_gateway {
namespace {

namespace json = boost::json;
namespace net = boost::asio;

// The page may load only what the gateway serves, and runs no inline script or style.
constexpr std::string_view kPagePolicy =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'";

// One embedded asset. Versioned paths name their content, so browsers may keep them for good;
// plain paths (and the page, which names the versioned ones) are revalidated every time.
// RFC 9110 13.1.2: If-None-Match is "*" or a list of entity tags, compared weakly.
bool EtagListMatches(std::string_view list, std::string_view etag) {
  const auto opaque = [](std::string_view tag) {
    return tag.substr(0, 2) == "W/" ? tag.substr(2) : tag;
  };
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) {
      item.remove_prefix(1);
    }
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) {
      item.remove_suffix(1);
    }
    if (item == "*" || (!item.empty() && opaque(item) == opaque(etag))) {
      return true;
    }
  }
  return false;
}

HttpResponse AssetResponse(const WebAsset& asset, std::string_view requested_path,
                           std::string_view if_none_match) {
  HttpResponse response;
  response.content_type = std::string(asset.content_type);
  response.log_status = "OK";
  if (!if_none_match.empty() && EtagListMatches(if_none_match, asset.etag)) {
    // The browser's copy is current: headers only (a 304 has no body).
    response.status = 304;
  } else {
    response.body = std::string(asset.body);
  }
  const bool versioned = requested_path != asset.path;
  response.headers.emplace_back("Cache-Control",
                                versioned ? "public, max-age=31536000, immutable" : "no-cache");
  response.headers.emplace_back("ETag", std::string(asset.etag));
  response.headers.emplace_back("X-Content-Type-Options", "nosniff");
  if (asset.path == "/index.html") {
    response.headers.emplace_back("Content-Security-Policy", std::string(kPagePolicy));
    response.headers.emplace_back("Referrer-Policy", "no-referrer");
    response.headers.emplace_back("X-Frame-Options", "DENY");
  }
  return response;
}

HttpResponse JsonResponse(unsigned status, const json::object& body, std::string log_status) {
  HttpResponse response;
  response.status = status;
  response.body = json::serialize(body);
  response.log_status = std::move(log_status);
  return response;
}

HttpResponse Error(TransportStatus status, std::string_view message = {}) {
  HttpResponse response;
  response.status = HttpStatus(status);
  response.body = ErrorBody(status, message);
  response.log_status = std::string(ToString(status));
  return response;
}

// "2011" -> 2011 within [1900, 2100]; nullopt otherwise.
std::optional<int> ParseModelYear(std::string_view text) {
  int year = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, year);
  if (ec != std::errc() || ptr != end || text.size() != 4 || year < 1900 || year > 2100) {
    return std::nullopt;
  }
  return year;
}

std::int64_t CeilSeconds(fusebox::Duration d) {
  return std::chrono::ceil<std::chrono::seconds>(d).count();
}

// `transitions`: the breaker's recent transitions when they are kept (the decode service's).
json::object BreakerJson(const fusebox::CircuitBreaker& breaker,
                         const std::vector<TransitionRecord>* transitions = nullptr) {
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
  b["failure_threshold"] = breaker.config().failure_threshold;
  b["cooldown_s"] = fusebox::ToSeconds(m.current_cooldown.count() > 0 ? m.current_cooldown
                                                                      : breaker.config().cooldown);
  b["call_timeout_s"] = fusebox::ToSeconds(breaker.config().call_timeout);
  if (m.state == fusebox::State::kOpen || m.state == fusebox::State::kForcedOpen) {
    b["retry_after_s"] = CeilSeconds(
        m.state == fusebox::State::kForcedOpen ? breaker.config().cooldown : m.retry_after);
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

json::object CacheJson(const CacheStats& s) {
  json::object c;
  c["backend"] = s.backend;
  if (!s.location.empty()) {
    c["location"] = SanitizeUtf8(s.location);
  }
  c["healthy"] = s.healthy;
  if (!s.error.empty()) {
    c["error"] = SanitizeUtf8(s.error);
  }
  c["entries"] = s.entries;
  c["max_entries"] = s.max_entries;
  c["gets"] = s.gets;
  c["hits"] = s.hits;
  c["puts"] = s.puts;
  c["evictions"] = s.evictions;
  c["errors"] = s.errors;
  return c;
}

}  // namespace

bool BearerMatches(std::string_view authorization, std::string_view token) {
  constexpr std::string_view kPrefix = "Bearer ";
  std::string_view presented;
  if (authorization.size() >= kPrefix.size() &&
      authorization.substr(0, kPrefix.size()) == kPrefix) {
    presented = authorization.substr(kPrefix.size());
  }
  std::array<unsigned char, SHA256_DIGEST_LENGTH> want{};
  std::array<unsigned char, SHA256_DIGEST_LENGTH> got{};
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), want.data());
  SHA256(reinterpret_cast<const unsigned char*>(presented.data()), presented.size(), got.data());
  const bool same = CRYPTO_memcmp(want.data(), got.data(), want.size()) == 0;
  return same && !token.empty() && !presented.empty();
}

HttpResponse AnswerResponse(const DecodeAnswer& answer) {
  HttpResponse response;
  response.status = answer.http_status();
  response.body = answer.rendered_body ? *answer.rendered_body : AnswerBody(answer);
  if (HasRetryAfter(answer.status) && !answer.stale) {
    response.headers.emplace_back("Retry-After",
                                  std::to_string(RetryAfterSeconds(answer.retry_after)));
  }
  response.log_status = std::string(ToString(answer.status));
  response.log_vin = answer.vin_readable ? SanitizeUtf8(answer.vin) : std::string();
  response.log_source = std::string(ToString(answer.source));
  if (answer.stale) {
    response.log_source += "-stale";
  }
  response.upstream_latency = answer.upstream_latency;
  response.log_detail = answer.upstream_detail;
  return response;
}

net::awaitable<HttpResponse> Router::Handle(HttpRequest request) {
  auto parsed = boost::urls::parse_origin_form(request.target);
  if (!parsed) {
    co_return Error(TransportStatus::kBadRequest, "The request target is not a valid URL path.");
  }
  std::vector<std::string> segments;
  for (auto segment : parsed->segments()) {
    segments.push_back(segment);
    if (segments.size() > 8) {
      co_return Error(TransportStatus::kNotFound);
    }
  }
  std::optional<std::string> modelyear;
  for (auto param : parsed->params()) {
    if (param.key == "modelyear") {
      modelyear = std::string(param.value);
    }
  }
  const bool get = request.method == "GET";
  const bool post = request.method == "POST";
  const auto only = [&](bool allowed) {
    return allowed ? std::nullopt
                   : std::optional<HttpResponse>(Error(TransportStatus::kMethodNotAllowed));
  };

  if (segments.size() == 4 && segments[0] == "api" && segments[1] == "v1" && segments[2] == "vin") {
    if (segments[3] == "batch") {
      if (auto refused = only(post)) {
        co_return *refused;
      }
      co_return co_await DecodeBatch(request);
    }
    if (auto refused = only(get)) {
      co_return *refused;
    }
    co_return co_await DecodeOne(request, segments[3], modelyear);
  }
  if (segments.size() == 3 && segments[0] == "api" && segments[1] == "v1" && segments[2] == "vin") {
    // "/api/v1/vin/" with an empty segment: the VIN is empty.
    if (auto refused = only(get)) {
      co_return *refused;
    }
    co_return co_await DecodeOne(request, "", modelyear);
  }
  if (segments.size() == 1) {
    const std::string& name = segments[0];
    if (name == "healthz") {
      if (auto refused = only(get)) {
        co_return *refused;
      }
      co_return JsonResponse(200, StatusJson(TransportStatus::kOk, "Serving."), "OK");
    }
    if (name == "readyz") {
      if (auto refused = only(get)) {
        co_return *refused;
      }
      co_return Ready();
    }
    if (name == "status") {
      if (auto refused = only(get)) {
        co_return *refused;
      }
      co_return Status();
    }
    if (name == "metrics") {
      if (auto refused = only(get)) {
        co_return *refused;
      }
      co_return Metrics();
    }
  }
  if (segments.empty() ||
      (segments.size() == 1 && (segments[0].empty() || segments[0] == "index.html"))) {
    if (auto refused = only(get)) {
      co_return *refused;
    }
    co_return AssetResponse(*FindWebAsset("/index.html"), "/index.html", request.if_none_match);
  }
  if (segments.size() == 2 && segments[0] == "assets") {
    const std::string path = "/assets/" + segments[1];
    if (const WebAsset* asset = FindWebAsset(path)) {
      if (auto refused = only(get)) {
        co_return *refused;
      }
      co_return AssetResponse(*asset, path, request.if_none_match);
    }
    co_return Error(TransportStatus::kNotFound);
  }
  if (segments.size() == 4 && segments[0] == "admin" && segments[1] == "breakers") {
    if (!deps_.admin_token) {
      co_return Error(TransportStatus::kNotFound);
    }
    if (!BearerMatches(request.authorization, *deps_.admin_token)) {
      HttpResponse refused = Error(TransportStatus::kUnauthorized);
      refused.headers.emplace_back("WWW-Authenticate", "Bearer");
      co_return refused;
    }
    if (auto refused = only(post)) {
      co_return *refused;
    }
    co_return Admin(request, segments[2], segments[3]);
  }
  co_return Error(TransportStatus::kNotFound);
}

net::awaitable<HttpResponse> Router::DecodeOne(const HttpRequest& request, std::string_view raw_vin,
                                               std::optional<std::string> modelyear) {
  int model_year = 0;
  if (modelyear) {
    std::optional<int> year = ParseModelYear(*modelyear);
    if (!year) {
      co_return Error(TransportStatus::kBadRequest,
                      "modelyear must be a four-digit year between 1900 and 2100.");
    }
    model_year = *year;
  }
  DecodeAnswer answer =
      co_await deps_.service.Decode(std::string(raw_vin), model_year, request.client);
  co_return AnswerResponse(answer);
}

net::awaitable<HttpResponse> Router::DecodeBatch(const HttpRequest& request) {
  boost::system::error_code ec;
  json::value root = json::parse(request.body, ec);
  if (ec || !root.is_object()) {
    co_return Error(TransportStatus::kBadRequest,
                    "The body must be a JSON object such as {\"vins\": [\"...\"]}.");
  }
  const json::object& object = root.get_object();
  const json::value* vins = object.if_contains("vins");
  if (vins == nullptr || !vins->is_array()) {
    co_return Error(TransportStatus::kBadRequest, "\"vins\" must be a list of VIN strings.");
  }
  const json::array& list = vins->get_array();
  if (list.empty() || list.size() > kMaxBatch) {
    co_return Error(
        TransportStatus::kBadRequest,
        fmt::format("A batch holds 1 to {} VINs; this one has {}.", kMaxBatch, list.size()));
  }
  std::vector<std::string> raw_vins;
  raw_vins.reserve(list.size());
  for (const json::value& v : list) {
    if (!v.is_string()) {
      co_return Error(TransportStatus::kBadRequest, "\"vins\" must be a list of VIN strings.");
    }
    raw_vins.emplace_back(v.get_string().data(), v.get_string().size());
  }
  int model_year = 0;
  if (const json::value* year = object.if_contains("modelyear");
      year != nullptr && !year->is_null()) {
    std::optional<int> parsed;
    if (year->is_int64()) {
      parsed = ParseModelYear(std::to_string(year->get_int64()));
    } else if (year->is_string()) {
      parsed =
          ParseModelYear(std::string_view(year->get_string().data(), year->get_string().size()));
    }
    if (!parsed) {
      co_return Error(TransportStatus::kBadRequest,
                      "modelyear must be a four-digit year between 1900 and 2100.");
    }
    model_year = *parsed;
  }
  std::vector<DecodeAnswer> answers =
      co_await deps_.service.DecodeBatch(std::move(raw_vins), model_year, request.client);
  json::array results;
  std::optional<fusebox::Duration> latency;
  for (const DecodeAnswer& answer : answers) {
    results.push_back(AnswerJson(answer));
    if (answer.upstream_latency) {
      latency = answer.upstream_latency;
    }
  }
  json::object body = StatusJson(TransportStatus::kOk, "Batch answered; see each result.");
  body["results"] = std::move(results);
  HttpResponse response = JsonResponse(200, body, "OK");
  response.log_vin = fmt::format("batch:{}", answers.size());
  response.upstream_latency = latency;
  co_return response;
}

HttpResponse Router::Ready() const {
  if (deps_.draining && deps_.draining()) {
    HttpResponse response = Error(TransportStatus::kShuttingDown);
    response.headers.emplace_back("Retry-After", "1");
    return response;
  }
  json::object body = StatusJson(TransportStatus::kOk, "Ready.");
  body["ready"] = true;
  body["cache"] = CacheJson(deps_.cache.Stats());
  return JsonResponse(200, body, "OK");
}

HttpResponse Router::Status() const {
  json::object body = StatusJson(TransportStatus::kOk, "Gateway status.");
  json::array breakers;
  const std::vector<TransitionRecord> transitions = deps_.service.recent_transitions();
  for (const auto& breaker : deps_.registry.All()) {
    const bool ours = breaker.get() == &deps_.service.breaker();
    breakers.push_back(BreakerJson(*breaker, ours ? &transitions : nullptr));
  }
  body["breakers"] = std::move(breakers);
  body["cache"] = CacheJson(deps_.cache.Stats());
  json::object bulkhead;
  bulkhead["max_in_flight"] = deps_.bulkhead.max_concurrent();
  bulkhead["in_flight"] = deps_.bulkhead.in_flight();
  bulkhead["admitted"] = deps_.bulkhead.admitted();
  bulkhead["rejected"] = deps_.bulkhead.rejected();
  body["bulkhead"] = std::move(bulkhead);
  json::object flights;
  flights["in_flight"] = deps_.service.single_flight_in_flight();
  flights["leaders"] = deps_.metrics.leaders();
  flights["joins"] = deps_.metrics.joins();
  body["single_flight"] = std::move(flights);
  json::object rate;
  rate["enabled"] = deps_.limiter.enabled();
  rate["rejected"] = deps_.limiter.rejected();
  rate["clients"] = deps_.limiter.tracked_clients();
  body["rate_limit"] = std::move(rate);
  const VpicClientStats client = deps_.client.Stats();
  json::object upstream;
  upstream["requests"] = client.requests;
  upstream["connections_opened"] = client.connections_opened;
  upstream["connections_reused"] = client.connections_reused;
  upstream["idle_connections"] = client.idle_connections;
  upstream["in_flight"] = deps_.metrics.upstream_in_flight();
  upstream["hold_s"] = fusebox::ToSeconds(deps_.service.upstream_hold());
  body["upstream"] = std::move(upstream);
  json::object answers;
  for (DecodeStatus status : kAllDecodeStatuses) {
    if (const std::uint64_t n = deps_.metrics.answers(status); n > 0) {
      answers[ToString(status)] = n;
    }
  }
  body["answers"] = std::move(answers);
  return JsonResponse(200, body, "OK");
}

HttpResponse Router::Metrics() const {
  HttpResponse response;
  response.content_type = "text/plain; version=0.0.4; charset=utf-8";
  std::string& out = response.body;
  bool first = true;
  for (const auto& breaker : deps_.registry.All()) {
    fusebox::AppendPrometheus(out, breaker->Snapshot(), first);
    first = false;
  }
  deps_.metrics.AppendPrometheus(out);
  const CacheStats cache = deps_.cache.Stats();
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
      deps_.bulkhead.in_flight(), deps_.bulkhead.rejected(), deps_.limiter.rejected());
  response.log_status = "OK";
  return response;
}

HttpResponse Router::Admin(const HttpRequest& request, std::string_view name,
                           std::string_view command) {
  (void)request;
  std::shared_ptr<fusebox::CircuitBreaker> breaker = deps_.registry.Find(std::string(name));
  if (!breaker) {
    return Error(TransportStatus::kNotFound, fmt::format("No breaker named '{}'.", name));
  }
  if (command == "force-open") {
    breaker->ForceOpen();
  } else if (command == "force-close") {
    breaker->ForceClose();
  } else if (command == "disable") {
    breaker->Disable();
  } else if (command == "metrics-only") {
    breaker->MetricsOnly();
  } else if (command == "reset") {
    breaker->Reset();
  } else {
    return Error(TransportStatus::kNotFound,
                 "Commands: force-open, force-close, disable, metrics-only, reset.");
  }
  json::object body =
      StatusJson(TransportStatus::kOk, fmt::format("Breaker '{}': {}.", name, command));
  body["breaker"] = BreakerJson(*breaker);
  return JsonResponse(200, body, "OK");
}

}  // namespace vin_gateway

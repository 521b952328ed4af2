// The HTTP surface without sockets: routes, JSON bodies, status codes and headers, batch request
// validation, operations endpoints, admin auth; plus the status mapping table and the log line.
#include "http/router.h"
#include "http/admin_route.h"

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value_to.hpp>

#include "core/decode_status.h"
#include "fusebox/registry.h"
#include "fusebox/testing/manual_clock.h"
#include "http/access_log.h"
#include "http/request_framing.h"
#include "http/transport_status.h"
#include "http/web_assets.h"
#include "service/decode_service.h"
#include "service/upstream_limits.h"
#include "vin_gateway/fake_vpic_client.h"
#include "vin_gateway/manual_wall_clock.h"

namespace {

namespace net = boost::asio;
namespace json = boost::json;
using namespace std::chrono_literals;
using fusebox::gateway::DecodeStatus;
using fusebox::gateway::HttpRequest;
using fusebox::gateway::HttpResponse;
using fusebox::gateway::TransportStatus;

class RouterHarness {
 public:
  explicit RouterHarness(std::optional<std::string> token = std::nullopt,
                         std::unique_ptr<fusebox::gateway::Cache> use_cache = nullptr)
      : registry(fusebox::CircuitBreakerConfig{}, {.clock = &clock}) {
    if (use_cache) {
      cache = std::move(use_cache);
    }
    fusebox::CircuitBreakerConfig config;
    config.failure_threshold = 1;
    config.cooldown = 20s;
    (void)registry.Configure("vpic", config);
    breaker = registry.Get("vpic").value();
    limits = fusebox::gateway::UpstreamLimits::Fixed(4);
    service = std::make_unique<fusebox::gateway::DecodeService>(
        fusebox::gateway::DecodeServiceDeps{*cache, client, *breaker, *limits, limiter, clock, wall,
                                            metrics},
        fusebox::gateway::DecodeServiceOptions{});
    router = std::make_unique<fusebox::gateway::Router>(fusebox::gateway::RouterDeps{
        *service, registry, *cache, *limits, metrics, limiter, client, std::move(token),
        admin_throttle, [this] { return draining; },
        [this] { return fleet_report ? fleet_report() : std::nullopt; }});
  }

  HttpResponse Call(std::string method, std::string target, std::string body = "",
                    std::string authorization = "", std::string if_none_match = "") {
    HttpRequest request;
    request.method = std::move(method);
    request.target = std::move(target);
    request.body = std::move(body);
    request.authorization = std::move(authorization);
    request.if_none_match = std::move(if_none_match);
    request.content_type = content_type;
    request.client = client_address;
    std::optional<HttpResponse> out;
    net::co_spawn(io, fusebox::gateway::Awaited(router->Handle(std::move(request))),
                  [&out](std::exception_ptr error, HttpResponse response) {
                    if (!error) {
                      out = std::move(response);
                    }
                  });
    io.restart();
    io.run();
    EXPECT_TRUE(out.has_value());
    return out.value_or(HttpResponse{});
  }

  static json::object Body(const HttpResponse& response) {
    boost::system::error_code ec;
    json::value v = json::parse(response.body_bytes(), ec);
    EXPECT_FALSE(ec) << response.body_bytes();
    return v.is_object() ? v.get_object() : json::object{};
  }

  static std::string Header(const HttpResponse& response, const std::string& name) {
    for (const auto& [key, value] : response.headers) {
      if (key == name) {
        return value;
      }
    }
    return "";
  }

  // The answer's head as the server writes it (request_framing.h).
  static std::string Head(const HttpResponse& response) {
    std::string head;
    fusebox::gateway::AppendResponseHead(response, 11, "req-1", true, head);
    return head;
  }

  fusebox::testing::ManualClock clock;
  fusebox::gateway::testing::ManualWallClock wall;
  fusebox::gateway::testing::FakeVpicClient client;
  fusebox::Registry registry;
  std::shared_ptr<fusebox::CircuitBreaker> breaker;
  std::unique_ptr<fusebox::gateway::UpstreamLimits> limits;
  std::unique_ptr<fusebox::gateway::Cache> cache = fusebox::gateway::MakeMemoryCache(100);
  fusebox::gateway::RateLimiter limiter{0, 1, clock};
  fusebox::gateway::GatewayMetrics metrics;
  std::vector<std::string> admin_episodes;  // the throttle's log lines
  fusebox::gateway::AdminThrottle admin_throttle{
      clock, {}, [this](std::string_view line) { admin_episodes.emplace_back(line); }};
  std::string client_address = "10.0.0.1";        // the address requests come from
  std::string content_type = "application/json";  // what requests declare as their body's type
  bool draining = false;
  std::function<std::optional<fusebox::gateway::FleetReport>()> fleet_report;
  net::io_context io;
  std::unique_ptr<fusebox::gateway::DecodeService> service;
  std::unique_ptr<fusebox::gateway::Router> router;
};

TEST(StatusMappingTest, EveryStatusHasItsHttpCode) {
  EXPECT_EQ(fusebox::gateway::HttpStatus(DecodeStatus::kOk), 200U);
  EXPECT_EQ(fusebox::gateway::HttpStatus(DecodeStatus::kVinInvalid), 422U);
  EXPECT_EQ(fusebox::gateway::HttpStatus(DecodeStatus::kCircuitOpen), 503U);
  EXPECT_EQ(fusebox::gateway::HttpStatus(DecodeStatus::kCircuitHalfOpen), 503U);
  EXPECT_EQ(fusebox::gateway::HttpStatus(DecodeStatus::kCircuitRecovering), 503U);
  EXPECT_EQ(fusebox::gateway::HttpStatus(DecodeStatus::kUpstreamSlow), 504U);
  EXPECT_EQ(fusebox::gateway::HttpStatus(DecodeStatus::kUpstreamError), 502U);
  EXPECT_EQ(fusebox::gateway::HttpStatus(DecodeStatus::kOverloaded), 503U);
  EXPECT_EQ(fusebox::gateway::HttpStatus(DecodeStatus::kThrottled), 503U);
  EXPECT_EQ(fusebox::gateway::ToString(DecodeStatus::kThrottled), "THROTTLED");
  EXPECT_EQ(fusebox::gateway::HttpStatus(DecodeStatus::kRateLimited), 429U);
  EXPECT_EQ(fusebox::gateway::HttpStatus(TransportStatus::kOk), 200U);
  EXPECT_EQ(fusebox::gateway::HttpStatus(TransportStatus::kBadRequest), 400U);
  EXPECT_EQ(fusebox::gateway::HttpStatus(TransportStatus::kNotFound), 404U);
  EXPECT_EQ(fusebox::gateway::HttpStatus(TransportStatus::kMethodNotAllowed), 405U);
  EXPECT_EQ(fusebox::gateway::HttpStatus(TransportStatus::kUnauthorized), 401U);
  EXPECT_EQ(fusebox::gateway::HttpStatus(TransportStatus::kPayloadTooLarge), 413U);
  EXPECT_EQ(fusebox::gateway::HttpStatus(TransportStatus::kHeadersTooLarge), 431U);
  EXPECT_EQ(fusebox::gateway::HttpStatus(TransportStatus::kShuttingDown), 503U);
}

TEST(StatusMappingTest, RetryAfterGoesWithTheStatusesThatPromiseIt) {
  for (DecodeStatus s : {DecodeStatus::kCircuitOpen, DecodeStatus::kCircuitHalfOpen,
                         DecodeStatus::kCircuitRecovering, DecodeStatus::kOverloaded,
                         DecodeStatus::kRateLimited, DecodeStatus::kThrottled}) {
    EXPECT_TRUE(fusebox::gateway::HasRetryAfter(s)) << fusebox::gateway::ToString(s);
  }
  for (DecodeStatus s : {DecodeStatus::kOk, DecodeStatus::kVinInvalid, DecodeStatus::kUpstreamSlow,
                         DecodeStatus::kUpstreamError}) {
    EXPECT_FALSE(fusebox::gateway::HasRetryAfter(s)) << fusebox::gateway::ToString(s);
  }
}

TEST(StatusMappingTest, StaleStandsInOnlyForImpossibleLiveDecodes) {
  int stale = 0;
  for (DecodeStatus s : fusebox::gateway::kAllDecodeStatuses) {
    stale += fusebox::gateway::AllowsStale(s) ? 1 : 0;
  }
  EXPECT_EQ(stale, 9);  // CIRCUIT_RECOVERING, LOCAL_OVERLOADED, UPSTREAM_LATE, THROTTLED too
  EXPECT_TRUE(fusebox::gateway::AllowsStale(DecodeStatus::kCircuitRecovering));
  EXPECT_TRUE(fusebox::gateway::AllowsStale(DecodeStatus::kThrottled));
  EXPECT_FALSE(fusebox::gateway::AllowsStale(DecodeStatus::kRateLimited));
  EXPECT_FALSE(fusebox::gateway::AllowsStale(DecodeStatus::kVinInvalid));
}

TEST(StatusMappingTest, UpstreamReasonsNeverReadAsInvalidInput) {
  for (fusebox::ReasonCode code :
       {fusebox::ReasonCode::kCircuitOpen, fusebox::ReasonCode::kCircuitHalfOpen,
        fusebox::ReasonCode::kCircuitRecovering, fusebox::ReasonCode::kUpstreamSlow,
        fusebox::ReasonCode::kUpstreamError, fusebox::ReasonCode::kOverloaded,
        fusebox::ReasonCode::kCancelled, fusebox::ReasonCode::kThrottled}) {
    const DecodeStatus s = fusebox::gateway::FromReason(code);
    EXPECT_NE(s, DecodeStatus::kVinInvalid);
    if (code == fusebox::ReasonCode::kCircuitRecovering) {
      EXPECT_EQ(s, DecodeStatus::kCircuitRecovering);
    }
    const std::string message(fusebox::gateway::DefaultMessage(s));
    EXPECT_EQ(message.find("invalid"), std::string::npos) << message;
  }
}

// The decode and transport statuses share the wire's `status` field: every spelling and every
// message is distinct across both, except that both have OK (the same spelling).
TEST(StatusMappingTest, NamesAndMessagesAreDistinct) {
  std::set<std::string> names;
  std::set<std::string> messages;
  for (DecodeStatus s : fusebox::gateway::kAllDecodeStatuses) {
    names.emplace(fusebox::gateway::ToString(s));
    messages.emplace(fusebox::gateway::DefaultMessage(s));
  }
  for (TransportStatus s : fusebox::gateway::kAllTransportStatuses) {
    if (s == TransportStatus::kOk) {
      EXPECT_EQ(fusebox::gateway::ToString(s), fusebox::gateway::ToString(DecodeStatus::kOk));
      continue;
    }
    names.emplace(fusebox::gateway::ToString(s));
    messages.emplace(fusebox::gateway::DefaultMessage(s));
  }
  const std::size_t all = std::size(fusebox::gateway::kAllDecodeStatuses) +
                          std::size(fusebox::gateway::kAllTransportStatuses) - 1;
  EXPECT_EQ(names.size(), all);
  EXPECT_EQ(messages.size(), all);
}

TEST(RouterTest, DecodeAnswersTheContractFields) {
  RouterHarness h;
  const HttpResponse r = h.Call("GET", "/api/v1/vin/1FTMW1T88MFA00001");
  EXPECT_EQ(r.status, 200U);
  const json::object body = RouterHarness::Body(r);
  EXPECT_EQ(body.at("status"), "OK");
  EXPECT_EQ(body.at("vin"), "1FTMW1T88MFA00001");
  EXPECT_EQ(body.at("source"), "live");
  EXPECT_EQ(body.at("stale"), false);
  EXPECT_EQ(body.at("check_digit"), "valid");
  EXPECT_EQ(body.at("fetched_at"), "2024-05-01T00:00:00Z");
  EXPECT_EQ(body.at("upstream_codes").as_array().size(), 1U);
  const json::object& vehicle = body.at("vehicle").as_object();
  for (const char* key :
       {"make", "model", "model_year", "manufacturer", "vehicle_type", "body_class"}) {
    EXPECT_TRUE(vehicle.contains(key)) << key;
  }
  EXPECT_EQ(vehicle.at("plant_city"), "DEARBORN");
  EXPECT_FALSE(vehicle.contains("abs"));
  EXPECT_FALSE(body.at("message").as_string().empty());
}

// What needs no waiting is answered at once, without a coroutine: a fresh hit in the in-process
// front (its body shared with the front, rendered once) and an invalid VIN, each counted once. A
// VIN the front does not hold fresh is left to an awaitable.
TEST(RouterTest, AFreshHitAndAnInvalidVinAreAnsweredAtOnce) {
  RouterHarness h;
  const auto at_once = [&h](const std::string& target) -> std::optional<HttpResponse> {
    HttpRequest request;
    request.method = "GET";
    request.target = target;
    fusebox::gateway::HandlerResult result = h.router->Handle(std::move(request));
    if (auto* response = std::get_if<HttpResponse>(&result)) {
      return std::move(*response);
    }
    return std::nullopt;
  };
  EXPECT_FALSE(at_once("/api/v1/vin/1FTMW1T88MFA00001"));  // not cached: the upstream's
  EXPECT_EQ(h.Call("GET", "/api/v1/vin/1FTMW1T88MFA00001").status, 200U);
  const std::uint64_t hits = h.metrics.fresh_hits();
  const std::uint64_t oks = h.metrics.answers(DecodeStatus::kOk);
  const std::optional<HttpResponse> first = at_once("/api/v1/vin/1ftmw1t88-mfa00001");
  const std::optional<HttpResponse> second = at_once("/api/v1/vin/1FTMW1T88MFA00001");
  ASSERT_TRUE(first && second);
  EXPECT_EQ(h.metrics.fresh_hits(), hits + 2);
  EXPECT_EQ(h.metrics.answers(DecodeStatus::kOk), oks + 2);
  ASSERT_NE(first->shared_body, nullptr);
  EXPECT_EQ(first->shared_body, second->shared_body);  // rendered once, never copied
  EXPECT_TRUE(first->body.empty());
  EXPECT_EQ(first->status, 200U);
  EXPECT_EQ(RouterHarness::Body(*first).at("source"), "cache");
  EXPECT_EQ(first->log_vin, "1FTMW1T88MFA00001");
  EXPECT_EQ(first->log_source, "cache");

  const std::uint64_t invalid = h.metrics.answers(DecodeStatus::kVinInvalid);
  const std::optional<HttpResponse> bad = at_once("/api/v1/vin/1FTMW1T88MFA0000O");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 422U);
  EXPECT_EQ(h.metrics.answers(DecodeStatus::kVinInvalid), invalid + 1);
  EXPECT_EQ(h.client.calls, 1);  // only the first decode went upstream
}

TEST(RouterTest, PathSegmentIsPercentDecodedThenNormalized) {
  RouterHarness h;
  const HttpResponse r = h.Call("GET", "/api/v1/vin/%201ftmw1t88-MFA%2000001%20");
  EXPECT_EQ(r.status, 200U);
  EXPECT_EQ(RouterHarness::Body(r).at("vin"), "1FTMW1T88MFA00001");
}

TEST(RouterTest, InvalidVinIs422WithProblems) {
  RouterHarness h;
  const HttpResponse r = h.Call("GET", "/api/v1/vin/1FTMW1T88MFA0000I");
  EXPECT_EQ(r.status, 422U);
  const json::object body = RouterHarness::Body(r);
  EXPECT_EQ(body.at("status"), "VIN_INVALID");
  const json::object& problem = body.at("problems").as_array().at(0).as_object();
  EXPECT_EQ(problem.at("position"), 17);
  EXPECT_EQ(problem.at("rule"), "charset");
  EXPECT_EQ(h.client.calls, 0);
}

TEST(RouterTest, OverlongSegmentIs422LengthWithoutAVin) {
  RouterHarness h;
  const HttpResponse r = h.Call("GET", "/api/v1/vin/" + std::string(80, 'A'));
  EXPECT_EQ(r.status, 422U);
  const json::object body = RouterHarness::Body(r);
  EXPECT_EQ(body.at("problems").as_array().at(0).as_object().at("rule"), "length");
  EXPECT_FALSE(body.contains("vin"));
}

TEST(RouterTest, BadModelYearIs400) {
  RouterHarness h;
  const HttpResponse r = h.Call("GET", "/api/v1/vin/1FTMW1T88MFA00001?modelyear=20x1");
  EXPECT_EQ(r.status, 400U);
  EXPECT_EQ(RouterHarness::Body(r).at("status"), "BAD_REQUEST");
}

TEST(RouterTest, ModelYearReachesTheDecode) {
  RouterHarness h;
  const HttpResponse r = h.Call("GET", "/api/v1/vin/1FTMW1T88MFA00001?modelyear=2021");
  EXPECT_EQ(RouterHarness::Body(r).at("modelyear"), 2021);
}

TEST(RouterTest, OpenBreakerIs503WithRetryAfter) {
  RouterHarness h;
  h.client.mode = fusebox::gateway::testing::FakeVpicClient::Mode::kStatus;
  EXPECT_EQ(h.Call("GET", "/api/v1/vin/1FTMW1T88MFA00001").status, 502U);
  const HttpResponse r = h.Call("GET", "/api/v1/vin/19XFC1F7XGE028370");
  EXPECT_EQ(r.status, 503U);
  EXPECT_EQ(RouterHarness::Header(r, "Retry-After"), "20");
  EXPECT_EQ(RouterHarness::Body(r).at("status"), "CIRCUIT_OPEN");
}

TEST(RouterTest, BatchAnswersEachVinInOrder) {
  RouterHarness h;
  const HttpResponse r =
      h.Call("POST", "/api/v1/vin/batch",
             R"({"vins": ["1FTMW1T88MFA00001", "bad", "19XFC1F7XGE028370"], "modelyear": 2011})");
  EXPECT_EQ(r.status, 200U);
  const json::object body = RouterHarness::Body(r);
  const json::array& results = body.at("results").as_array();
  ASSERT_EQ(results.size(), 3U);
  EXPECT_EQ(results[0].as_object().at("status"), "OK");
  EXPECT_EQ(results[1].as_object().at("status"), "VIN_INVALID");
  EXPECT_EQ(results[2].as_object().at("vin"), "19XFC1F7XGE028370");
  EXPECT_EQ(h.client.batch_calls, 1);
}

TEST(RouterTest, BatchRequestErrorsAre400) {
  RouterHarness h;
  std::string fifty_one = R"({"vins": [)";
  for (int i = 0; i < 51; ++i) {
    fifty_one += (i == 0 ? "" : ",") + std::string("\"1FTMW1T88MFA00001\"");
  }
  fifty_one += "]}";
  for (const std::string& body :
       {std::string("not json"), std::string(R"({"vins": []})"), std::string(R"({"vin": []})"),
        std::string(R"({"vins": [1]})"), std::string(R"({"vins": ["1FTMW1T88MFA00001"],
        "modelyear": "soon"})"),
        fifty_one}) {
    const HttpResponse r = h.Call("POST", "/api/v1/vin/batch", body);
    EXPECT_EQ(r.status, 400U) << body;
    EXPECT_EQ(RouterHarness::Body(r).at("status"), "BAD_REQUEST");
  }
  EXPECT_EQ(h.client.calls, 0);
}

// A page on another site can make its visitors' browsers POST text/plain, form-encoded or
// multipart bodies here without a CORS preflight: none of them may start upstream calls.
TEST(RouterTest, BatchWithTextPlainContentTypeIsRefused) {
  RouterHarness h;
  const std::string body = R"({"vins": ["1FTMW1T88MFA00001", "19XFC1F7XGE028370"]})";
  for (const std::string type :
       {"text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x", "", "application/jsonx", "application/json5",
        "application/json, text/plain", "application/json; charset=utf-8, text/plain",
        "application /json", "text/json"}) {
    h.content_type = type;
    const HttpResponse r = h.Call("POST", "/api/v1/vin/batch", body);
    EXPECT_EQ(r.status, 415U) << type;
    EXPECT_EQ(r.content_type, "application/json") << type;
    EXPECT_EQ(RouterHarness::Body(r).at("status"), "UNSUPPORTED_MEDIA_TYPE") << type;
    EXPECT_EQ(r.log_status, "UNSUPPORTED_MEDIA_TYPE") << type;
  }
  EXPECT_EQ(h.client.calls, 0);
  h.content_type = "text/plain";
  EXPECT_EQ(RouterHarness::Body(h.Call("POST", "/api/v1/vin/batch", body)).at("message"),
            "A batch must be sent with Content-Type: application/json, not 'text/plain'.");
  h.content_type = "";
  EXPECT_EQ(RouterHarness::Body(h.Call("POST", "/api/v1/vin/batch", body)).at("message"),
            "A batch must be sent with Content-Type: application/json; this request has no "
            "Content-Type.");
  // The method is checked first: a GET is still 405, whatever it declares. A CORS preflight is
  // never granted: 405, and no Access-Control-* header lets another origin send the JSON.
  EXPECT_EQ(h.Call("GET", "/api/v1/vin/batch").status, 405U);
  const HttpResponse preflight = h.Call("OPTIONS", "/api/v1/vin/batch");
  EXPECT_EQ(preflight.status, 405U);
  for (const auto& [name, value] : preflight.headers) {
    EXPECT_FALSE(name.starts_with("Access-Control-")) << name;
  }
}

TEST(RouterTest, BatchAcceptsJsonInAnyCaseWithParameters) {
  RouterHarness h;
  int answered = 0;
  for (const std::string type : {"application/json", "Application/JSON", "application/json;",
                                 "application/json; charset=utf-8", " application/json\t",
                                 "APPLICATION/JSON;charset=\"UTF-8\""}) {
    h.content_type = type;
    const HttpResponse r = h.Call("POST", "/api/v1/vin/batch", R"({"vins": ["bad"]})");
    EXPECT_EQ(r.status, 200U) << type;
    answered += r.status == 200U ? 1 : 0;
  }
  EXPECT_EQ(answered, 6);
}

// JSON answers echo their input (a VIN, a Content-Type); every answer, the page and its assets
// included, goes out with X-Content-Type-Options: nosniff, once.
TEST(RouterTest, EveryAnswerIsSentWithNosniff) {
  RouterHarness h;
  std::vector<std::pair<std::string, HttpResponse>> answers;
  answers.emplace_back("decode", h.Call("GET", "/api/v1/vin/1FTMW1T88MFA00001"));
  answers.emplace_back("invalid VIN", h.Call("GET", "/api/v1/vin/%3Cscript%3E"));
  answers.emplace_back("batch", h.Call("POST", "/api/v1/vin/batch", R"({"vins": ["bad"]})"));
  answers.emplace_back("bad batch", h.Call("POST", "/api/v1/vin/batch", "<html>"));
  answers.emplace_back("unknown route", h.Call("GET", "/nope"));
  answers.emplace_back("wrong method", h.Call("DELETE", "/healthz"));
  answers.emplace_back("status", h.Call("GET", "/status"));
  answers.emplace_back("metrics", h.Call("GET", "/metrics"));
  answers.emplace_back("page", h.Call("GET", "/"));
  answers.emplace_back("asset", h.Call("GET", "/assets/app.js"));
  answers.emplace_back("not modified", h.Call("GET", "/", "", "", "*"));
  h.content_type = "text/plain";
  answers.emplace_back("not JSON", h.Call("POST", "/api/v1/vin/batch", R"({"vins": ["bad"]})"));
  for (const auto& [what, answer] : answers) {
    const std::string head = RouterHarness::Head(answer);
    const std::size_t at = head.find("\r\nX-Content-Type-Options: nosniff\r\n");
    EXPECT_NE(at, std::string::npos) << what << ":\n" << head;
    EXPECT_EQ(head.find("X-Content-Type-Options", at + 3), std::string::npos) << what;
  }
}

TEST(RouterTest, OperationsEndpoints) {
  RouterHarness h;
  EXPECT_EQ(h.Call("GET", "/healthz").status, 200U);
  const HttpResponse ready = h.Call("GET", "/readyz");
  EXPECT_EQ(ready.status, 200U);
  const json::object ready_body = RouterHarness::Body(ready);
  EXPECT_EQ(ready_body.at("cache").as_object().at("healthy"), true);
  const json::object status = RouterHarness::Body(h.Call("GET", "/status"));
  const json::object& breaker = status.at("breakers").as_array().at(0).as_object();
  EXPECT_EQ(breaker.at("name"), "vpic");
  EXPECT_EQ(breaker.at("state"), "CLOSED");
  EXPECT_FALSE(breaker.contains("retry_after_s"));
  const HttpResponse metrics = h.Call("GET", "/metrics");
  EXPECT_EQ(metrics.content_type.rfind("text/plain", 0), 0U);
  EXPECT_NE(metrics.body.find("fusebox_state{breaker=\"vpic\",state=\"CLOSED\"} 1"),
            std::string::npos);
  EXPECT_NE(metrics.body.find("vin_gateway_cache_hits_total"), std::string::npos);
  EXPECT_NE(metrics.body.find("vin_gateway_upstream_latency_seconds_bucket"), std::string::npos);
  EXPECT_NE(metrics.body.find("vin_gateway_single_flight_joins_total"), std::string::npos);
}

// A shared cache that refused entries, as service/redis_cache.h counts them.
class RefusingCache final : public fusebox::gateway::ImmediateCache {
 public:
  std::optional<fusebox::gateway::CacheEntry> GetNow(std::string_view /*key*/) override {
    return std::nullopt;
  }
  void PutNow(std::string_view /*key*/, const fusebox::gateway::CacheEntry& /*entry*/) override {}
  fusebox::gateway::CacheStats Stats() const override {
    fusebox::gateway::CacheStats s;
    s.backend = "redis";
    s.refused = 3;
    return s;
  }
};

TEST(RouterTest, StatusAndMetricsCountWhatRedisHeldOutOfBounds) {
  RouterHarness h(std::nullopt, std::make_unique<RefusingCache>());
  h.fleet_report = [] {
    fusebox::gateway::FleetReport report;
    report.instance = "gw-1";
    report.stats.messages_refused = 50'000;
    report.malformed = 7;
    return std::optional(report);
  };
  const json::object status = RouterHarness::Body(h.Call("GET", "/status"));
  EXPECT_EQ(status.at("cache").as_object().at("refused"), 3);
  EXPECT_EQ(status.at("fleet").as_object().at("messages_refused"), 50'000);
  EXPECT_EQ(status.at("fleet").as_object().at("messages_malformed"), 7);
  const HttpResponse metrics = h.Call("GET", "/metrics");
  EXPECT_NE(metrics.body.find("vin_gateway_cache_refused_total{backend=\"redis\"} 3\n"),
            std::string::npos);
  EXPECT_NE(metrics.body.find("vin_gateway_fleet_messages_refused_total 50000\n"),
            std::string::npos);
  EXPECT_NE(metrics.body.find("vin_gateway_fleet_messages_malformed_total 7\n"), std::string::npos);
}

TEST(RouterTest, StatusSaysWhyTheFleetLinkIsDown) {
  RouterHarness h;
  std::string error = "AUTH: WRONGPASS invalid username-password pair or user is disabled.";
  h.fleet_report = [&error] {
    fusebox::gateway::FleetReport report;
    report.url = "redis://fleet:***@10.0.0.5:6379";
    report.last_error = error;
    return std::optional(report);
  };
  json::object fleet = RouterHarness::Body(h.Call("GET", "/status")).at("fleet").as_object();
  EXPECT_EQ(fleet.at("connected"), false);
  EXPECT_EQ(fleet.at("last_error").as_string(), error);
  EXPECT_EQ(fleet.at("url"), "redis://fleet:***@10.0.0.5:6379");
  error.clear();
  fleet = RouterHarness::Body(h.Call("GET", "/status")).at("fleet").as_object();
  EXPECT_TRUE(fleet.at("last_error").is_null());
}

TEST(RouterTest, StatusShowsRetryAfterWhileOpen) {
  RouterHarness h;
  h.breaker->ForceOpen();
  const json::object status = RouterHarness::Body(h.Call("GET", "/status"));
  const json::object& breaker = status.at("breakers").as_array().at(0).as_object();
  EXPECT_EQ(breaker.at("state"), "FORCED_OPEN");
  EXPECT_EQ(breaker.at("retry_after_s"), 20);
}

TEST(RouterTest, ReadyzIs503WhileDraining) {
  RouterHarness h;
  h.draining = true;
  EXPECT_EQ(h.Call("GET", "/readyz").status, 503U);
  EXPECT_EQ(h.Call("GET", "/healthz").status, 200U);
}

TEST(RouterTest, UnknownRoutesAndMethodsAreJsonErrors) {
  RouterHarness h;
  const HttpResponse missing = h.Call("GET", "/nope");
  EXPECT_EQ(missing.status, 404U);
  EXPECT_EQ(RouterHarness::Body(missing).at("status"), "NOT_FOUND");
  const HttpResponse method = h.Call("DELETE", "/api/v1/vin/1FTMW1T88MFA00001");
  EXPECT_EQ(method.status, 405U);
  EXPECT_EQ(RouterHarness::Body(method).at("status"), "METHOD_NOT_ALLOWED");
  EXPECT_EQ(h.Call("GET", "/api/v1/vin/batch").status, 405U);
}

// RFC 9112 3.2.2: a server must accept the absolute form; it is routed as its path and query.
TEST(RouterTest, AbsoluteFormTargetIsRoutedLikeTheOriginForm) {
  RouterHarness h;
  const HttpResponse origin = h.Call("GET", "/api/v1/vin/1FTMW1T88MFA00001?modelyear=2021");
  const HttpResponse absolute =
      h.Call("GET", "http://gateway.example:8080/api/v1/vin/1FTMW1T88MFA00001?modelyear=2021");
  EXPECT_EQ(absolute.status, 200U);
  EXPECT_EQ(RouterHarness::Body(absolute).at("vin"), RouterHarness::Body(origin).at("vin"));
  EXPECT_EQ(RouterHarness::Body(absolute).at("modelyear"), 2021);
  EXPECT_EQ(h.client.calls, 1);  // the second was the cache's: the same key
  EXPECT_EQ(h.Call("GET", "https://gateway.example/healthz").status, 200U);
  EXPECT_EQ(h.Call("GET", "http://gateway.example/api/v1/vin/x?modelyear=1800").status, 400U);
  // A malformed absolute URI, the authority form and the asterisk form: the usual 400.
  for (const char* target :
       {"http://[::1/healthz", "http:///healthz", "gateway.example:443", "*"}) {
    const HttpResponse bad = h.Call("GET", target);
    EXPECT_EQ(bad.status, 400U) << target;
    EXPECT_EQ(RouterHarness::Body(bad).at("message"), "The request target is not a valid URL path.")
        << target;
  }
}

TEST(RouterTest, AdminRoutesAre404WithoutAToken) {
  RouterHarness h;
  EXPECT_EQ(h.Call("POST", "/admin/breakers/vpic/force-open", "", "Bearer x").status, 404U);
  EXPECT_EQ(h.breaker->state(), fusebox::State::kClosed);
}

TEST(RouterTest, AdminRoutesNeedTheBearerToken) {
  RouterHarness h("s3cret");
  EXPECT_EQ(h.Call("POST", "/admin/breakers/vpic/force-open").status, 401U);
  EXPECT_EQ(h.Call("POST", "/admin/breakers/vpic/force-open", "", "Bearer wrong").status, 401U);
  EXPECT_EQ(h.Call("POST", "/admin/breakers/vpic/force-open", "", "s3cret").status, 401U);
  EXPECT_EQ(h.breaker->state(), fusebox::State::kClosed);
  const HttpResponse ok = h.Call("POST", "/admin/breakers/vpic/force-open", "", "Bearer s3cret");
  EXPECT_EQ(ok.status, 200U);
  EXPECT_EQ(h.breaker->state(), fusebox::State::kForcedOpen);
  EXPECT_EQ(h.Call("GET", "/api/v1/vin/1FTMW1T88MFA00001").status, 503U);
  EXPECT_EQ(h.client.calls, 0);
}

// RFC 9110 11.1: the auth scheme is case-insensitive; 11.4: one or more spaces before the token.
TEST(RouterTest, AdminBearerSchemeInAnyCaseIsAccepted) {
  RouterHarness h("s3cret");
  EXPECT_EQ(h.Call("POST", "/admin/breakers/vpic/force-open", "", "bearer s3cret").status, 200U);
  EXPECT_EQ(h.breaker->state(), fusebox::State::kForcedOpen);
  EXPECT_EQ(h.Call("POST", "/admin/breakers/vpic/reset", "", "BEARER   s3cret").status, 200U);
  EXPECT_EQ(h.breaker->state(), fusebox::State::kClosed);
  EXPECT_EQ(h.Call("POST", "/admin/breakers/vpic/force-open", "", "bearer wrong").status, 401U);
  EXPECT_EQ(h.breaker->state(), fusebox::State::kClosed);
}

TEST(RouterTest, AdminCommandsReachTheBreaker) {
  RouterHarness h("t");
  const std::string auth = "Bearer t";
  EXPECT_EQ(h.Call("POST", "/admin/breakers/vpic/disable", "", auth).status, 200U);
  EXPECT_EQ(h.breaker->state(), fusebox::State::kDisabled);
  EXPECT_EQ(h.Call("POST", "/admin/breakers/vpic/metrics-only", "", auth).status, 200U);
  EXPECT_EQ(h.breaker->state(), fusebox::State::kMetricsOnly);
  EXPECT_EQ(h.Call("POST", "/admin/breakers/vpic/force-close", "", auth).status, 200U);
  EXPECT_EQ(h.breaker->state(), fusebox::State::kClosed);
  EXPECT_EQ(h.Call("POST", "/admin/breakers/vpic/reset", "", auth).status, 200U);
  EXPECT_EQ(h.Call("POST", "/admin/breakers/vpic/explode", "", auth).status, 404U);
  EXPECT_EQ(h.Call("POST", "/admin/breakers/other/reset", "", auth).status, 404U);
  EXPECT_EQ(h.Call("GET", "/admin/breakers/vpic/reset", "", auth).status, 405U);
}

TEST(RouterTest, MethodNotAllowedCarriesAllow) {
  RouterHarness h("t");
  const struct {
    const char* method;
    const char* target;
    const char* allow;
  } kCases[] = {{"DELETE", "/api/v1/vin/1FTMW1T88MFA00001", "GET, HEAD"},
                {"POST", "/api/v1/vin/", "GET, HEAD"},
                {"GET", "/api/v1/vin/batch", "POST"},
                {"HEAD", "/api/v1/vin/batch", "POST"},
                {"PUT", "/healthz", "GET, HEAD"},
                {"POST", "/readyz", "GET, HEAD"},
                {"POST", "/status", "GET, HEAD"},
                {"POST", "/metrics", "GET, HEAD"},
                {"POST", "/", "GET, HEAD"},
                {"DELETE", "/assets/app.js", "GET, HEAD"},
                {"GET", "/admin/breakers/vpic/reset", "POST"}};
  for (const auto& c : kCases) {
    const HttpResponse r = h.Call(c.method, c.target, "", "Bearer t");
    EXPECT_EQ(r.status, 405U) << c.method << " " << c.target;
    EXPECT_EQ(RouterHarness::Header(r, "Allow"), c.allow) << c.method << " " << c.target;
  }
}

// HEAD is GET without the body (the server leaves the body out, http_conformance_test): the
// router answers it as GET.
TEST(RouterTest, HeadIsAnsweredWhereGetIs) {
  RouterHarness h;
  for (const char* target : {"/healthz", "/readyz", "/status", "/metrics", "/", "/assets/app.js",
                             "/api/v1/vin/1FTMW1T88MFA00001"}) {
    const HttpResponse get = h.Call("GET", target);
    const HttpResponse head = h.Call("HEAD", target);
    EXPECT_EQ(head.status, get.status) << target;
    EXPECT_EQ(head.content_type, get.content_type) << target;
  }
}

TEST(RouterTest, AdminBruteForceIsThrottledPerAddress) {
  RouterHarness h("s3cret");
  const fusebox::gateway::AdminThrottleOptions limits;  // 10 failures a minute, then 5 minutes off
  for (std::uint32_t i = 0; i < limits.max_failures; ++i) {
    h.clock.Advance(1s);
    EXPECT_EQ(h.Call("POST", "/admin/breakers/vpic/reset", "", "Bearer guess").status, 401U) << i;
  }
  EXPECT_EQ(h.admin_episodes.size(), 1U);
  // Locked out: even the right token is refused, with the time to wait.
  for (const char* auth : {"Bearer guess", "Bearer s3cret"}) {
    const HttpResponse refused = h.Call("POST", "/admin/breakers/vpic/force-open", "", auth);
    EXPECT_EQ(refused.status, 429U);
    EXPECT_EQ(RouterHarness::Body(refused).at("status"), "TOO_MANY_ATTEMPTS");
    EXPECT_EQ(RouterHarness::Header(refused, "Retry-After"), "300");
  }
  EXPECT_EQ(h.breaker->state(), fusebox::State::kClosed);
  ASSERT_EQ(h.admin_episodes.size(), 1U);  // one log line per episode, not per refusal
  EXPECT_NE(h.admin_episodes[0].find("10.0.0.1"), std::string::npos) << h.admin_episodes[0];
  // Another address is not affected.
  h.client_address = "10.0.0.2";
  EXPECT_EQ(h.Call("POST", "/admin/breakers/vpic/reset", "", "Bearer s3cret").status, 200U);
  // The lockout ends.
  h.client_address = "10.0.0.1";
  h.clock.Advance(299s);
  EXPECT_EQ(h.Call("POST", "/admin/breakers/vpic/reset", "", "Bearer s3cret").status, 429U);
  h.clock.Advance(1s);
  EXPECT_EQ(h.Call("POST", "/admin/breakers/vpic/reset", "", "Bearer s3cret").status, 200U);
}

TEST(RouterTest, AdminFailuresOutsideTheWindowAreForgiven) {
  RouterHarness h("s3cret");
  for (int i = 0; i < 30; ++i) {  // 9 a minute: never 10 within one window
    EXPECT_EQ(h.Call("POST", "/admin/breakers/vpic/reset", "", "Bearer guess").status, 401U) << i;
    h.clock.Advance(7s);
  }
  EXPECT_TRUE(h.admin_episodes.empty());
}

TEST(AdminThrottleTest, AddressSprayingUsesBoundedMemoryAndKeepsLockouts) {
  fusebox::testing::ManualClock clock;
  fusebox::gateway::AdminThrottle throttle(clock, {.max_failures = 3, .max_addresses = 64});
  for (int i = 0; i < 3; ++i) {
    throttle.RecordFailure("192.0.2.1");
  }
  ASSERT_TRUE(throttle.LockedOut("192.0.2.1"));
  for (int i = 0; i < 10'000; ++i) {
    throttle.RecordFailure(fmt::format("2001:db8::{:x}", i));
    EXPECT_LE(throttle.tracked_addresses(), 64U);
  }
  EXPECT_TRUE(throttle.LockedOut("192.0.2.1"));  // spraying did not free the locked-out address
}

TEST(RouterTest, PublicStatusHidesTheCacheFilePath) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("fusebox-router-test-" + std::to_string(::getpid()));
  const std::string path = (dir / "secret-cache.sqlite").string();
  {
    RouterHarness h(std::nullopt, fusebox::gateway::MakeSqliteCache(path, 100));
    for (const char* target : {"/status", "/readyz"}) {
      const HttpResponse r = h.Call("GET", target);
      EXPECT_EQ(r.status, 200U) << target;
      EXPECT_EQ(r.body_bytes().find("secret-cache"), std::string::npos) << r.body_bytes();
      EXPECT_EQ(RouterHarness::Body(r).at("cache").at("backend"), "sqlite") << target;
    }
  }
  std::filesystem::remove_all(dir);
}

// A cache that is broken says why on the public routes, without its file's path or directory:
// the error there is the backend's own words, the location is only for the log.
TEST(RouterTest, PublicStatusHidesThePathOfABrokenCache) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("fusebox-router-secret-dir-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "secret-cache.sqlite").string();
  std::ofstream(path, std::ios::binary) << std::string(4096, '\x7f');  // not a database
  {
    RouterHarness h(std::nullopt, fusebox::gateway::MakeSqliteCache(path, 100));
    for (const char* target : {"/status", "/readyz", "/metrics"}) {
      const HttpResponse r = h.Call("GET", target);
      EXPECT_EQ(r.status, 200U) << target;
      EXPECT_EQ(r.body_bytes().find("secret-"), std::string::npos) << r.body_bytes();
      if (std::string_view(target) != "/metrics") {
        const boost::json::value cache = RouterHarness::Body(r).at("cache");
        EXPECT_EQ(cache.at("healthy"), false) << target;
        EXPECT_NE(cache.at("error").as_string(), "") << target;
      }
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(RouterTest, StatusListsTheDecodeBreakersRecentTransitions) {
  RouterHarness h;
  h.wall.Advance(90s);
  h.breaker->ForceOpen();
  h.breaker->ForceClose();
  const json::object status = RouterHarness::Body(h.Call("GET", "/status"));
  const json::object& breaker = status.at("breakers").as_array().at(0).as_object();
  const json::array& recent = breaker.at("recent_transitions").as_array();
  ASSERT_EQ(recent.size(), 2U);
  const json::object& first = recent.at(0).as_object();
  EXPECT_EQ(first.at("from"), "CLOSED");
  EXPECT_EQ(first.at("to"), "FORCED_OPEN");
  EXPECT_EQ(first.at("cause"), "operator");
  EXPECT_EQ(first.at("at"), "2024-05-01T00:01:30Z");
  EXPECT_EQ(recent.at(1).as_object().at("to"), "CLOSED");
}

// ---- the web page and its assets ----

// The path of the versioned asset the page refers to, e.g. "/assets/app.0123456789ab.js".
std::string VersionedPath(const std::string& page, const std::string& stem,
                          const std::string& extension) {
  std::smatch match;
  const std::regex pattern("\"(/assets/" + stem + "\\.[0-9a-f]{12}\\." + extension + ")\"");
  return std::regex_search(page, match, pattern) ? match[1].str() : "";
}

std::string ReadSource(const std::string& relative) {
  std::ifstream in(std::string(FUSEBOX_SOURCE_DIR) + "/" + relative, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

TEST(RouterPageTest, RootServesTheFormWithAStrictPolicy) {
  RouterHarness h;
  const HttpResponse page = h.Call("GET", "/");
  EXPECT_EQ(page.status, 200U);
  EXPECT_EQ(page.content_type, "text/html; charset=utf-8");
  EXPECT_NE(page.body.find("<form id=\"vin-form\""), std::string::npos);
  const std::string policy = RouterHarness::Header(page, "Content-Security-Policy");
  EXPECT_NE(policy.find("default-src 'self'"), std::string::npos);
  EXPECT_NE(policy.find("script-src 'self'"), std::string::npos);
  EXPECT_EQ(policy.find("unsafe-inline"), std::string::npos);
  EXPECT_EQ(policy.find("unsafe-eval"), std::string::npos);
  EXPECT_NE(RouterHarness::Head(page).find("\r\nX-Content-Type-Options: nosniff\r\n"),
            std::string::npos);
  EXPECT_EQ(RouterHarness::Header(page, "Cache-Control"), "no-cache");
  EXPECT_FALSE(RouterHarness::Header(page, "ETag").empty());
  EXPECT_EQ(h.Call("GET", "/index.html").body, page.body);
}

TEST(RouterPageTest, ConditionalGetWithTheCurrentEtagIsNotModified) {
  RouterHarness h;
  const HttpResponse page = h.Call("GET", "/");
  const std::string etag = RouterHarness::Header(page, "ETag");
  ASSERT_FALSE(etag.empty());
  const HttpResponse again = h.Call("GET", "/", "", "", etag);
  EXPECT_EQ(again.status, 304U);
  EXPECT_TRUE(again.body.empty());
  EXPECT_EQ(RouterHarness::Header(again, "ETag"), etag);
  // Weak comparison, lists and "*" match; another tag does not.
  EXPECT_EQ(h.Call("GET", "/", "", "", "\"other\", W/" + etag).status, 304U);
  EXPECT_EQ(h.Call("GET", "/assets/app.js", "", "", "*").status, 304U);
  const HttpResponse changed = h.Call("GET", "/", "", "", "\"other\"");
  EXPECT_EQ(changed.status, 200U);
  EXPECT_EQ(changed.body, page.body);
}

TEST(RouterPageTest, PageHasNoInlineScriptStyleOrExternalResource) {
  RouterHarness h;
  const std::string page = h.Call("GET", "/").body;
  // Every <script> has a src; no style or on* attributes; nothing loaded from elsewhere.
  EXPECT_FALSE(std::regex_search(page, std::regex("<script(?![^>]*\\ssrc=)[^>]*>")));
  EXPECT_FALSE(std::regex_search(page, std::regex("\\sstyle=|\\son[a-z]+=|<style")));
  EXPECT_FALSE(std::regex_search(page, std::regex("(src|href)=\"(https?:)?//")));
  for (const fusebox::gateway::WebAsset& asset : fusebox::gateway::WebAssets()) {
    // The SVG namespace is a name, not something loaded.
    const std::string body = std::regex_replace(
        std::string(asset.body), std::regex("xmlns=\"http://www.w3.org/2000/svg\""), "");
    EXPECT_EQ(body.find("http://"), std::string::npos) << asset.path;
    EXPECT_EQ(body.find("https://"), std::string::npos) << asset.path;
    EXPECT_EQ(body.find("@import"), std::string::npos) << asset.path;
  }
}

TEST(RouterPageTest, PageRefersToVersionedAssetsThatAreCacheableForGood) {
  RouterHarness h;
  const std::string page = h.Call("GET", "/").body;
  const struct {
    const char* stem;
    const char* extension;
    const char* content_type;
  } kAssets[] = {{"app", "js", "text/javascript; charset=utf-8"},
                 {"style", "css", "text/css; charset=utf-8"},
                 {"icon", "svg", "image/svg+xml"}};
  for (const auto& expected : kAssets) {
    const std::string versioned = VersionedPath(page, expected.stem, expected.extension);
    ASSERT_FALSE(versioned.empty()) << expected.stem;
    const HttpResponse asset = h.Call("GET", versioned);
    EXPECT_EQ(asset.status, 200U) << versioned;
    EXPECT_EQ(asset.content_type, expected.content_type);
    EXPECT_EQ(RouterHarness::Header(asset, "Cache-Control"), "public, max-age=31536000, immutable");
    EXPECT_NE(RouterHarness::Head(asset).find("\r\nX-Content-Type-Options: nosniff\r\n"),
              std::string::npos);
    const HttpResponse plain =
        h.Call("GET", std::string("/assets/") + expected.stem + "." + expected.extension);
    EXPECT_EQ(plain.body, asset.body);
    EXPECT_EQ(RouterHarness::Header(plain, "Cache-Control"), "no-cache");
    EXPECT_EQ(RouterHarness::Header(plain, "ETag"), RouterHarness::Header(asset, "ETag"));
  }
}

TEST(RouterPageTest, EmbeddedAssetsAreTheSourceFiles) {
  RouterHarness h;
  for (const char* name : {"app.js", "style.css", "icon.svg"}) {
    const std::string source = ReadSource(std::string("apps/vin-gateway/web/") + name);
    ASSERT_FALSE(source.empty()) << name;
    EXPECT_EQ(h.Call("GET", std::string("/assets/") + name).body, source) << name;
  }
}

TEST(RouterPageTest, UnknownAssetsAndOtherMethodsAreJsonErrors) {
  RouterHarness h;
  const HttpResponse missing = h.Call("GET", "/assets/nope.js");
  EXPECT_EQ(missing.status, 404U);
  EXPECT_EQ(RouterHarness::Body(missing).at("status"), "NOT_FOUND");
  EXPECT_EQ(h.Call("GET", "/assets/app.000000000000.js").status, 404U);
  EXPECT_EQ(h.Call("GET", "/assets/../index.html").status, 404U);
  const HttpResponse post = h.Call("POST", "/");
  EXPECT_EQ(post.status, 405U);
  EXPECT_EQ(RouterHarness::Body(post).at("status"), "METHOD_NOT_ALLOWED");
  EXPECT_EQ(h.Call("DELETE", "/assets/app.js").status, 405U);
  EXPECT_EQ(h.Call("PUT", "/index.html").status, 405U);
}

TEST(BearerMatchesTest, ComparesTheWholeToken) {
  EXPECT_TRUE(fusebox::gateway::BearerMatches("Bearer abc", "abc"));
  EXPECT_FALSE(fusebox::gateway::BearerMatches("Bearer abcd", "abc"));
  EXPECT_FALSE(fusebox::gateway::BearerMatches("Bearer ab", "abc"));
  EXPECT_FALSE(fusebox::gateway::BearerMatches("Bearer ", ""));
}

// credentials = auth-scheme [ 1*SP token68 ] (RFC 9110 11.4), the scheme case-insensitive (11.1).
TEST(BearerMatchesTest, SchemeIsCaseInsensitiveAndSpacesBeforeTheTokenAreOneOrMore) {
  for (const char* ok : {"bearer abc", "BEARER abc", "bEaReR abc", "Bearer   abc", "bearer  abc"}) {
    EXPECT_TRUE(fusebox::gateway::BearerMatches(ok, "abc")) << ok;
  }
  for (const char* wrong : {"Bearerabc", "Bearer\tabc", "Basic abc", "Bearer  ", "bearer",
                            "xbearer abc", "Bearer abc abc", "Bearer ABC", "Be@rer abc"}) {
    EXPECT_FALSE(fusebox::gateway::BearerMatches(wrong, "abc")) << wrong;
  }
  EXPECT_FALSE(fusebox::gateway::BearerMatches(std::string("bearer") + '\x80' + "abc", "abc"));
}

TEST(AccessLogTest, TextLineHasTheRequestFields) {
  fusebox::gateway::AccessRecord r;
  r.request_id = "abc-1";
  r.method = "GET";
  r.target = "/api/v1/vin/1FTMW1T88MFA00001";
  r.client = "10.0.0.1";
  r.http_status = 504;
  r.status = "UPSTREAM_SLOW";
  r.vin = "1FTMW1T88MFA00001";
  r.upstream_latency = 7s;
  const std::string line = fusebox::gateway::FormatAccessRecord(
      r, fusebox::gateway::LogFormat::kText,
      fusebox::gateway::WallTime(std::chrono::seconds(1'714'521'600)));
  EXPECT_EQ(line.rfind("2024-05-01T00:00:00.000Z info request id=abc-1", 0), 0U) << line;
  EXPECT_NE(line.find("status=UPSTREAM_SLOW"), std::string::npos);
  EXPECT_NE(line.find("vin=1FTMW1T88MFA00001"), std::string::npos);
  EXPECT_NE(line.find("upstream_ms=7000.0"), std::string::npos);
}

// The target field of the text access line of a request for `target`, as written.
std::string TextLineTargetOf(const std::string& target) {
  fusebox::gateway::AccessRecord r;
  r.target = target;
  const std::string line = fusebox::gateway::FormatAccessRecord(
      r, fusebox::gateway::LogFormat::kText, fusebox::gateway::WallTime{});
  const std::size_t begin = line.find(" target=") + 8;
  return line.substr(begin, line.find(" client=") - begin);
}

// The text line's value check reads eight bytes at a time: a byte that needs quotes is found
// wherever it falls (in a whole word or in the tail), and a plain value stays bare at any length.
TEST(AccessLogTest, TextValuesAreQuotedWhereverTheByteThatNeedsItFalls) {
  const auto target_of = TextLineTargetOf;
  for (std::size_t size = 1; size <= 24; ++size) {
    const std::string plain(size, 'a');
    EXPECT_EQ(target_of(plain), plain);
    for (std::size_t at = 0; at < size; ++at) {
      for (const char special : {' ', '"', '=', '\\', '\x01', '\x1f'}) {
        std::string value = plain;
        value[at] = special;
        std::string expected = plain.substr(0, at);
        if (special == '"' || special == '\\') {
          expected += '\\';
          expected += special;
        } else if (special == ' ' || special == '=') {
          expected += special;
        } else {
          expected += fmt::format("\\x{:02x}", static_cast<unsigned char>(special));
        }
        expected += plain.substr(at + 1);
        EXPECT_EQ(target_of(value), '"' + expected + '"')
            << "size " << size << " at " << at << " byte " << static_cast<int>(special);
      }
    }
  }
  // Not ASCII within a whole word: valid UTF-8 stays as it is, bare or quoted.
  EXPECT_EQ(target_of("caf\xc3\xa9-caf\xc3\xa9"), "caf\xc3\xa9-caf\xc3\xa9");
  EXPECT_EQ(target_of("caf\xc3\xa9 \"x\"-y"), "\"caf\xc3\xa9 \\\"x\\\"-y\"");
  EXPECT_EQ(target_of("0123456789\xff"), "0123456789\xef\xbf\xbd");  // not UTF-8: mended
}

// A terminal takes DEL and the C1 controls as commands (U+009B, CSI, starts an escape sequence),
// log viewers take U+2028 / U+2029 as line breaks, and the bidi embeddings, overrides and
// isolates reorder what follows them on screen: the text line writes each as an escape within
// quotes, wherever it falls (in a whole word of the value check or in its tail).
TEST(AccessLogTest, TextValuesEscapeDelC1ControlsAndLineSeparators) {
  const auto target_of = TextLineTargetOf;
  const std::vector<std::pair<std::string, std::string>> specials = {
      {"\x7f", "\\x7f"},           {"\xc2\x80", "\\u0080"},     {"\xc2\x85", "\\u0085"},
      {"\xc2\x9b", "\\u009b"},     {"\xc2\x9f", "\\u009f"},     {"\xe2\x80\xa8", "\\u2028"},
      {"\xe2\x80\xa9", "\\u2029"}, {"\xe2\x80\xaa", "\\u202a"}, {"\xe2\x80\xae", "\\u202e"},
      {"\xe2\x81\xa6", "\\u2066"}, {"\xe2\x81\xa9", "\\u2069"}};
  for (std::size_t size = 1; size <= 20; ++size) {
    const std::string plain(size, 'a');
    for (std::size_t at = 0; at <= size; ++at) {
      for (const auto& [raw, escaped] : specials) {
        const std::string value = plain.substr(0, at) + raw + plain.substr(at);
        EXPECT_EQ(target_of(value), '"' + plain.substr(0, at) + escaped + plain.substr(at) + '"')
            << "size " << size << " at " << at << " escape " << escaped;
      }
    }
  }
  // Printable characters next to them stay as they are: U+00A0 (C2 A0), U+2027, U+202F, U+2065,
  // U+206A.
  EXPECT_EQ(target_of("\xc2\xa0\xe2\x80\xa7\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa"),
            "\xc2\xa0\xe2\x80\xa7\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa");
}

// The same characters in the JSON line (which JSON allows raw) and in event lines of both
// formats: escapes, never the raw bytes; the JSON still reads back as the same text.
TEST(AccessLogTest, JsonAndEventLinesEscapeDelC1ControlsAndLineSeparators) {
  const std::string hostile =
      "a\x7f\xc2\x9b[31m\xe2\x80\xa8"
      "b\xe2\x80\xa9\xc2\x85\x1b\n";
  const auto holds_raw = [](const std::string& line) {
    return line.find_first_of("\x7f\x1b\n") != std::string::npos ||
           line.find("\xc2\x9b") != std::string::npos ||
           line.find("\xc2\x85") != std::string::npos ||
           line.find("\xe2\x80\xa8") != std::string::npos ||
           line.find("\xe2\x80\xa9") != std::string::npos;
  };
  fusebox::gateway::AccessRecord r;
  r.target = hostile;
  r.vin = hostile;
  const std::string json_line = fusebox::gateway::FormatAccessRecord(
      r, fusebox::gateway::LogFormat::kJson, fusebox::gateway::WallTime{});
  EXPECT_FALSE(holds_raw(json_line)) << json_line;
  EXPECT_NE(json_line.find(R"(a\u007f\u009b[31m\u2028b\u2029\u0085\u001b\n)"), std::string::npos)
      << json_line;
  EXPECT_EQ(json::value_to<std::string>(json::parse(json_line).at("target")), hostile);
  const std::string json_event = fusebox::gateway::FormatEvent(
      "warn", hostile, fusebox::gateway::LogFormat::kJson, fusebox::gateway::WallTime{});
  EXPECT_FALSE(holds_raw(json_event)) << json_event;
  EXPECT_EQ(json::value_to<std::string>(json::parse(json_event).at("message")), hostile);
  const std::string text_event = fusebox::gateway::FormatEvent(
      "warn", hostile, fusebox::gateway::LogFormat::kText, fusebox::gateway::WallTime{});
  EXPECT_EQ(text_event,
            R"(1970-01-01T00:00:00.000Z warn a\x7f\u009b[31m\u2028b\u2029\u0085\x1b\x0a)");
  const std::string text_line = fusebox::gateway::FormatAccessRecord(
      r, fusebox::gateway::LogFormat::kText, fusebox::gateway::WallTime{});
  EXPECT_FALSE(holds_raw(text_line)) << text_line;
}

// An event's free text is not quoted, so its own backslashes are doubled: a message that holds
// the four characters "\x1b" never reads like one that held an ESC. A bidi override in it is an
// escape in both formats.
TEST(AccessLogTest, EventTextDoublesItsBackslashesAndEscapesBidiControls) {
  const std::string message =
      "path C:\\x1b and \xe2\x80\xae"
      "evil\xe2\x81\xa6";
  EXPECT_EQ(fusebox::gateway::FormatEvent("warn", message, fusebox::gateway::LogFormat::kText,
                                          fusebox::gateway::WallTime{}),
            R"(1970-01-01T00:00:00.000Z warn path C:\\x1b and \u202eevil\u2066)");
  const std::string json_event = fusebox::gateway::FormatEvent(
      "warn", message, fusebox::gateway::LogFormat::kJson, fusebox::gateway::WallTime{});
  EXPECT_EQ(json_event.find("\xe2\x80\xae"), std::string::npos) << json_event;
  EXPECT_NE(json_event.find(R"(\u202eevil\u2066)"), std::string::npos) << json_event;
  EXPECT_EQ(json::value_to<std::string>(json::parse(json_event).at("message")), message);
}

// The text line prints milliseconds in integers: as fmt prints the double for every duration
// that is not an exact tie.
TEST(AccessLogTest, TextMillisecondsMatchFixedPointFormatting) {
  std::vector<std::int64_t> durations = {
      0, 1, 4'999, 5'001, 49'999, 50'001, 999'999, 1'000'000, 7'000'000'000, 123'456'789,
      3'600'000'000'000,
      // the fallbacks: negative, and too near the top for the rounding's addition
      -500'000, -1, std::numeric_limits<std::int64_t>::max(),
      std::numeric_limits<std::int64_t>::max() - 9'999};
  std::uint64_t x = 88172645463325252ULL;  // xorshift: durations from 1 ns to about 10 min
  for (int i = 0; i < 2000; ++i) {
    x ^= x << 13U;
    x ^= x >> 7U;
    x ^= x << 17U;
    durations.push_back(static_cast<std::int64_t>(x % 600'000'000'000ULL) >> (i % 30));
  }
  for (const std::int64_t ns : durations) {
    if (ns % 5'000 == 0 && ns % 10'000 != 0) {
      continue;  // a tie: half up here, as the double happens to fall in fmt
    }
    fusebox::gateway::AccessRecord r;
    r.elapsed = std::chrono::nanoseconds(ns);
    r.upstream_latency = std::chrono::nanoseconds(ns);
    const std::string line = fusebox::gateway::FormatAccessRecord(
        r, fusebox::gateway::LogFormat::kText, fusebox::gateway::WallTime{});
    const double ms = static_cast<double>(ns) / 1e6;
    if (ns % 50'000 != 0 || ns % 100'000 == 0) {
      EXPECT_NE(line.find(fmt::format(" upstream_ms={:.1f} ", ms)), std::string::npos)
          << ns << ": " << line;
    }
    EXPECT_TRUE(line.ends_with(fmt::format(" elapsed_ms={:.2f}", ms))) << ns << ": " << line;
  }
}

TEST(AccessLogTest, JsonLineIsOneObject) {
  fusebox::gateway::AccessRecord r;
  r.request_id = "abc-2";
  r.status = "OK";
  r.source = "cache";
  const std::string line = fusebox::gateway::FormatAccessRecord(
      r, fusebox::gateway::LogFormat::kJson, fusebox::gateway::WallTime{});
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const json::value v = json::parse(line);
  EXPECT_EQ(v.at("request_id"), "abc-2");
  EXPECT_EQ(v.at("source"), "cache");
  EXPECT_TRUE(v.at("upstream_ms").is_null());
}

// What the replay reads (fusebox-sim replay): whether the request made its own call and what the
// breaker recorded of it; absent when it made none, in both formats.
TEST(AccessLogTest, LinesSayWhatTheRequestDidWithTheUpstream) {
  fusebox::gateway::AccessRecord r;
  r.status = "UPSTREAM_SLOW";
  r.upstream = "call";
  r.upstream_outcome = "timeout";
  r.upstream_latency = 7s;
  const std::string line = fusebox::gateway::FormatAccessRecord(
      r, fusebox::gateway::LogFormat::kJson, fusebox::gateway::WallTime{});
  const json::value v = json::parse(line);
  EXPECT_EQ(v.at("upstream"), "call");
  EXPECT_EQ(v.at("upstream_outcome"), "timeout");
  const std::string text = fusebox::gateway::FormatAccessRecord(
      r, fusebox::gateway::LogFormat::kText, fusebox::gateway::WallTime{});
  EXPECT_TRUE(text.ends_with(" upstream=call upstream_outcome=timeout")) << text;
  fusebox::gateway::AccessRecord none;
  none.status = "OK";
  const std::string plain = fusebox::gateway::FormatAccessRecord(
      none, fusebox::gateway::LogFormat::kJson, fusebox::gateway::WallTime{});
  EXPECT_FALSE(json::parse(plain).as_object().contains("upstream"));
  EXPECT_EQ(fusebox::gateway::FormatAccessRecord(none, fusebox::gateway::LogFormat::kText,
                                                 fusebox::gateway::WallTime{})
                .find("upstream="),
            std::string::npos);
  const std::string late = fusebox::gateway::FormatLateCall("1FTMW1T88MFA00001", 4500ms, "success",
                                                            "", fusebox::gateway::LogFormat::kJson,
                                                            fusebox::gateway::WallTime{});
  const json::value l = json::parse(late);
  EXPECT_EQ(l.at("event"), "upstream_call");
  EXPECT_EQ(l.at("vin"), "1FTMW1T88MFA00001");
  EXPECT_EQ(l.at("upstream_outcome"), "success");
  EXPECT_DOUBLE_EQ(l.at("upstream_ms").to_number<double>(), 4500);
  EXPECT_EQ(fusebox::gateway::FormatLateCall("V", 20ms, "failure", "http 503",
                                             fusebox::gateway::LogFormat::kText,
                                             fusebox::gateway::WallTime{}),
            "1970-01-01T00:00:00.000Z info upstream_call vin=V upstream=call "
            "upstream_outcome=failure upstream_ms=20.0 upstream_error=\"http 503\"");
}

// Durations are plain numbers a person reads: milliseconds to the microsecond, no exponent.
TEST(AccessLogTest, JsonDurationsHaveNoExponent) {
  fusebox::gateway::AccessRecord r;
  r.upstream_latency = std::chrono::microseconds(1400);
  r.elapsed = 4ms;
  const std::string line = fusebox::gateway::FormatAccessRecord(
      r, fusebox::gateway::LogFormat::kJson, fusebox::gateway::WallTime{});
  EXPECT_NE(line.find("\"upstream_ms\":1.4,"), std::string::npos) << line;
  EXPECT_NE(line.find("\"elapsed_ms\":4}"), std::string::npos) << line;
  const json::value v = json::parse(line);
  EXPECT_DOUBLE_EQ(v.at("upstream_ms").to_number<double>(), 1.4);
  r.upstream_latency = std::chrono::nanoseconds(12'345);
  r.elapsed = 0ms;
  const std::string small = fusebox::gateway::FormatAccessRecord(
      r, fusebox::gateway::LogFormat::kJson, fusebox::gateway::WallTime{});
  EXPECT_NE(small.find("\"upstream_ms\":0.012,\"elapsed_ms\":0}"), std::string::npos) << small;
}

TEST(GatewayMetricsTest, RequestsAreTimedByRoute) {
  using fusebox::gateway::GatewayMetrics;
  using Route = GatewayMetrics::Route;
  EXPECT_EQ(GatewayMetrics::RouteOf("/api/v1/vin/1FTMW1T88MFA00001?modelyear=2021"),
            Route::kDecode);
  EXPECT_EQ(GatewayMetrics::RouteOf("/api/v1/vin/batch"), Route::kBatch);
  EXPECT_EQ(GatewayMetrics::RouteOf("/"), Route::kForm);
  EXPECT_EQ(GatewayMetrics::RouteOf("/assets/app.js"), Route::kForm);
  EXPECT_EQ(GatewayMetrics::RouteOf("/metrics"), Route::kOps);
  EXPECT_EQ(GatewayMetrics::RouteOf("/readyz"), Route::kOps);
  EXPECT_EQ(GatewayMetrics::RouteOf("/admin/breakers/vpic/reset"), Route::kAdmin);
  EXPECT_EQ(GatewayMetrics::RouteOf("/favicon.ico"), Route::kOther);
  EXPECT_EQ(GatewayMetrics::RouteOf("/api/v1/vinx"), Route::kOther);

  GatewayMetrics metrics;
  metrics.ObserveRequest(Route::kDecode, std::chrono::milliseconds(3));
  metrics.ObserveRequest(Route::kDecode, std::chrono::seconds(8));
  EXPECT_EQ(metrics.requests(Route::kDecode), 2U);
  EXPECT_EQ(metrics.requests(Route::kOps), 0U);
  std::string text;
  metrics.AppendPrometheus(text);
  EXPECT_THAT(
      text, testing::HasSubstr(
                "vin_gateway_request_duration_seconds_bucket{route=\"decode\",le=\"0.005\"} 1\n"));
  EXPECT_THAT(text,
              testing::HasSubstr(
                  "vin_gateway_request_duration_seconds_bucket{route=\"decode\",le=\"7.5\"} 1\n"));
  EXPECT_THAT(text,
              testing::HasSubstr(
                  "vin_gateway_request_duration_seconds_bucket{route=\"decode\",le=\"10\"} 2\n"));
  EXPECT_THAT(text, testing::HasSubstr(
                        "vin_gateway_request_duration_seconds_sum{route=\"decode\"} 8.003\n"));
  EXPECT_THAT(
      text, testing::HasSubstr("vin_gateway_request_duration_seconds_count{route=\"other\"} 0\n"));
}

}  // namespace

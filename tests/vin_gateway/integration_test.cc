// The gateway's promises, end to end: vpic-sim and vin-gateway run as processes on loopback
// ports, and every assertion is made over HTTP. Upstream calls are counted by vpic-sim
// (/__control/stats), never guessed. Time is real here (processes), so budgets and cooldowns are
// short and waits poll for a condition with a deadline.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "fusebox/version.h"
#include "reliability/reliability_support.h"
#include "vin_gateway/process_harness.h"

namespace {

namespace json = boost::json;
using fusebox::gateway::testing::ChildProcess;
using fusebox::gateway::testing::Http;
using fusebox::gateway::testing::HttpResult;
using fusebox::gateway::testing::WaitUntil;

const std::string kData = FUSEBOX_SOURCE_DIR "/tests/vin_gateway/data/";
constexpr char kVin[] = "1FTMW1T88MFA00001";
const std::vector<std::string> kVins = {
    "137ZA903X1E412677", "19XFC1F7XGE028370", "1C4RJEAG2EC476429", "1D7RB1CP8BS798034",
    "1D7RB1CT1BS488952", "1GB0C4EGXGZ280783", "1GNKRHKD2GJ223195", "1N4BL3AP5DN508203",
    "19UUA65694A043249", "19XFB4F24DE547421", "1FAHP3FN8AW139719", "1GKEV13728J123735",
    "1GT020CG4EF828544", "1GYFC56299R410242", "1YVHZ8DH0C5M33844", "1ZVBP8CF4E5242560",
    "19VDE2E5XEE644230", "2A4GM684X6R632476", "2B3KA43G27H825762", "2C3CDYAGXDH825982",
    "2C4RDGBG4FR987134", "2D4RN6DX5AR939562"};

json::value Json(const HttpResult& r) {
  boost::system::error_code ec;
  json::value v = json::parse(r.body, ec);
  EXPECT_FALSE(ec) << "not JSON: " << r.body;
  return v;
}

std::string Field(const HttpResult& r, const char* name) {
  const json::value v = Json(r);
  if (!v.is_object() || !v.as_object().contains(name) || !v.at(name).is_string()) {
    return "";
  }
  return std::string(v.at(name).as_string());
}

// Runs `n` requests at once (one thread each) and returns their results in order.
std::vector<HttpResult> Concurrently(int n, const std::function<HttpResult(int)>& request) {
  std::vector<HttpResult> results(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  std::atomic<int> ready{0};
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      ready.fetch_add(1);
      while (ready.load() < n) {
        std::this_thread::yield();
      }
      results[static_cast<std::size_t>(i)] = request(i);
    });
  }
  for (std::thread& t : threads) {
    t.join();
  }
  return results;
}

// The reliability suite's process fixture (tests/reliability/reliability_support.h: each test in
// its own directory, vpic-sim and the gateway as processes, their logs printed when a test
// fails), with this suite's gentler budgets: a 2 s call timeout and a 1 s cooldown.
class GatewayIntegrationTest : public reliability::GatewayProcessTest {
 protected:
  // The gateway in front of the sim (or `upstream`) with the fixture's defaults and this suite's
  // budgets; `args` override them (later flags win in CLI11).
  void StartGateway(std::vector<std::string> args = {}, std::vector<std::string> env = {},
                    std::string upstream = "") {
    args.insert(args.begin(), {"--call-timeout", "2s", "--cooldown", "1s"});
    GatewayProcessTest::StartGateway(std::move(args), std::move(env), std::move(upstream));
  }

  void TripBreaker(int threshold = 3) {
    Fault(R"({"mode":"error","status":503})");
    for (int i = 0; i < threshold; ++i) {
      EXPECT_EQ(Decode(kVins.at(static_cast<std::size_t>(i))).status, 502);
    }
    ASSERT_EQ(Breaker().at("state"), "OPEN");
  }

  void WaitForCooldown() {
    ASSERT_TRUE(WaitUntil([&] { return Breaker().at("retry_after_s").to_number<int>() == 0; }));
  }
};

TEST_F(GatewayIntegrationTest, DecodesThroughTheSimulatorAndServesTheCacheAfterwards) {
  StartSim();
  StartGateway();
  const HttpResult live = Decode(kVin);
  ASSERT_EQ(live.status, 200) << live.body;
  const json::value body = Json(live);
  EXPECT_EQ(body.at("status"), "OK");
  EXPECT_EQ(body.at("source"), "live");
  EXPECT_EQ(body.at("vehicle").at("make"), "FORD");
  EXPECT_EQ(body.at("vehicle").at("model"), "F-150");
  EXPECT_EQ(body.at("vehicle").at("vehicle_type"), "TRUCK");
  EXPECT_FALSE(live.headers.at("x-request-id").empty());
  const HttpResult cached = Decode(kVin);
  EXPECT_EQ(Field(cached, "source"), "cache");
  EXPECT_EQ(UpstreamCalls(), 1);
}

TEST_F(GatewayIntegrationTest, InvalidVinIs422AndNeverReachesTheUpstream) {
  StartSim();
  StartGateway();
  const HttpResult r = Decode("1FTMW1T88MFA0000O");
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(Field(r, "status"), "VIN_INVALID");
  EXPECT_EQ(Decode(std::string(70, '1')).status, 422);
  EXPECT_EQ(UpstreamCalls(), 0);
  EXPECT_EQ(Breaker().at("calls"), 0);
}

TEST_F(GatewayIntegrationTest, UpstreamErrorsAre502AndGarbageIsNeverInvalid) {
  StartSim();
  StartGateway({"--failure-threshold", "10"});
  Fault(R"({"mode":"error","status":500})");
  EXPECT_EQ(Field(Decode(kVins[0]), "status"), "UPSTREAM_ERROR");
  Fault(R"({"mode":"garbage"})");
  const HttpResult garbage = Decode(kVins[1]);
  EXPECT_EQ(garbage.status, 502);
  EXPECT_EQ(Field(garbage, "status"), "UPSTREAM_ERROR");
  Fault(R"({"mode":"reset"})");
  EXPECT_EQ(Decode(kVins[2]).status, 502);
  Fault(R"({"mode":"truncated"})");
  EXPECT_EQ(Decode(kVins[3]).status, 502);
  EXPECT_EQ(Breaker().at("failed"), 4);
}

TEST_F(GatewayIntegrationTest, BadRequestsAre400) {
  StartSim();
  StartGateway();
  EXPECT_EQ(Get("/api/v1/vin/" + std::string(kVin) + "?modelyear=abc").status, 400);
  const HttpResult empty = Http(gateway_->port(), "POST", "/api/v1/vin/batch", R"({"vins":[]})");
  EXPECT_EQ(empty.status, 400);
  EXPECT_EQ(Field(empty, "status"), "BAD_REQUEST");
  EXPECT_EQ(Http(gateway_->port(), "POST", "/api/v1/vin/batch", "{nope").status, 400);
}

TEST_F(GatewayIntegrationTest, HungUpstreamIsSlowAtTheBudgetWhileCachedVinsAndHealthzStayFast) {
  StartSim();
  StartGateway({"--call-timeout", "800ms", "--failure-threshold", "10"});
  ASSERT_EQ(Decode(kVin).status, 200);  // cached now
  Fault(R"({"mode":"hang"})");
  std::thread hung_request([&] {
    const HttpResult slow = Decode(kVins[0]);
    EXPECT_EQ(slow.status, 504);
    EXPECT_EQ(Field(slow, "status"), "UPSTREAM_SLOW");
    EXPECT_GE(slow.seconds, 0.75);
    EXPECT_LT(slow.seconds, 2.0);
  });
  ASSERT_TRUE(WaitUntil([&] { return SimStats().at("in_flight").to_number<int>() == 1; }));
  for (int i = 0; i < 5; ++i) {
    const HttpResult cached = Decode(kVin);
    EXPECT_EQ(cached.status, 200);
    EXPECT_LT(cached.seconds, 0.2);
    const HttpResult health = Get("/healthz");
    EXPECT_EQ(health.status, 200);
    EXPECT_LT(health.seconds, 0.2);
  }
  hung_request.join();
  EXPECT_EQ(Breaker().at("timeouts"), 1);
  // The connection whose call timed out was closed, not reused: the next call opens another.
  Fault(R"({"mode":"ok"})");
  EXPECT_EQ(Decode(kVins[1]).status, 200);
  const json::value status = Json(Get("/status"));
  EXPECT_EQ(status.at("upstream").at("connections_opened"), 2);
}

TEST_F(GatewayIntegrationTest, ThreeFailuresOpenTheBreakerAndTheNextCallFailsFast) {
  StartSim();
  StartGateway({"--cooldown", "30s", "--probe-mode", "passive"});
  TripBreaker();
  const std::int64_t calls = UpstreamCalls();
  const HttpResult r = Decode(kVins[5]);
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(Field(r, "status"), "CIRCUIT_OPEN");
  ASSERT_TRUE(r.headers.contains("retry-after"));
  const int retry_after = std::stoi(r.headers.at("retry-after"));
  EXPECT_GE(retry_after, 29);
  EXPECT_LE(retry_after, 30);
  EXPECT_LT(r.seconds, 0.2);
  EXPECT_EQ(UpstreamCalls(), calls);
}

// Passive probing (the first request after the cooldown is the probe).
TEST_F(GatewayIntegrationTest, TwentyConcurrentRequestsAtCooldownExpiryMakeOneUpstreamCall) {
  StartSim();
  StartGateway({"--probe-mode", "passive"});
  TripBreaker();
  Fault(R"({"mode":"slow","latency_ms":400})");
  WaitForCooldown();
  const std::int64_t calls = UpstreamCalls();
  const std::vector<HttpResult> results =
      Concurrently(20, [&](int i) { return Decode(kVins.at(static_cast<std::size_t>(i))); });
  int ok = 0;
  int half_open = 0;
  for (const HttpResult& r : results) {
    ok += r.status == 200 ? 1 : 0;
    if (Field(r, "status") == "CIRCUIT_HALF_OPEN") {
      ++half_open;
      EXPECT_EQ(r.status, 503);
      EXPECT_GE(std::stoi(r.headers.at("retry-after")), 1);
    }
  }
  EXPECT_EQ(ok, 1);
  EXPECT_EQ(half_open, 19);
  EXPECT_EQ(UpstreamCalls(), calls + 1);
  EXPECT_EQ(Breaker().at("state"), "CLOSED");
}

TEST_F(GatewayIntegrationTest, BatchNeverTakesTheProbe) {
  StartSim();
  StartGateway({"--probe-mode", "passive"});
  TripBreaker();
  Fault(R"({"mode":"ok"})");
  WaitForCooldown();
  const std::int64_t calls = UpstreamCalls();
  const HttpResult batch = Http(gateway_->port(), "POST", "/api/v1/vin/batch",
                                "{\"vins\": [\"" + kVins[10] + "\", \"" + kVins[11] + "\"]}");
  ASSERT_EQ(batch.status, 200);
  const json::value body = Json(batch);
  for (const json::value& result : body.at("results").as_array()) {
    EXPECT_EQ(result.at("status"), "CIRCUIT_HALF_OPEN");
  }
  EXPECT_EQ(UpstreamCalls(), calls);
  EXPECT_EQ(Decode(kVins[12]).status, 200);  // the probe was still free
  EXPECT_EQ(Breaker().at("state"), "CLOSED");
}

TEST_F(GatewayIntegrationTest, BatchGoesUpstreamInOneCall) {
  StartSim();
  StartGateway();
  ASSERT_EQ(Decode(kVin).status, 200);
  const HttpResult batch = Http(gateway_->port(), "POST", "/api/v1/vin/batch",
                                "{\"vins\": [\"" + kVins[0] + "\", \"I-AM-BAD\", \"" +
                                    std::string(kVin) + "\", \"" + kVins[1] + "\"]}");
  ASSERT_EQ(batch.status, 200) << batch.body;
  const json::value body = Json(batch);
  const json::array& results = body.at("results").as_array();
  ASSERT_EQ(results.size(), 4U);
  EXPECT_EQ(results[0].at("status"), "OK");
  EXPECT_EQ(results[1].at("status"), "VIN_INVALID");
  EXPECT_EQ(results[2].at("source"), "cache");
  EXPECT_EQ(std::string(results[3].at("vin").as_string()), kVins[1]);
  const json::value stats = SimStats();
  EXPECT_EQ(stats.at("requests").at("DecodeVINValuesBatch"), 1);
  EXPECT_EQ(stats.at("batch_vins"), 2);
}

TEST_F(GatewayIntegrationTest, ThirtyIdenticalRequestsMakeOneUpstreamCall) {
  StartSim();
  StartGateway();
  Fault(R"({"mode":"slow","latency_ms":400})");
  const std::vector<HttpResult> results = Concurrently(30, [&](int) { return Decode(kVin); });
  for (const HttpResult& r : results) {
    EXPECT_EQ(r.status, 200);
  }
  EXPECT_EQ(UpstreamCalls(), 1);
  const HttpResult metrics = Get("/metrics");
  EXPECT_NE(metrics.body.find("vin_gateway_single_flight_joins_total 29"), std::string::npos);
}

TEST_F(GatewayIntegrationTest, LastGoodDecodeIsServedStaleWhenTheLiveDecodeIsImpossible) {
  StartSim();
  StartGateway({"--cache-ttl", "1s", "--cooldown", "30s"});
  ASSERT_EQ(Decode(kVin).status, 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // let the TTL pass (wall time)
  Fault(R"({"mode":"error","status":503})");
  const HttpResult stale = Decode(kVin);
  EXPECT_EQ(stale.status, 200);
  const json::value body = Json(stale);
  EXPECT_EQ(body.at("status"), "UPSTREAM_ERROR");
  EXPECT_EQ(body.at("stale"), true);
  EXPECT_EQ(body.at("source"), "cache");
  EXPECT_EQ(body.at("message"), "Cached earlier; live refresh paused.");
  EXPECT_EQ(body.at("vehicle").at("make"), "FORD");
  EXPECT_EQ(Decode(kVins[0]).status, 502);
  EXPECT_EQ(Decode(kVins[1]).status, 502);  // third failure: open
  const HttpResult open = Decode(kVin);
  EXPECT_EQ(open.status, 200);
  EXPECT_EQ(Field(open, "status"), "CIRCUIT_OPEN");
  EXPECT_EQ(Json(open).at("stale"), true);
}

TEST_F(GatewayIntegrationTest, TooManyRequestsFromVpicHoldTheBreakerOpenForItsRetryAfter) {
  StartSim();
  StartGateway({"--failure-threshold", "1", "--cooldown", "1s"});
  Fault(R"({"mode":"error","status":429,"retry_after_s":30})");
  EXPECT_EQ(Decode(kVins[0]).status, 502);
  const HttpResult r = Decode(kVins[1]);
  EXPECT_EQ(Field(r, "status"), "CIRCUIT_OPEN");
  EXPECT_GE(std::stoi(r.headers.at("retry-after")), 29);
  EXPECT_EQ(UpstreamCalls(), 1);
}

TEST_F(GatewayIntegrationTest, FullBulkheadIsOverloaded) {
  StartSim();
  StartGateway({"--max-in-flight", "1", "--call-timeout", "3s"});
  Fault(R"({"mode":"slow","latency_ms":800})");
  std::thread first([&] { EXPECT_EQ(Decode(kVins[0]).status, 200); });
  ASSERT_TRUE(WaitUntil([&] { return SimStats().at("in_flight").to_number<int>() == 1; }));
  const HttpResult r = Decode(kVins[1]);
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(Field(r, "status"), "OVERLOADED");
  EXPECT_TRUE(r.headers.contains("retry-after"));
  first.join();
  EXPECT_EQ(UpstreamCalls(), 1);
}

TEST_F(GatewayIntegrationTest, AnAdaptiveCapAndTheThrottleShowInStatusAndMetrics) {
  StartSim();
  StartGateway({"--max-in-flight", "auto", "--max-in-flight-min", "2", "--max-in-flight-max", "40",
                "--throttle", "2", "--throttle-window", "30s", "--failure-threshold", "1000",
                "--probe-mode", "passive"});
  EXPECT_EQ(Decode(kVins[0]).status, 200);
  json::value status = Json(Get("/status"));
  EXPECT_EQ(status.at("bulkhead").at("mode"), "auto");
  EXPECT_EQ(status.at("bulkhead").at("max_in_flight"), 16);  // the adaptive limit's start
  EXPECT_EQ(status.at("bulkhead").at("min"), 2);
  EXPECT_EQ(status.at("bulkhead").at("max"), 40);
  EXPECT_EQ(status.at("throttle").at("k"), 2.0);
  EXPECT_EQ(status.at("throttle").at("refusal_probability"), 0.0);

  // vPIC refuses everything: the throttle sheds a share as THROTTLED before the breaker (which
  // would need 1000 failures) trips.
  Fault(R"({"mode":"error","status":503})");
  int throttled = 0;
  for (std::size_t i = 1; i < 12; ++i) {
    const HttpResult r = Decode(kVins[i % kVins.size()]);
    if (Field(r, "status") == "THROTTLED") {
      ++throttled;
      EXPECT_EQ(r.status, 503);
      EXPECT_EQ(r.headers.at("retry-after"), "1");
    }
  }
  EXPECT_GT(throttled, 0);
  status = Json(Get("/status"));
  EXPECT_GT(status.at("throttle").at("refusal_probability").to_number<double>(), 0.5);
  EXPECT_EQ(status.at("throttle").at("refused"), throttled);
  const std::string metrics = Get("/metrics").body;
  EXPECT_NE(metrics.find("vin_gateway_concurrency_limit{mode=\"auto\"} "), std::string::npos);
  EXPECT_NE(metrics.find("vin_gateway_throttle_refused_total " + std::to_string(throttled)),
            std::string::npos)
      << metrics;
}

TEST_F(GatewayIntegrationTest, ClientRateLimitAnswers429) {
  StartSim();
  StartGateway({"--client-rate", "0.5", "--client-burst", "2"});
  EXPECT_EQ(Decode(kVins[0]).status, 200);
  EXPECT_EQ(Decode(kVins[1]).status, 200);
  const HttpResult limited = Decode(kVins[2]);
  EXPECT_EQ(limited.status, 429);
  EXPECT_EQ(Field(limited, "status"), "RATE_LIMITED");
  EXPECT_GE(std::stoi(limited.headers.at("retry-after")), 1);
  EXPECT_EQ(Decode(kVins[0]).status, 200);  // a cache hit takes no token
  EXPECT_EQ(UpstreamCalls(), 2);
  // /status and /metrics count the same fresh hits (the in-process front's included).
  EXPECT_EQ(Json(Get("/status")).at("cache").at("fresh_hits"), 1);
  EXPECT_NE(Get("/metrics").body.find("vin_gateway_cache_hits_total 1\n"), std::string::npos);
}

TEST_F(GatewayIntegrationTest, TheVersionIsExported) {
  StartSim();
  StartGateway();
  EXPECT_NE(Get("/metrics")
                .body.find(std::string("vin_gateway_build_info{version=\"") + fusebox::kVersion +
                           "\"} 1\n"),
            std::string::npos);
}

TEST_F(GatewayIntegrationTest, VerifiesTheUpstreamCertificate) {
  StartSim({"--tls-cert", kData + "server.pem", "--tls-key", kData + "server.key"});
  ASSERT_EQ(sim_->url().rfind("https://", 0), 0U) << sim_->url();
  StartGateway({"--upstream-ca", kData + "ca.pem"});
  const HttpResult good = Decode(kVin);
  EXPECT_EQ(good.status, 200) << good.body;
  EXPECT_EQ(Field(good, "source"), "live");
  gateway_.reset();

  StartGateway({"--upstream-ca", kData + "wrong-ca.pem"});
  const HttpResult wrong_ca = Decode(kVins[0]);
  EXPECT_EQ(wrong_ca.status, 502);
  EXPECT_EQ(Field(wrong_ca, "status"), "UPSTREAM_ERROR");
  // The handshake failed, so no request was written (vpic-sim's control API speaks TLS here, so
  // the proof is the gateway's own log line).
  // The access line follows the answer within a loop turn (the log is written per turn).
  EXPECT_TRUE(WaitUntil([&] {
    return gateway_->Log().find("upstream_error=\"tls: TLS handshake") != std::string::npos;
  })) << gateway_->Log();
}

TEST_F(GatewayIntegrationTest, RefusesAValidChainForTheWrongHostName) {
  StartSim({"--tls-cert", kData + "other-name.pem", "--tls-key", kData + "other.key"});
  StartGateway({"--upstream-ca", kData + "ca.pem"});
  const HttpResult r = Decode(kVin);
  EXPECT_EQ(r.status, 502);
  EXPECT_EQ(Field(r, "status"), "UPSTREAM_ERROR");
  // The access line follows the answer within a loop turn (the log is written per turn).
  EXPECT_TRUE(WaitUntil([&] {
    return gateway_->Log().find("upstream_error=\"tls: TLS handshake") != std::string::npos;
  })) << gateway_->Log();
}

TEST_F(GatewayIntegrationTest, AdminRoutesNeedTheBearerToken) {
  StartSim();
  StartGateway({}, {"FUSEBOX_ADMIN_TOKEN=t0ken"});
  const std::string route = "/admin/breakers/vpic/force-open";
  EXPECT_EQ(Http(gateway_->port(), "POST", route).status, 401);
  EXPECT_EQ(Http(gateway_->port(), "POST", route, "", "Authorization: Bearer nope\r\n").status,
            401);
  EXPECT_EQ(Breaker().at("state"), "CLOSED");
  const HttpResult ok =
      Http(gateway_->port(), "POST", route, "", "Authorization: Bearer t0ken\r\n");
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(Breaker().at("state"), "FORCED_OPEN");
  EXPECT_EQ(Field(Decode(kVin), "status"), "CIRCUIT_OPEN");
  EXPECT_EQ(Http(gateway_->port(), "POST", "/admin/breakers/vpic/reset", "",
                 "Authorization: Bearer t0ken\r\n")
                .status,
            200);
  EXPECT_EQ(Decode(kVin).status, 200);
}

TEST_F(GatewayIntegrationTest, AdminRoutesAre404WithoutTheEnvironmentVariable) {
  StartSim();
  StartGateway();
  EXPECT_EQ(Http(gateway_->port(), "POST", "/admin/breakers/vpic/force-open", "",
                 "Authorization: Bearer anything\r\n")
                .status,
            404);
}

TEST_F(GatewayIntegrationTest, RequestsAreBoundedAndErrorsAreJson) {
  StartSim();
  StartGateway({"--client-timeout", "300ms"});
  const HttpResult big_headers =
      Http(gateway_->port(), "GET", "/healthz", "", "X-Filler: " + std::string(9000, 'x') + "\r\n");
  EXPECT_EQ(big_headers.status, 431);
  EXPECT_EQ(Field(big_headers, "status"), "HEADERS_TOO_LARGE");
  const HttpResult big_body =
      Http(gateway_->port(), "POST", "/api/v1/vin/batch", std::string(70 * 1024, ' '));
  EXPECT_EQ(big_body.status, 413);
  EXPECT_EQ(Field(big_body, "status"), "PAYLOAD_TOO_LARGE");
  const HttpResult missing = Get("/no/such/thing");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(Field(missing, "status"), "NOT_FOUND");
  EXPECT_EQ(Get("/healthz").status, 200);  // the gateway serves on
}

TEST_F(GatewayIntegrationTest, SlowClientIsCutOff) {
  StartSim();
  StartGateway({"--client-timeout", "300ms"});
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(gateway_->port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  const std::string partial = "GET /healthz HTTP/1.1\r\nHost: x\r\n";
  ASSERT_EQ(::send(fd, partial.data(), partial.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(partial.size()));
  timeval tv{3, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  const auto start = std::chrono::steady_clock::now();
  std::string answer;  // a 408, then the gateway closes the connection (recv returns 0)
  char chunk[512];
  ssize_t n = 0;
  while ((n = ::recv(fd, chunk, sizeof(chunk), 0)) > 0) {
    answer.append(chunk, static_cast<std::size_t>(n));
  }
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ::close(fd);
  EXPECT_EQ(n, 0);
  EXPECT_EQ(answer.rfind("HTTP/1.1 408 ", 0), 0U) << answer;
  EXPECT_LT(waited, 2.5);
}

TEST_F(GatewayIntegrationTest, BrokenCacheFileIsReportedAndLiveDecodesContinue) {
  StartSim();
  const std::filesystem::path file = dir_ / "broken.sqlite";
  std::ofstream(file, std::ios::binary) << std::string(4096, '\x01');
  StartGateway({"--cache", "sqlite:" + file.string()});
  const HttpResult ready = Get("/readyz");
  EXPECT_EQ(ready.status, 200);
  EXPECT_EQ(Json(ready).at("cache").at("healthy"), false);
  EXPECT_EQ(Decode(kVin).status, 200);
}

TEST_F(GatewayIntegrationTest, SqliteCacheIsCreatedOnFirstRunAndSurvivesARestart) {
  StartSim();
  const std::filesystem::path file = dir_ / "var" / "vin-cache.sqlite";
  StartGateway({"--cache", "sqlite:" + file.string()});
  ASSERT_EQ(Decode(kVin).status, 200);
  EXPECT_TRUE(std::filesystem::exists(file));
  EXPECT_EQ(gateway_->Terminate(), 0);
  StartGateway({"--cache", "sqlite:" + file.string()});
  EXPECT_EQ(Field(Decode(kVin), "source"), "cache");
  EXPECT_EQ(UpstreamCalls(), 1);
}

TEST_F(GatewayIntegrationTest, SigtermLetsInFlightRequestsFinish) {
  StartSim();
  StartGateway({"--shutdown-grace", "5s"});
  Fault(R"({"mode":"slow","latency_ms":700})");
  HttpResult in_flight;
  std::thread request([&] { in_flight = Decode(kVin); });
  ASSERT_TRUE(WaitUntil([&] { return SimStats().at("in_flight").to_number<int>() == 1; }));
  const int port = gateway_->port();
  ::kill(gateway_->pid(), SIGTERM);
  request.join();
  EXPECT_EQ(in_flight.status, 200);
  EXPECT_EQ(gateway_->Terminate(5), 0);
  EXPECT_EQ(Http(port, "GET", "/healthz").status, 0);  // no longer listening
}

TEST_F(GatewayIntegrationTest, SecondSigtermStopsTheDrainAtOnceAndStillExitsCleanly) {
  StartSim();
  StartGateway({"--shutdown-grace", "60s"});
  Fault(R"({"mode":"hang"})");
  std::thread request([&] { Decode(kVin); });
  ASSERT_TRUE(WaitUntil([&] { return SimStats().at("in_flight").to_number<int>() == 1; }));
  ::kill(gateway_->pid(), SIGTERM);
  ASSERT_TRUE(WaitUntil([&] { return gateway_->Log().find("draining") != std::string::npos; }));
  // The hung call would hold the drain for the whole 60 s grace; the second signal ends it, and
  // the exit is still a clean 0 (Terminate sends a third SIGTERM while the process is leaving).
  EXPECT_EQ(gateway_->Terminate(10), 0);
  EXPECT_NE(gateway_->Log().find("stopping now"), std::string::npos);
  request.join();
}

TEST_F(GatewayIntegrationTest, TwoIoThreadsShareOneFlightStayFastAndDrain) {
  // --threads 2: one io_context per thread, connections handed to them in turn. Every request
  // here opens its own connection, so both threads serve them.
  StartSim();
  StartGateway({"--threads", "2", "--call-timeout", "1s", "--failure-threshold", "10",
                "--shutdown-grace", "5s"});
  Fault(R"({"mode":"slow","latency_ms":400})");
  const std::vector<HttpResult> results = Concurrently(30, [&](int) { return Decode(kVin); });
  for (const HttpResult& r : results) {
    EXPECT_EQ(r.status, 200);
  }
  EXPECT_EQ(UpstreamCalls(), 1);  // the followers on the other thread joined the same flight
  const HttpResult metrics = Get("/metrics");
  EXPECT_NE(metrics.body.find("vin_gateway_single_flight_joins_total 29"), std::string::npos);

  Fault(R"({"mode":"hang"})");
  std::thread hung_request([&] { EXPECT_EQ(Decode(kVins[0]).status, 504); });
  ASSERT_TRUE(WaitUntil([&] { return SimStats().at("in_flight").to_number<int>() == 1; }));
  for (int i = 0; i < 4; ++i) {  // both threads answer cached VINs while the call hangs
    const HttpResult cached = Decode(kVin);
    EXPECT_EQ(cached.status, 200);
    EXPECT_LT(cached.seconds, 0.2);
  }
  hung_request.join();

  Fault(R"({"mode":"slow","latency_ms":500})");
  HttpResult in_flight;
  std::thread request([&] { in_flight = Decode(kVins[1]); });
  ASSERT_TRUE(WaitUntil([&] { return SimStats().at("in_flight").to_number<int>() == 1; }));
  ::kill(gateway_->pid(), SIGTERM);
  request.join();
  EXPECT_EQ(in_flight.status, 200);
  EXPECT_EQ(gateway_->Terminate(5), 0);
}

TEST_F(GatewayIntegrationTest, StatusAndMetricsDescribeTheBreaker) {
  StartSim();
  StartGateway();
  ASSERT_EQ(Decode(kVin).status, 200);
  const json::value status = Json(Get("/status"));
  EXPECT_EQ(status.at("breakers").at(0).at("name"), "vpic");
  EXPECT_EQ(status.at("breakers").at(0).at("succeeded"), 1);
  EXPECT_EQ(status.at("cache").at("entries"), 1);
  const HttpResult metrics = Get("/metrics");
  EXPECT_NE(metrics.body.find("fusebox_state{breaker=\"vpic\",state=\"CLOSED\"} 1"),
            std::string::npos);
  EXPECT_NE(metrics.body.find("vin_gateway_upstream_latency_seconds_count 1"), std::string::npos);
  EXPECT_TRUE(WaitUntil([&] {
    return gateway_->Log().find("status=OK vin=1FTMW1T88MFA00001 source=live") != std::string::npos;
  })) << gateway_->Log();
  // The gateway's own request latency: the decode, and /status and /metrics as "ops" (each
  // counted once its answer is written, so the latest /metrics is not in its own body).
  std::string body;
  EXPECT_TRUE(WaitUntil([&] {
    body = Get("/metrics").body;
    return body.find("vin_gateway_request_duration_seconds_count{route=\"decode\"} 1\n") !=
               std::string::npos &&
           body.find("vin_gateway_request_duration_seconds_count{route=\"ops\"} 0\n") ==
               std::string::npos;
  })) << body;
  EXPECT_NE(
      body.find("vin_gateway_request_duration_seconds_bucket{route=\"decode\",le=\"+Inf\"} 1"),
      std::string::npos);
  EXPECT_NE(body.find("vin_gateway_request_duration_seconds_count{route=\"batch\"} 0\n"),
            std::string::npos);
}

TEST_F(GatewayIntegrationTest, HungUpstreamOpensATimeWindowBreakerBeforeTheFirstBudgetRunsOut) {
  // A busy site's breaker: a time window whose slow-call rate counts calls still running past a
  // slow-call duration much shorter than the budget. A hung vPIC trips it on the next arrival
  // after 300 ms, long before the first call's 3 s budget ends in a timeout.
  StartSim();
  StartGateway({"--call-timeout", "3s", "--cooldown", "30s", "--trip", "time_window",
                "--window-size", "10s", "--minimum-calls", "3", "--slow-call-duration", "300ms",
                "--slow-call-rate-threshold", "0.5", "--inflight-slow-accounting", "--probe-mode",
                "passive"});
  EXPECT_EQ(Breaker().at("policy"), "time_window");
  EXPECT_EQ(Breaker().at("window").at("unit"), "seconds");
  Fault(R"({"mode":"hang"})");
  // A form every 100 ms (a VIN each), each on its own connection: the admitted ones hang, and
  // each arrival runs the rate test, so the first arrival that finds three calls past 300 ms
  // trips the breaker and is itself answered CIRCUIT_OPEN.
  const auto start = std::chrono::steady_clock::now();
  std::atomic<double> opened_after{-1};
  std::atomic<int> admitted{0};
  std::vector<std::thread> forms;
  for (std::size_t i = 0; i < 20 && opened_after.load() < 0; ++i) {
    std::this_thread::sleep_until(start + std::chrono::milliseconds(100 * i));
    forms.emplace_back([&, i] {
      const HttpResult r = Decode(kVins.at(i));
      if (r.status == 503 && Field(r, "status") == "CIRCUIT_OPEN") {
        const double t =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        double none = -1;
        opened_after.compare_exchange_strong(none, t);
      } else {
        EXPECT_EQ(r.status, 504) << i;  // hung until the 3 s budget ran out
        admitted.fetch_add(1);
      }
    });
    if (i < 3) {  // the first three are admitted in order (threads may not start in order)
      EXPECT_TRUE(WaitUntil(
          [&] { return SimStats().at("in_flight").to_number<int>() == static_cast<int>(i) + 1; }));
    }
  }
  const bool opened = WaitUntil([&] { return opened_after.load() >= 0; }, 3);
  const json::value breaker = Breaker();  // before any budget runs out
  for (std::thread& t : forms) {
    t.join();
  }
  ASSERT_TRUE(opened);
  std::cout << "time_window + slow-call rate + in-flight slow calls: the breaker opened "
            << opened_after.load() << " s after the first hung call (budget 3 s)\n";
  EXPECT_LT(opened_after.load(), 3.0);
  EXPECT_EQ(breaker.at("state"), "OPEN");
  EXPECT_EQ(breaker.at("timeouts"), 0);  // no call's budget had run out yet
  const json::array& transitions = breaker.at("recent_transitions").as_array();
  ASSERT_FALSE(transitions.empty());
  EXPECT_EQ(transitions.back().at("cause"), "slow_call_rate");
  EXPECT_EQ(SimStats().at("requests_total").to_number<int>(), admitted.load());
}

TEST_F(GatewayIntegrationTest, StatusShowsTheWindowsRates) {
  StartSim();
  StartGateway({"--trip", "count_window", "--window-size", "10", "--minimum-calls", "5"});
  ASSERT_EQ(Decode(kVins[0]).status, 200);
  Fault(R"({"mode":"error","status":503})");
  ASSERT_EQ(Decode(kVins[1]).status, 502);
  const json::value breaker = Breaker();
  EXPECT_EQ(breaker.at("policy"), "count_window");
  const json::value& window = breaker.at("window");
  EXPECT_EQ(window.at("size"), 10);
  EXPECT_EQ(window.at("unit"), "calls");
  EXPECT_EQ(window.at("minimum_calls"), 5);
  EXPECT_EQ(window.at("calls"), 2);
  EXPECT_EQ(window.at("failures"), 1);
  EXPECT_EQ(window.at("failure_rate").to_number<double>(), 0.5);
  EXPECT_EQ(window.at("slow_call_rate").to_number<double>(), 0.0);
  EXPECT_EQ(breaker.at("state"), "CLOSED");  // 2 calls: under the minimum
  const HttpResult metrics = Get("/metrics");
  EXPECT_NE(metrics.body.find("fusebox_failure_rate{breaker=\"vpic\"} 0.5"), std::string::npos)
      << metrics.body;
  EXPECT_NE(
      metrics.body.find("vin_gateway_breaker_policy{breaker=\"vpic\",policy=\"count_window\"} 1"),
      std::string::npos);
  EXPECT_NE(metrics.body.find("vin_gateway_breaker_window_calls{breaker=\"vpic\"} 2"),
            std::string::npos);
}

TEST_F(GatewayIntegrationTest, SighupAppliesTheFilesBreakerSettingsAndRefusesABadFile) {
  const std::filesystem::path file = dir_ / "gateway.toml";
  std::ofstream(file) << "failure_threshold = 3\n";
  StartSim();
  StartGateway({"--config", file.string()});
  ASSERT_EQ(Decode(kVins[0]).status, 200);
  EXPECT_EQ(Breaker().at("policy"), "consecutive");

  // Breaker settings apply to the live breaker (its totals stay); --max-in-flight needs a restart.
  std::ofstream(file) << "trip = \"count_window\"\nwindow_size = 20\nminimum_calls = 5\n"
                         "failure_threshold = 7\nmax_in_flight = 4\n";
  ::kill(gateway_->pid(), SIGHUP);
  ASSERT_TRUE(WaitUntil([&] { return Breaker().at("policy") == "count_window"; }));
  json::value breaker = Breaker();
  EXPECT_EQ(breaker.at("window").at("size"), 20);
  EXPECT_EQ(breaker.at("window").at("minimum_calls"), 5);
  EXPECT_EQ(breaker.at("failure_threshold"), 7);
  EXPECT_EQ(breaker.at("calls"), 1);
  EXPECT_EQ(breaker.at("state"), "CLOSED");
  EXPECT_EQ(Json(Get("/status")).at("bulkhead").at("max_in_flight"), 16);
  ASSERT_TRUE(WaitUntil(
      [&] { return gateway_->Log().find("--max-in-flight changed") != std::string::npos; }));
  const std::string log = gateway_->Log();
  EXPECT_NE(log.find("SIGHUP: re-read " + file.string() + ": breaker vpic now "), std::string::npos)
      << log;
  EXPECT_NE(log.find("trip: consecutive -> count_window"), std::string::npos) << log;
  EXPECT_NE(log.find("failure_threshold: 3 -> 7"), std::string::npos) << log;
  EXPECT_NE(log.find("window_size: 100 -> 20"), std::string::npos) << log;

  // A bad file is refused with the reason; the settings in force stay.
  std::ofstream(file) << "trip = \"time_window\"\nfailure_rate_threshold = 2\n";
  ::kill(gateway_->pid(), SIGHUP);
  ASSERT_TRUE(WaitUntil([&] {
    return gateway_->Log().find("--failure-rate-threshold must be in") != std::string::npos;
  }));
  EXPECT_NE(gateway_->Log().find(file.string() +
                                 " refused, the settings in force stay: --failure-rate-threshold "
                                 "must be in "
                                 "(0, 1], got 2"),
            std::string::npos)
      << gateway_->Log();
  breaker = Breaker();
  EXPECT_EQ(breaker.at("policy"), "count_window");
  EXPECT_EQ(breaker.at("failure_threshold"), 7);
  EXPECT_EQ(Decode(kVins[1]).status, 200);  // still serving
}

TEST_F(GatewayIntegrationTest, SighupWithoutAConfigFileChangesNothing) {
  StartSim();
  StartGateway();
  ::kill(gateway_->pid(), SIGHUP);
  ASSERT_TRUE(WaitUntil(
      [&] { return gateway_->Log().find("no --config file was given") != std::string::npos; }));
  EXPECT_EQ(Get("/healthz").status, 200);
  EXPECT_EQ(Breaker().at("policy"), "consecutive");
  EXPECT_EQ(gateway_->Terminate(5), 0);
}

// --recovery-ramp: after the probe closes the breaker, decodes are let back in gradually. Ten
// decodes at the end of the cooldown make one probe and nine refusals, so the ramp starts at a
// tenth; right after it closes most decodes are refused CIRCUIT_RECOVERING (503, Retry-After),
// /status shows the ramp, and once it has run its length every decode goes through again.
TEST_F(GatewayIntegrationTest, RecoveryRampLetsDecodesBackInGradually) {
  StartSim();
  StartGateway({"--recovery-ramp", "3s", "--probe-mode", "passive"});
  TripBreaker();
  Fault(R"({"mode":"slow","latency_ms":300})");
  WaitForCooldown();
  const std::vector<HttpResult> first =
      Concurrently(10, [&](int i) { return Decode(kVins.at(static_cast<std::size_t>(3 + i))); });
  int ok = 0;
  for (const HttpResult& r : first) {
    ok += r.status == 200 ? 1 : 0;
  }
  ASSERT_EQ(ok, 1);
  Fault(R"({"mode":"ok"})");
  const json::value ramp = Breaker();
  EXPECT_EQ(ramp.at("state"), "CLOSED");
  ASSERT_TRUE(ramp.at("recovery").is_object()) << ramp;
  EXPECT_LT(ramp.at("recovery").at("share").to_number<double>(), 0.5);
  EXPECT_EQ(ramp.at("recovery_ramp_s").to_number<double>(), 3.0);
  int recovering = 0;
  for (std::size_t i = 13; i < kVins.size(); ++i) {
    const HttpResult r = Decode(kVins[i]);
    if (Field(r, "status") == "CIRCUIT_RECOVERING") {
      ++recovering;
      EXPECT_EQ(r.status, 503);
      EXPECT_GE(std::stoi(r.headers.at("retry-after")), 1);
      EXPECT_NE(Field(r, "message").find("traffic is being let in gradually"), std::string::npos);
    } else {
      EXPECT_EQ(r.status, 200) << r.body;
    }
  }
  EXPECT_GE(recovering, 1);
  EXPECT_GE(Breaker().at("rejected_recovering").to_number<std::int64_t>(), recovering);
  // The ramp over: no refusal, and /status says so.
  ASSERT_TRUE(WaitUntil([&] { return Breaker().at("recovery").is_null(); }, 10));
  for (std::size_t i = 13; i < kVins.size(); ++i) {
    EXPECT_EQ(Decode(kVins[i]).status, 200);
  }
  EXPECT_EQ(Breaker().at("state"), "CLOSED");
}

TEST_F(GatewayIntegrationTest, UpstreamConnectionsAreKeptAlive) {
  StartSim();
  StartGateway();
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(Decode(kVins.at(static_cast<std::size_t>(i))).status, 200);
  }
  const json::value status = Json(Get("/status"));
  EXPECT_EQ(status.at("upstream").at("connections_opened"), 1);
  EXPECT_EQ(status.at("upstream").at("connections_reused"), 2);
  EXPECT_EQ(UpstreamCalls(), 3);
}

// ---- active probing (--probe-mode active): the gateway's own probes, never a user's request ----

// In a hang, users are refused at once (no user's VIN reaches vPIC while the breaker is not
// CLOSED), vPIC sees one probe at a time, each cut at the probe budget, and once vPIC is back a
// new VIN decodes live within about one probe interval plus a budget.
TEST_F(GatewayIntegrationTest, ActiveProbesKeepUsersOffAHangAndFindTheRevival) {
  StartSim();
  StartGateway({"--probe-mode", "active", "--probe-interval", "400ms", "--probe-budget", "300ms",
                "--call-timeout", "800ms", "--failure-threshold", "1"});
  Fault(R"({"mode":"hang"})");
  EXPECT_EQ(Decode(kVins[0]).status, 504);  // the call that trips the breaker
  ASSERT_NE(Breaker().at("state"), "CLOSED");
  int max_in_flight = 0;
  for (std::size_t i = 1; i < 9; ++i) {
    const HttpResult refused = Decode(kVins.at(i));
    EXPECT_EQ(refused.status, 503) << refused.body;
    const std::string status = Field(refused, "status");
    EXPECT_TRUE(status == "CIRCUIT_OPEN" || status == "CIRCUIT_HALF_OPEN") << status;
    EXPECT_LT(refused.seconds, 0.5);
    max_in_flight = std::max(max_in_flight, SimStats().at("in_flight").to_number<int>());
  }
  ASSERT_TRUE(WaitUntil([&] {
    max_in_flight = std::max(max_in_flight, SimStats().at("in_flight").to_number<int>());
    return Status().at("probing").at("sent").to_number<int>() >= 3;
  }));
  EXPECT_LE(max_in_flight, 1);
  const json::value probing = Status().at("probing");
  EXPECT_EQ(probing.at("mode"), "active");
  EXPECT_EQ(probing.at("last_outcome"), "timeout");
  // vPIC saw the tripping call and the probes, nothing else.
  const long sent = Status().at("probing").at("sent").to_number<long>();
  EXPECT_LE(UpstreamCalls(), 1 + sent + 1);  // a probe may be starting as we read
  EXPECT_NE(gateway_->Log().find("breaker vpic: CLOSED -> OPEN (consecutive_failures); next "
                                 "probe in"),
            std::string::npos);
  EXPECT_NE(gateway_->Log().find("breaker vpic: probe timeout"), std::string::npos);

  Fault(R"({"mode":"ok"})");
  const auto revived = std::chrono::steady_clock::now();
  std::size_t next = 9;
  ASSERT_TRUE(WaitUntil(
      [&] { return Field(Decode(kVins.at(next++ % kVins.size())), "source") == "live"; }, 5));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - revived).count();
  EXPECT_LT(seconds, 0.4 + 0.3 + 0.5);  // one interval, one budget, and slack for the runner
  EXPECT_NE(gateway_->Log().find("breaker vpic: probe success"), std::string::npos);
  EXPECT_NE(gateway_->Log().find("breaker vpic: HALF_OPEN -> CLOSED (probes_succeeded)"),
            std::string::npos);
}

// A 429 with Retry-After: 30 keeps every probe away for 30 s: the prober waits out the hold.
TEST_F(GatewayIntegrationTest, ActiveProbesWaitOutTheUpstreamsRetryAfter) {
  StartSim();
  StartGateway({"--probe-mode", "active", "--probe-interval", "200ms", "--probe-budget", "300ms",
                "--failure-threshold", "1"});
  Fault(R"({"mode":"error","status":429,"retry_after_s":30})");
  EXPECT_EQ(Decode(kVins[0]).status, 502);
  const HttpResult r = Decode(kVins[1]);
  EXPECT_EQ(Field(r, "status"), "CIRCUIT_OPEN");
  EXPECT_GE(std::stoi(r.headers.at("retry-after")), 29);
  // The next probe is due after the hold, not after the 200 ms interval; none has run.
  const json::value probing = Status().at("probing");
  EXPECT_EQ(probing.at("sent"), 0);
  EXPECT_GE(probing.at("next_in_s").to_number<double>(), 27.0);
  EXPECT_EQ(UpstreamCalls(), 1);
  EXPECT_NE(gateway_->Log().find("breaker vpic: vPIC asked to wait 30s (Retry-After)"),
            std::string::npos)
      << gateway_->Log();
}

// The answer deadline with a real slow vPIC: a decode with a stale copy gets it by the deadline
// while vPIC takes 3 s; the live answer then lands in the cache, and the next request is a fresh
// hit.
TEST_F(GatewayIntegrationTest, ASlowLiveDecodeIsAnsweredByTheDeadlineAndFillsTheCache) {
  StartSim();
  StartGateway({"--call-timeout", "7s", "--answer-deadline", "500ms", "--cache-ttl", "1s",
                "--slow-call-duration", "5s"});
  ASSERT_EQ(Field(Decode(kVin), "source"), "live");
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // real time past the 1 s TTL
  Fault(R"({"mode":"slow","latency_ms":3000})");
  const HttpResult late = Decode(kVin);
  EXPECT_EQ(late.status, 200);
  EXPECT_EQ(Field(late, "status"), "UPSTREAM_LATE");
  EXPECT_EQ(Json(late).at("stale"), true);
  EXPECT_LT(late.seconds, 1.5);  // the deadline, not vPIC's 3 s
  Fault(R"({"mode":"ok"})");
  // The live call goes on and fills the cache: within its 3 s the next decode is a fresh hit.
  ASSERT_TRUE(WaitUntil(
      [&] {
        const HttpResult r = Decode(kVin);
        return Field(r, "status") == "OK" && Field(r, "source") == "cache" &&
               Json(r).at("stale") == false;
      },
      5));
  EXPECT_EQ(Breaker().at("state"), "CLOSED");
}

// The gateway's own probe decodes --probe-vin, and its answer lands in the cache for that VIN.
TEST_F(GatewayIntegrationTest, TheProbesAnswerFillsTheCacheForTheProbeVin) {
  StartSim();
  StartGateway({"--probe-mode", "active", "--probe-interval", "200ms", "--probe-budget", "1s",
                "--failure-threshold", "1", "--probe-vin", kVins[5]});
  Fault(R"({"mode":"error","status":503})");
  EXPECT_EQ(Decode(kVins[0]).status, 502);
  Fault(R"({"mode":"ok"})");
  ASSERT_TRUE(WaitUntil([&] { return Breaker().at("state") == "CLOSED"; }, 5));
  EXPECT_EQ(Status().at("probing").at("last_outcome"), "success");
  const long calls = UpstreamCalls();
  EXPECT_EQ(Field(Decode(kVins[5]), "source"), "cache");  // the probe stored it
  EXPECT_EQ(UpstreamCalls(), calls);
}

}  // namespace

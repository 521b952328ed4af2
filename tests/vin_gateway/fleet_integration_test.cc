// Fleet mode end to end (docs/fleet.md): a real redis-server (tests/redis/redis_server.h), two
// vpic-sims and three vin-gateways as processes on loopback, every assertion over HTTP. Instance
// A talks to a sim that fails; B and C to a healthy one, so only A sees the outage. Also the
// gateway behind a load balancer: --trusted-proxy and the client address it gives the rate limit.
#include <gtest/gtest.h>

#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "process_harness.h"
#include "redis/redis_server.h"
#include "redis/tls_files.h"

namespace {

namespace json = boost::json;
using fusebox::gateway::testing::ChildProcess;
using fusebox::gateway::testing::Http;
using fusebox::gateway::testing::HttpResult;
using fusebox::gateway::testing::WaitUntil;

const std::vector<std::string> kVins = {
    "137ZA903X1E412677", "19XFC1F7XGE028370", "1C4RJEAG2EC476429", "1D7RB1CP8BS798034",
    "1D7RB1CT1BS488952", "1GB0C4EGXGZ280783", "1GNKRHKD2GJ223195", "1N4BL3AP5DN508203"};

json::value Json(const HttpResult& r) {
  boost::system::error_code ec;
  json::value v = json::parse(r.body, ec);
  EXPECT_FALSE(ec) << "not JSON: " << r.body;
  return ec ? json::value() : v;
}

class FleetIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("fusebox-fleet-it-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    if (HasFailure()) {
      for (std::size_t i = 0; i < gateways_.size(); ++i) {
        std::cerr << "---- gateway " << i << " log ----\n" << gateways_[i]->Log();
      }
    }
    gateways_.clear();
    sims_.clear();
    std::filesystem::remove_all(dir_);
  }

  ChildProcess& StartSim() {
    const std::string log = (dir_ / ("sim" + std::to_string(sims_.size()) + ".log")).string();
    sims_.push_back(std::make_unique<ChildProcess>(
        std::vector<std::string>{VPIC_SIM_BINARY, "--listen", "127.0.0.1:0"},
        std::vector<std::string>{}, log));
    EXPECT_TRUE(sims_.back()->started()) << sims_.back()->Log();
    return *sims_.back();
  }

  // A gateway in front of `sim`; `fleet_args` are the fleet flags, `env` more environment.
  ChildProcess& StartGateway(const ChildProcess& sim, std::vector<std::string> fleet_args,
                             std::vector<std::string> env = {}) {
    std::vector<std::string> argv = {VIN_GATEWAY_BINARY,
                                     "--listen",
                                     "127.0.0.1:0",
                                     "--upstream-url",
                                     sim.url(),
                                     "--cache",
                                     "memory",
                                     "--client-rate",
                                     "0",
                                     "--call-timeout",
                                     "1s",
                                     "--cooldown",
                                     "2s",
                                     "--failure-threshold",
                                     "3",
                                     "--offline-db",
                                     "none"};
    argv.insert(argv.end(), fleet_args.begin(), fleet_args.end());
    const std::string log = (dir_ / ("gw" + std::to_string(gateways_.size()) + ".log")).string();
    gateways_.push_back(std::make_unique<ChildProcess>(argv, std::move(env), log));
    return *gateways_.back();
  }

  static json::value Status(const ChildProcess& gw) {
    return Json(Http(gw.port(), "GET", "/status"));
  }
  static std::string State(const ChildProcess& gw) {
    const json::value s = Status(gw);
    return s.is_object() ? std::string(s.at("breakers").as_array().at(0).at("state").as_string())
                         : "";
  }
  static HttpResult Decode(const ChildProcess& gw, const std::string& vin) {
    return Http(gw.port(), "GET", "/api/v1/vin/" + vin);
  }

  std::filesystem::path dir_;
  std::vector<std::unique_ptr<ChildProcess>> sims_;
  std::vector<std::unique_ptr<ChildProcess>> gateways_;
};

TEST_F(FleetIntegrationTest, AnOutageSeenOnlyByAOpensBAndCAndRevivalClosesAllThree) {
  if (!fusebox::testing::RedisServer::Available()) {
    GTEST_SKIP() << "no redis-server";
  }
  fusebox::testing::RedisServer redis;
  ASSERT_TRUE(redis.Start());
  ChildProcess& failing = StartSim();
  ChildProcess& healthy = StartSim();
  ChildProcess& a = StartGateway(failing, {"--fleet", redis.url(), "--instance-id", "a"});
  ChildProcess& b = StartGateway(healthy, {"--fleet", redis.url(), "--instance-id", "b"});
  ChildProcess& c = StartGateway(healthy, {"--fleet", redis.url(), "--instance-id", "c"});
  for (ChildProcess* gw : {&a, &b, &c}) {
    ASSERT_TRUE(gw->started()) << gw->Log();
  }
  ASSERT_TRUE(WaitUntil(
      [&] {
        for (ChildProcess* gw : {&a, &b, &c}) {
          const json::value s = Status(*gw);
          if (!s.is_object() || !s.at("fleet").is_object() ||
              !s.at("fleet").at("connected").as_bool()) {
            return false;
          }
        }
        return true;
      },
      5));
  const json::value fleet_b = Status(b).at("fleet");
  EXPECT_EQ(fleet_b.at("url").as_string(), redis.url());
  EXPECT_EQ(fleet_b.at("instance"), "b");
  EXPECT_TRUE(fleet_b.at("probe_lease_holder").is_null());

  ASSERT_EQ(
      Http(failing.port(), "POST", "/__control/faults", R"({"mode":"error","status":503})").status,
      200);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(Decode(a, kVins.at(static_cast<std::size_t>(i))).status, 502);
  }
  ASSERT_EQ(State(a), "OPEN");
  const auto tripped = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitUntil([&] { return State(b) == "OPEN" && State(c) == "OPEN"; }, 1.0));
  EXPECT_LT(std::chrono::steady_clock::now() - tripped, std::chrono::seconds(1));
  EXPECT_EQ(Json(Decode(c, kVins[4])).at("status"), "CIRCUIT_OPEN");
  EXPECT_GE(Status(a).at("fleet").at("messages_sent").to_number<int>(), 1);
  EXPECT_GE(Status(b).at("fleet").at("messages_received").to_number<int>(), 1);
  EXPECT_EQ(Status(b).at("fleet").at("peers_seen").to_number<int>(), 1);

  // Revival: A's upstream heals; after the cooldown one probe (whoever wins the lease) closes
  // every instance.
  ASSERT_EQ(Http(failing.port(), "POST", "/__control/faults", R"({"mode":"ok"})").status, 200);
  ASSERT_TRUE(WaitUntil(
      [&] {
        for (ChildProcess* gw : {&a, &b, &c}) {
          (void)Decode(*gw, kVins[5]);
        }
        return State(a) == "CLOSED" && State(b) == "CLOSED" && State(c) == "CLOSED";
      },
      5));
  // Shutdown with a live fleet link is clean.
  EXPECT_EQ(b.Terminate(), 0);
}

TEST_F(FleetIntegrationTest, WithAQuorumOfTwoOneFailingInstanceOpensAloneAndASecondOpensAll) {
  if (!fusebox::testing::RedisServer::Available()) {
    GTEST_SKIP() << "no redis-server";
  }
  fusebox::testing::RedisServer redis;
  ASSERT_TRUE(redis.Start());
  ChildProcess& sim_a = StartSim();
  ChildProcess& sim_b = StartSim();
  ChildProcess& healthy = StartSim();
  const std::vector<std::string> quorum = {"--fleet", redis.url(),  "--fleet-quorum",
                                           "2",       "--cooldown", "5s"};
  auto with_id = [&](const char* id) {
    std::vector<std::string> args = quorum;
    args.insert(args.end(), {"--instance-id", id});
    return args;
  };
  ChildProcess& a = StartGateway(sim_a, with_id("a"));
  ChildProcess& b = StartGateway(sim_b, with_id("b"));
  ChildProcess& c = StartGateway(healthy, with_id("c"));
  for (ChildProcess* gw : {&a, &b, &c}) {
    ASSERT_TRUE(gw->started()) << gw->Log();
  }
  ASSERT_TRUE(WaitUntil(
      [&] {
        for (ChildProcess* gw : {&a, &b, &c}) {
          const json::value s = Status(*gw);
          if (!s.is_object() || !s.at("fleet").at("connected").as_bool()) {
            return false;
          }
        }
        return true;
      },
      5));
  EXPECT_EQ(Status(c).at("fleet").at("quorum").to_number<int>(), 2);

  // Only A's route to vPIC fails: A opens, B and C hear of it and stay CLOSED.
  ASSERT_EQ(
      Http(sim_a.port(), "POST", "/__control/faults", R"({"mode":"error","status":503})").status,
      200);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(Decode(a, kVins.at(static_cast<std::size_t>(i))).status, 502);
  }
  ASSERT_EQ(State(a), "OPEN");
  ASSERT_TRUE(WaitUntil(
      [&] {
        return Status(c).at("fleet").at("opens_below_quorum").to_number<int>() == 1 &&
               Status(b).at("fleet").at("opens_below_quorum").to_number<int>() == 1;
      },
      2));
  EXPECT_EQ(State(b), "CLOSED");
  EXPECT_EQ(State(c), "CLOSED");
  EXPECT_EQ(Status(c).at("fleet").at("failing_peers").to_number<int>(), 1);
  EXPECT_EQ(Decode(c, kVins[3]).status, 200);

  // B sees vPIC failing too: two reports, and C follows within a round trip.
  ASSERT_EQ(
      Http(sim_b.port(), "POST", "/__control/faults", R"({"mode":"error","status":503})").status,
      200);
  for (int i = 4; i < 7; ++i) {
    EXPECT_EQ(Decode(b, kVins.at(static_cast<std::size_t>(i))).status, 502);
  }
  ASSERT_EQ(State(b), "OPEN");
  const auto tripped = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitUntil([&] { return State(c) == "OPEN"; }, 1.0));
  EXPECT_LT(std::chrono::steady_clock::now() - tripped, std::chrono::seconds(1));
  EXPECT_EQ(Status(c).at("fleet").at("failing_peers").to_number<int>(), 2);
  EXPECT_EQ(Json(Decode(c, kVins[7])).at("status"), "CIRCUIT_OPEN");
}

// The gateways' defaults probe actively: each instance's prober asks for the fleet's probe lease,
// so vPIC sees one probe per 2 s interval from the whole fleet, and no user's decode at all.
TEST_F(FleetIntegrationTest, OneProbePerIntervalFleetWideThroughATenSecondOutage) {
  if (!fusebox::testing::RedisServer::Available()) {
    GTEST_SKIP() << "no redis-server";
  }
  fusebox::testing::RedisServer redis;
  ASSERT_TRUE(redis.Start());
  ChildProcess& sim = StartSim();
  std::vector<ChildProcess*> gws;
  for (const char* id : {"a", "b", "c"}) {
    gws.push_back(&StartGateway(sim, {"--fleet", redis.url(), "--instance-id", id}));
    ASSERT_TRUE(gws.back()->started()) << gws.back()->Log();
  }
  ASSERT_TRUE(WaitUntil(
      [&] {
        for (ChildProcess* gw : gws) {
          const json::value s = Status(*gw);
          if (!s.is_object() || !s.at("fleet").is_object() ||
              !s.at("fleet").at("connected").as_bool()) {
            return false;
          }
        }
        return true;
      },
      5));
  const auto requests = [&] {
    return Json(Http(sim.port(), "GET", "/__control/stats"))
        .at("requests_total")
        .to_number<std::int64_t>();
  };
  ASSERT_EQ(
      Http(sim.port(), "POST", "/__control/faults", R"({"mode":"error","status":503})").status,
      200);
  // Steady traffic on all three: each thread asks for VINs nobody has cached (every decode
  // fails during the outage, so nothing gets cached).
  std::atomic<bool> stop{false};
  std::vector<std::thread> traffic;
  for (ChildProcess* gw : gws) {
    traffic.emplace_back([&stop, gw] {
      for (std::size_t i = 0; !stop; ++i) {
        (void)Decode(*gw, kVins[i % kVins.size()]);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
  }
  ASSERT_TRUE(WaitUntil(
      [&] {
        return State(*gws[0]) != "CLOSED" && State(*gws[1]) != "CLOSED" &&
               State(*gws[2]) != "CLOSED";
      },
      3));
  const auto probes_sent = [&] {
    std::int64_t sent = 0;
    for (ChildProcess* gw : gws) {
      sent += Status(*gw).at("probing").at("sent").to_number<std::int64_t>();
    }
    return sent;
  };
  const std::int64_t at_open = requests();
  const std::int64_t sent_at_open = probes_sent();
  const auto opened = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(10));
  const std::int64_t probes = requests() - at_open;
  const std::int64_t sent = probes_sent() - sent_at_open;
  const double cooldowns =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - opened).count() / 2.0;
  std::cout << "upstream calls while open: " << probes << " in " << cooldowns << " cooldowns\n";
  // About one probe per 2 s cooldown fleet-wide (three unlinked gateways would send three).
  EXPECT_LE(probes, static_cast<std::int64_t>(cooldowns) + 1) << probes << " probes";
  EXPECT_GE(probes, 2) << "probes must go on during the outage";
  // Every request vPIC saw was one of the gateways' own probes (one may be in flight as the two
  // counts are read).
  EXPECT_LE(std::abs(probes - sent), 1) << probes << " requests, " << sent << " probes";

  ASSERT_EQ(Http(sim.port(), "POST", "/__control/faults", R"({"mode":"ok"})").status, 200);
  EXPECT_TRUE(WaitUntil(
      [&] {
        return State(*gws[0]) == "CLOSED" && State(*gws[1]) == "CLOSED" &&
               State(*gws[2]) == "CLOSED";
      },
      2.5));  // within one cooldown (plus the round trips)
  stop = true;
  for (std::thread& t : traffic) {
    t.join();
  }
}

// A Redis that asks for a password: one gateway reads it from --redis-password-file, another
// from the environment, and a third with the wrong one stays out of the fleet saying why. No
// password is in a command line, a log or /status.
TEST_F(FleetIntegrationTest, APasswordFromAFileOrTheEnvironmentLogsTheCacheAndTheFleetIn) {
  if (!fusebox::testing::RedisServer::Available()) {
    GTEST_SKIP() << "no redis-server";
  }
  fusebox::testing::RedisServer redis;
  ASSERT_TRUE(redis.Start({"--requirepass", "s3cret-pw"}));
  const std::string password_file = (dir_ / "redis-password").string();
  std::ofstream(password_file) << "s3cret-pw\n";
  const std::string wrong_file = (dir_ / "wrong-password").string();
  std::ofstream(wrong_file) << "not-it\n";
  const std::string secret_file = (dir_ / "fleet-secret").string();
  std::ofstream(secret_file) << "a-fleet-secret-of-32-bytes-long!\n";
  ChildProcess& sim = StartSim();
  ChildProcess& a =
      StartGateway(sim, {"--cache", redis.url(), "--fleet", redis.url(), "--redis-password-file",
                         password_file, "--fleet-secret-file", secret_file});
  ChildProcess& b = StartGateway(
      sim, {"--cache", redis.url(), "--fleet", redis.url(), "--fleet-secret-file", secret_file},
      {"FUSEBOX_REDIS_PASSWORD=s3cret-pw"});
  ChildProcess& c =
      StartGateway(sim, {"--fleet", redis.url(), "--redis-password-file", wrong_file});
  ASSERT_TRUE(a.started() && b.started() && c.started()) << a.Log() << b.Log() << c.Log();
  const auto linked = [&](const ChildProcess& gw) {
    const json::value s = Status(gw);
    return s.is_object() && s.at("cache").at("healthy").as_bool() &&
           s.at("fleet").at("connected").as_bool();
  };
  ASSERT_TRUE(WaitUntil([&] { return linked(a) && linked(b); }, 5));
  const HttpResult live = Decode(a, kVins[0]);
  ASSERT_EQ(live.status, 200) << live.body;
  const HttpResult hit = Decode(b, kVins[0]);
  EXPECT_EQ(Json(hit).at("source"), "cache");  // through the shared, password-protected cache
  for (const ChildProcess* gw : {&a, &b}) {
    const json::value fleet = Status(*gw).at("fleet");
    EXPECT_TRUE(fleet.at("signed").as_bool());
    EXPECT_EQ(fleet.at("messages_unauthenticated"), 0);
  }
  json::value status_c;
  ASSERT_TRUE(WaitUntil(
      [&] {
        status_c = Status(c);
        return status_c.is_object() && status_c.at("fleet").at("last_error").is_string();
      },
      5));
  EXPECT_FALSE(status_c.at("fleet").at("connected").as_bool());
  EXPECT_NE(std::string(status_c.at("fleet").at("last_error").as_string()).find("WRONGPASS"),
            std::string::npos);
  for (const ChildProcess* gw : {&a, &b, &c}) {
    EXPECT_EQ(gw->Log().find("s3cret-pw"), std::string::npos) << gw->Log();
    EXPECT_EQ(gw->Log().find("not-it"), std::string::npos) << gw->Log();
    EXPECT_EQ(gw->Log().find("a-fleet-secret"), std::string::npos) << gw->Log();
    EXPECT_EQ(Http(gw->port(), "GET", "/status").body.find("s3cret-pw"), std::string::npos);
  }
}

// TLS (rediss://): two gateways share the cache and the fleet over a TLS-only Redis that wants a
// client certificate; one with another CA stays out, saying why in /status (fleet and cache), and
// keeps retrying; a CA file that does not load stops the start (exit 2) naming flag and file.
TEST_F(FleetIntegrationTest, OverTlsTheCacheAndTheFleetAreSharedAndAWrongCaIsShown) {
  if (!fusebox::testing::RedisServer::Available() || !fusebox::testing::TlsFiles::Available()) {
    GTEST_SKIP() << "no redis-server or openssl";
  }
  fusebox::testing::TlsFiles tls;
  ASSERT_TRUE(tls.ok()) << tls.error();
  fusebox::testing::RedisServer redis;
  ASSERT_TRUE(redis.Start(tls.ServerArgs(redis.port(), "yes")));
  const std::string url = "rediss://localhost:" + std::to_string(redis.port());
  const std::vector<std::string> client = {"--redis-cert", tls.client_cert(), "--redis-key",
                                           tls.client_key()};
  ChildProcess& sim = StartSim();
  std::vector<std::string> args = {"--cache", url, "--fleet", url, "--redis-ca", tls.ca()};
  args.insert(args.end(), client.begin(), client.end());
  ChildProcess& a = StartGateway(sim, args);
  ChildProcess& b = StartGateway(sim, args);
  std::vector<std::string> wrong = {"--cache", url, "--fleet", url, "--redis-ca", tls.other_ca()};
  wrong.insert(wrong.end(), client.begin(), client.end());
  ChildProcess& c = StartGateway(sim, wrong);
  ASSERT_TRUE(a.started() && b.started() && c.started()) << a.Log() << b.Log() << c.Log();
  const auto linked = [&](const ChildProcess& gw) {
    const json::value s = Status(gw);
    return s.is_object() && s.at("cache").at("healthy").as_bool() &&
           s.at("fleet").at("connected").as_bool();
  };
  ASSERT_TRUE(WaitUntil([&] { return linked(a) && linked(b); }, 5))
      << Http(a.port(), "GET", "/status").body;
  const json::value fleet_a = Status(a).at("fleet");
  EXPECT_TRUE(fleet_a.at("tls").as_bool());
  EXPECT_EQ(std::string(fleet_a.at("primary").as_string()),
            "localhost:" + std::to_string(redis.port()));
  EXPECT_NE(Http(a.port(), "GET", "/metrics").body.find("vin_gateway_fleet_tls 1"),
            std::string::npos);
  const HttpResult live = Decode(a, kVins[0]);
  ASSERT_EQ(live.status, 200) << live.body;
  EXPECT_EQ(Json(Decode(b, kVins[0])).at("source"), "cache");  // through the TLS cache
  // A trip on A opens B through the fleet.
  ASSERT_EQ(
      Http(sim.port(), "POST", "/__control/faults", R"({"mode":"error","status":503})").status,
      200);
  // With a Redis cache there is a `redis` breaker beside `vpic`.
  const auto vpic = [](const ChildProcess& gw) {
    const json::value s = Status(gw);
    const json::array* breakers =
        s.is_object() && s.as_object().contains("breakers") ? s.at("breakers").if_array() : nullptr;
    for (std::size_t i = 0; breakers != nullptr && i < breakers->size(); ++i) {
      const json::object* breaker = (*breakers)[i].if_object();
      if (breaker != nullptr && breaker->contains("name") && breaker->at("name") == "vpic") {
        return std::string(breaker->at("state").as_string());
      }
    }
    return std::string("?") + json::serialize(s);
  };
  for (int i = 1; i < 4; ++i) {
    EXPECT_EQ(Decode(a, kVins.at(static_cast<std::size_t>(i))).status, 502);
  }
  EXPECT_TRUE(WaitUntil([&] { return vpic(a) == "OPEN"; }, 2)) << vpic(a);
  EXPECT_TRUE(WaitUntil([&] { return vpic(b) == "OPEN"; }, 2)) << vpic(b);

  json::value status_c;
  ASSERT_TRUE(WaitUntil(
      [&] {
        status_c = Status(c);
        return status_c.is_object() && status_c.at("fleet").at("last_error").is_string();
      },
      5));
  EXPECT_FALSE(status_c.at("fleet").at("connected").as_bool());
  EXPECT_NE(std::string(status_c.at("fleet").at("last_error").as_string())
                .find("tls: certificate verify failed"),
            std::string::npos)
      << status_c;
  EXPECT_FALSE(status_c.at("cache").at("healthy").as_bool());
  EXPECT_NE(std::string(status_c.at("cache").at("error").as_string()).find("tls:"),
            std::string::npos)
      << status_c;

  // A CA file that is no certificate: a configuration error, before anything starts.
  const std::string not_a_ca = (dir_ / "not-a-ca.pem").string();
  std::ofstream(not_a_ca) << "hello\n";
  const fusebox::testing::RunResult refused =
      fusebox::testing::Run({VIN_GATEWAY_BINARY, "--fleet", url, "--redis-ca", not_a_ca, "--listen",
                             "127.0.0.1:0", "--offline-db", "none"},
                            {}, std::chrono::seconds(20));
  EXPECT_EQ(refused.exit_code, 2) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("--redis-ca"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find(not_a_ca), std::string::npos) << refused.err;
}

TEST_F(FleetIntegrationTest, ADecodeOnAIsACacheHitOnBAndADeadRedisIsAnEmptyCache) {
  if (!fusebox::testing::RedisServer::Available()) {
    GTEST_SKIP() << "no redis-server";
  }
  fusebox::testing::RedisServer redis;
  ASSERT_TRUE(redis.Start());
  ChildProcess& sim = StartSim();
  ChildProcess& a = StartGateway(sim, {"--cache", redis.url(), "--fleet", redis.url()});
  ChildProcess& b = StartGateway(sim, {"--cache", redis.url(), "--fleet", redis.url()});
  ASSERT_TRUE(a.started()) << a.Log();
  ASSERT_TRUE(b.started()) << b.Log();
  const auto cache_healthy = [&](const ChildProcess& gw) {
    const json::value s = Status(gw);
    return s.is_object() && s.at("cache").at("healthy").as_bool();
  };
  ASSERT_TRUE(WaitUntil([&] { return cache_healthy(a) && cache_healthy(b); }, 5));
  const auto requests = [&] {
    return Json(Http(sim.port(), "GET", "/__control/stats"))
        .at("requests_total")
        .to_number<std::int64_t>();
  };
  const HttpResult live = Decode(a, kVins[0]);
  ASSERT_EQ(live.status, 200) << live.body;
  EXPECT_EQ(Json(live).at("source"), "live");
  const std::int64_t after_live = requests();
  const HttpResult hit = Decode(b, kVins[0]);
  ASSERT_EQ(hit.status, 200) << hit.body;
  EXPECT_EQ(Json(hit).at("source"), "cache");
  EXPECT_EQ(requests(), after_live);
  // The redis breaker is listed with the others.
  bool listed = false;
  const json::value status_b = Status(b);
  for (const json::value& breaker : status_b.at("breakers").as_array()) {
    listed = listed || breaker.at("name") == "redis";
  }
  EXPECT_TRUE(listed);

  // Redis killed: live decodes go on, none waits on the dead cache.
  redis.Kill();
  ASSERT_TRUE(WaitUntil([&] { return !cache_healthy(b); }, 2));
  for (std::size_t i = 1; i < 4; ++i) {
    const HttpResult r = Decode(b, kVins[i]);
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_LT(r.seconds, 0.5);
  }
  EXPECT_EQ(Decode(b, kVins[0]).status, 200);  // its hot front still has this one
}

TEST_F(FleetIntegrationTest, AfterRedisRestartsEmptyATripOnAStillOpensBAndCWithinOneSecond) {
  if (!fusebox::testing::RedisServer::Available()) {
    GTEST_SKIP() << "no redis-server";
  }
  fusebox::testing::RedisServer redis;
  ASSERT_TRUE(redis.Start());
  ChildProcess& failing = StartSim();
  ChildProcess& healthy = StartSim();
  ChildProcess& a = StartGateway(failing, {"--fleet", redis.url(), "--instance-id", "a"});
  ChildProcess& b = StartGateway(healthy, {"--fleet", redis.url(), "--instance-id", "b"});
  ChildProcess& c = StartGateway(healthy, {"--fleet", redis.url(), "--instance-id", "c"});
  const std::vector<ChildProcess*> fleet = {&a, &b, &c};
  for (ChildProcess* gw : fleet) {
    ASSERT_TRUE(gw->started()) << gw->Log();
  }
  const auto all_connected = [&](bool connected) {
    for (ChildProcess* gw : fleet) {
      const json::value s = Status(*gw);
      if (!s.is_object() || !s.at("fleet").is_object() ||
          s.at("fleet").at("connected").as_bool() != connected) {
        return false;
      }
    }
    return true;
  };
  ASSERT_TRUE(WaitUntil([&] { return all_connected(true); }, 5));

  // Redis dies and comes back on the same port with nothing stored (no persistence): every
  // instance notices, and reconnects within its backoff (100 ms doubling to 2 s).
  redis.Kill();
  ASSERT_TRUE(WaitUntil([&] { return all_connected(false); }, 3));
  ASSERT_TRUE(redis.Start());
  ASSERT_TRUE(WaitUntil([&] { return all_connected(true); }, 5));
  for (ChildProcess* gw : fleet) {
    EXPECT_EQ(State(*gw), "CLOSED");  // an empty Redis reopens nothing
  }

  // The reconnected links carry the next trip: A's trip opens B and C within a second.
  ASSERT_EQ(
      Http(failing.port(), "POST", "/__control/faults", R"({"mode":"error","status":503})").status,
      200);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(Decode(a, kVins.at(static_cast<std::size_t>(i))).status, 502);
  }
  ASSERT_EQ(State(a), "OPEN");
  const auto tripped = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitUntil([&] { return State(b) == "OPEN" && State(c) == "OPEN"; }, 1.0));
  EXPECT_LT(std::chrono::steady_clock::now() - tripped, std::chrono::seconds(1));
  EXPECT_EQ(Json(Decode(b, kVins[4])).at("status"), "CIRCUIT_OPEN");
}

// --trusted-proxy (docs/http-api.md, "Client address"): behind a trusted proxy each client's
// X-Forwarded-For address has its own rate-limit budget; the same header from a peer that is not
// trusted is ignored, so that a client cannot buy a fresh budget by writing one.
TEST_F(FleetIntegrationTest, TwoClientsBehindATrustedProxyHaveSeparateRateLimitBudgets) {
  ChildProcess& sim = StartSim();
  // Two decodes per client, refilled at one per 100 s: nothing refills during the test.
  const std::vector<std::string> limit = {"--client-rate", "0.01", "--client-burst", "2"};
  std::vector<std::string> trusting = limit;
  trusting.insert(trusting.end(), {"--trusted-proxy", "10.0.0.0/8", "--trusted-proxy",
                                   "127.0.0.1/32", "--trusted-proxy", "::1/128"});
  ChildProcess& proxied = StartGateway(sim, trusting);
  ChildProcess& direct = StartGateway(sim, limit);
  ASSERT_TRUE(proxied.started()) << proxied.Log();
  ASSERT_TRUE(direct.started()) << direct.Log();
  const auto decode_as = [](const ChildProcess& gw, const std::string& vin,
                            const std::string& forwarded_for) {
    return Http(gw.port(), "GET", "/api/v1/vin/" + vin, "",
                "X-Forwarded-For: " + forwarded_for + "\r\n")
        .status;
  };
  // Client 1 through two proxies (an outer one at 10.0.0.2), having written its own header
  // first: the walk from the right skips 10.0.0.2 and stops at 198.51.100.1.
  const std::string client1 = "6.6.6.6, 198.51.100.1, 10.0.0.2";
  EXPECT_EQ(decode_as(proxied, kVins[0], client1), 200);
  EXPECT_EQ(decode_as(proxied, kVins[1], client1), 200);
  EXPECT_EQ(decode_as(proxied, kVins[2], client1), 429);
  // Another spoofed leftmost address changes nothing: still client 1's spent budget.
  EXPECT_EQ(decode_as(proxied, kVins[2], "7.7.7.7, 198.51.100.1"), 429);
  // Client 2 has a budget of its own.
  EXPECT_EQ(decode_as(proxied, kVins[3], "198.51.100.2"), 200);
  EXPECT_EQ(decode_as(proxied, kVins[4], "198.51.100.2"), 200);
  EXPECT_EQ(decode_as(proxied, kVins[5], "198.51.100.2"), 429);
  // A malformed header from the trusted peer: the peer is the client (a third, fresh budget).
  EXPECT_EQ(decode_as(proxied, kVins[5], "198.51.100.3:4711"), 200);
  const std::string log = proxied.Log();
  EXPECT_NE(log.find("198.51.100.1"), std::string::npos) << log;  // the access log's client
  EXPECT_NE(log.find("198.51.100.2"), std::string::npos) << log;
  EXPECT_EQ(log.find("6.6.6.6"), std::string::npos) << log;
  EXPECT_NE(log.find("X-Forwarded-For from the trusted proxy 127.0.0.1 does not parse"),
            std::string::npos)
      << log;

  // Without --trusted-proxy the header is ignored: every "client" is 127.0.0.1, one budget.
  EXPECT_EQ(decode_as(direct, kVins[0], "198.51.100.1"), 200);
  EXPECT_EQ(decode_as(direct, kVins[1], "198.51.100.2"), 200);
  EXPECT_EQ(decode_as(direct, kVins[2], "198.51.100.3"), 429);
  EXPECT_EQ(direct.Log().find("198.51.100."), std::string::npos) << direct.Log();
}

TEST_F(FleetIntegrationTest, ABadTrustedProxyIsRefusedNamingTheFlagAndTheValue) {
  ChildProcess& sim = StartSim();
  ChildProcess& bad = StartGateway(sim, {"--trusted-proxy", "10.0.0.0/33"});
  EXPECT_FALSE(bad.started());
  EXPECT_NE(bad.Log().find(
                "--trusted-proxy: '10.0.0.0/33' is not an IPv4 or IPv6 network (prefix 33 > 32)"),
            std::string::npos)
      << bad.Log();
}

// Every container of a deployment starts with the same command line: two gateways with the same
// --listen text and no --instance-id still see each other's trips (each used to take the other's
// messages for its own echo).
TEST_F(FleetIntegrationTest, TwinsWithTheSameCommandLineAndNoInstanceIdSeeEachOthersTrips) {
  if (!fusebox::testing::RedisServer::Available()) {
    GTEST_SKIP() << "no redis-server";
  }
  fusebox::testing::RedisServer redis;
  ASSERT_TRUE(redis.Start());
  ChildProcess& sim = StartSim();
  ChildProcess& a = StartGateway(sim, {"--fleet", redis.url()});
  ChildProcess& b = StartGateway(sim, {"--fleet", redis.url()});
  ASSERT_TRUE(a.started() && b.started()) << a.Log() << b.Log();
  ASSERT_TRUE(WaitUntil(
      [&] {
        return Status(a).at("fleet").at("connected").as_bool() &&
               Status(b).at("fleet").at("connected").as_bool();
      },
      5));
  ASSERT_EQ(
      Http(sim.port(), "POST", "/__control/faults", R"({"mode":"error","status":503})").status,
      200);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(Decode(a, kVins.at(static_cast<std::size_t>(i))).status, 502);
  }
  ASSERT_EQ(State(a), "OPEN");
  ASSERT_TRUE(WaitUntil([&] { return State(b) == "OPEN"; }, 1.0)) << State(b);
  EXPECT_EQ(Status(b).at("fleet").at("peers_seen").to_number<int>(), 1);
  EXPECT_GE(Status(b).at("fleet").at("messages_received").to_number<int>(), 1);
}

TEST_F(FleetIntegrationTest, FleetFlagErrorsAndAnUnreachableRedis) {
  ChildProcess& sim = StartSim();
  ChildProcess& alone = StartGateway(sim, {});
  ASSERT_TRUE(alone.started()) << alone.Log();
  EXPECT_TRUE(Status(alone).at("fleet").is_null());

  ChildProcess& malformed = StartGateway(sim, {"--fleet", "redis:/127.0.0.1"});
  EXPECT_FALSE(malformed.started());
  EXPECT_NE(malformed.Log().find("--fleet"), std::string::npos) << malformed.Log();

  ChildProcess& unreachable = StartGateway(sim, {"--fleet", "redis://127.0.0.1:1"});
  ASSERT_TRUE(unreachable.started()) << unreachable.Log();
  const json::value fleet = Status(unreachable).at("fleet");
  EXPECT_EQ(fleet.at("connected"), false);
  // The default name is this process's (HOSTNAME-PID-RANDOM), not --listen's, which every
  // instance of a deployment shares: a second gateway with the same --listen has another.
  const std::string instance(fleet.at("instance").as_string());
  EXPECT_NE(instance.find("-" + std::to_string(unreachable.pid()) + "-"), std::string::npos)
      << instance;
  ChildProcess& twin = StartGateway(sim, {"--fleet", "redis://127.0.0.1:1"});
  ASSERT_TRUE(twin.started()) << twin.Log();
  EXPECT_NE(Status(twin).at("fleet").at("instance"), fleet.at("instance"));
  EXPECT_EQ(twin.Terminate(), 0);
  EXPECT_EQ(Decode(unreachable, kVins[0]).status, 200);  // decodes go on
  const HttpResult metrics = Http(unreachable.port(), "GET", "/metrics");
  EXPECT_NE(metrics.body.find("vin_gateway_fleet_connected 0"), std::string::npos);
  EXPECT_EQ(unreachable.Terminate(), 0);
}

}  // namespace

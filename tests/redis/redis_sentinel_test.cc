// redis+sentinel:// against real processes on loopback: a primary, a replica and three sentinels
// (redis-server --sentinel, configuration files written here into temporary directories). The
// primary is SIGKILLed; the sentinels promote the replica, and every member of a fleet of three
// (and a RedisClient) follows to the new primary within 10 s of the failover, after which a trip
// on one opens the others. The times measured are printed (docs/fleet.md quotes them).
#include <hiredis/hiredis.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "fusebox/circuit_breaker.h"
#include "fusebox/fleet.h"
#include "fusebox/redis_client.h"
#include "fusebox/redis_fleet.h"
#include "fusebox/redis_url.h"
#include "redis/redis_server.h"
#include "support/child_process.h"
#include "support/wait_for.h"

namespace fusebox {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

using testing::WaitFor;

// One blocking command on a fresh connection (the test's own look at the servers), or nullopt
// when the server does not answer. Field `name` of a flat name/value reply, as text.
std::optional<std::vector<std::string>> Ask(std::uint16_t port,
                                            const std::vector<std::string>& args) {
  const timeval timeout{1, 0};
  redisContext* raw = redisConnectWithTimeout("127.0.0.1", port, timeout);
  if (raw == nullptr || raw->err != 0) {
    if (raw != nullptr) {
      redisFree(raw);
    }
    return std::nullopt;
  }
  redisSetTimeout(raw, timeout);
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  for (const std::string& a : args) {
    argv.push_back(a.data());
    lengths.push_back(a.size());
  }
  auto* reply = static_cast<redisReply*>(
      redisCommandArgv(raw, static_cast<int>(argv.size()), argv.data(), lengths.data()));
  std::optional<std::vector<std::string>> out;
  if (reply != nullptr) {
    out.emplace();
    if (reply->type == REDIS_REPLY_ARRAY) {
      for (std::size_t i = 0; i < reply->elements; ++i) {
        const redisReply* e = reply->element[i];
        out->emplace_back(e->str != nullptr ? std::string(e->str, e->len)
                                            : std::to_string(e->integer));
      }
    } else if (reply->str != nullptr) {
      out->emplace_back(reply->str, reply->len);
    }
    freeReplyObject(reply);
  }
  redisFree(raw);
  return out;
}

std::string Field(const std::vector<std::string>& flat, const std::string& name) {
  for (std::size_t i = 0; i + 1 < flat.size(); i += 2) {
    if (flat[i] == name) {
      return flat[i + 1];
    }
  }
  return "";
}

// Three sentinels watching master `m` (quorum 2, down after 1 s).
class Sentinels {
 public:
  explicit Sentinels(std::uint16_t primary_port) {
    std::array<char, 29> dir_template{"/tmp/fusebox-sentinel-XXXXXX"};
    dir_ = mkdtemp(dir_template.data());
    for (int i = 0; i < 3; ++i) {
      const auto port = static_cast<std::uint16_t>(testing::FreeLoopbackPort());
      const std::string conf = dir_ + "/sentinel-" + std::to_string(i) + ".conf";
      std::ofstream(conf) << "port " << port << "\nbind 127.0.0.1\ndaemonize no\n"
                          << "dir " << dir_ << "\nlogfile " << dir_ << "/sentinel-" << i << ".log\n"
                          << "sentinel monitor m 127.0.0.1 " << primary_port << " 2\n"
                          << "sentinel down-after-milliseconds m 1000\n"
                          << "sentinel failover-timeout m 5000\n"
                          << "sentinel parallel-syncs m 1\n";
      ports_.push_back(port);
      processes_.push_back(std::make_unique<testing::ChildProcess>(
          std::vector<std::string>{testing::RedisServer::Binary(), conf, "--sentinel"}));
    }
  }
  ~Sentinels() {
    processes_.clear();  // killed and reaped
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  Sentinels(const Sentinels&) = delete;
  Sentinels& operator=(const Sentinels&) = delete;

  // Whether every sentinel knows the other two and the replica (a failover can then be agreed).
  bool Ready() const {
    return std::ranges::all_of(ports_, [](std::uint16_t port) {
      const auto master = Ask(port, {"SENTINEL", "master", "m"});
      return master && Field(*master, "num-other-sentinels") == "2" &&
             Field(*master, "num-slaves") == "1";
    });
  }
  // The primary's port as the first sentinel says, 0 if it does not answer.
  std::uint16_t PrimaryPort() const {
    const auto address = Ask(ports_[0], {"SENTINEL", "get-master-addr-by-name", "m"});
    if (!address || address->size() != 2) {
      return 0;
    }
    return static_cast<std::uint16_t>(std::stoi((*address)[1]));
  }
  std::string Url() const {
    std::string url = "redis+sentinel://";
    for (std::size_t i = 0; i < ports_.size(); ++i) {
      if (i > 0) {
        url += ',';
      }
      url += "127.0.0.1:";
      url += std::to_string(ports_[i]);
    }
    return url + "/m";
  }

 private:
  std::string dir_;
  std::vector<std::uint16_t> ports_;
  std::vector<std::unique_ptr<testing::ChildProcess>> processes_;
};

class RedisSentinelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::RedisServer::Available()) {
      GTEST_SKIP() << "no redis-server at " << testing::RedisServer::Binary();
    }
    io_thread_ = std::thread([this] { io_.run(); });
  }
  void TearDown() override {
    fleets_.clear();
    links_.clear();
    clients_.clear();
    work_.reset();
    if (io_thread_.joinable()) {
      io_thread_.join();
    }
  }

  CircuitBreaker& AddInstance(const std::string& id, const std::string& url) {
    RedisFleetOptions options;
    options.endpoint = ParseRedisUrl(url).value();
    options.instance = id;  // the default backoff (100 ms doubling to 2 s): what is measured
    links_.push_back(std::make_unique<RedisFleetLink>(io_.get_executor(), options));
    CircuitBreakerConfig config;
    config.failure_threshold = 3;
    config.cooldown = seconds(10);
    breakers_.push_back(CircuitBreaker::Create("vpic", config).value());
    fleets_.push_back(std::make_unique<Fleet>(*links_.back(), id));
    fleets_.back()->Attach(*breakers_.back());
    links_.back()->Start();
    return *breakers_.back();
  }

  static void Trip(CircuitBreaker& b) {
    for (std::uint32_t i = 0; i < b.config().failure_threshold; ++i) {
      auto permit = b.TryAcquire();
      ASSERT_TRUE(permit.has_value());
      permit->Record(Outcome::kFailure);
    }
  }

  // Every link and client connected to 127.0.0.1:`port`.
  bool AllOn(std::uint16_t port) const {
    const std::string address = "127.0.0.1:" + std::to_string(port);
    for (const auto& link : links_) {
      const RedisFleetStats stats = link->Stats();
      if (!stats.connected || stats.primary != address) {
        return false;
      }
    }
    for (const auto& client : clients_) {
      const RedisClientStats stats = client->Stats();
      if (!stats.connected || stats.primary != address) {
        return false;
      }
    }
    return true;
  }

  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_{
      io_.get_executor()};
  std::thread io_thread_;
  std::vector<std::unique_ptr<RedisClient>> clients_;
  // Destroyed in this order: fleets (detach), links, then breakers.
  std::vector<std::unique_ptr<CircuitBreaker>> breakers_;
  std::vector<std::unique_ptr<RedisFleetLink>> links_;
  std::vector<std::unique_ptr<Fleet>> fleets_;
};

TEST_F(RedisSentinelTest, AFleetOfThreeFollowsAFailoverWithinTenSeconds) {
  testing::RedisServer primary;
  testing::RedisServer replica;
  ASSERT_TRUE(primary.Start());
  ASSERT_TRUE(replica.Start({"--replicaof", "127.0.0.1", std::to_string(primary.port())}));
  Sentinels sentinels(primary.port());
  ASSERT_TRUE(WaitFor([&] { return sentinels.Ready(); }, seconds(20)))
      << "the sentinels did not find each other and the replica";

  CircuitBreaker& a = AddInstance("a", sentinels.Url());
  CircuitBreaker& b = AddInstance("b", sentinels.Url());
  CircuitBreaker& c = AddInstance("c", sentinels.Url());
  clients_.push_back(std::make_unique<RedisClient>(
      io_.get_executor(), RedisClientOptions{.endpoint = ParseRedisUrl(sentinels.Url()).value()}));
  clients_.back()->Start();
  ASSERT_TRUE(WaitFor([&] { return AllOn(primary.port()); }, seconds(5)))
      << links_[0]->Stats().last_error;
  EXPECT_EQ(links_[0]->Stats().primary_changes, 0U);
  EXPECT_FALSE(links_[0]->Stats().last_primary_change.has_value());
  // The replica has everything before the primary goes.
  ASSERT_TRUE(WaitFor(
      [&] {
        const auto info = Ask(replica.port(), {"INFO", "replication"});
        return info && !info->empty() &&
               (*info)[0].find("master_link_status:up") != std::string::npos;
      },
      seconds(10)));

  const Clock::time_point killed = Clock::now();
  primary.Kill();  // SIGKILL
  ASSERT_TRUE(WaitFor(
      [&] {
        for (const auto& link : links_) {
          if (link->connected()) {
            return false;
          }
        }
        return true;
      },
      seconds(2)));
  // Meanwhile the breakers go on by their local rules: nothing waits on Redis.
  const Clock::time_point before_call = Clock::now();
  EXPECT_TRUE(b.TryAcquire().has_value());
  EXPECT_LT(Clock::now() - before_call, milliseconds(50));

  ASSERT_TRUE(WaitFor([&] { return sentinels.PrimaryPort() == replica.port(); }, seconds(30)))
      << "no failover";
  const Clock::time_point switched = Clock::now();
  ASSERT_TRUE(WaitFor([&] { return AllOn(replica.port()); }, seconds(10)))
      << links_[0]->Stats().last_error << " / " << clients_[0]->last_error();
  const Clock::time_point relinked = Clock::now();
  const auto ms = [](Clock::duration d) {
    return std::chrono::duration_cast<milliseconds>(d).count();
  };
  std::cout << "sentinel failover: SIGKILL to new primary named " << ms(switched - killed)
            << " ms; to all four relinked " << ms(relinked - killed) << " ms ("
            << ms(relinked - switched) << " ms after the failover)\n";
  EXPECT_LT(relinked - switched, seconds(10));
  for (const auto& link : links_) {
    EXPECT_EQ(link->Stats().primary_changes, 1U);
    EXPECT_TRUE(link->Stats().last_primary_change.has_value());
  }
  EXPECT_EQ(clients_[0]->Stats().primary_changes, 1U);

  // The new primary carries the fleet: a trip on a opens b and c.
  Trip(a);
  EXPECT_TRUE(
      WaitFor([&] { return b.state() == State::kOpen && c.state() == State::kOpen; }, seconds(2)));
  std::promise<RedisReply> reply;
  clients_[0]->Command({"SET", "after-failover", "1"},
                       [&reply](const RedisReply& r) { reply.set_value(r); });
  auto future = reply.get_future();
  ASSERT_EQ(future.wait_for(seconds(5)), std::future_status::ready);
  EXPECT_EQ(future.get().kind, RedisReply::Kind::kStatus);  // writable: a primary
}

TEST_F(RedisSentinelTest, NoSentinelAnsweringIsTheReasonShownAndNothingWaits) {
  const std::string url =
      "redis+sentinel://127.0.0.1:" + std::to_string(testing::FreeLoopbackPort()) +
      ",127.0.0.1:" + std::to_string(testing::FreeLoopbackPort()) + "/m";
  clients_.push_back(std::make_unique<RedisClient>(
      io_.get_executor(), RedisClientOptions{.endpoint = ParseRedisUrl(url).value()}));
  RedisClient& client = *clients_.back();
  client.Start();
  ASSERT_TRUE(WaitFor([&] { return !client.last_error().empty(); }, seconds(5)));
  EXPECT_NE(client.last_error().find("sentinel: no sentinel gave the primary of 'm'"),
            std::string::npos)
      << client.last_error();
  EXPECT_NE(client.last_error().find("Connection refused"), std::string::npos)
      << client.last_error();
  std::promise<RedisReply> reply;
  client.Command({"PING"}, [&reply](const RedisReply& r) { reply.set_value(r); });
  EXPECT_EQ(reply.get_future().get().kind, RedisReply::Kind::kDown);  // at once
}

// A server that is not the primary (a replica a sentinel still names, or an address from an
// outdated sentinel) is refused by ROLE: the link stays down saying so, and asks again.
TEST_F(RedisSentinelTest, AReplicaNamedAsThePrimaryIsRefused) {
  testing::RedisServer primary;
  testing::RedisServer replica;
  ASSERT_TRUE(primary.Start());
  ASSERT_TRUE(replica.Start({"--replicaof", "127.0.0.1", std::to_string(primary.port())}));
  // One sentinel that monitors the replica's address as if it were a primary: it answers with
  // that address until it has looked (and no failover follows: quorum 2 of 1 sentinel).
  std::array<char, 29> dir_template{"/tmp/fusebox-sentinel-XXXXXX"};
  const std::string dir = mkdtemp(dir_template.data());
  const auto port = static_cast<std::uint16_t>(testing::FreeLoopbackPort());
  const std::string conf = dir + "/sentinel.conf";
  std::ofstream(conf) << "port " << port << "\nbind 127.0.0.1\ndir " << dir << "\nlogfile " << dir
                      << "/sentinel.log\nsentinel monitor m 127.0.0.1 " << replica.port() << " 2\n";
  testing::ChildProcess sentinel({testing::RedisServer::Binary(), conf, "--sentinel"});
  ASSERT_TRUE(WaitFor([&] { return Ask(port, {"PING"}).has_value(); }, seconds(5)));
  const std::string url = "redis+sentinel://127.0.0.1:" + std::to_string(port) + "/m";
  clients_.push_back(std::make_unique<RedisClient>(
      io_.get_executor(), RedisClientOptions{.endpoint = ParseRedisUrl(url).value()}));
  RedisClient& client = *clients_.back();
  client.Start();
  ASSERT_TRUE(WaitFor([&] { return !client.last_error().empty(); }, seconds(5)));
  EXPECT_FALSE(client.connected());
  EXPECT_NE(client.last_error().find("ROLE: the server is a slave, not the primary"),
            std::string::npos)
      << client.last_error();
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

}  // namespace
}  // namespace fusebox

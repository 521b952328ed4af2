// rediss:// against a real TLS-only redis-server on loopback (redis_server.h), with certificates
// made by the test (tls_files.h): RedisClient and a two-instance fleet work over TLS; a server
// signed by another CA, or whose certificate names another host, is refused with the reason in
// last_error (and retried); a server that wants a client certificate gets one when it is set; a
// bad CA, certificate or key file is an error that names the file.
#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <future>
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
#include "redis/tls_files.h"
#include "support/wait_for.h"

namespace fusebox {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

using testing::WaitFor;

class RedisTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::RedisServer::Available() || !testing::TlsFiles::Available()) {
      GTEST_SKIP() << "no redis-server or openssl";
    }
    ASSERT_TRUE(files_.ok()) << files_.error();
    io_thread_ = std::thread([this] { io_.run(); });
  }
  void TearDown() override {
    fleets_.clear();
    // StopNow only once no thread runs the io_context (redis_client.h): stop it first.
    work_.reset();
    io_.stop();
    if (io_thread_.joinable()) {
      io_thread_.join();
    }
    for (auto& link : links_) {
      link->StopNow();
    }
    for (auto& client : clients_) {
      client->StopNow();
    }
  }

  bool StartServer(const std::string& auth_clients) {
    return server_.Start(files_.ServerArgs(server_.port(), auth_clients));
  }
  std::string Url(const std::string& host = "127.0.0.1") const {
    return "rediss://" + host + ":" + std::to_string(server_.port());
  }
  // The endpoint of Url(host) with the test's CA, and the client certificate when `client_cert`.
  RedisEndpoint Endpoint(const std::string& host = "127.0.0.1", bool client_cert = false) const {
    RedisEndpoint endpoint = ParseRedisUrl(Url(host)).value();
    endpoint.tls_ca_file = files_.ca();
    if (client_cert) {
      endpoint.tls_cert_file = files_.client_cert();
      endpoint.tls_key_file = files_.client_key();
    }
    return endpoint;
  }

  RedisClient& Connect(RedisEndpoint endpoint) {
    clients_.push_back(std::make_unique<RedisClient>(
        io_.get_executor(), RedisClientOptions{.endpoint = std::move(endpoint),
                                               .reconnect_min = milliseconds(20),
                                               .reconnect_max = milliseconds(200)}));
    clients_.back()->Start();
    return *clients_.back();
  }

  static RedisReply Run(RedisClient& client, std::vector<std::string> args) {
    std::promise<RedisReply> reply;
    auto future = reply.get_future();
    client.Command(std::move(args), [&reply](const RedisReply& r) { reply.set_value(r); });
    if (future.wait_for(seconds(5)) != std::future_status::ready) {
      return {};
    }
    return future.get();
  }

  // An instance: a breaker attached to a fleet over its own link.
  CircuitBreaker& AddInstance(const std::string& id, RedisEndpoint endpoint) {
    RedisFleetOptions options;
    options.endpoint = std::move(endpoint);
    options.instance = id;
    options.reconnect_min = milliseconds(20);
    options.reconnect_max = milliseconds(200);
    links_.push_back(std::make_unique<RedisFleetLink>(io_.get_executor(), options));
    CircuitBreakerConfig config;
    config.failure_threshold = 3;
    config.cooldown = seconds(5);
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

  testing::TlsFiles files_;
  testing::RedisServer server_;
  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_{
      boost::asio::make_work_guard(io_)};
  std::thread io_thread_;
  std::vector<std::unique_ptr<RedisClient>> clients_;
  // Destroyed in this order: fleets (detach), links, then breakers.
  std::vector<std::unique_ptr<CircuitBreaker>> breakers_;
  std::vector<std::unique_ptr<RedisFleetLink>> links_;
  std::vector<std::unique_ptr<Fleet>> fleets_;
};

TEST_F(RedisTlsTest, ClientRunsCommandsOverTlsByNameAndByAddress) {
  ASSERT_TRUE(StartServer("no"));
  RedisClient& by_name = Connect(Endpoint("localhost"));
  RedisClient& by_address = Connect(Endpoint("127.0.0.1"));
  ASSERT_TRUE(WaitFor([&] { return by_name.connected() && by_address.connected(); }, seconds(5)))
      << by_name.last_error() << " / " << by_address.last_error();
  EXPECT_TRUE(by_name.Stats().tls);
  EXPECT_EQ(by_address.Stats().primary, "127.0.0.1:" + std::to_string(server_.port()));
  EXPECT_EQ(Run(by_name, {"SET", "k", std::string("v\0w", 3)}).kind, RedisReply::Kind::kStatus);
  const RedisReply got = Run(by_address, {"GET", "k"});
  EXPECT_EQ(got.kind, RedisReply::Kind::kString);
  EXPECT_EQ(got.text, std::string("v\0w", 3));  // binary-safe both ways
  // Pipelined: many commands in flight at once come back in order.
  std::vector<std::future<RedisReply>> replies;
  std::vector<std::promise<RedisReply>> promises(50);
  for (std::promise<RedisReply>& promise : promises) {
    replies.push_back(promise.get_future());
    by_name.Command({"INCR", "n"}, [&promise](const RedisReply& r) { promise.set_value(r); });
  }
  for (std::size_t i = 0; i < replies.size(); ++i) {
    ASSERT_EQ(replies[i].wait_for(seconds(5)), std::future_status::ready);
    EXPECT_EQ(replies[i].get().integer, static_cast<std::int64_t>(i + 1));
  }
}

TEST_F(RedisTlsTest, ATwoInstanceFleetSharesATripOverTls) {
  ASSERT_TRUE(StartServer("no"));
  CircuitBreaker& a = AddInstance("a", Endpoint());
  CircuitBreaker& b = AddInstance("b", Endpoint("localhost"));
  ASSERT_TRUE(WaitFor([&] { return links_[0]->connected() && links_[1]->connected(); }, seconds(5)))
      << links_[0]->Stats().last_error;
  EXPECT_TRUE(links_[0]->Stats().tls);
  Trip(a);
  ASSERT_TRUE(WaitFor([&] { return b.state() == State::kOpen; }, seconds(2)));
  EXPECT_GT(b.retry_after(), seconds(3));
}

TEST_F(RedisTlsTest, AServerSignedByAnotherCaIsRefusedSayingWhyAndRetried) {
  ASSERT_TRUE(StartServer("no"));
  RedisEndpoint wrong = Endpoint();
  wrong.tls_ca_file = files_.other_ca();
  RedisClient& client = Connect(wrong);
  AddInstance("a", wrong);
  ASSERT_TRUE(WaitFor(
      [&] { return !client.last_error().empty() && !links_[0]->Stats().last_error.empty(); },
      seconds(5)));
  EXPECT_FALSE(client.connected());
  EXPECT_FALSE(links_[0]->connected());
  EXPECT_NE(client.last_error().find("tls: certificate verify failed"), std::string::npos)
      << client.last_error();
  EXPECT_NE(links_[0]->Stats().last_error.find("tls: certificate verify failed"), std::string::npos)
      << links_[0]->Stats().last_error;
  EXPECT_EQ(Run(client, {"PING"}).kind, RedisReply::Kind::kDown);
  // Retried with backoff, not given up: the attempts go on.
  const std::uint64_t failed = links_[0]->Stats().disconnects;
  EXPECT_TRUE(WaitFor([&] { return links_[0]->Stats().disconnects > failed + 1; }, seconds(3)));
}

TEST_F(RedisTlsTest, ACertificateForAnotherNameIsRefused) {
  ASSERT_TRUE(StartServer("no"));
  RedisEndpoint elsewhere = Endpoint();
  elsewhere.tls_server_name = "redis.example.org";
  RedisClient& client = Connect(elsewhere);
  ASSERT_TRUE(WaitFor([&] { return !client.last_error().empty(); }, seconds(5)));
  EXPECT_FALSE(client.connected());
  EXPECT_NE(client.last_error().find("not for 'redis.example.org'"), std::string::npos)
      << client.last_error();
  // "localhost" resolves to the right address, but the certificate is for it: accepted.
  RedisEndpoint named = Endpoint();
  named.tls_server_name = "localhost";
  RedisClient& right = Connect(named);
  EXPECT_TRUE(WaitFor([&] { return right.connected(); }, seconds(5))) << right.last_error();
}

TEST_F(RedisTlsTest, AClientCertificateIsPresentedWhenTheServerWantsOne) {
  ASSERT_TRUE(StartServer("yes"));
  RedisClient& without = Connect(Endpoint());
  RedisClient& with = Connect(Endpoint("127.0.0.1", true));
  AddInstance("a", Endpoint("127.0.0.1", true));
  ASSERT_TRUE(WaitFor([&] { return with.connected() && links_[0]->connected(); }, seconds(5)))
      << with.last_error() << " / " << links_[0]->Stats().last_error;
  EXPECT_EQ(Run(with, {"PING"}).text, "PONG");
  ASSERT_TRUE(WaitFor([&] { return !without.last_error().empty(); }, seconds(5)));
  EXPECT_FALSE(without.connected());
  EXPECT_EQ(Run(without, {"PING"}).kind, RedisReply::Kind::kDown);
}

TEST_F(RedisTlsTest, BadFilesAreErrorsThatNameTheFile) {
  RedisEndpoint endpoint = Endpoint();
  endpoint.tls_ca_file = files_.dir() + "/missing.pem";
  EXPECT_NE(CheckRedisTls(endpoint).find("CA file '" + endpoint.tls_ca_file + "': cannot be read"),
            std::string::npos)
      << CheckRedisTls(endpoint);
  endpoint.tls_ca_file = files_.dir() + "/server.ext";  // not a certificate
  EXPECT_NE(CheckRedisTls(endpoint).find("CA file '" + endpoint.tls_ca_file + "'"),
            std::string::npos)
      << CheckRedisTls(endpoint);
  endpoint = Endpoint("127.0.0.1", true);
  EXPECT_EQ(CheckRedisTls(endpoint), "");
  endpoint.tls_key_file = files_.server_key();  // not the client certificate's key
  EXPECT_NE(CheckRedisTls(endpoint).find("does not match the certificate"), std::string::npos)
      << CheckRedisTls(endpoint);
  endpoint.tls_key_file = "";
  EXPECT_NE(CheckRedisTls(endpoint).find("has no key file"), std::string::npos)
      << CheckRedisTls(endpoint);
  // A client made with a bad file stays down and says which file.
  endpoint = Endpoint();
  endpoint.tls_ca_file = files_.dir() + "/missing.pem";
  RedisClient& client = Connect(endpoint);
  ASSERT_TRUE(WaitFor([&] { return !client.last_error().empty(); }, seconds(5)));
  EXPECT_NE(client.last_error().find("missing.pem"), std::string::npos) << client.last_error();
}

TEST_F(RedisTlsTest, APlainClientOnATlsPortNeverConnects) {
  ASSERT_TRUE(StartServer("no"));
  RedisClientOptions options{.endpoint = ParseRedisUrl(server_.url()).value(),
                             .connect_timeout = milliseconds(300),
                             .reconnect_min = milliseconds(20),
                             .reconnect_max = milliseconds(200)};
  clients_.push_back(std::make_unique<RedisClient>(io_.get_executor(), options));
  RedisClient& plain = *clients_.back();
  plain.Start();
  ASSERT_TRUE(WaitFor([&] { return !plain.last_error().empty(); }, seconds(5)));
  EXPECT_FALSE(plain.connected());
  EXPECT_EQ(Run(plain, {"PING"}).kind, RedisReply::Kind::kDown);
}

}  // namespace
}  // namespace fusebox

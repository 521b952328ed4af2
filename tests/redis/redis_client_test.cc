// RedisClient against a real redis-server on loopback (redis_server.h) that asks for a login:
// a password (requirepass) or an ACL user; a wrong one keeps the client down with the reason in
// last_error(), never the password.
#include "fusebox/redis_client.h"

#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "fusebox/redis_url.h"
#include "redis/redis_server.h"
#include "support/wait_for.h"

namespace fusebox {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

using testing::WaitFor;

class RedisClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::RedisServer::Available()) {
      GTEST_SKIP() << "no redis-server at " << testing::RedisServer::Binary();
    }
    io_thread_ = std::thread([this] { io_.run(); });
  }
  void TearDown() override {
    // StopNow only once no thread runs the io_context (redis_client.h): stop it first.
    work_.reset();
    io_.stop();
    if (io_thread_.joinable()) {
      io_thread_.join();
    }
    for (auto& client : clients_) {
      client->StopNow();
    }
    clients_.clear();
  }

  RedisClient& Connect(const std::string& url, const std::string& password = "") {
    auto endpoint = ParseRedisUrl(url);
    EXPECT_TRUE(endpoint.has_value()) << endpoint.error();
    if (!password.empty()) {
      endpoint->password = password;
    }
    clients_.push_back(std::make_unique<RedisClient>(
        io_.get_executor(), RedisClientOptions{.endpoint = *endpoint,
                                               .reconnect_min = milliseconds(20),
                                               .reconnect_max = milliseconds(100)}));
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

  testing::RedisServer server_;
  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_{
      boost::asio::make_work_guard(io_)};
  std::thread io_thread_;
  std::vector<std::unique_ptr<RedisClient>> clients_;
};

TEST_F(RedisClientTest, PasswordInTheUrlOrApartLogsIn) {
  ASSERT_TRUE(server_.Start({"--requirepass", "s3cr@t"}));
  const std::string host = "127.0.0.1:" + std::to_string(server_.port());
  RedisClient& in_url = Connect("redis://:s3cr%40t@" + host + "/2");
  RedisClient& apart = Connect("redis://" + host + "/2", "s3cr@t");
  ASSERT_TRUE(WaitFor([&] { return in_url.connected() && apart.connected(); }, seconds(5)));
  EXPECT_EQ(in_url.last_error(), "");
  EXPECT_EQ(Run(in_url, {"SET", "k", "v"}).kind, RedisReply::Kind::kStatus);
  const RedisReply got = Run(apart, {"GET", "k"});
  EXPECT_EQ(got.kind, RedisReply::Kind::kString);
  EXPECT_EQ(got.text, "v");  // the same DB 2 through both logins
}

TEST_F(RedisClientTest, WrongPasswordStaysDownWithTheReasonAndNotThePassword) {
  ASSERT_TRUE(server_.Start({"--requirepass", "right"}));
  RedisClient& wrong = Connect("redis://:hunter2@127.0.0.1:" + std::to_string(server_.port()));
  ASSERT_TRUE(WaitFor([&] { return !wrong.last_error().empty(); }, seconds(5)));
  EXPECT_FALSE(wrong.connected());
  EXPECT_NE(wrong.last_error().find("WRONGPASS"), std::string::npos) << wrong.last_error();
  EXPECT_EQ(wrong.last_error().find("hunter2"), std::string::npos) << wrong.last_error();
  EXPECT_EQ(Run(wrong, {"PING"}).kind, RedisReply::Kind::kDown);
}

TEST_F(RedisClientTest, AclUserLogsInWithItsOwnPassword) {
  ASSERT_TRUE(server_.Start(
      {"--user", "default", "off", "--user", "fleet", "on", ">pw", "~fusebox:*", "+@all"}));
  const std::string host = "127.0.0.1:" + std::to_string(server_.port());
  RedisClient& fleet = Connect("redis://fleet:pw@" + host);
  RedisClient& nobody = Connect("redis://" + host);
  ASSERT_TRUE(WaitFor([&] { return fleet.connected(); }, seconds(5)));
  EXPECT_EQ(Run(fleet, {"SET", "fusebox:k", "v"}).kind, RedisReply::Kind::kStatus);
  const RedisReply outside = Run(fleet, {"SET", "other:k", "v"});
  EXPECT_EQ(outside.kind, RedisReply::Kind::kError);
  EXPECT_NE(outside.text.find("NOPERM"), std::string::npos) << outside.text;
  // Without a login the default user is off: connected, but every command is refused.
  ASSERT_TRUE(WaitFor([&] { return nobody.connected(); }, seconds(5)));
  EXPECT_EQ(Run(nobody, {"GET", "fusebox:k"}).kind, RedisReply::Kind::kError);
}

TEST_F(RedisClientTest, ConnectFailureIsKeptAsTheReason) {
  RedisClient& none = Connect("redis://127.0.0.1:" + std::to_string(server_.port()));
  ASSERT_TRUE(WaitFor([&] { return !none.last_error().empty(); }, seconds(5)));
  EXPECT_FALSE(none.connected());
  EXPECT_NE(none.last_error().find("connect"), std::string::npos) << none.last_error();
}

}  // namespace
}  // namespace fusebox

// The Redis cache (service/redis_cache.h) against a real redis-server on loopback
// (tests/redis/redis_server.h), with what anyone who can write to that Redis could store: every
// entry out of bounds is a miss, counted as refused, and never read whole. The wall clock is
// injected; the budgets are the cache's own Asio timers.
#include "service/redis_cache.h"

#include <hiredis/hiredis.h>
#include <sys/resource.h>

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/decode.h"
#include "fusebox/circuit_breaker.h"
#include "fusebox/redis_client.h"
#include "redis/redis_server.h"

namespace fusebox::gateway {
namespace {

namespace net = boost::asio;
using std::chrono::milliseconds;

class FixedWallClock final : public WallClock {
 public:
  WallTime Now() const noexcept override { return now; }
  WallTime now{std::chrono::sys_days{std::chrono::year{2026} / 12 / 5}};
};

net::awaitable<void> GetInto(Cache& cache, std::string key,
                             std::promise<std::optional<CacheEntry>>& out) {
  out.set_value(co_await cache.Get(std::move(key)));
}
net::awaitable<void> PutThen(Cache& cache, std::string key, CacheEntry entry,
                             std::promise<void>& out) {
  co_await cache.Put(std::move(key), std::move(entry));
  out.set_value();
}

long MaxRssKb() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

class RedisCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::RedisServer::Available()) {
      GTEST_SKIP() << "no redis-server at " << testing::RedisServer::Binary();
    }
    ASSERT_TRUE(server_.Start());
    io_thread_ = std::thread([this] { io_.run(); });
    client_ = std::make_unique<RedisClient>(
        io_.get_executor(), RedisClientOptions{.endpoint = ParseRedisUrl(server_.url()).value()});
    client_->Start();
    breaker_ = CircuitBreaker::Create("redis", {.failure_threshold = 5}).value();
    // A generous budget: the 64 MB value of one test is made on the server, not read.
    cache_ = MakeRedisCache(*client_, *breaker_, wall_clock_,
                            {.location = server_.url(), .timeout = std::chrono::seconds(2)});
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!client_->connected() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(5));  // the real server's start-up, not a sync
    }
    ASSERT_TRUE(client_->connected());
  }
  void TearDown() override {
    cache_.reset();
    work_.reset();
    if (io_thread_.joinable()) {
      io_.stop();
      io_thread_.join();
    }
    if (client_) {
      client_->StopNow();
    }
  }

  std::optional<CacheEntry> Get(const std::string& key) {
    std::promise<std::optional<CacheEntry>> got;
    net::co_spawn(io_, GetInto(*cache_, key, got), net::detached);
    return got.get_future().get();
  }
  void Put(const std::string& key, CacheEntry entry) {
    std::promise<void> done;
    net::co_spawn(io_, PutThen(*cache_, key, std::move(entry), done), net::detached);
    done.get_future().get();
  }
  // A raw command on the server, as another writer would send it.
  void Raw(const std::vector<std::string>& args) {
    redisContext* raw = redisConnect("127.0.0.1", server_.port());
    ASSERT_NE(raw, nullptr);
    std::vector<const char*> argv;
    std::vector<std::size_t> lengths;
    for (const std::string& a : args) {
      argv.push_back(a.data());
      lengths.push_back(a.size());
    }
    auto* reply = static_cast<redisReply*>(
        redisCommandArgv(raw, static_cast<int>(argv.size()), argv.data(), lengths.data()));
    ASSERT_NE(reply, nullptr);
    EXPECT_NE(reply->type, REDIS_REPLY_ERROR) << reply->str;
    freeReplyObject(reply);
    redisFree(raw);
  }
  // Stores a decode of `vin`/`year` fetched at `at` under `key`, in the cache's own format.
  void Store(const std::string& key, const std::string& vin, int year, WallTime at) {
    Decode d;
    d.vin = vin;
    d.model_year = year;
    d.vehicle = {{"Make", "FORD"}};
    d.fetched_at = at;
    const auto ms = std::chrono::duration_cast<milliseconds>(at.time_since_epoch()).count();
    Raw({"SET", "fusebox:cache:" + key, std::to_string(ms) + "\n" + SerializeDecode(d)});
  }

  testing::RedisServer server_;
  net::io_context io_;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work_{io_.get_executor()};
  std::thread io_thread_;
  FixedWallClock wall_clock_;
  std::unique_ptr<RedisClient> client_;
  std::unique_ptr<CircuitBreaker> breaker_;
  std::unique_ptr<Cache> cache_;
};

constexpr const char* kVin = "1FTMW1T88MFA00001";

TEST_F(RedisCacheTest, AnEntryWrittenByAGatewayIsReadBack) {
  Decode d;
  d.vin = kVin;
  d.vehicle = {{"Make", "FORD"}};
  d.fetched_at = wall_clock_.now - std::chrono::hours(1);
  Put(CacheKey(kVin, 0), {SerializeDecode(d), d.fetched_at});
  const auto hit = Get(CacheKey(kVin, 0));
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->fetched_at, d.fetched_at);
  EXPECT_EQ(cache_->Stats().refused, 0U);
}

TEST_F(RedisCacheTest, AFetchedAtInTheFutureIsRefused) {
  // Fresh for ever, and kept in the hot front after the key is gone: refused. A clock a little
  // ahead (another gateway's) is not.
  const auto year_2255 = WallTime{std::chrono::sys_days{std::chrono::year{2255} / 1 / 1}};
  Store(kVin, kVin, 0, year_2255);
  EXPECT_FALSE(Get(kVin).has_value());
  Store(kVin, kVin, 0, wall_clock_.now + std::chrono::minutes(2));
  EXPECT_FALSE(Get(kVin).has_value());
  Store(kVin, kVin, 0, WallTime{std::chrono::sys_days{std::chrono::year{1999} / 12 / 31}});
  EXPECT_FALSE(Get(kVin).has_value());
  // The two copies of fetched_at disagree.
  Raw({"SET", std::string("fusebox:cache:") + kVin, "1700000000000\n" + [] {
         Decode d;
         d.vin = kVin;
         d.fetched_at = WallTime(milliseconds(1700000000001));
         return SerializeDecode(d);
       }()});
  EXPECT_FALSE(Get(kVin).has_value());
  EXPECT_EQ(cache_->Stats().refused, 4U);
  EXPECT_EQ(cache_->Stats().errors, 0U);
  Store(kVin, kVin, 0, wall_clock_.now + std::chrono::seconds(30));
  EXPECT_TRUE(Get(kVin).has_value());
}

TEST_F(RedisCacheTest, AnEntryForAnotherVinOrModelYearIsRefused) {
  const std::string other = "1FTMW1T88MFA00002";
  Store(kVin, other, 0, wall_clock_.now);  // another VIN under this key
  EXPECT_FALSE(Get(kVin).has_value());
  Store(CacheKey(kVin, 2021), kVin, 2019, wall_clock_.now);  // another model year
  EXPECT_FALSE(Get(CacheKey(kVin, 2021)).has_value());
  Store(CacheKey(kVin, 2021), kVin, 0, wall_clock_.now);  // no model year for a key with one
  EXPECT_FALSE(Get(CacheKey(kVin, 2021)).has_value());
  EXPECT_EQ(cache_->Stats().refused, 3U);
  Store(CacheKey(kVin, 2021), kVin, 2021, wall_clock_.now);
  EXPECT_TRUE(Get(CacheKey(kVin, 2021)).has_value());
}

TEST_F(RedisCacheTest, AHugeValueIsRefusedWithoutBeingRead) {
  // 64 MB made on the server (SETRANGE pads with zero bytes): nothing of it crosses here.
  Raw({"SETRANGE", std::string("fusebox:cache:") + kVin, std::to_string(64 * 1024 * 1024 - 1),
       "x"});
  const long before_kb = MaxRssKb();
  EXPECT_FALSE(Get(kVin).has_value());
  EXPECT_LT(MaxRssKb() - before_kb, 16 * 1024) << "peak RSS grew by more than 16 MB";
  // Not a string at all: someone else's key, refused; Redis itself did not fail.
  Raw({"HSET", std::string("fusebox:cache:") + "1FTMW1T88MFA00002", "a", "b"});
  EXPECT_FALSE(Get("1FTMW1T88MFA00002").has_value());
  EXPECT_EQ(cache_->Stats().refused, 2U);
  EXPECT_EQ(cache_->Stats().errors, 0U);
  EXPECT_EQ(breaker_->Snapshot().failed, 0U);
}

}  // namespace
}  // namespace fusebox::gateway

// fusebox/redis_client.h (target fusebox::redis)
//
// One asynchronous Redis connection for commands, driven by hiredis on an Asio executor (like
// RedisFleetLink, fusebox/redis_fleet.h): Command() never blocks, the reply comes back through a
// callback on the client's strand, and a connection that is down answers at once with kDown.
// Reconnects with exponential backoff for as long as the client lives. For a budget per command,
// race the callback against a timer (the late reply is then ignored by the caller).
//
// Not a stable API yet: it is public because fusebox::redis ships it beside RedisFleetLink, and
// vin-gateway's Redis cache is its one user; it will change as the Redis support grows (TLS,
// Sentinel). It logs in with the endpoint's user and password (AUTH) and selects its DB before
// it counts as connected.
//
// Thread safety: every member may be called from any thread. Lifetime: as RedisFleetLink (the
// io_context outlives the client; StopNow once no thread runs it).
//
// Example:
//   fusebox::RedisClient redis(io.get_executor(), {.endpoint = *fusebox::ParseRedisUrl(url)});
//   redis.Start();
//   redis.Command({"GET", "key"}, [](const fusebox::RedisReply& r) { ... });
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fusebox/clock.h"
#include "fusebox/redis_url.h"

namespace fusebox {

struct RedisReply {
  enum class Kind : std::uint8_t { kDown, kError, kNil, kString, kInteger, kStatus, kArray };
  Kind kind = Kind::kDown;   // kDown: not connected, or the connection was lost before a reply
  std::string text;          // kString, kStatus, kError
  std::int64_t integer = 0;  // kInteger
  std::vector<RedisReply> elements;  // kArray
};

struct RedisClientOptions {
  RedisEndpoint endpoint;
  Duration connect_timeout = std::chrono::seconds(1);
  Duration reconnect_min = std::chrono::milliseconds(100);
  Duration reconnect_max = std::chrono::seconds(2);
};

class RedisClient {
 public:
  using Callback = std::function<void(const RedisReply&)>;
  RedisClient(const boost::asio::any_io_executor& executor, RedisClientOptions options);
  ~RedisClient();
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  void Start();
  void StopNow();
  // Sends one command (each argument binary-safe). `done` runs exactly once, on the client's
  // strand.
  void Command(std::vector<std::string> args, Callback done);
  bool connected() const noexcept;
  // Why the last connection or login failed ("connect: Connection refused", "AUTH: WRONGPASS
  // ..."), or "" once connected; for /status. Never holds the password.
  std::string last_error() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace fusebox

// fusebox/redis_client.h (target fusebox::redis)
//
// One asynchronous Redis connection for commands, on an Asio executor (like RedisFleetLink,
// fusebox/redis_fleet.h; plain TCP or TLS, hiredis only for the wire format): Command() never
// blocks, the reply comes back through a callback on the client's strand, and a connection that
// is down answers at once with kDown (a command in flight when it goes down gets kDown too).
// Reconnects with exponential backoff for as long as the client lives. For a budget per command,
// race the callback against a timer (the late reply is then ignored by the caller).
//
// Not a stable API yet: it is public because fusebox::redis ships it beside RedisFleetLink, and
// vin-gateway's Redis cache is its one user. It speaks every URL of fusebox/redis_url.h: TLS
// (rediss://, the server always verified) and Sentinel (redis+sentinel://: the sentinels are
// asked for the primary before each connection, and ROLE must say it is one). It logs in with
// the endpoint's user and password (AUTH) and selects its DB before it counts as connected.
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
#include <optional>
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
  // Redis Sentinel: the budget of asking one sentinel (connect and answer).
  Duration sentinel_timeout = std::chrono::milliseconds(500);
};

struct RedisClientStats {
  bool connected = false;
  bool tls = false;          // rediss://
  std::string primary = {};  // host:port of the server in use (or last used); "" before the first
  std::uint64_t primary_changes = 0;  // a (re)connection to another server than before
  std::optional<std::chrono::system_clock::time_point> last_primary_change = std::nullopt;
  std::string last_error = {};  // as last_error()
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
  // ...", "tls: certificate verify failed: ...", "sentinel: ..."), or why the connection was
  // lost; "" once connected. For /status. Never holds the password.
  std::string last_error() const;
  RedisClientStats Stats() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace fusebox

// fusebox/redis_url.h (target fusebox::redis)
//
// Where a Redis server is: the grammar of redis:// URLs shared by RedisFleetLink
// (fusebox/redis_fleet.h) and the programs' flags, without pulling in Asio or hiredis.
//
// Example:
//   auto endpoint = fusebox::ParseRedisUrl("redis://10.0.0.5:6379/2");
//   if (!endpoint) die(endpoint.error());   // "expected redis://HOST:PORT[/DB], got '...'"
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "fusebox/status.h"

namespace fusebox {

struct RedisEndpoint {
  std::string host;
  std::uint16_t port = 6379;
  int db = 0;
};

// Parses "redis://HOST:PORT[/DB]" (HOST a name or an IPv4 address, PORT 1-65535, DB 0-65535).
// The error says what is wrong, e.g. "expected redis://HOST:PORT[/DB], got 'http://x'".
Result<RedisEndpoint, std::string> ParseRedisUrl(std::string_view url);

}  // namespace fusebox

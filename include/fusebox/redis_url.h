// fusebox/redis_url.h (target fusebox::redis)
//
// Where a Redis server is and how to log in to it: the grammar of the URLs shared by
// RedisFleetLink (fusebox/redis_fleet.h), RedisClient and the programs' flags, without pulling in
// Asio or hiredis.
//
//   redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]
//
// HOST is a name, an IPv4 address or an IPv6 address in brackets ([::1]); PORT defaults to 6379;
// DB to 0. USER and PASSWORD are percent-decoded (a password with '@' or ':' is written %40, %3A).
// With a password and no user, the login is `AUTH PASSWORD` (the `default` user, or requirepass);
// with both, `AUTH USER PASSWORD` (an ACL user). A password does not belong in a URL that is
// shown in a process listing: set RedisEndpoint::password apart (vin-gateway:
// --redis-password-file or FUSEBOX_REDIS_PASSWORD) and keep it out of the URL. RedactRedisUrl is
// what may be logged.
//
// Example:
//   auto endpoint = fusebox::ParseRedisUrl("redis://fleet@10.0.0.5:6379/2");
//   if (!endpoint) die(endpoint.error());   // "expected redis://[[USER]:PASSWORD@]HOST..."
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "fusebox/status.h"

namespace fusebox {

struct RedisEndpoint {
  std::string host;  // without the brackets of an IPv6 address
  std::uint16_t port = 6379;
  int db = 0;
  std::string user = {};      // "" : the default user
  std::string password = {};  // "" : no AUTH
};

// Parses a redis:// URL (above). The error says what is wrong and never repeats a password, e.g.
// "expected redis://[[USER]:PASSWORD@]HOST[:PORT][/DB], got 'http://x': ...".
Result<RedisEndpoint, std::string> ParseRedisUrl(std::string_view url);

// `url` with its password replaced by "***" (user, host, port and DB kept), for logs, /status and
// /metrics. A URL that does not parse comes back with everything between "//" and the last '@'
// replaced, so that not even a malformed password is shown.
std::string RedactRedisUrl(std::string_view url);

}  // namespace fusebox

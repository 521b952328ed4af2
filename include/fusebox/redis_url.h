// fusebox/redis_url.h (target fusebox::redis)
//
// Where a Redis server is and how to log in to it: the grammar of the URLs shared by
// RedisFleetLink (fusebox/redis_fleet.h), RedisClient and the programs' flags, without pulling in
// Asio or hiredis.
//
//   redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]
//   rediss://[[USER]:PASSWORD@]HOST[:PORT][/DB]                           TLS
//   redis+sentinel://[[USER]:PASSWORD@]HOST:PORT[,HOST:PORT...]/MASTER[/DB]  Sentinel
//
// HOST is a name, an IPv4 address or an IPv6 address in brackets ([::1]); PORT defaults to 6379;
// DB to 0. USER and PASSWORD are percent-decoded (a password with '@' or ':' is written %40, %3A).
// With a password and no user, the login is `AUTH PASSWORD` (the `default` user, or requirepass);
// with both, `AUTH USER PASSWORD` (an ACL user). A password does not belong in a URL that is
// shown in a process listing: set RedisEndpoint::password apart (vin-gateway:
// --redis-password-file or FUSEBOX_REDIS_PASSWORD) and keep it out of the URL. RedactRedisUrl is
// what may be logged.
//
// rediss:// is TLS, and the server is always verified: its certificate against the CA file
// (RedisEndpoint::tls_ca_file; the system's store when there is none), and its name against
// tls_server_name (default HOST), which is also sent as SNI. A client certificate and key are
// presented when set (a server with `tls-auth-clients yes` wants one). The files come from the
// program (vin-gateway: --redis-ca, --redis-cert, --redis-key), not from the URL.
//
// redis+sentinel:// names Redis Sentinels (PORT defaults to 26379 there) and the MASTER they
// watch: before every (re)connection the client asks them in turn for MASTER's address and checks
// with ROLE that the server there is a primary. USER and PASSWORD are the data node's; the
// sentinels are asked without a login (and without TLS).
//
// Example:
//   auto endpoint = fusebox::ParseRedisUrl("redis://fleet@10.0.0.5:6379/2");
//   if (!endpoint) die(endpoint.error());   // "expected redis://[[USER]:PASSWORD@]HOST..."
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fusebox/status.h"

namespace fusebox {

struct RedisHostPort {
  std::string host;  // without the brackets of an IPv6 address
  std::uint16_t port = 26379;
};

struct RedisEndpoint {
  std::string host;  // without the brackets of an IPv6 address; "" with sentinels
  std::uint16_t port = 6379;
  int db = 0;
  std::string user = {};      // "" : the default user
  std::string password = {};  // "" : no AUTH
  // rediss:// (above). The files are PEM; "" leaves each out.
  bool tls = false;
  std::string tls_ca_file = {};      // the CAs the server's certificate must chain to; "": system's
  std::string tls_cert_file = {};    // the client's certificate (chain), with tls_key_file
  std::string tls_key_file = {};     // its private key
  std::string tls_server_name = {};  // SNI and the name checked; "": host
  // redis+sentinel:// (above): asked in this order; empty: connect to host:port.
  std::vector<RedisHostPort> sentinels = {};
  std::string master_name = {};
};

// Parses a redis://, rediss:// or redis+sentinel:// URL (above). The error says what is wrong and
// never repeats a password, e.g. "expected redis://[[USER]:PASSWORD@]HOST[:PORT][/DB], got
// 'http://x': ...".
Result<RedisEndpoint, std::string> ParseRedisUrl(std::string_view url);

// `url` with its password replaced by "***" (user, host, port and DB kept), for logs, /status and
// /metrics. A URL that does not parse comes back with everything between "//" and the last '@'
// replaced, so that not even a malformed password is shown.
std::string RedactRedisUrl(std::string_view url);

// Whether `text` starts with one of the schemes above (a cache URI that means Redis).
bool IsRedisUrl(std::string_view text);

// Whether the TLS files of `endpoint` (those that are set) load: "" if they do, else why not,
// naming the file ("CA file '/etc/ca.pem': no certificate in it", "key file '...': does not
// match the certificate"). The same check a connection makes before its handshake; a program
// calls it at start-up to refuse a bad file at once.
std::string CheckRedisTls(const RedisEndpoint& endpoint);

}  // namespace fusebox

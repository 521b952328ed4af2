#include "fusebox/redis_url.h"

#include <algorithm>
#include <charconv>
#include <system_error>

namespace fusebox {
namespace {

constexpr std::string_view kScheme = "redis://";
constexpr std::string_view kTlsScheme = "rediss://";
constexpr std::string_view kSentinelScheme = "redis+sentinel://";
constexpr std::string_view kGrammar = "redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]";
constexpr std::string_view kTlsGrammar = "rediss://[[USER]:PASSWORD@]HOST[:PORT][/DB]";
constexpr std::string_view kSentinelGrammar =
    "redis+sentinel://[[USER]:PASSWORD@]HOST:PORT[,HOST:PORT...]/MASTER[/DB]";

template <typename Int>
bool ParseWhole(std::string_view text, Int& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

// RFC 3986 percent-decoding of the user information; false on a broken escape.
bool PercentDecode(std::string_view text, std::string& out) {
  out.clear();
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) {
      return false;
    }
    const int high = HexValue(text[i + 1]);
    const int low = HexValue(text[i + 2]);
    if (high < 0 || low < 0) {
      return false;
    }
    out += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return true;
}

bool NameCharacter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '-' || c == '_';
}

bool Ipv6Character(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' ||
         c == '.';
}

// HOST[:PORT] (an IPv6 HOST in brackets) into `host` and `port` (kept when there is no PORT);
// "" or what is wrong.
std::string ParseHostPort(std::string_view rest, std::string& host_out, std::uint16_t& port_out) {
  std::string_view host;
  std::string_view port_text;
  if (rest.starts_with('[')) {
    const std::size_t close = rest.find(']');
    if (close == std::string_view::npos || close == 1) {
      return ": an IPv6 HOST is written in brackets, [::1]";
    }
    host = rest.substr(1, close - 1);
    for (const char c : host) {
      if (!Ipv6Character(c)) {
        return ": bad character in the IPv6 HOST";
      }
    }
    const std::string_view after = rest.substr(close + 1);
    if (!after.empty()) {
      if (!after.starts_with(':')) {
        return ": expected ':PORT' after the IPv6 HOST";
      }
      port_text = after.substr(1);
      if (port_text.empty()) {
        return ": PORT must be in [1, 65535]";
      }
    }
  } else {
    const std::size_t colon = rest.rfind(':');
    host = rest.substr(0, colon);
    if (colon != std::string_view::npos) {
      port_text = rest.substr(colon + 1);
      if (port_text.empty()) {
        return ": PORT must be in [1, 65535]";
      }
    }
    if (host.empty()) {
      return ": no HOST";
    }
    for (const char c : host) {
      if (!NameCharacter(c)) {
        return ": bad character in HOST (an IPv6 address goes in brackets)";
      }
    }
  }
  if (!port_text.empty()) {
    unsigned port = 0;
    if (!ParseWhole(port_text, port) || port == 0 || port > 65535) {
      return ": PORT must be in [1, 65535]";
    }
    port_out = static_cast<std::uint16_t>(port);
  }
  host_out = std::string(host);
  return "";
}

bool ParseDb(std::string_view text, int& db) {
  return ParseWhole(text, db) && db >= 0 && db <= 65535;
}

}  // namespace

Result<RedisEndpoint, std::string> ParseRedisUrl(std::string_view url) {
  RedisEndpoint endpoint;
  std::string_view grammar = kGrammar;
  std::string_view rest = url;
  bool sentinel = false;
  if (url.starts_with(kScheme)) {
    rest = url.substr(kScheme.size());
  } else if (url.starts_with(kTlsScheme)) {
    grammar = kTlsGrammar;
    rest = url.substr(kTlsScheme.size());
    endpoint.tls = true;
  } else if (url.starts_with(kSentinelScheme)) {
    grammar = kSentinelGrammar;
    rest = url.substr(kSentinelScheme.size());
    sentinel = true;
  }
  // The URL is repeated in errors only redacted: a typo must not print a password.
  const std::string wrong =
      "expected " + std::string(grammar) + ", got '" + RedactRedisUrl(url) + "'";
  if (!IsRedisUrl(url)) {
    return wrong + " (or rediss://..., redis+sentinel://...)";
  }
  if (const std::size_t at = rest.rfind('@'); at != std::string_view::npos) {
    const std::string_view userinfo = rest.substr(0, at);
    rest = rest.substr(at + 1);
    const std::size_t colon = userinfo.find(':');
    if (colon == std::string_view::npos) {
      return wrong + ": the user information must be USER:PASSWORD or :PASSWORD";
    }
    if (!PercentDecode(userinfo.substr(0, colon), endpoint.user) ||
        !PercentDecode(userinfo.substr(colon + 1), endpoint.password)) {
      return wrong + ": a broken %-escape in USER or PASSWORD";
    }
    if (endpoint.password.empty()) {
      return wrong + ": an empty PASSWORD (leave out the '@' part, or give the password apart)";
    }
  }
  if (sentinel) {
    const std::size_t slash = rest.find('/');
    if (slash == std::string_view::npos || slash + 1 == rest.size()) {
      return wrong + ": no /MASTER (the name the sentinels monitor)";
    }
    std::string_view path = rest.substr(slash + 1);
    const std::size_t db_slash = path.find('/');
    const std::string_view master = path.substr(0, db_slash);
    if (master.empty() || !std::all_of(master.begin(), master.end(), NameCharacter)) {
      return wrong + ": MASTER must be a name of letters, digits, '.', '-' or '_'";
    }
    if (db_slash != std::string_view::npos && !ParseDb(path.substr(db_slash + 1), endpoint.db)) {
      return wrong + ": DB must be a number in [0, 65535]";
    }
    endpoint.master_name = std::string(master);
    std::string_view hosts = rest.substr(0, slash);
    while (true) {
      const std::size_t comma = hosts.find(',');
      RedisHostPort sentinel_address;
      if (const std::string error =
              ParseHostPort(hosts.substr(0, comma), sentinel_address.host, sentinel_address.port);
          !error.empty()) {
        return wrong + error;
      }
      endpoint.sentinels.push_back(std::move(sentinel_address));
      if (comma == std::string_view::npos) {
        break;
      }
      hosts = hosts.substr(comma + 1);
    }
    return endpoint;
  }
  if (const std::size_t slash = rest.find('/'); slash != std::string_view::npos) {
    if (!ParseDb(rest.substr(slash + 1), endpoint.db)) {
      return wrong + ": DB must be a number in [0, 65535]";
    }
    rest = rest.substr(0, slash);
  }
  if (const std::string error = ParseHostPort(rest, endpoint.host, endpoint.port); !error.empty()) {
    return wrong + error;
  }
  return endpoint;
}

bool IsRedisUrl(std::string_view text) {
  return text.starts_with(kScheme) || text.starts_with(kTlsScheme) ||
         text.starts_with(kSentinelScheme);
}

std::string RedactRedisUrl(std::string_view url) {
  const std::size_t start = url.find("//");
  const std::size_t at = url.rfind('@');
  if (start == std::string_view::npos || at == std::string_view::npos || at < start) {
    return std::string(url);
  }
  const std::string_view userinfo = url.substr(start + 2, at - start - 2);
  const std::size_t colon = userinfo.find(':');
  std::string out(url.substr(0, start + 2));
  if (colon == std::string_view::npos) {
    out += "***";  // no USER:PASSWORD shape: all of it may be a secret
  } else {
    out += std::string(userinfo.substr(0, colon)) + ":***";
  }
  out += url.substr(at);
  return out;
}

}  // namespace fusebox

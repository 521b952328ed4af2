#include "fusebox/redis_url.h"

#include <charconv>
#include <system_error>

namespace fusebox {
namespace {

constexpr std::string_view kScheme = "redis://";
constexpr std::string_view kGrammar = "redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]";

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

}  // namespace

Result<RedisEndpoint, std::string> ParseRedisUrl(std::string_view url) {
  // The URL is repeated in errors only redacted: a typo must not print a password.
  const std::string wrong =
      "expected " + std::string(kGrammar) + ", got '" + RedactRedisUrl(url) + "'";
  if (!url.starts_with(kScheme)) {
    return wrong;
  }
  std::string_view rest = url.substr(kScheme.size());
  RedisEndpoint endpoint;
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
  if (const std::size_t slash = rest.find('/'); slash != std::string_view::npos) {
    if (!ParseWhole(rest.substr(slash + 1), endpoint.db) || endpoint.db < 0 ||
        endpoint.db > 65535) {
      return wrong + ": DB must be a number in [0, 65535]";
    }
    rest = rest.substr(0, slash);
  }
  std::string_view host;
  std::string_view port_text;
  if (rest.starts_with('[')) {
    const std::size_t close = rest.find(']');
    if (close == std::string_view::npos || close == 1) {
      return wrong + ": an IPv6 HOST is written in brackets, [::1]";
    }
    host = rest.substr(1, close - 1);
    for (const char c : host) {
      if (!Ipv6Character(c)) {
        return wrong + ": bad character in the IPv6 HOST";
      }
    }
    const std::string_view after = rest.substr(close + 1);
    if (!after.empty()) {
      if (!after.starts_with(':')) {
        return wrong + ": expected ':PORT' after the IPv6 HOST";
      }
      port_text = after.substr(1);
      if (port_text.empty()) {
        return wrong + ": PORT must be in [1, 65535]";
      }
    }
  } else {
    const std::size_t colon = rest.rfind(':');
    host = rest.substr(0, colon);
    if (colon != std::string_view::npos) {
      port_text = rest.substr(colon + 1);
      if (port_text.empty()) {
        return wrong + ": PORT must be in [1, 65535]";
      }
    }
    if (host.empty()) {
      return wrong + ": no HOST";
    }
    for (const char c : host) {
      if (!NameCharacter(c)) {
        return wrong + ": bad character in HOST (an IPv6 address goes in brackets)";
      }
    }
  }
  if (!port_text.empty()) {
    unsigned port = 0;
    if (!ParseWhole(port_text, port) || port == 0 || port > 65535) {
      return wrong + ": PORT must be in [1, 65535]";
    }
    endpoint.port = static_cast<std::uint16_t>(port);
  }
  endpoint.host = std::string(host);
  return endpoint;
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

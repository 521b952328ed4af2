#include "http/request_target.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <boost/url/parse.hpp>
#include <boost/url/scheme.hpp>

namespace fusebox::gateway {
namespace {

// RFC 3986 pchar without pct-encoded, plus '/': a path with only these needs no decoding. A
// table by byte: the check runs on every character of every request's target.
constexpr std::array<bool, 256> kPlainPathChars = [] {
  std::array<bool, 256> plain{};
  for (char c = 'a'; c <= 'z'; ++c) {
    plain[static_cast<unsigned char>(c)] = true;
  }
  for (char c = 'A'; c <= 'Z'; ++c) {
    plain[static_cast<unsigned char>(c)] = true;
  }
  for (char c = '0'; c <= '9'; ++c) {
    plain[static_cast<unsigned char>(c)] = true;
  }
  for (char c : std::string_view("-._~"         // unreserved
                                 "!$&'()*+,;="  // sub-delims
                                 ":@/")) {
    plain[static_cast<unsigned char>(c)] = true;
  }
  return plain;
}();

bool IsPlainPathChar(char c) { return kPlainPathChars[static_cast<unsigned char>(c)]; }

// The origin form of an absolute-form target: "http://host:80/a?b" -> "/a?b", "https://host" ->
// "/" (an empty path is "/", RFC 9110 4.2.3). nullopt unless `target` is an absolute http or https
// URI with a host and without userinfo, which RFC 9110 asks a recipient to treat as an error.
std::optional<std::string> OriginFormOf(std::string_view target) {
  auto parsed = boost::urls::parse_absolute_uri(target);
  if (!parsed) {
    return std::nullopt;
  }
  const boost::urls::scheme scheme = parsed->scheme_id();
  if ((scheme != boost::urls::scheme::http && scheme != boost::urls::scheme::https) ||
      !parsed->has_authority() || parsed->encoded_host().empty() || parsed->has_userinfo()) {
    return std::nullopt;
  }
  const auto path = parsed->encoded_path();
  std::string origin = path.empty() ? std::string("/") : std::string(path.data(), path.size());
  if (parsed->has_query()) {
    const auto query = parsed->encoded_query();
    origin += '?';
    origin.append(query.data(), query.size());
  }
  return origin;
}

}  // namespace

std::optional<RequestTarget> ParseRequestTarget(std::string_view target, std::size_t max_segments) {
  if (!target.empty() && target.front() != '/') {
    // Not the origin form: the absolute form is read as its path and query, which start with '/'.
    const std::optional<std::string> origin = OriginFormOf(target);
    if (!origin) {
      return std::nullopt;
    }
    return ParseRequestTarget(*origin, max_segments);
  }
  RequestTarget out;
  out.segments.reserve(std::min<std::size_t>(max_segments, 8));  // one allocation, not three
  const auto add = [&out, max_segments](std::string segment) {
    if (out.segments.size() == max_segments) {
      out.too_many_segments = true;
      return false;
    }
    out.segments.push_back(std::move(segment));
    return true;
  };
  bool plain = !target.empty() && target.front() == '/';
  for (std::size_t i = 0; plain && i < target.size(); ++i) {
    plain = IsPlainPathChar(target[i]);
  }
  // A segment that starts with '.' ("." and ".." above all) takes Boost.URL's path: it reads a
  // leading "/./" as an artifact of serialization, not as a segment.
  plain = plain && target.find("/.") == std::string_view::npos;
  if (plain) {
    // "/" alone has no segment; otherwise each '/' starts one.
    std::size_t begin = 1;
    while (begin <= target.size() && target.size() > 1) {
      const std::size_t end = std::min(target.find('/', begin), target.size());
      if (!add(std::string(target.substr(begin, end - begin)))) {
        break;
      }
      begin = end + 1;
    }
    return out;
  }
  auto parsed = boost::urls::parse_origin_form(target);
  if (!parsed) {
    return std::nullopt;
  }
  for (auto segment : parsed->segments()) {
    if (!add(std::string(segment))) {
      break;
    }
  }
  for (auto param : parsed->params()) {
    out.params.emplace_back(std::string(param.key), std::string(param.value));
  }
  return out;
}

}  // namespace fusebox::gateway

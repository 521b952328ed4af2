#include "http/request_target.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <string_view>

#include <boost/url/parse.hpp>

namespace vin_gateway {
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

}  // namespace

std::optional<RequestTarget> ParseRequestTarget(std::string_view target, std::size_t max_segments) {
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

}  // namespace vin_gateway

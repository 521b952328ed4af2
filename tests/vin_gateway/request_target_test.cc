// ParseRequestTarget: the plain-path shortcut gives exactly what Boost.URL gives, over 50,000
// random targets from an alphabet that mixes plain characters with '%', '?', '#' and bytes a
// target may not hold; the absolute form reads as its origin form; and the edge cases by name.
#include "http/request_target.h"

#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/url/parse.hpp>

namespace {

using fusebox::gateway::ParseRequestTarget;

// Boost.URL's reading of the target, with no shortcut.
std::optional<std::vector<std::string>> BoostSegments(std::string_view target) {
  auto parsed = boost::urls::parse_origin_form(target);
  if (!parsed) {
    return std::nullopt;
  }
  std::vector<std::string> out;
  for (auto segment : parsed->segments()) {
    out.emplace_back(segment);
  }
  return out;
}

TEST(RequestTargetTest, PlainPathsSplitAsBoostUrlParsesThem) {
  const std::string alphabet = "//////aZ09-.._~!$&'()*+,;=:@%2F?# \x01\x7f\xc3";
  std::mt19937 random(20261202);
  std::uniform_int_distribution<std::size_t> length(0, 24);
  std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
  int compared = 0;
  int plain = 0;
  for (int i = 0; i < 50'000; ++i) {
    std::string target = "/";
    for (std::size_t n = length(random); n > 0; --n) {
      target += alphabet[pick(random)];
    }
    const auto ours = ParseRequestTarget(target, 1000);
    const auto boost = BoostSegments(target);
    ASSERT_EQ(ours.has_value(), boost.has_value()) << target;
    if (ours) {
      ASSERT_EQ(ours->segments, *boost) << target;
      ++compared;
      plain += target.find_first_of("%?#") == std::string::npos ? 1 : 0;
    }
  }
  EXPECT_GT(compared, 5'000);  // the comparison saw both kinds of valid target
  EXPECT_GT(plain, 1'000);
}

TEST(RequestTargetTest, EdgeCases) {
  EXPECT_EQ(ParseRequestTarget("/", 8)->segments, std::vector<std::string>{});
  EXPECT_EQ(ParseRequestTarget("/a//b/", 8)->segments,
            (std::vector<std::string>{"a", "", "b", ""}));
  EXPECT_EQ(ParseRequestTarget("/api/v1/vin/1FTMW1T88MFA00001", 8)->segments,
            (std::vector<std::string>{"api", "v1", "vin", "1FTMW1T88MFA00001"}));
  const auto query = ParseRequestTarget("/a%2Fb?modelyear=2021&source=offline&x", 8);
  ASSERT_TRUE(query);
  EXPECT_EQ(query->segments, std::vector<std::string>{"a/b"});
  ASSERT_EQ(query->params.size(), 3U);
  EXPECT_EQ(query->params[0], (std::pair<std::string, std::string>{"modelyear", "2021"}));
  EXPECT_EQ(query->params[1].second, "offline");
  EXPECT_FALSE(ParseRequestTarget("", 8));
  EXPECT_FALSE(ParseRequestTarget("api/v1", 8));
  EXPECT_FALSE(ParseRequestTarget("/a b", 8));
  const auto many = ParseRequestTarget("/1/2/3/4/5/6/7/8/9", 8);
  EXPECT_TRUE(many->too_many_segments);
  EXPECT_EQ(many->segments.size(), 8U);
  EXPECT_FALSE(ParseRequestTarget("/1/2/3/4/5/6/7/8", 8)->too_many_segments);
}

// RFC 9112 3.2.2: a server must accept the absolute form. Its path and query are read as the
// origin form's would be, whatever the authority; what is not an http(s) URI with a host stays
// invalid (the authority form and the asterisk form among them).
TEST(RequestTargetTest, AbsoluteFormIsReadAsItsPathAndQuery) {
  const auto absolute =
      ParseRequestTarget("http://gateway.example/api/v1/vin/1FT?modelyear=2021", 8);
  ASSERT_TRUE(absolute);
  EXPECT_EQ(absolute->segments, (std::vector<std::string>{"api", "v1", "vin", "1FT"}));
  ASSERT_EQ(absolute->params.size(), 1U);
  EXPECT_EQ(absolute->params[0], (std::pair<std::string, std::string>{"modelyear", "2021"}));
  EXPECT_EQ(ParseRequestTarget("https://10.0.0.1:8443/a%2Fb/c", 8)->segments,
            (std::vector<std::string>{"a/b", "c"}));
  EXPECT_EQ(ParseRequestTarget("HTTP://[::1]:80/healthz", 8)->segments,
            std::vector<std::string>{"healthz"});
  EXPECT_EQ(ParseRequestTarget("http://gateway.example", 8)->segments, std::vector<std::string>{});
  EXPECT_EQ(ParseRequestTarget("http://gateway.example?x=1", 8)->params.size(), 1U);
  EXPECT_TRUE(ParseRequestTarget("http://h/1/2/3/4/5/6/7/8/9", 8)->too_many_segments);
  for (const char* invalid :
       {"http:///healthz", "http://user:pw@h/healthz", "ftp://h/healthz", "http:/healthz",
        "http:healthz", "http://h/healthz#top", "http://h:x/healthz", "http://[::1/healthz",
        "gateway.example:443", "*", "http://h/a b"}) {
    EXPECT_FALSE(ParseRequestTarget(invalid, 8)) << invalid;
  }
  // Over random paths and queries: the absolute form gives what the origin form gives.
  const std::string alphabet = "//////aZ09-.._~!$&'()*+,;=:@%2F?# \x01\x7f\xc3";
  std::mt19937 random(20261203);
  std::uniform_int_distribution<std::size_t> length(0, 24);
  std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
  int valid = 0;
  for (int i = 0; i < 20'000; ++i) {
    std::string target = "/";
    for (std::size_t n = length(random); n > 0; --n) {
      target += alphabet[pick(random)];
    }
    const auto origin = ParseRequestTarget(target, 1000);
    const auto from_absolute = ParseRequestTarget("http://h:8080" + target, 1000);
    ASSERT_EQ(from_absolute.has_value(), origin.has_value()) << target;
    if (origin) {
      ASSERT_EQ(from_absolute->segments, origin->segments) << target;
      ASSERT_EQ(from_absolute->params, origin->params) << target;
      ++valid;
    }
  }
  EXPECT_GT(valid, 2'000);
}

}  // namespace

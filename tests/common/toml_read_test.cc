// Tests of the typed TOML reads and the located error format (common/toml_read.h,
// common/located_error.h, common/rate.h).
#include "common/toml_read.h"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <string_view>

#include "common/located_error.h"
#include "common/rate.h"

namespace fusebox::app {
namespace {

// The value of `v` in a one-line document "v = TEXT".
toml::table Doc(std::string_view value) {
  return toml::parse(std::string("v = ") + std::string(value), std::string_view("t.toml"));
}

TEST(TomlReadTest, ReadsEachTypeOrSaysWhatItGot) {
  const toml::table doc = Doc("\"x\"");
  const toml::node& s = *doc.get("v");
  EXPECT_EQ(*ReadString(s), "x");
  EXPECT_EQ(ReadInteger(s).error().message, "expected an integer, got a string");
  EXPECT_EQ(ReadNumber(s).error().message, "expected a number, got a string");
  EXPECT_EQ(ReadBool(s).error().message, "expected true or false, got a string");
  EXPECT_EQ(ReadTable(s).error().message, "expected a table, got a string");
  const toml::table ints = Doc("3");
  EXPECT_EQ(*ReadInteger(*ints.get("v")), 3);
  EXPECT_EQ(*ReadNumber(*ints.get("v")), 3.0);
  EXPECT_EQ(ReadString(*ints.get("v")).error().message, "expected a string, got an integer");
  const toml::table inf = Doc("inf");
  EXPECT_EQ(ReadNumber(*inf.get("v")).error().message, "must be a finite number");
  const toml::table yes = Doc("true");
  EXPECT_TRUE(*ReadBool(*yes.get("v")));
}

TEST(TomlReadTest, ADurationIsAStringWithAUnitOrANumberOfSeconds) {
  struct Case {
    std::string_view toml;
    Micros micros;
  };
  constexpr Case kAccepted[] = {{"\"250ms\"", 250'000},
                                {"10", 10'000'000},
                                {"0.5", 500'000},
                                {"\"2m\"", 120'000'000},
                                {"\"1h\"", 3'600'000'000}};
  for (const Case& c : kAccepted) {
    const toml::table doc = Doc(c.toml);
    Result<Micros, ReadError> d = ReadDuration(*doc.get("v"));
    ASSERT_TRUE(d) << c.toml << ": " << d.error().message;
    EXPECT_EQ(*d, c.micros) << c.toml;
  }
  for (std::string_view bad : {"\"10\"", "-1", "\"1w\"", "\"30s2m\"", "true", "1e15", "\"10 s\""}) {
    const toml::table doc = Doc(bad);
    EXPECT_FALSE(ReadDuration(*doc.get("v"))) << bad;
  }
  const toml::table flag = Doc("true");
  EXPECT_EQ(ReadDuration(*flag.get("v")).error().message,
            "expected a duration such as \"250ms\" or a number of seconds, got a boolean");
}

TEST(TomlReadTest, AChoiceListsTheNames) {
  constexpr std::array<std::string_view, 3> kNames = {"ok", "error", "hang"};
  const toml::table doc = Doc("\"hang\"");
  EXPECT_EQ(*ReadChoice(*doc.get("v"), kNames), 2U);
  const toml::table bad = Doc("\"slow\"");
  EXPECT_EQ(ReadChoice(*bad.get("v"), kNames).error().message,
            R"(must be "ok", "error" or "hang", got "slow")");
  constexpr std::array<std::string_view, 1> kOne = {"ok"};
  EXPECT_EQ(QuotedChoices(kOne), "\"ok\"");
}

TEST(LocatedErrorTest, PrintsTheKnownParts) {
  EXPECT_EQ((LocatedError{"f.toml", 4, 8, "upstream.phase[0].mode", "m"}).ToString(),
            "f.toml:4:8: upstream.phase[0].mode: m");
  EXPECT_EQ((LocatedError{"f.toml", 4, 0, "k", "m"}).ToString(), "f.toml:4: k: m");
  EXPECT_EQ((LocatedError{"f.toml", 0, 0, "k (override)", "m"}).ToString(),
            "f.toml: k (override): m");
  EXPECT_EQ((LocatedError{"f.toml", 2, 3, "", "syntax"}).ToString(), "f.toml:2:3: syntax");
}

TEST(LocatedErrorTest, LocatesNodesAndSyntaxErrors) {
  const toml::table doc = toml::parse("a = 1\n  b = 2\n", std::string_view("f.toml"));
  EXPECT_EQ(ErrorAt("f.toml", *doc.get("b"), "b", "m").ToString(), "f.toml:2:7: b: m");
  try {
    (void)toml::parse("a = \n", std::string_view("f.toml"));
    FAIL() << "parsed";
  } catch (const toml::parse_error& e) {
    const LocatedError located = SyntaxError("f.toml", e);
    EXPECT_EQ(located.line, 1);
    EXPECT_TRUE(located.key.empty());
  }
  EXPECT_TRUE(ComesFirst(LocatedError{"f", 2, 9, "", ""}, LocatedError{"f", 3, 1, "", ""}));
  EXPECT_TRUE(ComesFirst(LocatedError{"f", 2, 1, "", ""}, LocatedError{"f", 2, 2, "", ""}));
  EXPECT_TRUE(ComesFirst(LocatedError{"f", 9, 1, "", ""}, LocatedError{"f", 0, 0, "", ""}));
}

TEST(CallRateTest, IsPositiveAndRepresentable) {
  EXPECT_EQ(*CheckCallRate(5.0), 5.0);
  EXPECT_EQ(*CheckCallRate(kMaxCallRate), kMaxCallRate);
  EXPECT_EQ(CheckCallRate(0.0).error().message, "must be > 0 calls per second, got 0");
  for (double rate : {1e-14, 2e6}) {
    const std::string message = CheckCallRate(rate).error().message;
    EXPECT_NE(message.find("must be in [1e-09, 1e+06] calls per second"), std::string::npos);
  }
}

}  // namespace
}  // namespace fusebox::app

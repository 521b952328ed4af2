// Tests of the one duration grammar (common/duration.h): table-driven accepted and refused
// texts, rounding, the upper bound, and the two places a bare number is read differently.
#include "common/duration.h"

#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <string>
#include <string_view>

namespace fusebox::app {
namespace {

constexpr DurationGrammar kToml{BareNumber::kRefused};
constexpr DurationGrammar kFlags{BareNumber::kSeconds};

struct Accepted {
  std::string_view text;
  Micros micros;
};

TEST(DurationGrammarTest, AcceptsADecimalAndAUnit) {
  constexpr Accepted kCases[] = {
      {"250ms", 250'000},
      {"23.3s", 23'300'000},
      {"1500ms", 1'500'000},
      {"2m", 120'000'000},
      {"7us", 7},
      {"0ms", 0},
      {".5s", 500'000},
      {"5.s", 5'000'000},
      {"007s", 7'000'000},
      {"0.25m", 15'000'000},
      {"1.0015ms", 1'002},
      {"0.0000004s", 0},
      {"0.0000006s", 1},
      {"0.0000005s", 1},
      {"1000000000s", kMaxDuration},
      {"0.0000005000000000000000001s", 1},
      {"0.0000004999999999999999999s", 0},
      {"1h", 3'600'000'000},
      {"30d", 2'592'000'000'000},
      {"1.5h", 5'400'000'000},
      {"11574d", 999'993'600'000'000},
  };
  for (const Accepted& c : kCases) {
    for (DurationGrammar grammar : {DurationGrammar{}, kToml, kFlags}) {
      Result<Micros, DurationError> d = ParseDuration(c.text, grammar);
      ASSERT_TRUE(d) << c.text << ": " << d.error().message;
      EXPECT_EQ(*d, c.micros) << c.text;
    }
  }
}

TEST(DurationGrammarTest, ABareNumberIsSecondsOnACommandLineOnly) {
  EXPECT_EQ(*ParseDuration("10"), 10'000'000);
  EXPECT_EQ(*ParseDuration("1.5"), 1'500'000);
  EXPECT_EQ(*ParseDuration("0"), 0);
  Result<Micros, DurationError> toml = ParseDuration("10", kToml);
  ASSERT_FALSE(toml);
  EXPECT_EQ(toml.error().problem, DurationProblem::kNeedsUnit);
  EXPECT_EQ(toml.error().message,
            "bad duration \"10\": a string needs a unit (us, ms, s, m, h, d), e.g. \"10s\"; a "
            "number of seconds is written without quotes");
}

TEST(DurationGrammarTest, RefusesAnythingElse) {
  for (std::string_view bad :
       {"",   "s",  "-1s",   "+1s",   "1 s",        " 1s",    "1s ",    "1.2.3s", "ms5",
        ".s", ".",  "1e3ms", "1e3",   "10 seconds", "1sec",   "1S",     "inf",    "nan",
        "1w", "1D", "1ns",   "0x10s", "2m30",       "2m 30s", "2m30s ", "1h-5m",  "1h.m"}) {
    Result<Micros, DurationError> d = ParseDuration(bad);
    ASSERT_FALSE(d) << bad;
    EXPECT_EQ(d.error().problem, DurationProblem::kMalformed) << bad;
    EXPECT_EQ(d.error().message,
              "bad duration \"" + std::string(bad) +
                  "\": expected a non-negative decimal number and a unit (us, ms, s, m, h, d), "
                  "e.g. \"250ms\" or \"2m30s\", or a number of seconds")
        << bad;
  }
}

TEST(DurationGrammarTest, TellsATooLargeValueFromAMalformedOne) {
  for (std::string_view big :
       {"1000000000.000001s", "16666667m", "99999999999999999999999s", "1000000001", "277778h",
        "11574d1h46m40s1us", "1d99999999999999999999s"}) {
    Result<Micros, DurationError> d = ParseDuration(big, kFlags);
    ASSERT_FALSE(d) << big;
    EXPECT_EQ(d.error().problem, DurationProblem::kTooLarge) << big;
    EXPECT_EQ(d.error().message, "bad duration \"" + std::string(big) +
                                     "\": must be at most 1000000000 s (about 31.7 years)");
  }
}

// Terms from the largest unit to the smallest, each once, summed and rounded once: what an
// operator writes for a cooldown ("2m30s") reads the same in a scenario, a vpic-sim schedule and
// the gateway's config.
TEST(DurationGrammarTest, TermsFromTheLargestUnitToTheSmallestAddUp) {
  constexpr Accepted kCases[] = {
      {"2m30s", 150'000'000},
      {"1h30m", 5'400'000'000},
      {"1d12h", 129'600'000'000},
      {"1s500ms", 1'500'000},
      {"1ms1us", 1'001},
      {"1d1h1m1s1ms1us", 90'061'001'001},
      {"1.5m30s", 120'000'000},
      {"0m0s", 0},
      {"11574d1h46m40s", 1'000'000'000'000'000},  // kMaxDuration itself
      // Two halves of a microsecond in two terms: the sum is rounded, not each term.
      {"0.0000005s0.0005ms", 1},
      {"0.0000004s0.0004ms", 1},
  };
  for (const Accepted& c : kCases) {
    for (DurationGrammar grammar : {kToml, kFlags}) {
      Result<Micros, DurationError> d = ParseDuration(c.text, grammar);
      ASSERT_TRUE(d) << c.text << ": " << d.error().message;
      EXPECT_EQ(*d, c.micros) << c.text;
    }
    Result<std::chrono::microseconds, DurationError> flag = ParseFlagDuration(c.text);
    ASSERT_TRUE(flag) << c.text;
    EXPECT_EQ(flag->count(), c.micros) << c.text;
  }
}

TEST(DurationGrammarTest, RefusesUnitsOutOfOrderOrTwice) {
  for (std::string_view bad : {"30s2m", "1s1s", "1ms1s", "1m1h", "1s1m30s", "500ms1s"}) {
    Result<Micros, DurationError> d = ParseDuration(bad, kFlags);
    ASSERT_FALSE(d) << bad;
    EXPECT_EQ(d.error().problem, DurationProblem::kMalformed) << bad;
    EXPECT_EQ(d.error().message, "bad duration \"" + std::string(bad) +
                                     "\": the units of a duration go from the largest to the "
                                     "smallest, each once, e.g. \"1h30m\" or \"2m30s\"");
  }
}

TEST(DurationGrammarTest, ABareNumberNeverEndsACompound) {
  for (std::string_view bad : {"2m30", "1h0"}) {
    for (DurationGrammar grammar : {kToml, kFlags}) {
      Result<Micros, DurationError> d = ParseDuration(bad, grammar);
      ASSERT_FALSE(d) << bad;
      EXPECT_EQ(d.error().problem, DurationProblem::kMalformed) << bad;
    }
  }
}

TEST(SecondsToDurationTest, TakesFiniteNonNegativeSecondsUpToTheBound) {
  EXPECT_EQ(*SecondsToDuration(0.0), 0);
  EXPECT_EQ(*SecondsToDuration(1.5), 1'500'000);
  EXPECT_EQ(*SecondsToDuration(1e9), kMaxDuration);
  EXPECT_EQ(*SecondsToDuration(0.0000005), 1);
  Result<Micros, DurationError> big = SecondsToDuration(1e15);
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().problem, DurationProblem::kTooLarge);
  EXPECT_EQ(big.error().message,
            "bad duration 1e+15: a number of seconds must be finite, >= 0 and at most "
            "1000000000 s (about 31.7 years)");
  EXPECT_EQ(SecondsToDuration(-1.0).error().problem, DurationProblem::kMalformed);
  EXPECT_FALSE(SecondsToDuration(std::numeric_limits<double>::infinity()));
  EXPECT_FALSE(SecondsToDuration(std::numeric_limits<double>::quiet_NaN()));
}

TEST(FormatSecondsTest, KeepsMicrosecondsAndOneDecimalAtLeast) {
  EXPECT_EQ(FormatSeconds(14'000'000), "14.0");
  EXPECT_EQ(FormatSeconds(64'020'000), "64.02");
  EXPECT_EQ(FormatSeconds(1), "0.000001");
  EXPECT_EQ(FormatSeconds(0), "0.0");
  EXPECT_EQ(FormatSeconds(-1'500'000), "-1.5");
}

}  // namespace
}  // namespace fusebox::app

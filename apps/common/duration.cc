#include "common/duration.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>

namespace fusebox::app {
namespace {

std::string_view UnitList(const DurationGrammar& grammar) {
  return grammar.hours_and_days ? "us, ms, s, m, h, d" : "us, ms, s, m";
}

// Microseconds per unit; 0 for a unit the grammar does not take.
long double MicrosPerUnit(std::string_view unit, const DurationGrammar& grammar) {
  if (unit == "us") {
    return 1;
  }
  if (unit == "ms") {
    return 1e3L;
  }
  if (unit == "s") {
    return 1e6L;
  }
  if (unit == "m") {
    return 6e7L;
  }
  if (grammar.hours_and_days && unit == "h") {
    return 3.6e9L;
  }
  if (grammar.hours_and_days && unit == "d") {
    return 8.64e10L;
  }
  return 0;
}

DurationError Malformed(std::string_view text, const DurationGrammar& grammar) {
  return DurationError{
      DurationProblem::kMalformed,
      fmt::format("bad duration \"{}\": expected a non-negative decimal number and a unit ({}), "
                  "e.g. \"250ms\", or a number of seconds",
                  text, UnitList(grammar))};
}

DurationError TooLarge(std::string_view text) {
  return DurationError{
      DurationProblem::kTooLarge,
      fmt::format("bad duration \"{}\": must be at most {}", text, MaxDurationText())};
}

}  // namespace

Result<Micros, DurationError> ParseDuration(std::string_view text, DurationGrammar grammar) {
  std::size_t i = 0;
  std::uint64_t mantissa = 0;
  int digits = 0;
  int fraction_digits = 0;
  bool seen_point = false;
  bool overflow = false;  // more than 18 digits before the point
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.' && !seen_point) {
      seen_point = true;
      continue;
    }
    if (c < '0' || c > '9') {
      break;
    }
    if (mantissa == 0 && c == '0' && !seen_point) {
      continue;  // leading zeros carry nothing
    }
    if (digits == 18) {
      // A 19th integer digit is beyond any duration; a 19th fraction digit is below 1e-18 of
      // the value: dropping it does not change the rounding to the microsecond (it only lowers
      // the value, and llround rounds halves up).
      overflow = overflow || !seen_point;
      continue;
    }
    ++digits;
    mantissa = mantissa * 10 + static_cast<std::uint64_t>(c - '0');
    if (seen_point) {
      ++fraction_digits;
    }
  }
  // At least one digit, and not a lone ".".
  if (i == 0 || (seen_point && i == 1)) {
    return Malformed(text, grammar);
  }
  const std::string_view unit = text.substr(i);
  long double multiplier = 0;
  if (unit.empty()) {
    if (grammar.bare_number == BareNumber::kRefused) {
      return DurationError{
          DurationProblem::kNeedsUnit,
          fmt::format("bad duration \"{}\": a string needs a unit ({}), e.g. \"{}s\"; a number "
                      "of seconds is written without quotes",
                      text, UnitList(grammar), text)};
    }
    multiplier = 1e6L;
  } else {
    multiplier = MicrosPerUnit(unit, grammar);
    if (multiplier == 0) {
      return Malformed(text, grammar);
    }
  }
  // mantissa * multiplier is exact in a long double (64-bit significand) for the sizes allowed
  // with the tools' units, so the result is rounded once.
  const long double micros =
      static_cast<long double>(mantissa) * multiplier / std::pow(10.0L, fraction_digits);
  if (overflow || micros > static_cast<long double>(kMaxDuration)) {
    return TooLarge(text);
  }
  return static_cast<Micros>(std::llroundl(micros));
}

Result<std::chrono::microseconds, DurationError> ParseFlagDuration(std::string_view text) {
  Result<Micros, DurationError> micros =
      ParseDuration(text, DurationGrammar{BareNumber::kSeconds, /*hours_and_days=*/true});
  if (!micros) {
    return micros.error();
  }
  return std::chrono::microseconds(*micros);
}

Result<Micros, DurationError> SecondsToDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0.0 ||
      seconds > static_cast<double>(kMaxDuration) / 1e6) {
    return DurationError{
        std::isfinite(seconds) && seconds > 0.0 ? DurationProblem::kTooLarge
                                                : DurationProblem::kMalformed,
        fmt::format("bad duration {:g}: a number of seconds must be finite, >= 0 and at most {}",
                    seconds, MaxDurationText())};
  }
  return static_cast<Micros>(std::llround(seconds * 1e6));
}

std::string MaxDurationText() {
  return fmt::format("{} s (about {:.1f} years)", kMaxDuration / kMicrosPerSecond,
                     static_cast<double>(kMaxDuration) / 1e6 / (365.25 * 86400.0));
}

std::string FormatSeconds(Micros micros) {
  const bool negative = micros < 0;
  const std::uint64_t magnitude =
      negative ? static_cast<std::uint64_t>(-(micros + 1)) + 1 : static_cast<std::uint64_t>(micros);
  std::string fraction = fmt::format("{:06}", magnitude % 1'000'000U);
  while (fraction.size() > 1 && fraction.back() == '0') {
    fraction.pop_back();
  }
  return fmt::format("{}{}.{}", negative ? "-" : "", magnitude / 1'000'000U, fraction);
}

}  // namespace fusebox::app

#include "common/duration.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>

namespace fusebox::app {
namespace {

constexpr std::string_view kUnitList = "us, ms, s, m, h, d";

// Microseconds per unit; 0 for anything else.
long double MicrosPerUnit(std::string_view unit) {
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
  if (unit == "h") {
    return 3.6e9L;
  }
  if (unit == "d") {
    return 8.64e10L;
  }
  return 0;
}

DurationError Malformed(std::string_view text) {
  return DurationError{
      DurationProblem::kMalformed,
      fmt::format("bad duration \"{}\": expected a non-negative decimal number and a unit ({}), "
                  "e.g. \"250ms\" or \"2m30s\", or a number of seconds",
                  text, kUnitList)};
}

DurationError OutOfOrder(std::string_view text) {
  return DurationError{
      DurationProblem::kMalformed,
      fmt::format("bad duration \"{}\": the units of a duration go from the largest to the "
                  "smallest, each once, e.g. \"1h30m\" or \"2m30s\"",
                  text)};
}

DurationError TooLarge(std::string_view text) {
  return DurationError{
      DurationProblem::kTooLarge,
      fmt::format("bad duration \"{}\": must be at most {}", text, MaxDurationText())};
}

// One decimal number read from text[i...]: its digits as an integer and how many of them follow
// the point. `digits` is false when there is none (a lone "." included).
struct Decimal {
  std::uint64_t mantissa = 0;
  int fraction_digits = 0;
  bool digits = false;
  bool overflow = false;  // more than 18 digits before the point
};

Decimal ReadDecimal(std::string_view text, std::size_t& i) {
  Decimal d;
  int kept = 0;
  bool seen_point = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.' && !seen_point) {
      seen_point = true;
      continue;
    }
    if (c < '0' || c > '9') {
      break;
    }
    d.digits = true;
    if (d.mantissa == 0 && c == '0' && !seen_point) {
      continue;  // leading zeros carry nothing
    }
    if (kept == 18) {
      // A 19th integer digit is beyond any duration; a 19th fraction digit is below 1e-18 of
      // the value: dropping it does not change the rounding to the microsecond (it only lowers
      // the value, and llround rounds halves up).
      d.overflow = d.overflow || !seen_point;
      continue;
    }
    ++kept;
    d.mantissa = d.mantissa * 10 + static_cast<std::uint64_t>(c - '0');
    if (seen_point) {
      ++d.fraction_digits;
    }
  }
  return d;
}

// The letters of a unit from text[i...] (none when a digit, the end or anything else follows).
std::string_view ReadUnit(std::string_view text, std::size_t& i) {
  const std::size_t begin = i;
  while (i < text.size() &&
         ((text[i] >= 'a' && text[i] <= 'z') || (text[i] >= 'A' && text[i] <= 'Z'))) {
    ++i;
  }
  return text.substr(begin, i - begin);
}

}  // namespace

Result<Micros, DurationError> ParseDuration(std::string_view text, DurationGrammar grammar) {
  // Terms "<decimal><unit>", each unit smaller than the one before; or one bare decimal.
  long double micros = 0;
  long double previous_unit = 0;  // 0 before the first term
  bool overflow = false;
  std::size_t i = 0;
  do {
    const Decimal number = ReadDecimal(text, i);
    if (!number.digits) {
      return Malformed(text);
    }
    const std::string_view unit = ReadUnit(text, i);
    long double multiplier = 0;
    if (unit.empty()) {
      // A bare number: the whole text, and only where a bare number is seconds.
      if (previous_unit != 0 || i != text.size()) {
        return Malformed(text);
      }
      if (grammar.bare_number == BareNumber::kRefused) {
        return DurationError{
            DurationProblem::kNeedsUnit,
            fmt::format("bad duration \"{}\": a string needs a unit ({}), e.g. \"{}s\"; a number "
                        "of seconds is written without quotes",
                        text, kUnitList, text)};
      }
      multiplier = 1e6L;
    } else {
      multiplier = MicrosPerUnit(unit);
      if (multiplier == 0) {
        return Malformed(text);
      }
      if (previous_unit != 0 && multiplier >= previous_unit) {
        return OutOfOrder(text);
      }
      previous_unit = multiplier;
    }
    // mantissa * multiplier is exact in a long double (64-bit significand) for the sizes
    // allowed, and the sum of the terms is rounded once, below.
    micros += static_cast<long double>(number.mantissa) * multiplier /
              std::pow(10.0L, number.fraction_digits);
    overflow = overflow || number.overflow;
  } while (i < text.size());
  if (overflow || micros > static_cast<long double>(kMaxDuration)) {
    return TooLarge(text);
  }
  return static_cast<Micros>(std::llroundl(micros));
}

Result<std::chrono::microseconds, DurationError> ParseFlagDuration(std::string_view text) {
  Result<Micros, DurationError> micros = ParseDuration(text, DurationGrammar{BareNumber::kSeconds});
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

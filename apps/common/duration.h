// apps/common/duration.h
//
// The one duration grammar of the fusebox apps: fusebox-sim scenarios, --param and sweeps,
// vpic-sim flags and schedules, and vin-gateway's flags and config file all read durations here.
//
//   duration := term {term} | decimal                  (no spaces anywhere)
//   term     := decimal unit
//   decimal  := digits ["." digits] | "." digits       (no sign, no exponent)
//   unit     := "d" | "h" | "m" | "s" | "ms" | "us"     (each term's unit smaller than the one
//                                                         before: "1h30m", "2m30s", "1s500ms")
//
//   - A bare decimal ("10", "1.5") means seconds on a command line (flags, --param, sweeps).
//     In a TOML file a string must carry its unit: a number of seconds is a TOML number
//     (`from = 10`), so `from = "10"` is refused (BareNumber::kRefused, see toml_read.h).
//   - The value (the sum of the terms) is rounded once to the nearest microsecond, halves up
//     ("0.0000005s" is 1 us).
//   - Values are in [0, kMaxDuration] (1e9 s, about 31.7 years): every instant of a run stays
//     representable in int64 microseconds. A well-formed value above it is kTooLarge, so that
//     the message can give the range rather than the syntax.
//   - Digits beyond the 18th significant one after the point are read but cannot change the
//     rounding; more than 18 integer digits are kTooLarge.
//
// Errors are values: DurationError says which rule the text broke and carries a message
// ("bad duration \"10 seconds\": expected ...") ready to follow a key.
//
// Example:
//   Result<Micros, DurationError> d = ParseDuration("250ms");      // 250'000
//   auto cooldown = ParseDuration("2m30s");                        // 150'000'000
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "fusebox/status.h"

namespace fusebox::app {

// Durations and instants of the apps: integer microseconds.
using Micros = std::int64_t;

inline constexpr Micros kMicrosPerSecond = 1'000'000;
// The largest duration any app accepts: 1e9 s (about 31.7 years).
inline constexpr Micros kMaxDuration = 1'000'000'000LL * kMicrosPerSecond;

enum class DurationProblem : std::uint8_t {
  kMalformed,  // not the grammar above (or a unit this use does not accept)
  kNeedsUnit,  // a bare number where a unit is required (a TOML string)
  kTooLarge,   // well formed, above kMaxDuration
};

struct DurationError {
  DurationProblem problem = DurationProblem::kMalformed;
  std::string message;  // "bad duration \"...\": why", without a key
};

enum class BareNumber : std::uint8_t {
  kSeconds,  // "10" is 10 s (command lines)
  kRefused,  // a unit is required (strings in TOML files)
};

struct DurationGrammar {
  BareNumber bare_number = BareNumber::kSeconds;
};

// Parses `text` as the banner states.
Result<Micros, DurationError> ParseDuration(std::string_view text, DurationGrammar grammar = {});

// The gateway's entry point: a bare number is seconds; resolution 1 us.
Result<std::chrono::microseconds, DurationError> ParseFlagDuration(std::string_view text);

// A number of seconds (a TOML integer or float) as a duration: finite, >= 0, <= kMaxDuration,
// rounded to the nearest microsecond.
Result<Micros, DurationError> SecondsToDuration(double seconds);

// "1000000000 s (about 31.7 years)": the range's upper end as messages give it.
std::string MaxDurationText();

// Seconds with microsecond precision and no trailing zeros beyond the first decimal:
// 14000000 -> "14.0", 64020000 -> "64.02", 1 -> "0.000001".
std::string FormatSeconds(Micros micros);

}  // namespace fusebox::app

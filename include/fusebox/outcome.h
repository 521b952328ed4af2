// fusebox/outcome.h
//
// What became of an admitted call. Every admitted call ends in exactly one Outcome
// (docs/breaker-rules.md, "Outcomes"):
//   kSuccess  completed before its budget and the classifier accepted it (a sparse but honest
//             answer is a success);
//   kFailure  the classifier rejected it (5xx, network error, reset, unparseable reply, ...);
//   kTimeout  reached its budget and was aborted; a timeout is a failure and is slow;
//   kIgnored  neither: the caller cancelled, or the permit was dropped without an outcome. It
//             releases the permit (a probe slot too) and moves no counter that trips or closes.
//
// A call is additionally *slow* when its duration is >= slow_call_duration; slowness is derived
// by the breaker from the duration, not passed in.
//
// Priorities decide who may take a half-open probe slot: a kBatch call never does unless the
// breaker's `batch_may_probe` is set.
#pragma once

#include <cstdint>
#include <string_view>

namespace fusebox {

enum class Outcome : std::uint8_t { kSuccess, kFailure, kTimeout, kIgnored };

// "success", "failure", "timeout", "ignored".
std::string_view ToString(Outcome outcome) noexcept;

enum class Priority : std::uint8_t { kInteractive, kBatch };

// "interactive", "batch".
std::string_view ToString(Priority priority) noexcept;

}  // namespace fusebox

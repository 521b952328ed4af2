// Signed fleet messages (RedisFleetOptions::secret, docs/fleet.md "Signed messages"): the wire
// form of a transition wrapped with the sender's clock and an HMAC-SHA256 over both,
//
//   fusebox1s <unix ms> <64 hex digits> <the message, fleet.h's wire form>
//
// so that whoever can publish on the Redis channel or write its keys, but does not hold the
// secret, cannot open (or close) a breaker of the fleet, and a recorded message cannot be played
// back once it is older than the bound. Internal to fusebox::redis.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace fusebox::redis_internal {

inline constexpr std::string_view kSignedPrefix = "fusebox1s ";
// What signing adds to a message: the prefix, 20 digits of time, 64 of MAC, two spaces.
inline constexpr std::size_t kSignatureOverhead = kSignedPrefix.size() + 20 + 1 + 64 + 1;

std::string SignFleetMessage(std::string_view secret, std::int64_t now_ms,
                             std::string_view message);

enum class SignatureCheck : std::uint8_t {
  kOk,
  kUnsigned,  // not in the signed form (or not well formed)
  kBadMac,    // signed with another secret, or altered
  kTooOld,    // older than max_age_ms: a recording played back
  kFuture,    // more than max_skew_ms ahead of this clock
};

struct VerifiedMessage {
  SignatureCheck check = SignatureCheck::kUnsigned;
  std::string_view message;  // the inner message when kOk (a view into the text)
};

// Checks `text`: its MAC (compared in constant time) first, then its time against `now_ms`.
VerifiedMessage VerifyFleetMessage(std::string_view secret, std::string_view text,
                                   std::int64_t now_ms, std::int64_t max_age_ms,
                                   std::int64_t max_skew_ms);

}  // namespace fusebox::redis_internal

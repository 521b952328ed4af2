#include "fleet_signature.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <array>
#include <charconv>
#include <system_error>

namespace fusebox::redis_internal {
namespace {

// HMAC-SHA256 of "<ms> <message>" as 64 lower-case hex digits ("" if OpenSSL fails).
std::string Mac(std::string_view secret, std::string_view ms, std::string_view message) {
  std::string data;
  data.reserve(ms.size() + 1 + message.size());
  data.append(ms).append(" ").append(message);
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
           reinterpret_cast<const unsigned char*>(data.data()), data.size(),  // NOLINT
           digest.data(), &length) == nullptr) {
    return {};
  }
  constexpr std::string_view kHex = "0123456789abcdef";
  std::string hex;
  hex.reserve(static_cast<std::size_t>(length) * 2);
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4U];
    hex += kHex[digest[i] & 0xFU];
  }
  return hex;
}

}  // namespace

std::string SignFleetMessage(std::string_view secret, std::int64_t now_ms,
                             std::string_view message) {
  const std::string ms = std::to_string(now_ms);
  std::string out(kSignedPrefix);
  out.append(ms).append(" ").append(Mac(secret, ms, message)).append(" ").append(message);
  return out;
}

VerifiedMessage VerifyFleetMessage(std::string_view secret, std::string_view text,
                                   std::int64_t now_ms, std::int64_t max_age_ms,
                                   std::int64_t max_skew_ms) {
  if (!text.starts_with(kSignedPrefix)) {
    return {};
  }
  std::string_view rest = text.substr(kSignedPrefix.size());
  const std::size_t space = rest.find(' ');
  if (space == std::string_view::npos || space == 0 || space > 20) {
    return {};
  }
  const std::string_view ms = rest.substr(0, space);
  std::int64_t sent_ms = 0;
  const auto [end, ec] = std::from_chars(ms.data(), ms.data() + ms.size(), sent_ms);
  if (ec != std::errc() || end != ms.data() + ms.size()) {
    return {};
  }
  rest = rest.substr(space + 1);
  if (rest.size() < 65 || rest[64] != ' ') {
    return {};
  }
  const std::string_view mac = rest.substr(0, 64);
  const std::string_view message = rest.substr(65);
  const std::string expected = Mac(secret, ms, message);
  if (expected.size() != mac.size() ||
      CRYPTO_memcmp(expected.data(), mac.data(), mac.size()) != 0) {
    return {SignatureCheck::kBadMac, {}};
  }
  // Only a message whose MAC holds has a time worth reading.
  // now_ms and the bounds are sane (a clock, hours): these sums cannot overflow, whatever the
  // sender wrote (a MAC over a time of -2^63 still compares without arithmetic on it).
  if (sent_ms > now_ms + max_skew_ms) {
    return {SignatureCheck::kFuture, {}};
  }
  if (sent_ms < now_ms - max_age_ms) {
    return {SignatureCheck::kTooOld, {}};
  }
  return {SignatureCheck::kOk, message};
}

}  // namespace fusebox::redis_internal

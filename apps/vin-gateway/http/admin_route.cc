#include "http/admin_route.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <array>
#include <memory>

#include <fmt/format.h>

#include "http/status_route.h"

namespace vin_gateway {

bool BearerMatches(std::string_view authorization, std::string_view token) {
  constexpr std::string_view kPrefix = "Bearer ";
  std::string_view presented;
  if (authorization.size() >= kPrefix.size() &&
      authorization.substr(0, kPrefix.size()) == kPrefix) {
    presented = authorization.substr(kPrefix.size());
  }
  std::array<unsigned char, SHA256_DIGEST_LENGTH> want{};
  std::array<unsigned char, SHA256_DIGEST_LENGTH> got{};
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), want.data());
  SHA256(reinterpret_cast<const unsigned char*>(presented.data()), presented.size(), got.data());
  const bool same = CRYPTO_memcmp(want.data(), got.data(), want.size()) == 0;
  return same && !token.empty() && !presented.empty();
}

std::optional<HttpResponse> AdminAuthRefusal(const std::optional<std::string>& admin_token,
                                             std::string_view authorization) {
  if (!admin_token) {
    return ErrorResponse(TransportStatus::kNotFound);
  }
  if (!BearerMatches(authorization, *admin_token)) {
    HttpResponse refused = ErrorResponse(TransportStatus::kUnauthorized);
    refused.headers.emplace_back("WWW-Authenticate", "Bearer");
    return refused;
  }
  return std::nullopt;
}

HttpResponse AdminCommand(fusebox::Registry& registry, std::string_view name,
                          std::string_view command) {
  std::shared_ptr<fusebox::CircuitBreaker> breaker = registry.Find(std::string(name));
  if (!breaker) {
    return ErrorResponse(TransportStatus::kNotFound, fmt::format("No breaker named '{}'.", name));
  }
  if (command == "force-open") {
    breaker->ForceOpen();
  } else if (command == "force-close") {
    breaker->ForceClose();
  } else if (command == "disable") {
    breaker->Disable();
  } else if (command == "metrics-only") {
    breaker->MetricsOnly();
  } else if (command == "reset") {
    breaker->Reset();
  } else {
    return ErrorResponse(TransportStatus::kNotFound,
                         "Commands: force-open, force-close, disable, metrics-only, reset.");
  }
  boost::json::object body =
      StatusJson(TransportStatus::kOk, fmt::format("Breaker '{}': {}.", name, command));
  body["breaker"] = BreakerJson(*breaker);
  return JsonResponse(200, body, "OK");
}

}  // namespace vin_gateway

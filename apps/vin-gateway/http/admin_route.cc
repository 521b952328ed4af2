#include "http/admin_route.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <algorithm>
#include <array>
#include <memory>
#include <utility>

#include <fmt/format.h>

#include "core/decode.h"
#include "http/status_route.h"

namespace fusebox::gateway {
namespace {

AdminThrottleOptions Normalized(AdminThrottleOptions options) {
  options.max_failures = std::max<std::uint32_t>(1, options.max_failures);
  options.max_addresses = std::max<std::size_t>(1, options.max_addresses);
  return options;
}

}  // namespace

bool BearerMatches(std::string_view authorization, std::string_view token) {
  // credentials = auth-scheme [ 1*SP ( token68 / #auth-param ) ] (RFC 9110 11.4), and the scheme
  // is case-insensitive (11.1): "bearer  abc" presents "abc" as "Bearer abc" does.
  constexpr std::string_view kScheme = "bearer";
  std::string_view presented;
  const bool scheme_matches =
      authorization.size() > kScheme.size() && authorization[kScheme.size()] == ' ' &&
      std::equal(kScheme.begin(), kScheme.end(), authorization.begin(),
                 [](char want, char got) { return want == (got | 0x20); });  // letters only
  if (scheme_matches) {
    presented = authorization.substr(kScheme.size());
    presented.remove_prefix(std::min(presented.find_first_not_of(' '), presented.size()));
  }
  std::array<unsigned char, SHA256_DIGEST_LENGTH> want{};
  std::array<unsigned char, SHA256_DIGEST_LENGTH> got{};
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), want.data());
  SHA256(reinterpret_cast<const unsigned char*>(presented.data()), presented.size(), got.data());
  const bool same = CRYPTO_memcmp(want.data(), got.data(), want.size()) == 0;
  return same && !token.empty() && !presented.empty();
}

AdminThrottle::AdminThrottle(fusebox::Clock& clock, AdminThrottleOptions options,
                             std::function<void(std::string_view)> on_episode)
    : clock_(clock), options_(Normalized(options)), on_episode_(std::move(on_episode)) {}

std::optional<fusebox::Duration> AdminThrottle::LockedOut(std::string_view client) {
  const fusebox::TimePoint now = clock_.Now();
  fusebox::Locked lock(mu_);
  auto it = entries_.find(std::string(client));
  if (it == entries_.end() || !it->second.locked_until) {
    return std::nullopt;
  }
  if (now >= *it->second.locked_until) {
    entries_.erase(it);  // the episode is over: a fresh start
    return std::nullopt;
  }
  ++refused_;
  return *it->second.locked_until - now;
}

void AdminThrottle::RecordFailure(std::string_view client) {
  const fusebox::TimePoint now = clock_.Now();
  std::string episode;
  {
    fusebox::Locked lock(mu_);
    auto it = entries_.find(std::string(client));
    if (it == entries_.end()) {
      if (entries_.size() >= options_.max_addresses) {
        MakeRoomLocked(now);
      }
      it = entries_.emplace(std::string(client), Entry{now, now, 0, std::nullopt}).first;
    }
    Entry& entry = it->second;
    if (entry.locked_until) {
      return;  // already locked out (the caller asks LockedOut first)
    }
    if (now - entry.window_start >= options_.window) {
      entry.window_start = now;
      entry.failures = 0;
    }
    ++entry.failures;
    entry.last_failure = now;
    if (entry.failures >= options_.max_failures) {
      entry.locked_until = now + options_.lockout;
      episode = fmt::format(
          "admin: {} failed bearer attempts from {} within {}s; refusing its admin requests "
          "(429) for {}s",
          entry.failures, SanitizeUtf8(client.substr(0, 64)),
          std::chrono::ceil<std::chrono::seconds>(options_.window).count(),
          std::chrono::ceil<std::chrono::seconds>(options_.lockout).count());
    }
  }
  if (!episode.empty() && on_episode_) {
    on_episode_(episode);
  }
}

void AdminThrottle::RecordSuccess(std::string_view client) {
  fusebox::Locked lock(mu_);
  entries_.erase(std::string(client));
}

void AdminThrottle::MakeRoomLocked(fusebox::TimePoint now) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    const Entry& entry = it->second;
    const bool over = entry.locked_until ? now >= *entry.locked_until
                                         : now - entry.window_start >= options_.window;
    it = over ? entries_.erase(it) : std::next(it);
  }
  if (entries_.size() < options_.max_addresses) {
    return;
  }
  // Every address is active: forget the one that failed least recently, locked-out ones last, so
  // that spraying new addresses does not free an address that is locked out.
  auto victim =
      std::min_element(entries_.begin(), entries_.end(), [](const auto& a, const auto& b) {
        const bool a_locked = a.second.locked_until.has_value();
        const bool b_locked = b.second.locked_until.has_value();
        if (a_locked != b_locked) {
          return !a_locked;
        }
        return a.second.last_failure < b.second.last_failure;
      });
  entries_.erase(victim);
}

std::size_t AdminThrottle::tracked_addresses() const {
  fusebox::Locked lock(mu_);
  return entries_.size();
}

std::uint64_t AdminThrottle::refused() const {
  fusebox::Locked lock(mu_);
  return refused_;
}

std::optional<HttpResponse> AdminAuthRefusal(const std::optional<std::string>& admin_token,
                                             std::string_view authorization,
                                             AdminThrottle& throttle, std::string_view client) {
  if (!admin_token) {
    return ErrorResponse(TransportStatus::kNotFound);
  }
  if (std::optional<fusebox::Duration> wait = throttle.LockedOut(client)) {
    HttpResponse refused = ErrorResponse(TransportStatus::kTooManyAttempts);
    refused.headers.emplace_back("Retry-After",
                                 std::to_string(std::max<std::int64_t>(
                                     1, std::chrono::ceil<std::chrono::seconds>(*wait).count())));
    return refused;
  }
  if (!BearerMatches(authorization, *admin_token)) {
    throttle.RecordFailure(client);
    HttpResponse refused = ErrorResponse(TransportStatus::kUnauthorized);
    refused.headers.emplace_back("WWW-Authenticate", "Bearer");
    return refused;
  }
  throttle.RecordSuccess(client);
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

}  // namespace fusebox::gateway

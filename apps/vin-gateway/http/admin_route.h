// vin-gateway/http/admin_route.h
//
// POST /admin/breakers/{name}/{command}: an operator's override of one breaker (force-open,
// force-close, disable, metrics-only, reset). Guarded by a bearer token (FUSEBOX_ADMIN_TOKEN):
//   no token configured        -> NOT_FOUND (404): the routes do not exist
//   address throttled          -> TOO_MANY_ATTEMPTS (429) with Retry-After, whatever the token
//   token missing or wrong     -> UNAUTHORIZED (401) with `WWW-Authenticate: Bearer`
//   unknown breaker or command -> NOT_FOUND (404) naming what exists
// The token is compared in constant time (SHA-256 digests, CRYPTO_memcmp), so the time taken says
// nothing about the token. The answer shows the breaker after the command.
//
// Brute force (AdminThrottle): failed bearer attempts are counted per client address (the request's
// client key, client_address.h: an IPv6 client's /64 by default); an address
// with `max_failures` failures within `window` is refused (429, even with the right token) for
// `lockout`, and one log line marks the start of each such episode. The table of addresses is
// bounded (`max_addresses`): spraying addresses costs a fixed amount of memory; when it is full,
// the address that failed least recently and is not locked out is forgotten first.
//
// Thread safety: safe for concurrent use (the registry and breakers are; AdminThrottle has one
// mutex). Time: AdminThrottle reads only the injected fusebox::Clock.
//
// Example:
//   if (auto refused = AdminAuthRefusal(deps.admin_token, request.authorization,
//                                       deps.admin_throttle, request.client)) {
//     co_return *refused;
//   }
//   co_return AdminCommand(deps.registry, name, command);
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "fusebox/clock.h"
#include "fusebox/registry.h"
#include "fusebox/thread_annotations.h"
#include "http/http_message.h"

namespace fusebox::gateway {

struct AdminThrottleOptions {
  std::uint32_t max_failures = 10;  // failed attempts per address per window
  fusebox::Duration window = std::chrono::minutes(1);
  fusebox::Duration lockout = std::chrono::minutes(5);
  std::size_t max_addresses = 1024;  // bounds the table (about 100 bytes per address)
};

class AdminThrottle {
 public:
  // `on_episode` receives one sentence when an address starts being locked out (may be empty).
  AdminThrottle(fusebox::Clock& clock, AdminThrottleOptions options = {},
                std::function<void(std::string_view)> on_episode = {});

  // The time until `client` may try again; nullopt when it may try now.
  std::optional<fusebox::Duration> LockedOut(std::string_view client);
  // A wrong or missing bearer from `client`.
  void RecordFailure(std::string_view client);
  // The right bearer from `client`: its failures are forgotten.
  void RecordSuccess(std::string_view client);

  std::size_t tracked_addresses() const;
  std::uint64_t refused() const;

 private:
  struct Entry {
    fusebox::TimePoint window_start{};
    fusebox::TimePoint last_failure{};
    std::uint32_t failures = 0;
    std::optional<fusebox::TimePoint> locked_until;
  };
  void MakeRoomLocked(fusebox::TimePoint now) FUSEBOX_REQUIRES(mu_);

  fusebox::Clock& clock_;
  const AdminThrottleOptions options_;
  const std::function<void(std::string_view)> on_episode_;
  mutable fusebox::Mutex mu_;
  std::unordered_map<std::string, Entry> entries_ FUSEBOX_GUARDED_BY(mu_);
  std::uint64_t refused_ FUSEBOX_GUARDED_BY(mu_) = 0;
};

// Whether `authorization` is "Bearer <token>" with exactly `token`: the scheme in any case
// ("bearer", "BEARER"), then one or more spaces (RFC 9110 11.1, 11.4). Compares SHA-256 digests
// with CRYPTO_memcmp, so the time taken says nothing about the token.
bool BearerMatches(std::string_view authorization, std::string_view token);

// The refusal of an admin request (404 without a token configured, 429 while `client` is locked
// out, 401 when the bearer does not match); nullopt when the request may go on. Records the
// attempt's outcome in `throttle`.
std::optional<HttpResponse> AdminAuthRefusal(const std::optional<std::string>& admin_token,
                                             std::string_view authorization,
                                             AdminThrottle& throttle, std::string_view client);

// Runs `command` on the breaker `name`.
HttpResponse AdminCommand(fusebox::Registry& registry, std::string_view name,
                          std::string_view command);

}  // namespace fusebox::gateway

// vin-gateway/http/admin_route.h
//
// POST /admin/breakers/{name}/{command}: an operator's override of one breaker (force-open,
// force-close, disable, metrics-only, reset). Guarded by a bearer token (FUSEBOX_ADMIN_TOKEN):
//   no token configured        -> NOT_FOUND (404): the routes do not exist
//   token missing or wrong     -> UNAUTHORIZED (401) with `WWW-Authenticate: Bearer`
//   unknown breaker or command -> NOT_FOUND (404) naming what exists
// The token is compared in constant time (SHA-256 digests, CRYPTO_memcmp), so the time taken says
// nothing about the token. The answer shows the breaker after the command.
//
// Thread safety: safe for concurrent use (the registry and breakers are). Time: none.
//
// Example:
//   if (auto refused = AdminAuthRefusal(deps.admin_token, request.authorization)) {
//     co_return *refused;
//   }
//   co_return AdminCommand(deps.registry, name, command);
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "fusebox/registry.h"
#include "http/http_message.h"

namespace vin_gateway {

// Whether `authorization` is "Bearer <token>" with exactly `token`. Compares SHA-256 digests with
// CRYPTO_memcmp, so the time taken says nothing about the token.
bool BearerMatches(std::string_view authorization, std::string_view token);

// The refusal of an admin request (404 without a token configured, 401 when the bearer does not
// match); nullopt when the request may go on.
std::optional<HttpResponse> AdminAuthRefusal(const std::optional<std::string>& admin_token,
                                             std::string_view authorization);

// Runs `command` on the breaker `name`.
HttpResponse AdminCommand(fusebox::Registry& registry, std::string_view name,
                          std::string_view command);

}  // namespace vin_gateway

// vin-gateway/http/static_assets.h
//
// The web page and its assets (web_assets.h, compiled in) as HTTP responses:
//   - the page (`/`, `/index.html`) carries a strict Content-Security-Policy (only what the
//     gateway serves, no inline script or style), no-referrer and frame denial (nosniff is on
//     every answer the server writes: request_framing.h);
//   - every response has a strong ETag; a matching If-None-Match (RFC 9110 13.1.2: "*" or a list
//     of entity tags, compared weakly) is answered 304 without a body;
//   - versioned paths (`/assets/app.<hash>.js`) name their content, so they are cacheable for good
//     (`immutable`); plain paths and the page are revalidated every time (`no-cache`).
//
// Thread safety: pure functions over immutable data. Time: none.
//
// Example:
//   if (const WebAsset* asset = FindWebAsset(path)) {
//     co_return AssetResponse(*asset, path, request.if_none_match);
//   }
#pragma once

#include <string_view>

#include "http/http_message.h"
#include "http/web_assets.h"

namespace fusebox::gateway {

// The page's Content-Security-Policy.
extern const std::string_view kPagePolicy;

// Whether an If-None-Match value matches `etag` (weak comparison; "*" matches anything).
bool EtagListMatches(std::string_view if_none_match, std::string_view etag);

// `asset` served at `requested_path` (its plain or its versioned path).
HttpResponse AssetResponse(const WebAsset& asset, std::string_view requested_path,
                           std::string_view if_none_match);

}  // namespace fusebox::gateway

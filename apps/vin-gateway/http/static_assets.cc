#include "http/static_assets.h"

#include <string>

namespace fusebox::gateway {

// The page may load only what the gateway serves, and runs no inline script or style.
const std::string_view kPagePolicy =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'";

bool EtagListMatches(std::string_view list, std::string_view etag) {
  const auto opaque = [](std::string_view tag) {
    return tag.substr(0, 2) == "W/" ? tag.substr(2) : tag;
  };
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) {
      item.remove_prefix(1);
    }
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) {
      item.remove_suffix(1);
    }
    if (item == "*" || (!item.empty() && opaque(item) == opaque(etag))) {
      return true;
    }
  }
  return false;
}

HttpResponse AssetResponse(const WebAsset& asset, std::string_view requested_path,
                           std::string_view if_none_match) {
  HttpResponse response;
  response.content_type = std::string(asset.content_type);
  response.log_status = "OK";
  if (!if_none_match.empty() && EtagListMatches(if_none_match, asset.etag)) {
    // The browser's copy is current: headers only (a 304 has no body).
    response.status = 304;
  } else {
    response.body = std::string(asset.body);
  }
  const bool versioned = requested_path != asset.path;
  response.headers.emplace_back("Cache-Control",
                                versioned ? "public, max-age=31536000, immutable" : "no-cache");
  response.headers.emplace_back("ETag", std::string(asset.etag));
  if (asset.path == "/index.html") {
    response.headers.emplace_back("Content-Security-Policy", std::string(kPagePolicy));
    response.headers.emplace_back("Referrer-Policy", "no-referrer");
    response.headers.emplace_back("X-Frame-Options", "DENY");
  }
  return response;
}

}  // namespace fusebox::gateway

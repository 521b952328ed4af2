// vin-gateway/http/web_assets.h
//
// The web page (apps/vin-gateway/web/: index.html, app.js, style.css, icon.svg), compiled into the
// binary so that the gateway serves it from any working directory and after `cmake --install`.
// The table is generated at build time by embed_web_assets.cmake (re-run when an asset changes).
//
// Every asset but the page has two paths: its plain one (`/assets/app.js`) and a versioned one
// carrying a hash of its content (`/assets/app.1a2b3c4d5e6f.js`). The embedded index.html refers
// to the versioned paths, so browsers may keep assets forever (`immutable`) and still never run an
// old script against a new page. The page itself is `/` (and `/index.html`).
//
// Thread safety: immutable data. Time: none.
//
// Example:
//   if (const WebAsset* asset = FindWebAsset("/assets/app.1a2b3c4d5e6f.js")) {
//     Respond(asset->content_type, asset->body, asset->etag);
//   }
#pragma once

#include <span>
#include <string_view>

namespace fusebox::gateway {

struct WebAsset {
  std::string_view path;            // "/index.html", "/assets/app.js"
  std::string_view versioned_path;  // "/assets/app.1a2b3c4d5e6f.js"; equals `path` for the page
  std::string_view content_type;    // "text/javascript; charset=utf-8"
  std::string_view body;
  std::string_view etag;  // a strong validator: "\"<16 hex digits of SHA-256>\""
};

// Every embedded asset, the page first.
std::span<const WebAsset> WebAssets() noexcept;

// The asset served at `path` (plain or versioned); nullptr when there is none.
const WebAsset* FindWebAsset(std::string_view path) noexcept;

}  // namespace fusebox::gateway

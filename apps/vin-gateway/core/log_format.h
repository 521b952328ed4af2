// vin-gateway/core/log_format.h
//
// How the gateway writes its log lines (the one line per request and the process's events):
// logfmt text for people or one JSON object per line for collectors. Chosen by configuration
// (--log-format) and applied by the HTTP layer's access log (http/access_log.h); it lives here,
// in the bottom layer, so that both can name it without depending on each other.
//
// Thread safety: a value type. Time: none.
//
// Example:
//   std::string line = FormatEvent("info", "listening", LogFormat::kJson, wall_clock.Now());
#pragma once

#include <cstdint>

namespace fusebox::gateway {

enum class LogFormat : std::uint8_t { kText, kJson };

}  // namespace fusebox::gateway

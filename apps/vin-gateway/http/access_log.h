// vin-gateway/http/access_log.h
//
// The one structured log line per request: request id, method, target, client, HTTP status,
// gateway status, VIN, source, upstream latency and total time. `text` is logfmt-style
// `key=value` pairs (values with spaces quoted); `json` is one JSON object per line.
//
// Thread safety: pure functions. Time: `now` is the caller's (the line's timestamp).
//
// Example:
//   spdlog::info(FormatAccessRecord(record, LogFormat::kJson, wall_clock.Now()));
#pragma once

#include <string>
#include <string_view>

#include "core/log_format.h"
#include "core/wall_clock.h"
#include "http/http_server.h"

namespace vin_gateway {

std::string FormatAccessRecord(const AccessRecord& record, LogFormat format, WallTime now);

// A non-request event ("listening", "cache broken", "draining") in the same format.
std::string FormatEvent(std::string_view level, std::string_view message, LogFormat format,
                        WallTime now);

}  // namespace vin_gateway

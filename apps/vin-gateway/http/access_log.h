// vin-gateway/http/access_log.h
//
// The one structured log line per request: request id, method, target, client, HTTP status,
// gateway status, VIN, source, upstream latency and total time (and a note when the connection
// was cut off or timed out). `text` is logfmt-style `key=value` pairs (values with spaces
// quoted); `json` is one JSON object per line. Every field is bounded (a client cannot make a line
// long: a 4,000-byte method is logged as its first 32 bytes and "..."), so a line stays under
// about 1.5 KB. No line holds a control character (C0, DEL, C1) or U+2028 / U+2029 as it is, in
// either format, in a request line or an event: a terminal would take the controls as commands
// (U+009B starts an escape sequence) and log viewers the separators as line breaks. `text` writes
// them as "\x1b", "\x7f", "\u009b", "\u2028" (within quotes in a value), `json` as "\u001b",
// "\u007f", "\u009b", "\u2028". Invalid UTF-8 becomes U+FFFD (SanitizeUtf8).
//
// Thread safety: pure functions. Time: `now` is the caller's (the line's timestamp).
//
// Example:
//   log_writer.Write(FormatAccessRecord(record, LogFormat::kJson, wall_clock.Now()));
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/log_format.h"
#include "core/wall_clock.h"
#include "http/http_server.h"

namespace fusebox::gateway {

// The longest target kept in a log line, in bytes.
inline constexpr std::size_t kMaxLoggedTarget = 256;

// `value` when it has at most `max_bytes` bytes; else its first `max_bytes` bytes and "...".
std::string BoundedLogField(std::string_view value, std::size_t max_bytes);

std::string FormatAccessRecord(const AccessRecord& record, LogFormat format, WallTime now);

// The line of a request's own upstream call that ended after its request was answered (the
// answer deadline's UPSTREAM_LATE; DecodeServiceDeps::on_late_call): event `upstream_call` with
// the VIN, `upstream` "call", `upstream_outcome`, `upstream_ms` and `upstream_error` as the
// request's line would have had them. The line's time is the call's end.
std::string FormatLateCall(std::string_view vin, fusebox::Duration latency,
                           std::string_view outcome, std::string_view detail, LogFormat format,
                           WallTime now);

// A non-request event ("listening", "cache broken", "draining") in the same format.
std::string FormatEvent(std::string_view level, std::string_view message, LogFormat format,
                        WallTime now);

}  // namespace fusebox::gateway

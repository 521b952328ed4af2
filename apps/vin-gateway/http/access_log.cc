#include "http/access_log.h"

#include <chrono>

#include <fmt/format.h>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include "core/decode.h"

namespace vin_gateway {
namespace {

std::string Timestamp(WallTime now) {
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::string base = FormatRfc3339(now);  // ...Z
  base.pop_back();
  return fmt::format("{}.{:03}Z", base, ms);
}

double Millis(fusebox::Duration d) { return fusebox::ToSeconds(d) * 1000.0; }

// logfmt value: bare when plain, else quoted with \" and \\ escaped.
std::string Value(std::string_view v) {
  bool plain = !v.empty();
  for (char c : v) {
    if (c == ' ' || c == '"' || c == '=' || c == '\\' || static_cast<unsigned char>(c) < 0x20) {
      plain = false;
      break;
    }
  }
  if (plain) {
    return std::string(v);
  }
  std::string out = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

}  // namespace

std::string FormatAccessRecord(const AccessRecord& r, LogFormat format, WallTime now) {
  if (format == LogFormat::kJson) {
    boost::json::object o;
    o["ts"] = Timestamp(now);
    o["level"] = "info";
    o["event"] = "request";
    o["request_id"] = r.request_id;
    o["method"] = r.method;
    o["target"] = SanitizeUtf8(r.target);
    o["client"] = r.client;
    o["http_status"] = r.http_status;
    o["status"] = r.status;
    o["vin"] = SanitizeUtf8(r.vin);
    o["source"] = r.source;
    if (r.upstream_latency) {
      o["upstream_ms"] = Millis(*r.upstream_latency);
    } else {
      o["upstream_ms"] = nullptr;
    }
    o["elapsed_ms"] = Millis(r.elapsed);
    if (!r.detail.empty()) {
      o["upstream_error"] = SanitizeUtf8(r.detail);
    }
    return boost::json::serialize(o);
  }
  std::string line = fmt::format(
      "{} info request id={} method={} target={} client={} http={} status={} vin={} source={}",
      Timestamp(now), Value(r.request_id), Value(r.method), Value(SanitizeUtf8(r.target)),
      Value(r.client), r.http_status, Value(r.status), Value(SanitizeUtf8(r.vin)), Value(r.source));
  if (r.upstream_latency) {
    line += fmt::format(" upstream_ms={:.1f}", Millis(*r.upstream_latency));
  } else {
    line += " upstream_ms=-";
  }
  line += fmt::format(" elapsed_ms={:.2f}", Millis(r.elapsed));
  if (!r.detail.empty()) {
    line += fmt::format(" upstream_error={}", Value(SanitizeUtf8(r.detail)));
  }
  return line;
}

std::string FormatEvent(std::string_view level, std::string_view message, LogFormat format,
                        WallTime now) {
  if (format == LogFormat::kJson) {
    boost::json::object o;
    o["ts"] = Timestamp(now);
    o["level"] = level;
    o["event"] = "message";
    o["message"] = SanitizeUtf8(message);
    return boost::json::serialize(o);
  }
  return fmt::format("{} {} {}", Timestamp(now), level, SanitizeUtf8(message));
}

}  // namespace vin_gateway

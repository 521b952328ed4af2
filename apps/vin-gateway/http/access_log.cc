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

std::string BoundedLogField(std::string_view value, std::size_t max_bytes) {
  if (value.size() <= max_bytes) {
    return std::string(value);
  }
  std::string out(value.substr(0, max_bytes));
  out += "...";
  return out;
}

std::string FormatAccessRecord(const AccessRecord& record, LogFormat format, WallTime now) {
  // Each field bounded, whoever filled the record (SanitizeUtf8 mends a cut UTF-8 sequence).
  AccessRecord r;
  r.request_id = BoundedLogField(record.request_id, 64);
  r.method = BoundedLogField(record.method, 32);
  r.target = BoundedLogField(record.target, kMaxLoggedTarget);
  r.client = BoundedLogField(record.client, 64);
  r.http_status = record.http_status;
  r.status = BoundedLogField(record.status, 32);
  r.vin = BoundedLogField(record.vin, 64);
  r.source = BoundedLogField(record.source, 32);
  r.upstream_latency = record.upstream_latency;
  r.detail = BoundedLogField(record.detail, 512);
  r.note = BoundedLogField(record.note, 128);
  r.elapsed = record.elapsed;
  if (format == LogFormat::kJson) {
    boost::json::object o;
    o["ts"] = Timestamp(now);
    o["level"] = "info";
    o["event"] = "request";
    o["request_id"] = r.request_id;
    o["method"] = SanitizeUtf8(r.method);
    o["target"] = SanitizeUtf8(r.target);
    o["client"] = SanitizeUtf8(r.client);
    o["http_status"] = r.http_status;
    o["status"] = SanitizeUtf8(r.status);
    o["vin"] = SanitizeUtf8(r.vin);
    o["source"] = SanitizeUtf8(r.source);
    if (r.upstream_latency) {
      o["upstream_ms"] = Millis(*r.upstream_latency);
    } else {
      o["upstream_ms"] = nullptr;
    }
    o["elapsed_ms"] = Millis(r.elapsed);
    if (!r.detail.empty()) {
      o["upstream_error"] = SanitizeUtf8(r.detail);
    }
    if (!r.note.empty()) {
      o["note"] = SanitizeUtf8(r.note);
    }
    return boost::json::serialize(o);
  }
  std::string line = fmt::format(
      "{} info request id={} method={} target={} client={} http={} status={} vin={} source={}",
      Timestamp(now), Value(SanitizeUtf8(r.request_id)), Value(SanitizeUtf8(r.method)),
      Value(SanitizeUtf8(r.target)), Value(SanitizeUtf8(r.client)), r.http_status,
      Value(SanitizeUtf8(r.status)), Value(SanitizeUtf8(r.vin)), Value(SanitizeUtf8(r.source)));
  if (r.upstream_latency) {
    line += fmt::format(" upstream_ms={:.1f}", Millis(*r.upstream_latency));
  } else {
    line += " upstream_ms=-";
  }
  line += fmt::format(" elapsed_ms={:.2f}", Millis(r.elapsed));
  if (!r.detail.empty()) {
    line += fmt::format(" upstream_error={}", Value(SanitizeUtf8(r.detail)));
  }
  if (!r.note.empty()) {
    line += fmt::format(" note={}", Value(SanitizeUtf8(r.note)));
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

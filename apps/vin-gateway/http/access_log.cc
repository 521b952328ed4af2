#include "http/access_log.h"

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iterator>

#include <fmt/compile.h>
#include <fmt/format.h>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include "core/decode.h"

namespace vin_gateway {
namespace {

// "2024-05-01T12:34:56.789Z". The part up to the second is formatted once a second per thread
// (a busy gateway writes thousands of lines a second).
std::string Timestamp(WallTime now) {
  struct Second {
    std::chrono::seconds::rep at = -1;
    std::string text;  // "2024-05-01T12:34:56"
  };
  thread_local Second second;
  const auto since_epoch = now.time_since_epoch();
  const auto ms_total = std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch).count();
  // Whole seconds, rounded down (also before 1970), as FormatRfc3339 prints them.
  const auto at = std::chrono::floor<std::chrono::seconds>(since_epoch).count();
  if (at != second.at) {
    second.text = FormatRfc3339(now);  // ...Z
    second.text.pop_back();
    second.at = at;
  }
  const auto ms = ms_total % 1000;
  if (ms < 0) {
    return fmt::format("{}.{:03}Z", second.text, ms);  // before 1970: as it always was
  }
  std::string out;
  out.reserve(second.text.size() + 5);
  out += second.text;
  out += '.';
  out += static_cast<char>('0' + (ms / 100) % 10);
  out += static_cast<char>('0' + (ms / 10) % 10);
  out += static_cast<char>('0' + ms % 10);
  out += 'Z';
  return out;
}

double Millis(fusebox::Duration d) { return fusebox::ToSeconds(d) * 1000.0; }

// Appends the logfmt value of `v`, bounded to `max_bytes` and sanitized (BoundedLogField, then
// SanitizeUtf8), to `out`: bare when plain, else quoted with \" and \\ escaped. A short ASCII
// value, the usual case, costs no allocation.
void AppendValue(std::string& out, std::string_view v, std::size_t max_bytes);

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

// What a byte asks of a logfmt value: nothing, quotes (Value), or the sanitizing path.
constexpr std::uint8_t kNeedsQuotes = 1;
constexpr std::uint8_t kNotAscii = 2;
constexpr std::array<std::uint8_t, 256> kByteNeeds = [] {
  std::array<std::uint8_t, 256> needs{};
  for (std::size_t b = 0; b < needs.size(); ++b) {
    if (b >= 0x80) {
      needs[b] = kNotAscii;
    } else if (b < 0x20 || b == ' ' || b == '"' || b == '=' || b == '\\') {
      needs[b] = kNeedsQuotes;
    }
  }
  return needs;
}();

// One table lookup per byte: the line's seven values are most of its bytes.
void AppendValue(std::string& out, std::string_view v, std::size_t max_bytes) {
  std::uint8_t needs = 0;
  for (char c : v) {
    needs |= kByteNeeds[static_cast<unsigned char>(c)];
  }
  if ((needs & kNotAscii) != 0 || v.size() > max_bytes) {
    out += Value(SanitizeUtf8(BoundedLogField(v, max_bytes)));
  } else if (needs == 0 && !v.empty()) {
    out += v;
  } else {
    out += Value(v);
  }
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

// FMT_COMPILE: the three number fields of the text line are formatted without parsing their
// format strings at run time (under callgrind, parsing them was a quarter of the line's cost).
std::string FormatAccessRecord(const AccessRecord& record, LogFormat format, WallTime now) {
  if (format != LogFormat::kJson) {
    // The same line as the JSON path's fields would give, each bounded and sanitized, appended in
    // place (one allocation for the line in the usual case).
    std::string line;
    line.reserve(256);
    line += Timestamp(now);
    line += " info request id=";
    AppendValue(line, record.request_id, 64);
    line += " method=";
    AppendValue(line, record.method, 32);
    line += " target=";
    AppendValue(line, record.target, kMaxLoggedTarget);
    line += " client=";
    AppendValue(line, record.client, 64);
    fmt::format_to(std::back_inserter(line), FMT_COMPILE(" http={} status="), record.http_status);
    AppendValue(line, record.status, 32);
    line += " vin=";
    AppendValue(line, record.vin, 64);
    line += " source=";
    AppendValue(line, record.source, 32);
    if (record.upstream_latency) {
      fmt::format_to(std::back_inserter(line), FMT_COMPILE(" upstream_ms={:.1f}"),
                     Millis(*record.upstream_latency));
    } else {
      line += " upstream_ms=-";
    }
    fmt::format_to(std::back_inserter(line), FMT_COMPILE(" elapsed_ms={:.2f}"),
                   Millis(record.elapsed));
    if (!record.detail.empty()) {
      line += " upstream_error=";
      AppendValue(line, record.detail, 512);
    }
    if (!record.note.empty()) {
      line += " note=";
      AppendValue(line, record.note, 128);
    }
    return line;
  }
  // JSON: each field bounded, whoever filled the record (SanitizeUtf8 mends a cut UTF-8 sequence).
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
  {
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

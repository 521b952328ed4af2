#include "http/access_log.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>

#include <fmt/format.h>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include "core/decode.h"

namespace fusebox::gateway {
namespace {

// Appends "2024-05-01T12:34:56.789Z". The part up to the second is formatted once a second per
// thread (a busy gateway writes thousands of lines a second).
void AppendTimestamp(std::string& out, WallTime now) {
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
    fmt::format_to(std::back_inserter(out), "{}.{:03}Z", second.text, ms);  // before 1970
    return;
  }
  const std::array<char, 5> tail = {'.', static_cast<char>('0' + (ms / 100) % 10),
                                    static_cast<char>('0' + (ms / 10) % 10),
                                    static_cast<char>('0' + ms % 10), 'Z'};
  out += second.text;
  out.append(tail.data(), tail.size());
}

std::string Timestamp(WallTime now) {
  std::string out;
  AppendTimestamp(out, now);
  return out;
}

double Millis(fusebox::Duration d) { return fusebox::ToSeconds(d) * 1000.0; }

// Appends `d` in milliseconds with `decimals` (1 or 2) digits after the point, rounded half up,
// in integers: what fmt's {:.1f} / {:.2f} of Millis(d) prints, but for a tie a double cannot
// hold exactly, at a small part of its cost (a line has two of these).
void AppendMillis(std::string& out, fusebox::Duration d, int decimals) {
  const std::int64_t unit = decimals == 1 ? 100'000 : 10'000;  // nanoseconds per last digit
  const std::int64_t ns = d.count();
  if (ns < 0 || ns > std::numeric_limits<std::int64_t>::max() - unit) {
    fmt::format_to(std::back_inserter(out), "{:.{}f}", Millis(d), decimals);
    return;
  }
  const std::int64_t scale = decimals == 1 ? 10 : 100;
  const std::int64_t digits = (ns + unit / 2) / unit;
  const fmt::format_int whole(digits / scale);
  out.append(whole.data(), whole.size());
  out += '.';
  const std::int64_t fraction = digits % scale;
  if (decimals == 2) {
    out += static_cast<char>('0' + fraction / 10);
  }
  out += static_cast<char>('0' + fraction % 10);
}

// Whether any of the 8 bytes of `word` is zero (exact as to whether any is, not which).
constexpr std::uint64_t AnyZeroByte(std::uint64_t word) noexcept {
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
  constexpr std::uint64_t kHighs = 0x8080808080808080ULL;
  return (word - kOnes) & ~word & kHighs;
}

// Appends the logfmt value of `v`, bounded to `max_bytes` and sanitized (BoundedLogField, then
// SanitizeUtf8), to `out`: bare when plain, else quoted with \" and \\ escaped and controls and
// line separators as escapes (Value). A short ASCII value, the usual case, costs no allocation.
void AppendValue(std::string& out, std::string_view v, std::size_t max_bytes);

// The length of the character at v[i] that a line never holds as it is, or 0: a C0 control or
// DEL (one byte), a C1 control (U+0080..U+009F: C2 80..C2 9F), U+2028 / U+2029 (E2 80 A8/A9) or
// a bidirectional embedding, override or isolate (U+202A..U+202E: E2 80 AA..AE; U+2066..U+2069:
// E2 81 A6..A9). A terminal takes the controls as commands (U+009B, CSI, starts an escape
// sequence), JavaScript and many log viewers take the two separators as line breaks, and the
// bidi controls make a viewer show the rest of a line in another order than it was written
// (a client's text made to read as the gateway's). `v` is valid UTF-8 (SanitizeUtf8), or ASCII.
std::size_t UnprintableAt(std::string_view v, std::size_t i) {
  const auto byte = [v](std::size_t at) { return static_cast<unsigned char>(v[at]); };
  if (byte(i) < 0x20 || byte(i) == 0x7f) {
    return 1;
  }
  if (byte(i) == 0xc2 && i + 1 < v.size() && byte(i + 1) >= 0x80 && byte(i + 1) <= 0x9f) {
    return 2;
  }
  if (byte(i) == 0xe2 && i + 2 < v.size()) {
    const unsigned second = byte(i + 1);
    const unsigned third = byte(i + 2);
    if ((second == 0x80 && third >= 0xa8 && third <= 0xae) ||
        (second == 0x81 && third >= 0xa6 && third <= 0xa9)) {
      return 3;
    }
  }
  return 0;
}

// Appends the escape of the `n`-byte character at v[i] (UnprintableAt): "\u009b" or "\u2028"
// for a code point past ASCII; for a byte "\x1b", or "\u001b" when `json`.
void AppendEscape(std::string& out, std::string_view v, std::size_t i, std::size_t n,
                  bool json = false) {
  if (n == 1 && json) {
    fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<unsigned char>(v[i]));
  } else if (n == 1) {
    fmt::format_to(std::back_inserter(out), "\\x{:02x}", static_cast<unsigned char>(v[i]));
  } else if (n == 2) {
    // C2 xx is U+00xx for xx in 0x80..0xBF.
    fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<unsigned char>(v[i + 1]));
  } else {
    // E2 xx yy is U+2000 + (xx & 0x3F) << 6 + (yy & 0x3F).
    const unsigned code = 0x2000U + ((static_cast<unsigned char>(v[i + 1]) & 0x3fU) << 6U) +
                          (static_cast<unsigned char>(v[i + 2]) & 0x3fU);
    fmt::format_to(std::back_inserter(out), "\\u{:04x}", code);
  }
}

// logfmt value: bare when plain, else quoted with \" and \\ escaped and what a line never holds
// as it is (UnprintableAt) written as an escape.
std::string Value(std::string_view v) {
  bool plain = !v.empty();
  for (std::size_t i = 0; plain && i < v.size(); ++i) {
    const char c = v[i];
    plain = c != ' ' && c != '"' && c != '=' && c != '\\' && UnprintableAt(v, i) == 0;
  }
  if (plain) {
    return std::string(v);
  }
  std::string out = "\"";
  for (std::size_t i = 0; i < v.size();) {
    const char c = v[i];
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
      ++i;
    } else if (const std::size_t n = UnprintableAt(v, i); n != 0) {
      AppendEscape(out, v, i, n);
      i += n;
    } else {
      out += c;
      ++i;
    }
  }
  out += '"';
  return out;
}

// Appends `v` with what a line never holds as it is (UnprintableAt) written as escapes, and a
// backslash doubled, so that a message's own "\x1b" never reads as an escaped ESC.
void AppendPrintable(std::string& out, std::string_view v) {
  for (std::size_t i = 0; i < v.size();) {
    if (v[i] == '\\') {
      out += "\\\\";
      ++i;
    } else if (const std::size_t n = UnprintableAt(v, i); n != 0) {
      AppendEscape(out, v, i, n);
      i += n;
    } else {
      out += v[i];
      ++i;
    }
  }
}

// A serialized JSON line with what a line never holds as it is (UnprintableAt) beyond what
// Boost.JSON escapes itself (the C0 controls) written as \u escapes: DEL, the C1 controls,
// U+2028 and U+2029, which JSON allows raw. Outside its strings a line holds only ASCII
// punctuation, numbers and literals, so each is within a string, where the escape stands for the
// same character.
// Milliseconds to the microsecond as a JSON number: no exponent, no trailing zeros ("1.4",
// "7000", "0.012").
std::string JsonMillis(fusebox::Duration d) {
  std::string text = fmt::format("{:.3f}", Millis(d));
  while (text.back() == '0') {
    text.pop_back();
  }
  if (text.back() == '.') {
    text.pop_back();
  }
  return text == "-0" ? std::string("0") : text;
}

std::string PrintableJson(std::string line) {
  // Nearly every line is ASCII without DEL: one pass finds that out, without a copy.
  const auto first = std::find_if(line.begin(), line.end(),
                                  [](char c) { return static_cast<unsigned char>(c) >= 0x7f; });
  if (first == line.end()) {
    return line;
  }
  const auto start = static_cast<std::size_t>(first - line.begin());
  std::string out(line, 0, start);
  out.reserve(line.size() + 16);
  for (std::size_t i = start; i < line.size();) {
    if (const std::size_t n = UnprintableAt(line, i); n != 0) {
      AppendEscape(out, line, i, n, /*json=*/true);
      i += n;
    } else {
      out += line[i];
      ++i;
    }
  }
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
    } else if (b < 0x20 || b == 0x7f || b == ' ' || b == '"' || b == '=' || b == '\\') {
      needs[b] = kNeedsQuotes;
    }
  }
  return needs;
}();

// What `v` asks of a logfmt value (kByteNeeds of its bytes, or-ed). Eight bytes at a time: the
// line's seven values are most of its bytes, and nearly all of them are plain.
std::uint8_t ValueNeeds(std::string_view v) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
  constexpr std::uint64_t kHighs = 0x8080808080808080ULL;
  std::uint8_t needs = 0;
  std::size_t i = 0;
  for (; i + 8 <= v.size(); i += 8) {
    std::uint64_t word = 0;
    std::memcpy(&word, v.data() + i, sizeof(word));
    if ((word & kHighs) != 0) {
      needs |= kNotAscii;
    }
    // A byte below 0x20 (of the ASCII ones: a high byte has no high bit in ~word), DEL, or one
    // of the four that need quotes.
    const std::uint64_t quotes =
        ((word - kOnes * 0x20) & ~word & kHighs) | AnyZeroByte(word ^ (kOnes * 0x7f)) |
        AnyZeroByte(word ^ (kOnes * ' ')) | AnyZeroByte(word ^ (kOnes * '"')) |
        AnyZeroByte(word ^ (kOnes * '=')) | AnyZeroByte(word ^ (kOnes * '\\'));
    if (quotes != 0) {
      needs |= kNeedsQuotes;
    }
  }
  for (; i < v.size(); ++i) {
    needs |= kByteNeeds[static_cast<unsigned char>(v[i])];
  }
  return needs;
}

void AppendValue(std::string& out, std::string_view v, std::size_t max_bytes) {
  const std::uint8_t needs = ValueNeeds(v);
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

std::string FormatAccessRecord(const AccessRecord& record, LogFormat format, WallTime now) {
  if (format != LogFormat::kJson) {
    using std::string_view_literals::operator""sv;
    // The same line as the JSON path's fields would give, each bounded and sanitized, appended in
    // place (one allocation for the line in the usual case).
    std::string line;
    line.reserve(256);
    AppendTimestamp(line, now);
    line += " info request id="sv;
    AppendValue(line, record.request_id, 64);
    line += " method="sv;
    AppendValue(line, record.method, 32);
    line += " target="sv;
    AppendValue(line, record.target, kMaxLoggedTarget);
    line += " client="sv;
    AppendValue(line, record.client, 64);
    line += " http="sv;
    const fmt::format_int http_status(record.http_status);
    line.append(http_status.data(), http_status.size());
    line += " status="sv;
    AppendValue(line, record.status, 32);
    line += " vin="sv;
    AppendValue(line, record.vin, 64);
    line += " source="sv;
    AppendValue(line, record.source, 32);
    if (record.upstream_latency) {
      line += " upstream_ms="sv;
      AppendMillis(line, *record.upstream_latency, 1);
    } else {
      line += " upstream_ms=-"sv;
    }
    line += " elapsed_ms="sv;
    AppendMillis(line, record.elapsed, 2);
    if (!record.detail.empty()) {
      line += " upstream_error="sv;
      AppendValue(line, record.detail, 512);
    }
    if (!record.note.empty()) {
      line += " note="sv;
      AppendValue(line, record.note, 128);
    }
    if (!record.upstream.empty()) {
      line += " upstream="sv;
      AppendValue(line, record.upstream, 32);
    }
    if (!record.upstream_outcome.empty()) {
      line += " upstream_outcome="sv;
      AppendValue(line, record.upstream_outcome, 32);
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
    if (!r.detail.empty()) {
      o["upstream_error"] = SanitizeUtf8(r.detail);
    }
    if (!r.note.empty()) {
      o["note"] = SanitizeUtf8(r.note);
    }
    if (!record.upstream.empty()) {
      o["upstream"] = SanitizeUtf8(BoundedLogField(record.upstream, 32));
    }
    if (!record.upstream_outcome.empty()) {
      o["upstream_outcome"] = SanitizeUtf8(BoundedLogField(record.upstream_outcome, 32));
    }
    // The durations are written by hand: Boost.JSON prints every double with an exponent
    // (4E0, 1.4E0), which log tools read but people do not.
    std::string line = boost::json::serialize(o);
    line.pop_back();  // the closing brace
    line += ",\"upstream_ms\":";
    line += r.upstream_latency ? JsonMillis(*r.upstream_latency) : std::string("null");
    line += ",\"elapsed_ms\":";
    line += JsonMillis(r.elapsed);
    line += '}';
    return PrintableJson(std::move(line));
  }
}

std::string FormatLateCall(std::string_view vin, fusebox::Duration latency,
                           std::string_view outcome, std::string_view detail, LogFormat format,
                           WallTime now) {
  if (format == LogFormat::kJson) {
    boost::json::object o;
    o["ts"] = Timestamp(now);
    o["level"] = "info";
    o["event"] = "upstream_call";
    o["vin"] = SanitizeUtf8(BoundedLogField(vin, 64));
    o["upstream"] = "call";
    o["upstream_outcome"] = SanitizeUtf8(BoundedLogField(outcome, 32));
    if (!detail.empty()) {
      o["upstream_error"] = SanitizeUtf8(BoundedLogField(detail, 512));
    }
    std::string line = boost::json::serialize(o);
    line.pop_back();  // the closing brace
    line += ",\"upstream_ms\":";
    line += JsonMillis(latency);
    line += '}';
    return PrintableJson(std::move(line));
  }
  using std::string_view_literals::operator""sv;
  std::string line = Timestamp(now);
  line += " info upstream_call vin="sv;
  AppendValue(line, vin, 64);
  line += " upstream=call upstream_outcome="sv;
  AppendValue(line, outcome, 32);
  line += " upstream_ms="sv;
  AppendMillis(line, latency, 1);
  if (!detail.empty()) {
    line += " upstream_error="sv;
    AppendValue(line, detail, 512);
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
    return PrintableJson(boost::json::serialize(o));
  }
  // Free text, not a logfmt value: left unquoted, only what a line never holds as it is escaped.
  std::string line = Timestamp(now);
  line += ' ';
  line += level;
  line += ' ';
  AppendPrintable(line, SanitizeUtf8(message));
  return line;
}

}  // namespace fusebox::gateway

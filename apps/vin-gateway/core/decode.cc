#include "core/decode.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

namespace fusebox::gateway {
namespace {

namespace json = boost::json;

std::string_view View(const json::string& s) { return {s.data(), s.size()}; }

}  // namespace

std::string CacheKey(std::string_view vin, int model_year) {
  if (model_year == 0) {
    return std::string(vin);
  }
  return fmt::format("{}@{}", vin, model_year);
}

std::string SerializeDecode(const Decode& decode) {
  json::object vehicle;
  for (const auto& [key, value] : decode.vehicle) {
    vehicle[key] = value;
  }
  json::array codes;
  for (int code : decode.upstream_codes) {
    codes.emplace_back(code);
  }
  json::object root;
  root["v"] = 1;
  root["vin"] = decode.vin;
  root["model_year"] = decode.model_year;
  root["fetched_at_ms"] =
      std::chrono::duration_cast<std::chrono::milliseconds>(decode.fetched_at.time_since_epoch())
          .count();
  root["upstream_codes"] = std::move(codes);
  root["vehicle"] = std::move(vehicle);
  return json::serialize(root);
}

std::optional<Decode> DeserializeDecode(std::string_view text) {
  if (text.size() > kMaxStoredDecodeBytes) {
    return std::nullopt;
  }
  boost::system::error_code ec;
  json::value root = json::parse(text, ec);
  if (ec || !root.is_object()) {
    return std::nullopt;
  }
  const json::object& o = root.get_object();
  const json::value* version = o.if_contains("v");
  const json::value* vin = o.if_contains("vin");
  const json::value* year = o.if_contains("model_year");
  const json::value* fetched = o.if_contains("fetched_at_ms");
  const json::value* codes = o.if_contains("upstream_codes");
  const json::value* vehicle = o.if_contains("vehicle");
  if (version == nullptr || !version->is_int64() || version->get_int64() != 1 || vin == nullptr ||
      !vin->is_string() || year == nullptr || !year->is_int64() || fetched == nullptr ||
      !fetched->is_int64() || codes == nullptr || !codes->is_array() || vehicle == nullptr ||
      !vehicle->is_object()) {
    return std::nullopt;
  }
  // In range before any conversion: a year beyond int would be truncated (and might then match
  // another key's), milliseconds beyond year 9999 would overflow the conversion to WallTime.
  constexpr std::int64_t kMaxFetchedAtMs = 253'402'300'799'999;  // 9999-12-31T23:59:59.999Z
  if (year->get_int64() < 0 || year->get_int64() > 9999 || fetched->get_int64() < 0 ||
      fetched->get_int64() > kMaxFetchedAtMs) {
    return std::nullopt;
  }
  Decode decode;
  decode.vin = std::string(View(vin->get_string()));
  decode.model_year = static_cast<int>(year->get_int64());
  decode.fetched_at = WallTime(std::chrono::duration_cast<WallTime::duration>(
      std::chrono::milliseconds(fetched->get_int64())));
  for (const json::value& code : codes->get_array()) {
    if (!code.is_int64()) {
      return std::nullopt;
    }
    decode.upstream_codes.push_back(static_cast<int>(code.get_int64()));
  }
  for (const auto& [key, value] : vehicle->get_object()) {
    if (!value.is_string()) {
      return std::nullopt;
    }
    decode.vehicle.emplace(std::string(key.data(), key.size()),
                           std::string(View(value.get_string())));
  }
  return decode;
}

std::string SanitizeUtf8(std::string_view s) {
  // ASCII, the usual case (VINs, statuses, request ids), in one copy: the leading ASCII run.
  const auto ascii_end = std::find_if(s.begin(), s.end(),
                                      [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
  std::string out(s.begin(), ascii_end);
  if (ascii_end == s.end()) {
    return out;
  }
  out.reserve(s.size());
  std::size_t i = out.size();
  while (i < s.size()) {
    const auto lead = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    std::uint32_t min = 0;
    if (lead < 0x80) {
      out += s[i];
      ++i;
      continue;
    }
    if (lead >= 0xC2 && lead <= 0xDF) {
      n = 2;
      min = 0x80;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      n = 3;
      min = 0x800;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      n = 4;
      min = 0x10000;
    }
    bool ok = n != 0 && i + n <= s.size();
    std::uint32_t cp = 0;
    if (ok) {
      cp = lead & (n == 2 ? 0x1FU : n == 3 ? 0x0FU : 0x07U);
      for (std::size_t k = 1; k < n; ++k) {
        const auto b = static_cast<unsigned char>(s[i + k]);
        if ((b & 0xC0U) != 0x80U) {
          ok = false;
          break;
        }
        cp = (cp << 6U) | (b & 0x3FU);
      }
    }
    if (ok && (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))) {
      ok = false;
    }
    if (ok) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

}  // namespace fusebox::gateway

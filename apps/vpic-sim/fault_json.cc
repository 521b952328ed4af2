#include "fault_json.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

namespace fusebox::vpic_sim {
namespace {

std::optional<double> JsonNumber(const boost::json::value& v) {
  if (v.is_int64()) {
    return static_cast<double>(v.as_int64());
  }
  if (v.is_uint64()) {
    return static_cast<double>(v.as_uint64());
  }
  if (v.is_double()) {
    return v.as_double();
  }
  return std::nullopt;
}

std::optional<std::int64_t> JsonInteger(const boost::json::value& v) {
  if (v.is_int64()) {
    return v.as_int64();
  }
  if (v.is_uint64() &&
      v.as_uint64() <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    return static_cast<std::int64_t>(v.as_uint64());
  }
  if (v.is_double() && std::trunc(v.as_double()) == v.as_double() &&
      std::abs(v.as_double()) < 9e15) {
    return static_cast<std::int64_t>(v.as_double());
  }
  return std::nullopt;
}

// The first key that an object of the (valid) JSON `text` names twice, or nullopt. Boost.JSON
// keeps the last value of a repeated key; the control API refuses such bodies instead. Keys are
// compared unescaped ("mode" and "mo\u0064e" are the same key).
std::optional<std::string> RepeatedKey(std::string_view text) {
  struct Level {
    bool object = false;
    bool want_key = false;
    std::set<std::string> keys;
  };
  std::vector<Level> stack;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '{' || c == '[') {
      stack.push_back(Level{c == '{', c == '{', {}});
    } else if ((c == '}' || c == ']') && !stack.empty()) {
      stack.pop_back();
    } else if (c == ',' && !stack.empty() && stack.back().object) {
      stack.back().want_key = true;
    } else if (c == '"') {
      std::size_t end = i + 1;
      while (end < text.size() && text[end] != '"') {
        end += text[end] == '\\' ? std::size_t{2} : std::size_t{1};
      }
      if (!stack.empty() && stack.back().want_key) {
        std::error_code ec;
        const boost::json::value key = boost::json::parse(text.substr(i, end + 1 - i), ec);
        std::string name = !ec && key.is_string() ? std::string(key.as_string())
                                                  : std::string(text.substr(i + 1, end - i - 1));
        if (!stack.back().keys.insert(name).second) {
          return name;
        }
        stack.back().want_key = false;
      }
      i = end;
    }
  }
  return std::nullopt;
}

}  // namespace

Result<FaultSpec, ConfigError> ParseFaultJson(std::string_view body) {
  std::error_code ec;
  const boost::json::value parsed = boost::json::parse(body, ec);
  if (ec) {
    return ConfigError{"body", "body is not valid JSON: " + ec.message()};
  }
  if (!parsed.is_object()) {
    return ConfigError{"body", "body must be a JSON object such as {\"mode\":\"error\"}"};
  }
  if (auto repeated = RepeatedKey(body)) {
    return ConfigError{*repeated,
                       fmt::format("{} is given more than once: name each field once", *repeated)};
  }
  const boost::json::object& object = parsed.as_object();
  FaultOptions o;
  if (object.if_contains("mode") == nullptr) {
    return ConfigError{"mode", "mode is required"};
  }
  for (const auto& kv : object) {
    const std::string_view key = kv.key();
    const boost::json::value& v = kv.value();
    auto bad_type = [&](std::string_view type) {
      return ConfigError{std::string(key), fmt::format("{} must be {}", key, type)};
    };
    if (key == "mode") {
      if (!v.is_string()) {
        return bad_type("a string");
      }
      o.mode = std::string(v.as_string());
      continue;
    }
    const FaultField* field = FindFaultField(key, Syntax::kJson);
    if (field == nullptr) {
      return ConfigError{std::string(key), fmt::format("{} is not a known field", key)};
    }
    switch (field->kind) {
      case FieldKind::kInteger:
      case FieldKind::kWholeSeconds:
        o.*field->integer = JsonInteger(v);
        if (!(o.*field->integer)) {
          return bad_type("an integer");
        }
        break;
      case FieldKind::kDuration: {
        const std::optional<double> ms = JsonNumber(v);
        if (!ms || !(*ms >= 0.0) || *ms > 1e12) {
          return bad_type("a number of milliseconds >= 0");
        }
        o.*field->integer = static_cast<Micros>(std::llround(*ms * 1000.0));
        break;
      }
      case FieldKind::kNumber:
        o.*field->number = JsonNumber(v);
        if (!(o.*field->number)) {
          return bad_type("a number");
        }
        break;
      case FieldKind::kText:
        if (!v.is_string()) {
          return bad_type("a string");
        }
        o.*field->text = std::string(v.as_string());
        break;
    }
  }
  return BuildFaultSpec(o, Syntax::kJson);
}

boost::json::object FaultSpecToJson(const FaultSpec& s) {
  auto ms = [](Micros us) -> boost::json::value {
    if (us % kMicrosPerMilli == 0) {
      return boost::json::value(us / kMicrosPerMilli);
    }
    return boost::json::value(static_cast<double>(us) / 1000.0);
  };
  boost::json::object o;
  o["mode"] = ToString(s.mode);
  o["status"] = s.status;
  if (s.retry_after_s) {
    o["retry_after_s"] = *s.retry_after_s;
  }
  o["latency_dist"] = ToString(s.latency.dist);
  o["latency_ms"] = ms(s.latency.value);
  o["latency_min_ms"] = ms(s.latency.min);
  o["latency_max_ms"] = ms(s.latency.max);
  o["latency_sigma"] = s.latency.sigma;
  o["every"] = s.every;
  o["capacity"] = s.capacity;
  if (s.queue_limit) {
    o["queue_limit"] = *s.queue_limit;
  }
  o["relapse_ms"] = ms(s.relapse);
  o["drip_bytes"] = s.drip_bytes;
  o["drip_interval_ms"] = ms(s.drip_interval);
  o["interim_status"] = s.interim_status;
  return o;
}

}  // namespace fusebox::vpic_sim

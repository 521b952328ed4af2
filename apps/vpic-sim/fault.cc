#include "fault.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <limits>
#include <numbers>
#include <set>
#include <system_error>

#include <toml++/toml.h>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

namespace fusebox::vpic_sim {
namespace {

constexpr Micros kMaxLatency = 3600 * kMicrosPerSecond;
constexpr Micros kDefaultSlowLatency = 5 * kMicrosPerSecond;
constexpr Micros kDefaultFragileRelapse = 5 * kMicrosPerSecond;
constexpr std::int64_t kStartupKey = -1;
constexpr std::int64_t kNoKey = std::numeric_limits<std::int64_t>::min();
constexpr std::size_t kMaxScheduleBytes = std::size_t{16} * 1024 * 1024;

constexpr std::array kModes = {FaultMode::kOk,        FaultMode::kError, FaultMode::kHang,
                               FaultMode::kSlow,      FaultMode::kReset, FaultMode::kGarbage,
                               FaultMode::kTruncated, FaultMode::kDrip,  FaultMode::kFlap,
                               FaultMode::kCapacity};

// JSON field spellings: durations carry their unit.
struct JsonName {
  std::string_view canonical;
  std::string_view json;
};
constexpr std::array kJsonNames = {
    JsonName{"retry_after", "retry_after_s"},  JsonName{"latency", "latency_ms"},
    JsonName{"latency_min", "latency_min_ms"}, JsonName{"latency_max", "latency_max_ms"},
    JsonName{"relapse", "relapse_ms"},         JsonName{"drip_interval", "drip_interval_ms"},
};

ConfigError Bad(std::string_view canonical, Syntax syntax, std::string_view what) {
  const std::string name = FieldName(canonical, syntax);
  return ConfigError{name, fmt::format("{} {}", name, what)};
}

std::string FormatMicros(Micros us, Syntax syntax) {
  if (syntax == Syntax::kJson) {
    return fmt::format("{} ms", static_cast<double>(us) / 1000.0);
  }
  return fmt::format("{}ms", static_cast<double>(us) / 1000.0);
}

std::optional<ConfigError> ValidateAs(const FaultSpec& s, Syntax syntax) {
  auto micros_in = [&](std::string_view name, Micros v, Micros lo,
                       Micros hi) -> std::optional<ConfigError> {
    if (v < lo || v > hi) {
      return Bad(name, syntax,
                 fmt::format("must be in [{}, {}], got {}", FormatMicros(lo, syntax),
                             FormatMicros(hi, syntax), FormatMicros(v, syntax)));
    }
    return std::nullopt;
  };
  auto int_in = [&](std::string_view name, std::int64_t v, std::int64_t lo,
                    std::int64_t hi) -> std::optional<ConfigError> {
    if (v < lo || v > hi) {
      return Bad(name, syntax, fmt::format("must be in [{}, {}], got {}", lo, hi, v));
    }
    return std::nullopt;
  };
  if (s.status != 429 && s.status != 500 && s.status != 502 && s.status != 503 && s.status != 504) {
    return Bad("status", syntax,
               fmt::format("must be one of 429, 500, 502, 503, 504, got {}", s.status));
  }
  if (s.retry_after_s) {
    if (auto e = int_in("retry_after", *s.retry_after_s, 0, 86400)) {
      return e;
    }
  }
  if (auto e = micros_in("latency", s.latency.value, 0, kMaxLatency)) {
    return e;
  }
  if (auto e = micros_in("latency_min", s.latency.min, 0, kMaxLatency)) {
    return e;
  }
  if (auto e = micros_in("latency_max", s.latency.max, 0, kMaxLatency)) {
    return e;
  }
  if (s.latency.dist == LatencyDist::kUniform && s.latency.max < s.latency.min) {
    return Bad("latency_max", syntax,
               fmt::format("must be >= {} ({}) for a uniform latency, got {}",
                           FieldName("latency_min", syntax), FormatMicros(s.latency.min, syntax),
                           FormatMicros(s.latency.max, syntax)));
  }
  if (!(s.latency.sigma >= 0.0 && s.latency.sigma <= 10.0)) {
    return Bad("latency_sigma", syntax, fmt::format("must be in [0, 10], got {}", s.latency.sigma));
  }
  if (auto e = int_in("every", s.every, 1, 1'000'000)) {
    return e;
  }
  if (auto e = int_in("capacity", s.capacity, 1, 1'000'000)) {
    return e;
  }
  if (auto e = micros_in("relapse", s.relapse, 0, kMaxLatency)) {
    return e;
  }
  if (auto e = int_in("drip_bytes", s.drip_bytes, 1, 65536)) {
    return e;
  }
  if (auto e =
          micros_in("drip_interval", s.drip_interval, kMicrosPerMilli, 60 * kMicrosPerSecond)) {
    return e;
  }
  return std::nullopt;
}

// Narrows an integer option, reporting values that do not fit an int as out of range.
std::optional<ConfigError> ToInt(std::string_view name, std::int64_t v, Syntax syntax, int& out) {
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) {
    return Bad(name, syntax, fmt::format("is out of range, got {}", v));
  }
  out = static_cast<int>(v);
  return std::nullopt;
}

// ---- JSON ----

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

// ---- TOML ----

std::string Where(std::string_view source, const toml::node& node) {
  const toml::source_region& region = node.source();
  return fmt::format("{}:{}:{}", source, region.begin.line, region.begin.column);
}

ConfigError TomlError(std::string_view source, const toml::node& node, const std::string& key,
                      std::string_view what) {
  return ConfigError{key, fmt::format("{}: {}: {}", Where(source, node), key, what)};
}

// A parsed phase and where it came from, for errors that involve two phases.
struct LocatedPhase {
  Phase phase;
  std::size_t number = 0;            // 1-based, in file order
  const toml::node* from = nullptr;  // the `from` value
};

// The node an error about phase field `field` (TOML spelling) points at: the field's value; for a
// field that is missing (latency_max of a uniform latency), the value that asked for it; else
// the phase's `mode`.
const toml::node& FieldNode(const toml::table& phase, std::string_view field) {
  if (const toml::node* node = phase.get(field)) {
    return *node;
  }
  if (field == "latency_max") {
    for (std::string_view cause : {"latency_dist", "latency_min"}) {
      if (const toml::node* node = phase.get(cause)) {
        return *node;
      }
    }
  }
  if (const toml::node* node = phase.get("mode")) {
    return *node;
  }
  return phase;
}

std::optional<Micros> TomlDuration(const toml::node& node) {
  if (auto s = node.value<std::string>()) {
    return ParseDuration(*s);
  }
  if (node.is_integer() || node.is_floating_point()) {
    const double seconds = *node.value<double>();
    if (!(seconds >= 0.0) || seconds > 1e9) {
      return std::nullopt;
    }
    return static_cast<Micros>(std::llround(seconds * 1e6));
  }
  return std::nullopt;
}

// Reads one fault key of a phase into `options`; false (and `error`) when the key is unknown
// or its value has the wrong type.
bool ReadPhaseKey(std::string_view source, const std::string& path, std::string_view key,
                  const toml::node& node, FaultOptions& options,
                  std::optional<ConfigError>& error) {
  const std::string dotted = path + "." + std::string(key);
  auto duration = [&](std::optional<Micros>& slot) {
    slot = TomlDuration(node);
    if (!slot) {
      error = TomlError(source, node, dotted,
                        "must be a duration such as \"250ms\", \"8s\" or a number of seconds");
      return false;
    }
    return true;
  };
  auto integer = [&](std::optional<std::int64_t>& slot) {
    slot = node.value<std::int64_t>();
    if (!node.is_integer() || !slot) {
      error = TomlError(source, node, dotted, "must be an integer");
      return false;
    }
    return true;
  };
  if (key == "mode") {
    auto s = node.value<std::string>();
    if (!s) {
      error = TomlError(source, node, dotted, "must be a string");
      return false;
    }
    options.mode = *s;
    return true;
  }
  if (key == "latency") {
    return duration(options.latency);
  }
  if (key == "latency_min") {
    return duration(options.latency_min);
  }
  if (key == "latency_max") {
    return duration(options.latency_max);
  }
  if (key == "relapse") {
    return duration(options.relapse);
  }
  if (key == "drip_interval") {
    return duration(options.drip_interval);
  }
  if (key == "retry_after") {
    std::optional<Micros> d;
    if (!duration(d)) {
      return false;
    }
    options.retry_after_s = (*d + kMicrosPerSecond - 1) / kMicrosPerSecond;
    return true;
  }
  if (key == "latency_dist") {
    auto s = node.value<std::string>();
    if (!s) {
      error = TomlError(source, node, dotted, "must be a string");
      return false;
    }
    options.latency_dist = *s;
    return true;
  }
  if (key == "latency_sigma") {
    options.latency_sigma = node.value<double>();
    if (!options.latency_sigma) {
      error = TomlError(source, node, dotted, "must be a number");
      return false;
    }
    return true;
  }
  if (key == "status") {
    return integer(options.status);
  }
  if (key == "every") {
    return integer(options.every);
  }
  if (key == "capacity") {
    return integer(options.capacity);
  }
  if (key == "drip_bytes") {
    return integer(options.drip_bytes);
  }
  error = TomlError(source, node, dotted, "unknown key");
  return false;
}

}  // namespace

std::string_view ToString(FaultMode mode) {
  switch (mode) {
    case FaultMode::kOk:
      return "ok";
    case FaultMode::kError:
      return "error";
    case FaultMode::kHang:
      return "hang";
    case FaultMode::kSlow:
      return "slow";
    case FaultMode::kReset:
      return "reset";
    case FaultMode::kGarbage:
      return "garbage";
    case FaultMode::kTruncated:
      return "truncated";
    case FaultMode::kDrip:
      return "drip";
    case FaultMode::kFlap:
      return "flap";
    case FaultMode::kCapacity:
      return "capacity";
  }
  return "";
}

std::optional<FaultMode> ParseFaultMode(std::string_view name) {
  if (name == "fragile") {
    return FaultMode::kCapacity;
  }
  for (FaultMode mode : kModes) {
    if (ToString(mode) == name) {
      return mode;
    }
  }
  return std::nullopt;
}

std::string_view ToString(LatencyDist dist) {
  switch (dist) {
    case LatencyDist::kFixed:
      return "fixed";
    case LatencyDist::kUniform:
      return "uniform";
    case LatencyDist::kLognormal:
      return "lognormal";
  }
  return "";
}

std::optional<ConfigError> FaultSpec::Validate() const { return ValidateAs(*this, Syntax::kToml); }

std::string FieldName(std::string_view canonical, Syntax syntax) {
  switch (syntax) {
    case Syntax::kToml:
      return std::string(canonical);
    case Syntax::kJson:
      for (const JsonName& n : kJsonNames) {
        if (n.canonical == canonical) {
          return std::string(n.json);
        }
      }
      return std::string(canonical);
    case Syntax::kFlags: {
      std::string flag = "--" + std::string(canonical);
      std::replace(flag.begin(), flag.end(), '_', '-');
      return flag;
    }
  }
  return std::string(canonical);
}

Result<FaultSpec, ConfigError> BuildFaultSpec(const FaultOptions& o, Syntax syntax) {
  FaultSpec s;
  const std::optional<FaultMode> mode = ParseFaultMode(o.mode);
  if (!mode) {
    return Bad("mode", syntax,
               fmt::format("must be one of ok, error, hang, slow, reset, garbage, truncated, "
                           "drip, flap, capacity, fragile; got '{}'",
                           o.mode));
  }
  s.mode = *mode;
  if (o.status) {
    if (auto e = ToInt("status", *o.status, syntax, s.status)) {
      return *e;
    }
  }
  if (o.retry_after_s) {
    int v = 0;
    if (auto e = ToInt("retry_after", *o.retry_after_s, syntax, v)) {
      return *e;
    }
    s.retry_after_s = v;
  } else if (s.status == 429) {
    s.retry_after_s = 1;
  }
  const bool any_latency = o.latency || o.latency_min || o.latency_max || o.latency_dist;
  if (o.latency_dist) {
    if (*o.latency_dist == "fixed") {
      s.latency.dist = LatencyDist::kFixed;
    } else if (*o.latency_dist == "uniform") {
      s.latency.dist = LatencyDist::kUniform;
    } else if (*o.latency_dist == "lognormal") {
      s.latency.dist = LatencyDist::kLognormal;
    } else {
      return Bad(
          "latency_dist", syntax,
          fmt::format("must be one of fixed, uniform, lognormal; got '{}'", *o.latency_dist));
    }
  } else if (!o.latency && (o.latency_min || o.latency_max)) {
    s.latency.dist = LatencyDist::kUniform;
  }
  if (s.latency.dist == LatencyDist::kUniform && !o.latency_max) {
    return Bad("latency_max", syntax, "is required for a uniform latency");
  }
  if (!any_latency && s.mode == FaultMode::kSlow) {
    s.latency.value = kDefaultSlowLatency;
  }
  s.latency.value = o.latency.value_or(s.latency.value);
  s.latency.min = o.latency_min.value_or(0);
  s.latency.max = o.latency_max.value_or(0);
  s.latency.sigma = o.latency_sigma.value_or(s.latency.sigma);
  if (o.every) {
    if (auto e = ToInt("every", *o.every, syntax, s.every)) {
      return *e;
    }
  }
  if (o.capacity) {
    if (auto e = ToInt("capacity", *o.capacity, syntax, s.capacity)) {
      return *e;
    }
  }
  s.relapse = o.relapse.value_or(o.mode == "fragile" ? kDefaultFragileRelapse : 0);
  if (o.drip_bytes) {
    if (auto e = ToInt("drip_bytes", *o.drip_bytes, syntax, s.drip_bytes)) {
      return *e;
    }
  }
  s.drip_interval = o.drip_interval.value_or(s.drip_interval);
  if (auto e = ValidateAs(s, syntax)) {
    return *e;
  }
  return s;
}

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
  const boost::json::value* mode = object.if_contains("mode");
  if (mode == nullptr) {
    return ConfigError{"mode", "mode is required"};
  }
  for (const auto& kv : object) {
    const std::string_view key = kv.key();
    const boost::json::value& v = kv.value();
    auto bad_type = [&](std::string_view type) {
      return ConfigError{std::string(key), fmt::format("{} must be {}", key, type)};
    };
    auto millis = [&](std::optional<Micros>& slot) -> std::optional<ConfigError> {
      const std::optional<double> ms = JsonNumber(v);
      if (!ms || !(*ms >= 0.0) || *ms > 1e12) {
        return bad_type("a number of milliseconds >= 0");
      }
      slot = static_cast<Micros>(std::llround(*ms * 1000.0));
      return std::nullopt;
    };
    auto integer = [&](std::optional<std::int64_t>& slot) -> std::optional<ConfigError> {
      slot = JsonInteger(v);
      if (!slot) {
        return bad_type("an integer");
      }
      return std::nullopt;
    };
    std::optional<ConfigError> error;
    if (key == "mode") {
      if (!v.is_string()) {
        error = bad_type("a string");
      } else {
        o.mode = std::string(v.as_string());
      }
    } else if (key == "latency_dist") {
      if (!v.is_string()) {
        error = bad_type("a string");
      } else {
        o.latency_dist = std::string(v.as_string());
      }
    } else if (key == "status") {
      error = integer(o.status);
    } else if (key == "retry_after_s") {
      error = integer(o.retry_after_s);
    } else if (key == "every") {
      error = integer(o.every);
    } else if (key == "capacity") {
      error = integer(o.capacity);
    } else if (key == "drip_bytes") {
      error = integer(o.drip_bytes);
    } else if (key == "latency_ms") {
      error = millis(o.latency);
    } else if (key == "latency_min_ms") {
      error = millis(o.latency_min);
    } else if (key == "latency_max_ms") {
      error = millis(o.latency_max);
    } else if (key == "relapse_ms") {
      error = millis(o.relapse);
    } else if (key == "drip_interval_ms") {
      error = millis(o.drip_interval);
    } else if (key == "latency_sigma") {
      o.latency_sigma = JsonNumber(v);
      if (!o.latency_sigma) {
        error = bad_type("a number");
      }
    } else {
      error = ConfigError{std::string(key), fmt::format("{} is not a known field", key)};
    }
    if (error) {
      return *error;
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
  o["relapse_ms"] = ms(s.relapse);
  o["drip_bytes"] = s.drip_bytes;
  o["drip_interval_ms"] = ms(s.drip_interval);
  return o;
}

std::optional<Micros> ParseDuration(std::string_view text) {
  while (!text.empty() && text.front() == ' ') {
    text.remove_prefix(1);
  }
  while (!text.empty() && text.back() == ' ') {
    text.remove_suffix(1);
  }
  double scale = 1e6;  // a plain number is seconds
  auto strip = [&text](std::string_view unit) {
    if (text.size() > unit.size() && text.substr(text.size() - unit.size()) == unit) {
      text.remove_suffix(unit.size());
      return true;
    }
    return false;
  };
  if (strip("us")) {
    scale = 1.0;
  } else if (strip("ms")) {
    scale = 1e3;
  } else if (strip("s")) {
    scale = 1e6;
  } else if (strip("m")) {
    scale = 60e6;
  }
  if (text.empty() || text.front() == '-' || text.front() == '+') {
    return std::nullopt;
  }
  double value = 0.0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value) ||
      value * scale > 1e15) {
    return std::nullopt;
  }
  return static_cast<Micros>(std::llround(value * scale));
}

const Phase* Schedule::PhaseAt(Micros now) const {
  for (const Phase& phase : phases) {
    if (now >= phase.from && now < phase.to) {
      return &phase;
    }
  }
  return nullptr;
}

Result<Schedule, ConfigError> ParseSchedule(std::string_view toml_text, std::string_view source) {
  toml::table root;
  try {
    root = toml::parse(toml_text, source);
  } catch (const toml::parse_error& e) {
    return ConfigError{"schedule", fmt::format("{}:{}:{}: {}", source, e.source().begin.line,
                                               e.source().begin.column, e.description())};
  }
  Schedule schedule;
  std::vector<LocatedPhase> located;
  for (auto&& [key, node] : root) {
    const std::string_view k = key.str();
    if (k == "seed" || k == "duration" || k == "name" || k == "breaker" || k == "traffic" ||
        k == "variant") {
      continue;  // a fusebox-sim scenario's other parts
    }
    if (k != "upstream") {
      return TomlError(source, node, std::string(k), "unknown key (a schedule holds [upstream])");
    }
    const toml::table* upstream = node.as_table();
    if (upstream == nullptr) {
      return TomlError(source, node, "upstream", "must be a table");
    }
    for (auto&& [ukey, unode] : *upstream) {
      const std::string_view uk = ukey.str();
      if (uk == "latency") {
        schedule.healthy_latency = TomlDuration(unode);
        if (!schedule.healthy_latency) {
          return TomlError(source, unode, "upstream.latency", "must be a duration");
        }
        continue;
      }
      if (uk != "phase") {
        return TomlError(source, unode, "upstream." + std::string(uk), "unknown key");
      }
      const toml::array* phases = unode.as_array();
      if (phases == nullptr) {
        return TomlError(source, unode, "upstream.phase", "must be an array of tables");
      }
      for (std::size_t i = 0; i < phases->size(); ++i) {
        const std::string path = fmt::format("upstream.phase[{}]", i + 1);
        const toml::table* table = (*phases)[i].as_table();
        if (table == nullptr) {
          return TomlError(source, (*phases)[i], path, "must be a table");
        }
        FaultOptions options;
        std::optional<Micros> from;
        std::optional<Micros> to;
        bool has_mode = false;
        for (auto&& [pkey, pnode] : *table) {
          const std::string_view pk = pkey.str();
          if (pk == "from" || pk == "to") {
            std::optional<Micros>& slot = pk == "from" ? from : to;
            slot = TomlDuration(pnode);
            if (!slot) {
              return TomlError(source, pnode, path + "." + std::string(pk),
                               "must be a duration such as \"10s\" or a number of seconds");
            }
            continue;
          }
          has_mode = has_mode || pk == "mode";
          std::optional<ConfigError> error;
          if (!ReadPhaseKey(source, path, pk, pnode, options, error)) {
            return *error;
          }
        }
        if (!from || !to || !has_mode) {
          // No value to point at: the phase's [[upstream.phase]] header.
          return TomlError(source, *table, path,
                           !from ? "needs `from`" : (!to ? "needs `to`" : "needs `mode`"));
        }
        if (*to <= *from) {
          return TomlError(source, *table->get("to"), path + ".to", "must be after `from`");
        }
        auto spec = BuildFaultSpec(options, Syntax::kToml);
        if (!spec) {
          const std::string& field = spec.error().field;
          return TomlError(source, FieldNode(*table, field), path + "." + field,
                           spec.error().message);
        }
        located.push_back(LocatedPhase{Phase{*from, *to, *spec}, i + 1, table->get("from")});
      }
    }
  }
  std::stable_sort(
      located.begin(), located.end(),
      [](const LocatedPhase& a, const LocatedPhase& b) { return a.phase.from < b.phase.from; });
  for (std::size_t i = 1; i < located.size(); ++i) {
    const LocatedPhase& earlier = located[i - 1];
    const LocatedPhase& later = located[i];
    if (later.phase.from < earlier.phase.to) {
      // "Later" in time order; of the two, the one whose `from` falls inside the other.
      return TomlError(source, *later.from, fmt::format("upstream.phase[{}].from", later.number),
                       fmt::format("overlaps upstream.phase[{}]: [{}, {}) and [{}, {}) "
                                   "(microseconds)",
                                   earlier.number, earlier.phase.from, earlier.phase.to,
                                   later.phase.from, later.phase.to));
    }
  }
  for (LocatedPhase& l : located) {
    schedule.phases.push_back(std::move(l.phase));
  }
  return schedule;
}

Result<Schedule, ConfigError> LoadScheduleFile(const std::string& path) {
  auto fail = [&path](std::string_view what, int error) {
    return ConfigError{
        "schedule", fmt::format("{}: {}: {}", path, what, std::generic_category().message(error))};
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return fail("cannot open the schedule file", errno);
  }
  std::string text;
  std::optional<ConfigError> error;
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    error = fail("cannot read the schedule file", errno);
  } else if (S_ISDIR(info.st_mode)) {
    error = ConfigError{"schedule",
                        fmt::format("{}: is a directory, not a schedule file (a TOML file)", path)};
  } else {
    std::array<char, 8192> chunk{};
    for (;;) {
      const ssize_t n = ::read(fd, chunk.data(), chunk.size());
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n < 0) {
        error = fail("cannot read the schedule file", errno);
        break;
      }
      if (n == 0) {
        break;
      }
      text.append(chunk.data(), static_cast<std::size_t>(n));
      if (text.size() > kMaxScheduleBytes) {
        error = ConfigError{"schedule", fmt::format("{}: larger than {} bytes: not a schedule file",
                                                    path, kMaxScheduleBytes)};
        break;
      }
    }
  }
  ::close(fd);
  if (error) {
    return *error;
  }
  return ParseSchedule(text, path);
}

const std::vector<std::string_view>& FaultLabels() {
  static const std::vector<std::string_view> kLabels = {
      "ok", "slow", "error", "hang", "reset", "garbage", "truncated", "drip", "capacity_rejected"};
  return kLabels;
}

FaultEngine::FaultEngine(FaultSpec startup, Schedule schedule, std::uint64_t seed)
    : startup_(std::move(startup)),
      schedule_(std::move(schedule)),
      random_(seed),
      active_key_(kNoKey) {}

void FaultEngine::SetOverride(const FaultSpec& spec) {
  override_ = spec;
  ++override_generation_;
}

void FaultEngine::Reset(Micros now) {
  override_.reset();
  origin_ = now;
  active_key_ = kNoKey;
  flap_count_ = 0;
  relapse_until_.reset();
}

const FaultSpec& FaultEngine::Effective(Micros now, std::string* source) const {
  if (override_) {
    if (source != nullptr) {
      *source = "control";
    }
    return *override_;
  }
  if (const Phase* phase = schedule_.PhaseAt(now - origin_)) {
    if (source != nullptr) {
      *source = fmt::format("schedule phase {}", (phase - schedule_.phases.data()) + 1);
    }
    return phase->spec;
  }
  if (source != nullptr) {
    *source = "startup";
  }
  return startup_;
}

std::int64_t FaultEngine::ActiveKey(Micros now) const {
  if (override_) {
    return -2 - override_generation_;
  }
  if (const Phase* phase = schedule_.PhaseAt(now - origin_)) {
    return phase - schedule_.phases.data();
  }
  return kStartupKey;
}

Micros FaultEngine::SampleLatency(const LatencySpec& latency) {
  switch (latency.dist) {
    case LatencyDist::kFixed:
      return latency.value;
    case LatencyDist::kUniform: {
      const double span = static_cast<double>(latency.max - latency.min);
      return latency.min + static_cast<Micros>(std::floor(random_.Uniform01() * (span + 1.0)));
    }
    case LatencyDist::kLognormal: {
      // Box-Muller; 1 - u keeps the logarithm's argument in (0, 1].
      const double u1 = 1.0 - random_.Uniform01();
      const double u2 = random_.Uniform01();
      const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
      double draw = static_cast<double>(latency.value) * std::exp(latency.sigma * z);
      draw = std::min(draw, static_cast<double>(kMaxLatency));
      if (latency.max > 0) {
        draw = std::min(draw, static_cast<double>(latency.max));
      }
      return static_cast<Micros>(std::llround(draw));
    }
  }
  return latency.value;
}

Decision FaultEngine::Admit(Micros now, std::int64_t in_flight) {
  const std::int64_t key = ActiveKey(now);
  if (key != active_key_) {
    active_key_ = key;
    flap_count_ = 0;
    relapse_until_.reset();
  }
  const FaultSpec& spec = Effective(now, nullptr);
  Decision d;
  auto fail = [&spec, &d](Micros delay) {
    d.action = Action::kError;
    d.delay = delay;
    d.status = spec.status;
    d.retry_after_s = spec.retry_after_s;
    d.label = "error";
  };
  switch (spec.mode) {
    case FaultMode::kOk:
      d.delay = SampleLatency(spec.latency);
      d.label = "ok";
      break;
    case FaultMode::kSlow:
      d.delay = SampleLatency(spec.latency);
      d.label = "slow";
      break;
    case FaultMode::kError:
      fail(SampleLatency(spec.latency));
      break;
    case FaultMode::kHang:
      d.action = Action::kHang;
      d.label = "hang";
      break;
    case FaultMode::kReset:
      d.action = Action::kReset;
      d.delay = SampleLatency(spec.latency);
      d.label = "reset";
      break;
    case FaultMode::kGarbage:
      d.action = Action::kGarbage;
      d.delay = SampleLatency(spec.latency);
      d.label = "garbage";
      break;
    case FaultMode::kTruncated:
      d.action = Action::kTruncated;
      d.delay = SampleLatency(spec.latency);
      d.label = "truncated";
      break;
    case FaultMode::kDrip:
      d.action = Action::kDrip;
      d.delay = SampleLatency(spec.latency);
      d.drip_bytes = spec.drip_bytes;
      d.drip_interval = spec.drip_interval;
      d.label = "drip";
      break;
    case FaultMode::kFlap: {
      const std::uint64_t k = flap_count_++;
      const auto every = static_cast<std::uint64_t>(spec.every);
      if ((k / every) % 2 == 0) {
        d.delay = SampleLatency(spec.latency);
        d.label = "ok";
      } else {
        fail(SampleLatency(spec.latency));
      }
      break;
    }
    case FaultMode::kCapacity:
      if (relapse_until_ && now < *relapse_until_) {
        fail(0);
      } else if (in_flight > spec.capacity) {
        if (spec.relapse > 0) {
          relapse_until_ = now + spec.relapse;
          fail(0);
        } else {
          d.action = Action::kReject;
          d.status = 503;
          d.retry_after_s = spec.retry_after_s;
          d.label = "capacity_rejected";
        }
      } else {
        relapse_until_.reset();
        d.delay = SampleLatency(spec.latency);
        d.label = "ok";
      }
      break;
  }
  return d;
}

}  // namespace fusebox::vpic_sim

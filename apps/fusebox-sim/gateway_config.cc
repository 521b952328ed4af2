#include "gateway_config.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>

#include "common/duration.h"
#include "common/gateway_breaker.h"
#include "common/toml_read.h"
#include "fusebox/breaker_settings.h"

namespace fusebox::sim {
namespace {

// The gateway's flag of a key ("failure_threshold" -> "--failure-threshold"), for messages worded
// as the gateway words them.
std::string FlagOf(std::string_view key) {
  std::string flag = "--";
  for (const char c : key) {
    flag += c == '_' ? '-' : c;
  }
  return flag;
}

// A value as the gateway turns a key's value into a flag's text: a string as it is, a number
// printed; nullopt for another type.
std::optional<std::string> ValueText(const toml::node& node) {
  if (const auto* s = node.as_string()) {
    return s->get();
  }
  if (const auto* i = node.as_integer()) {
    return fmt::format("{}", i->get());
  }
  if (const auto* f = node.as_floating_point()) {
    return fmt::format("{}", f->get());
  }
  return std::nullopt;
}

LoadError At(std::string_view path, const toml::node& node, std::string_view key,
             std::string message) {
  return app::ErrorAt(path, node, std::string(key), std::move(message));
}

Result<std::uint32_t, LoadError> ReadCount(std::string_view path, const toml::node& node,
                                           std::string_view key, std::uint32_t min,
                                           std::uint32_t max) {
  auto n = app::ReadInteger(node);
  if (!n) {
    return At(path, node, key, n.error().message);
  }
  if (*n < min || *n > max) {
    return At(path, node, key, fmt::format("must be in [{}, {}], got {}", min, max, *n));
  }
  return static_cast<std::uint32_t>(*n);
}

}  // namespace

Limit GatewaySettings::AsLimit() const {
  Limit limit;
  if (max_in_flight_auto) {
    limit.adaptive = true;
    limit.adaptive_config.min_limit = max_in_flight_min;
    limit.adaptive_config.max_limit = max_in_flight_max;
    // The gateway's adaptive limit starts at 16 (service/upstream_limits.h).
    limit.adaptive_config.initial_limit = std::clamp<std::uint32_t>(
        16, max_in_flight_min, std::max(max_in_flight_min, max_in_flight_max));
  } else {
    limit.max_in_flight = max_in_flight;
  }
  limit.throttle.k = throttle;
  limit.throttle.window = throttle_window;
  return limit;
}

GatewaySettings DefaultGatewaySettings() {
  GatewaySettings settings;
  settings.breaker = app::GatewayBreakerDefaults();
  return settings;
}

Result<GatewaySettings, LoadError> LoadGatewayConfig(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return LoadError{path, 0, 0, "", "cannot open the file"};
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return LoadError{path, 0, 0, "", "cannot read the file"};
  }
  return ReadGatewayConfig(text.str(), path);
}

Result<GatewaySettings, LoadError> ReadGatewayConfig(std::string_view text, std::string_view path) {
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    return app::SyntaxError(path, e);
  }
  GatewaySettings settings = DefaultGatewaySettings();
  bool window_as_duration = false;
  const toml::node* window_node = nullptr;
  const toml::node* first_breaker_node = nullptr;
  for (const auto& [key_name, node] : root) {
    const std::string_view key = key_name.str();
    if (const BreakerSetting* setting = app::FindBreakerKey(key)) {
      if (first_breaker_node == nullptr) {
        first_breaker_node = &node;
      }
      std::string value;
      if (setting->type == SettingType::kBool) {
        const auto* b = node.as_boolean();
        if (b == nullptr) {
          return At(path, node, key, "must be true or false");
        }
        value = b->get() ? "true" : "false";
      } else if (std::optional<std::string> v = ValueText(node)) {
        value = std::move(*v);
      } else {
        return At(path, node, key, "must be a string or a number");
      }
      if (setting->name == "window_size") {
        window_node = &node;
      }
      if (auto e = app::ReadBreakerText(settings.breaker, *setting, FlagOf(setting->name), value,
                                        window_as_duration)) {
        return At(path, node, key, e->message);
      }
    } else if (key == "max_in_flight") {
      if (const auto* s = node.as_string(); s != nullptr && s->get() == "auto") {
        settings.max_in_flight_auto = true;
        continue;
      }
      auto n = ReadCount(path, node, key, 1, 100000);
      if (!n) {
        return n.error();
      }
      settings.max_in_flight_auto = false;
      settings.max_in_flight = *n;
    } else if (key == "max_in_flight_min" || key == "max_in_flight_max") {
      auto n = ReadCount(path, node, key, 1, 100000);
      if (!n) {
        return n.error();
      }
      (key == "max_in_flight_min" ? settings.max_in_flight_min : settings.max_in_flight_max) = *n;
    } else if (key == "throttle") {
      auto k = app::ReadNumber(node);
      if (!k) {
        return At(path, node, key, k.error().message);
      }
      if (*k != 0 && (*k < 1 || *k > 100)) {
        return At(path, node, key, fmt::format("must be 0 or in [1, 100], got {}", *k));
      }
      settings.throttle = *k;
    } else if (key == "throttle_window") {
      auto d = app::ReadDuration(node);
      if (!d) {
        return At(path, node, key, d.error().message);
      }
      settings.throttle_window = std::chrono::microseconds(*d);
      if (*d < 100'000 || *d > 3600 * kMicrosPerSecond) {
        return At(path, node, key, "must be in [100ms, 1h]");
      }
    }
    // Any other key is one of the gateway's own settings: not the replay's.
  }
  if (settings.max_in_flight_min > settings.max_in_flight_max) {
    return LoadError{std::string(path), 0, 0, "max_in_flight_min",
                     fmt::format("must be at most max_in_flight_max ({}), got {}",
                                 settings.max_in_flight_max, settings.max_in_flight_min)};
  }
  if (window_as_duration && settings.breaker.trip == TripPolicy::kCountWindow) {
    return At(path, *window_node, "window_size",
              "must be a number of calls with trip = count_window, got a duration");
  }
  if (auto e = settings.breaker.Validate()) {
    if (first_breaker_node != nullptr) {
      return At(path, *first_breaker_node, e->field, e->message);
    }
    return LoadError{std::string(path), 0, 0, e->field, e->message};
  }
  return settings;
}

std::string GatewayBreakerToml(const CircuitBreakerConfig& breaker) {
  const CircuitBreakerConfig defaults = app::GatewayBreakerDefaults();
  std::string out;
  for (const BreakerSetting& setting : BreakerSettings()) {
    const SettingValue value = GetSetting(breaker, setting);
    if (value == GetSetting(defaults, setting) || std::holds_alternative<std::monostate>(value)) {
      continue;
    }
    std::string text = SettingText(value);
    if (setting.type == SettingType::kDuration) {
      text = fmt::format("\"{}\"", app::FormatFlagDuration(std::get<Duration>(value)));
    } else if (setting.type == SettingType::kTripPolicy ||
               setting.type == SettingType::kProbeMode) {
      text = fmt::format("\"{}\"", text);
    }
    out += fmt::format("{} = {}\n", setting.name, text);
  }
  if (out.empty()) {
    out = "# (the gateway's defaults)\n";
  }
  return out;
}

std::string GatewayBreakerSummary(const CircuitBreakerConfig& breaker) {
  std::string toml = GatewayBreakerToml(breaker);
  if (toml.starts_with("#")) {
    return "the gateway's defaults";
  }
  std::string out;
  for (const char c : toml) {
    if (c == '\n') {
      out += ", ";
    } else {
      out += c;
    }
  }
  if (out.ends_with(", ")) {
    out.resize(out.size() - 2);
  }
  return out;
}

}  // namespace fusebox::sim

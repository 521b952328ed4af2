#include "common/gateway_breaker.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <system_error>

#include "common/duration.h"

namespace fusebox::app {
namespace {

ConfigError Malformed(std::string_view flag, std::string_view value, std::string_view expected) {
  return {std::string(flag), fmt::format("{}: cannot read '{}' as {}", flag, value, expected)};
}

std::optional<std::uint64_t> ParseUnsigned(std::string_view text) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) {
    return std::nullopt;
  }
  return value;
}

std::optional<double> ParseDouble(std::string_view text) {
  double value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty() || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

std::optional<Duration> ParseFlagText(std::string_view text) {
  auto parsed = ParseFlagDuration(text);
  if (!parsed) {
    return std::nullopt;
  }
  return std::chrono::duration_cast<Duration>(*parsed);
}

constexpr OldBreakerName kOldBreakerNames[] = {
    {"trip", "--policy", "policy"},
    {"window_size", "--window", "window"},
    {"failure_rate_threshold", "--failure-rate", "failure_rate"},
    {"slow_call_rate_threshold", "--slow-call-rate", "slow_call_rate"},
    {"inflight_slow_accounting", "--count-in-flight-slow", "count_in_flight_slow"},
    {"half_open_max_probes", "--half-open-probes", "half_open_probes"},
    {"half_open_successes", "--probes-to-close", "probes_to_close"},
    {"cooldown_multiplier", "--cooldown-growth", "cooldown_growth"},
    {"cooldown_max", "--max-cooldown", "max_cooldown"},
};

// window_size as a duration: whole seconds (the time window keeps one-second buckets).
std::optional<ConfigError> ReadWindowDuration(CircuitBreakerConfig& breaker, std::string_view flag,
                                              std::string_view value, bool& window_as_duration) {
  const std::optional<Duration> d = ParseFlagText(value);
  if (!d) {
    return Malformed(flag, value,
                     "a number (calls; seconds with time_window) or a duration such as 60s");
  }
  if (*d % std::chrono::seconds(1) != Duration::zero()) {
    return ConfigError{std::string(flag),
                       fmt::format("{} must be whole seconds (the window is kept in one-second "
                                   "buckets), got {}",
                                   flag, FormatFlagDuration(*d))};
  }
  breaker.window_size = static_cast<std::uint32_t>(
      std::min<std::int64_t>(std::chrono::duration_cast<std::chrono::seconds>(*d).count(),
                             std::numeric_limits<std::uint32_t>::max()));
  window_as_duration = true;
  return std::nullopt;
}

}  // namespace

CircuitBreakerConfig GatewayBreakerDefaults() {
  CircuitBreakerConfig breaker;
  breaker.failure_threshold = 3;
  breaker.slow_call_duration = std::chrono::seconds(3);
  breaker.cooldown = std::chrono::seconds(20);
  breaker.half_open_successes = 1;
  breaker.inflight_slow_accounting = true;
  breaker.probe_mode = ProbeMode::kActive;
  breaker.probe_interval = std::chrono::seconds(2);
  breaker.probe_budget = std::chrono::seconds(2);
  return breaker;
}

std::span<const OldBreakerName> OldBreakerNames() noexcept { return kOldBreakerNames; }

const BreakerSetting* FindBreakerKey(std::string_view key) noexcept {
  if (const BreakerSetting* setting = FindBreakerSetting(key)) {
    return setting;
  }
  for (const OldBreakerName& old : kOldBreakerNames) {
    if (old.key == key) {
      return FindBreakerSetting(old.setting);
    }
  }
  return nullptr;
}

std::optional<ConfigError> ReadBreakerText(CircuitBreakerConfig& breaker,
                                           const BreakerSetting& setting, std::string_view flag,
                                           std::string_view value, bool& window_as_duration) {
  SettingValue parsed;
  switch (setting.type) {
    case SettingType::kTripPolicy: {
      const std::optional<TripPolicy> trip = ParseTripPolicy(value);
      if (!trip) {
        return ConfigError{std::string(flag),
                           fmt::format("{} must be consecutive, count_window or time_window, "
                                       "got '{}'",
                                       flag, value)};
      }
      parsed = *trip;
      break;
    }
    case SettingType::kProbeMode: {
      const std::optional<ProbeMode> mode = ParseProbeMode(value);
      if (!mode) {
        return ConfigError{std::string(flag),
                           fmt::format("{} must be passive or active, got '{}'", flag, value)};
      }
      parsed = *mode;
      break;
    }
    case SettingType::kCount: {
      const std::optional<std::uint64_t> n = ParseUnsigned(value);
      if (!n && setting.name == "window_size") {
        return ReadWindowDuration(breaker, flag, value, window_as_duration);
      }
      if (!n) {
        return Malformed(flag, value, "a whole number");
      }
      // Larger than 32 bits: the largest it holds, which the range check then refuses.
      parsed = static_cast<std::uint32_t>(
          std::min<std::uint64_t>(*n, std::numeric_limits<std::uint32_t>::max()));
      if (setting.name == "window_size") {
        window_as_duration = false;
      }
      break;
    }
    case SettingType::kNumber: {
      const std::optional<double> d = ParseDouble(value);
      if (!d) {
        return Malformed(flag, value, "a number");
      }
      parsed = *d;
      break;
    }
    case SettingType::kDuration: {
      const std::optional<Duration> d = ParseFlagText(value);
      if (!d) {
        return Malformed(flag, value, "a duration such as 500ms, 7s, 20m, 1h or 30d");
      }
      parsed = *d;
      break;
    }
    case SettingType::kBool:
      if (value != "true" && value != "false") {
        return Malformed(flag, value, "true or false");
      }
      parsed = value == "true";
      break;
  }
  SetSetting(breaker, setting, parsed);
  return std::nullopt;
}

std::string FormatFlagDuration(Duration d) {
  const auto ns = d.count();
  struct Unit {
    Duration::rep ns;
    std::string_view suffix;
  };
  constexpr Unit kUnits[] = {{86'400'000'000'000, "d"}, {3'600'000'000'000, "h"},
                             {60'000'000'000, "m"},     {1'000'000'000, "s"},
                             {1'000'000, "ms"},         {1'000, "us"}};
  if (ns == 0) {
    return "0s";
  }
  for (const Unit& u : kUnits) {
    if (ns % u.ns == 0) {
      return fmt::format("{}{}", ns / u.ns, u.suffix);
    }
  }
  // Below the grammar's microsecond: seconds with nine decimals, which parse back rounded to the
  // microsecond (the grammar has no "ns").
  return fmt::format("{}.{:09}s", ns / 1'000'000'000, ns % 1'000'000'000);
}

}  // namespace fusebox::app

// fusebox/breaker_settings.h
//
// Every field of CircuitBreakerConfig described once: its name, type, valid range, default and a
// line of help. CircuitBreakerConfig::Validate() and DescribeChanges() are driven by this table,
// and front ends build on it (fusebox-sim's [breaker] keys; vin-gateway's breaker flags and
// config keys), so a setting has one name and one range everywhere.
//
// Thread safety: the table is immutable; GetSetting/SetSetting touch only the config given.
//
// Example:
//   const BreakerSetting* s = FindBreakerSetting("cooldown");
//   CircuitBreakerConfig config;
//   SetSetting(config, *s, SettingValue{std::chrono::seconds(30)});
//   // config.cooldown == 30 s; Validate() checks it against s->min and s->max.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "fusebox/circuit_breaker.h"

namespace fusebox {

enum class SettingType : std::uint8_t {
  kTripPolicy,  // "consecutive", "count_window", "time_window"
  kCount,       // std::uint32_t
  kNumber,      // double
  kDuration,    // Duration
  kBool,
  kProbeMode,  // "passive", "active"
};

// A setting's value; std::monostate is an optional setting left unset (its default is derived
// from other settings: slow_call_duration, half_open_successes, cooldown_max).
using SettingValue =
    std::variant<std::monostate, TripPolicy, std::uint32_t, double, Duration, bool, ProbeMode>;

struct BreakerSetting {
  std::string_view name;  // the field's name: also the scenario key and the config-file key
  SettingType type;
  bool optional;                  // may be unset (std::monostate)
  std::string_view default_text;  // "5", "7s", "call_timeout", ...
  std::string_view help;          // one line, no period
  // The static range of kCount, kNumber and kDuration (seconds): [min, max], or (min, max] when
  // min_open. A setting with `check` has a range that depends on other settings; `range` says it.
  double min = 0;
  double max = 0;
  bool min_open = false;
  std::string_view range = {};  // overrides RangeText() when not empty
  // Replaces the static range check when set (a range that depends on other settings).
  std::optional<ConfigError> (*check)(const CircuitBreakerConfig&) = nullptr;
  SettingValue (*get)(const CircuitBreakerConfig&) = nullptr;
  void (*set)(CircuitBreakerConfig&, const SettingValue&) = nullptr;
};

// In declaration order of CircuitBreakerConfig.
std::span<const BreakerSetting> BreakerSettings() noexcept;

// The row named `name`, or nullptr.
const BreakerSetting* FindBreakerSetting(std::string_view name) noexcept;

// The valid range as errors and help print it: "[1, 1000000]", "(0, 1]", "(0s, 86400s]",
// "[cooldown, 86400s]"; for a kTripPolicy, "consecutive, count_window or time_window"; for a
// kProbeMode, "passive or active"; for a
// kBool, "true or false".
std::string RangeText(const BreakerSetting& setting);

// The value of `setting` in `config` (std::monostate: an unset optional).
SettingValue GetSetting(const CircuitBreakerConfig& config, const BreakerSetting& setting);

// Sets `setting` in `config`. The value's type must be the setting's (std::monostate only for an
// optional one); false, and nothing changed, when it is not. The range is not checked here:
// Validate() checks the whole config.
bool SetSetting(CircuitBreakerConfig& config, const BreakerSetting& setting,
                const SettingValue& value);

// A value as DescribeChanges prints it: "5", "0.5", "10s", "true", "count_window", "active",
// "default".
std::string SettingText(const SettingValue& value);

}  // namespace fusebox

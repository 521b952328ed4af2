// The table of CircuitBreakerConfig's settings (fusebox/breaker_settings.h), and what it drives
// in the library: CircuitBreakerConfig::Validate (the first setting out of its range, in table
// order, with the range and the value given) and DescribeChanges (the "field: old -> new" lines of
// a live reconfiguration's log). The ranges are the contract's (docs/breaker-rules.md,
// "Configuration: defaults and ranges").
#include "fusebox/breaker_settings.h"

#include <array>
#include <chrono>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include "internal/sliding_window.h"

namespace fusebox {
namespace {

using Config = CircuitBreakerConfig;
constexpr double kDaySeconds = 86'400;

std::string Number(double v) {
  std::array<char, 32> buf{};
  std::snprintf(buf.data(), buf.size(), "%g", v);
  return buf.data();
}

std::string Seconds(Duration d) { return Number(ToSeconds(d)) + "s"; }

template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};

template <auto Member>
SettingValue Get(const Config& config) {
  const auto& value = config.*Member;
  if constexpr (IsOptional<std::remove_cvref_t<decltype(value)>>::value) {
    if (!value) {
      return std::monostate{};
    }
    return SettingValue{*value};
  } else {
    return SettingValue{value};
  }
}

// SetSetting has checked that `value` holds the field's type (or monostate for an optional).
template <auto Member>
void Set(Config& config, const SettingValue& value) {
  auto& field = config.*Member;
  using Field = std::remove_cvref_t<decltype(field)>;
  if constexpr (IsOptional<Field>::value) {
    if (std::holds_alternative<std::monostate>(value)) {
      field.reset();
    } else {
      field = std::get<typename Field::value_type>(value);
    }
  } else {
    field = std::get<Field>(value);
  }
}

// A count as itself: %g would write 1000001 as "1e+06", inside the range it is refused by.
std::optional<ConfigError> RangeError(std::string_view field, std::uint32_t value,
                                      const std::string& range) {
  return ConfigError{std::string(field), std::string(field) + " must be in " + range + ", got " +
                                             std::to_string(value)};
}

// window_size counts calls, or seconds with time_window (and a narrower range).
std::optional<ConfigError> CheckWindowSize(const Config& c) {
  if (c.trip == TripPolicy::kTimeWindow && (c.window_size < 1 || c.window_size > 3600)) {
    return RangeError("window_size", c.window_size, "[1, 3600] (seconds, time_window)");
  }
  static_assert(1'000'000 <= CountWindow::kMaxSize);
  if (c.window_size < 1 || c.window_size > 1'000'000) {
    return RangeError("window_size", c.window_size, "[1, 1000000]");
  }
  return std::nullopt;
}

std::optional<ConfigError> CheckMinimumCalls(const Config& c) {
  if (c.minimum_calls < 1 || c.minimum_calls > 1'000'000) {
    return RangeError("minimum_calls", c.minimum_calls, "[1, 1000000]");
  }
  // A count window never holds more than window_size outcomes: a larger gate never opens.
  if (c.trip == TripPolicy::kCountWindow && c.minimum_calls > c.window_size) {
    return RangeError("minimum_calls", c.minimum_calls,
                      "[1, window_size (" + std::to_string(c.window_size) + ")] (count_window)");
  }
  return std::nullopt;
}

std::optional<ConfigError> CheckCooldownMax(const Config& c) {
  if (c.cooldown_max &&
      (*c.cooldown_max < c.cooldown || *c.cooldown_max > std::chrono::hours(24))) {
    return ConfigError{"cooldown_max", "cooldown_max must be in [cooldown (" + Seconds(c.cooldown) +
                                           "), 86400s], got " + Seconds(*c.cooldown_max)};
  }
  return std::nullopt;
}

std::optional<ConfigError> CheckProbeIntervalMax(const Config& c) {
  const Duration interval = c.effective_probe_interval();
  if (c.probe_interval_max &&
      (*c.probe_interval_max < interval || *c.probe_interval_max > std::chrono::hours(24))) {
    return ConfigError{"probe_interval_max", "probe_interval_max must be in [probe interval (" +
                                                 Seconds(interval) + "), 86400s], got " +
                                                 Seconds(*c.probe_interval_max)};
  }
  return std::nullopt;
}

// clang-format off
constexpr std::array kSettings = {
    BreakerSetting{"trip", SettingType::kTripPolicy, false, "consecutive",
                   "how CLOSED decides to trip",
                   0, 0, false, {}, nullptr, &Get<&Config::trip>, &Set<&Config::trip>},
    BreakerSetting{"failure_threshold", SettingType::kCount, false, "5",
                   "consecutive: failures or slow calls in a row that trip",
                   1, 1'000'000, false, {}, nullptr,
                   &Get<&Config::failure_threshold>, &Set<&Config::failure_threshold>},
    BreakerSetting{"window_size", SettingType::kCount, false, "100",
                   "window policies: calls kept (count_window) or seconds (time_window)",
                   1, 1'000'000, false, "[1, 1000000]; [1, 3600] with time_window",
                   &CheckWindowSize, &Get<&Config::window_size>, &Set<&Config::window_size>},
    BreakerSetting{"minimum_calls", SettingType::kCount, false, "10",
                   "window policies: calls in the window before a rate may trip",
                   1, 1'000'000, false, "[1, 1000000]; at most window_size with count_window",
                   &CheckMinimumCalls, &Get<&Config::minimum_calls>,
                   &Set<&Config::minimum_calls>},
    BreakerSetting{"failure_rate_threshold", SettingType::kNumber, false, "0.5",
                   "window policies: the failure rate that trips",
                   0, 1, true, {}, nullptr,
                   &Get<&Config::failure_rate_threshold>, &Set<&Config::failure_rate_threshold>},
    BreakerSetting{"slow_call_duration", SettingType::kDuration, true, "call_timeout",
                   "a call this long is slow",
                   0, kDaySeconds, true, {}, nullptr,
                   &Get<&Config::slow_call_duration>, &Set<&Config::slow_call_duration>},
    BreakerSetting{"slow_call_rate_threshold", SettingType::kNumber, false, "1",
                   "window policies: the slow-call rate that trips",
                   0, 1, true, {}, nullptr,
                   &Get<&Config::slow_call_rate_threshold>,
                   &Set<&Config::slow_call_rate_threshold>},
    BreakerSetting{"call_timeout", SettingType::kDuration, false, "7s",
                   "the budget of one call: one that reaches it is a timeout",
                   0, kDaySeconds, true, {}, nullptr,
                   &Get<&Config::call_timeout>, &Set<&Config::call_timeout>},
    BreakerSetting{"cooldown", SettingType::kDuration, false, "10s",
                   "how long OPEN rejects before a probe may run",
                   0, kDaySeconds, true, {}, nullptr,
                   &Get<&Config::cooldown>, &Set<&Config::cooldown>},
    BreakerSetting{"half_open_max_probes", SettingType::kCount, false, "1",
                   "probes in flight at once in HALF_OPEN",
                   1, 10'000, false, {}, nullptr,
                   &Get<&Config::half_open_max_probes>, &Set<&Config::half_open_max_probes>},
    BreakerSetting{"half_open_successes", SettingType::kCount, true, "half_open_max_probes",
                   "good probes that close the breaker",
                   1, 10'000, false, {}, nullptr,
                   &Get<&Config::half_open_successes>, &Set<&Config::half_open_successes>},
    BreakerSetting{"batch_may_probe", SettingType::kBool, false, "false",
                   "whether a batch call may take a probe slot",
                   0, 0, false, {}, nullptr,
                   &Get<&Config::batch_may_probe>, &Set<&Config::batch_may_probe>},
    BreakerSetting{"inflight_slow_accounting", SettingType::kBool, false, "false",
                   "calls running past slow_call_duration count as slow before they end",
                   0, 0, false, {}, nullptr,
                   &Get<&Config::inflight_slow_accounting>,
                   &Set<&Config::inflight_slow_accounting>},
    BreakerSetting{"cooldown_multiplier", SettingType::kNumber, false, "1",
                   "each failed probe multiplies the next cooldown by this (1: no growth)",
                   1, 100, false, {}, nullptr,
                   &Get<&Config::cooldown_multiplier>, &Set<&Config::cooldown_multiplier>},
    BreakerSetting{"cooldown_max", SettingType::kDuration, true, "the larger of 5m and cooldown",
                   "cap of the grown cooldown",
                   0, kDaySeconds, false, "[cooldown, 86400s]", &CheckCooldownMax,
                   &Get<&Config::cooldown_max>, &Set<&Config::cooldown_max>},
    BreakerSetting{"cooldown_jitter", SettingType::kNumber, false, "0",
                   "each cooldown is drawn within +- this share of it",
                   0, 1, false, {}, nullptr,
                   &Get<&Config::cooldown_jitter>, &Set<&Config::cooldown_jitter>},
    BreakerSetting{"recovery_ramp", SettingType::kDuration, false, "0s",
                   "after HALF_OPEN closes, admit a share of calls growing to all over this long "
                   "(0: none)",
                   0, kDaySeconds, false, {}, nullptr,
                   &Get<&Config::recovery_ramp>, &Set<&Config::recovery_ramp>},
    BreakerSetting{"recovery_ramp_start", SettingType::kNumber, false, "0.1",
                   "the ramp starts from at most this share of calls",
                   0, 1, true, {}, nullptr,
                   &Get<&Config::recovery_ramp_start>, &Set<&Config::recovery_ramp_start>},
    BreakerSetting{"probe_mode", SettingType::kProbeMode, false, "passive",
                   "who probes: the first callers after the cooldown (passive) or only a prober "
                   "of the application's, callers refused until CLOSED (active)",
                   0, 0, false, {}, nullptr, &Get<&Config::probe_mode>, &Set<&Config::probe_mode>},
    BreakerSetting{"probe_interval", SettingType::kDuration, true, "cooldown",
                   "active: how long OPEN waits before each probe",
                   0, kDaySeconds, true, {}, nullptr,
                   &Get<&Config::probe_interval>, &Set<&Config::probe_interval>},
    BreakerSetting{"probe_interval_max", SettingType::kDuration, true,
                   "the larger of 5m and the probe interval",
                   "active: cap of the grown probe interval",
                   0, kDaySeconds, false, "[probe interval, 86400s]", &CheckProbeIntervalMax,
                   &Get<&Config::probe_interval_max>, &Set<&Config::probe_interval_max>},
    BreakerSetting{"probe_budget", SettingType::kDuration, true, "call_timeout",
                   "the budget of a prober's probe (at most call_timeout)",
                   0, kDaySeconds, true, {}, nullptr,
                   &Get<&Config::probe_budget>, &Set<&Config::probe_budget>},
};
// clang-format on

// The variant index a setting's values hold.
constexpr std::size_t IndexOf(SettingType type) {
  switch (type) {
    case SettingType::kTripPolicy:
      return 1;
    case SettingType::kCount:
      return 2;
    case SettingType::kNumber:
      return 3;
    case SettingType::kDuration:
      return 4;
    case SettingType::kBool:
      return 5;
    case SettingType::kProbeMode:
      return 6;
  }
  return 0;
}

// The static range of one setting (its `check` aside): nullopt when `value` is in it.
std::optional<ConfigError> CheckStaticRange(const BreakerSetting& setting,
                                            const SettingValue& value) {
  double number = 0;
  std::string shown;
  if (const auto* count = std::get_if<std::uint32_t>(&value)) {
    number = *count;
    shown = std::to_string(*count);
  } else if (const auto* real = std::get_if<double>(&value)) {
    number = *real;
    shown = Number(number);
  } else if (const auto* duration = std::get_if<Duration>(&value)) {
    number = ToSeconds(*duration);
    shown = Seconds(*duration);
  } else {
    return std::nullopt;  // unset, a policy or a bool: no static range
  }
  // Written so that NaN is out of every range.
  const bool above_min = setting.min_open ? number > setting.min : number >= setting.min;
  if (above_min && number <= setting.max) {
    return std::nullopt;
  }
  return ConfigError{std::string(setting.name), std::string(setting.name) + " must be in " +
                                                    RangeText(setting) + ", got " + shown};
}

}  // namespace

std::span<const BreakerSetting> BreakerSettings() noexcept { return kSettings; }

const BreakerSetting* FindBreakerSetting(std::string_view name) noexcept {
  for (const BreakerSetting& s : kSettings) {
    if (s.name == name) {
      return &s;
    }
  }
  return nullptr;
}

std::string RangeText(const BreakerSetting& setting) {
  if (!setting.range.empty()) {
    return std::string(setting.range);
  }
  const std::string open = setting.min_open ? "(" : "[";
  switch (setting.type) {
    case SettingType::kTripPolicy:
      return "consecutive, count_window or time_window";
    case SettingType::kBool:
      return "true or false";
    case SettingType::kProbeMode:
      return "passive or active";
    case SettingType::kCount:
      return open + std::to_string(static_cast<std::uint64_t>(setting.min)) + ", " +
             std::to_string(static_cast<std::uint64_t>(setting.max)) + "]";
    case SettingType::kNumber:
      return open + Number(setting.min) + ", " + Number(setting.max) + "]";
    case SettingType::kDuration:
      return open + Number(setting.min) + "s, " + Number(setting.max) + "s]";
  }
  return {};
}

SettingValue GetSetting(const CircuitBreakerConfig& config, const BreakerSetting& setting) {
  return setting.get(config);
}

bool SetSetting(CircuitBreakerConfig& config, const BreakerSetting& setting,
                const SettingValue& value) {
  const bool unset = std::holds_alternative<std::monostate>(value);
  if (unset ? !setting.optional : value.index() != IndexOf(setting.type)) {
    return false;
  }
  setting.set(config, value);
  return true;
}

std::string SettingText(const SettingValue& value) {
  struct Visitor {
    std::string operator()(std::monostate /*unset*/) const { return "default"; }
    std::string operator()(TripPolicy v) const { return std::string(ToString(v)); }
    std::string operator()(std::uint32_t v) const { return std::to_string(v); }
    std::string operator()(double v) const { return Number(v); }
    std::string operator()(Duration v) const { return Seconds(v); }
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(ProbeMode v) const { return std::string(ToString(v)); }
  };
  return std::visit(Visitor{}, value);
}

std::optional<ConfigError> CircuitBreakerConfig::Validate() const {
  for (const BreakerSetting& setting : kSettings) {
    std::optional<ConfigError> error = setting.check != nullptr
                                           ? setting.check(*this)
                                           : CheckStaticRange(setting, setting.get(*this));
    if (error) {
      return error;
    }
  }
  return std::nullopt;
}

std::vector<std::string> DescribeChanges(const CircuitBreakerConfig& before,
                                         const CircuitBreakerConfig& after) {
  std::vector<std::string> out;
  for (const BreakerSetting& setting : kSettings) {
    const SettingValue old_value = setting.get(before);
    const SettingValue new_value = setting.get(after);
    if (!(old_value == new_value)) {
      out.push_back(std::string(setting.name) + ": " + SettingText(old_value) + " -> " +
                    SettingText(new_value));
    }
  }
  return out;
}

}  // namespace fusebox

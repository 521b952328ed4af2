// [breaker]: one key per CircuitBreakerConfig field. The ranges are the breaker's own
// (CircuitBreakerConfig::Validate(), checked once the scenario is whole); here a count is only
// checked to fit 32 bits.
#include <fmt/format.h>

#include <array>
#include <chrono>
#include <limits>

#include "scenario_reader.h"

namespace fusebox::sim {
namespace {

using Config = CircuitBreakerConfig;

constexpr std::array<std::string_view, 3> kTripNames = {"consecutive", "count_window",
                                                        "time_window"};

std::optional<std::string> FitsCount(const SettingValue& v) {
  if (v.integer < 0 || v.integer > std::numeric_limits<std::uint32_t>::max()) {
    return fmt::format("must be a positive 32-bit integer, got {}", v.integer);
  }
  return std::nullopt;
}

std::uint32_t Count(const SettingValue& v) { return static_cast<std::uint32_t>(v.integer); }
Duration Micro(const SettingValue& v) { return std::chrono::microseconds(v.integer); }

constexpr auto kBreakerSettings = std::to_array<Setting<Config>>({
    {"trip", KeyKind::kString, "consecutive, count_window or time_window", kTripNames, nullptr,
     [](Config& c, const SettingValue& v) { c.trip = *ParseTripPolicy(v.text); }},
    {"failure_threshold",
     KeyKind::kInteger,
     "consecutive: failures in a row that trip",
     {},
     &FitsCount,
     [](Config& c, const SettingValue& v) { c.failure_threshold = Count(v); }},
    {"window_size",
     KeyKind::kInteger,
     "window policies: calls or seconds kept",
     {},
     &FitsCount,
     [](Config& c, const SettingValue& v) { c.window_size = Count(v); }},
    {"minimum_calls",
     KeyKind::kInteger,
     "window policies: calls before a rate may trip",
     {},
     &FitsCount,
     [](Config& c, const SettingValue& v) { c.minimum_calls = Count(v); }},
    {"failure_rate_threshold",
     KeyKind::kNumber,
     "window policies: failure rate that trips",
     {},
     nullptr,
     [](Config& c, const SettingValue& v) { c.failure_rate_threshold = v.number; }},
    {"slow_call_duration",
     KeyKind::kDuration,
     "a call this long is slow (default call_timeout)",
     {},
     nullptr,
     [](Config& c, const SettingValue& v) { c.slow_call_duration = Micro(v); }},
    {"slow_call_rate_threshold",
     KeyKind::kNumber,
     "window policies: slow-call rate that trips",
     {},
     nullptr,
     [](Config& c, const SettingValue& v) { c.slow_call_rate_threshold = v.number; }},
    {"call_timeout",
     KeyKind::kDuration,
     "the per-call budget",
     {},
     nullptr,
     [](Config& c, const SettingValue& v) { c.call_timeout = Micro(v); }},
    {"cooldown",
     KeyKind::kDuration,
     "how long OPEN rejects before a probe",
     {},
     nullptr,
     [](Config& c, const SettingValue& v) { c.cooldown = Micro(v); }},
    {"half_open_max_probes",
     KeyKind::kInteger,
     "probes in flight at once in HALF_OPEN",
     {},
     &FitsCount,
     [](Config& c, const SettingValue& v) { c.half_open_max_probes = Count(v); }},
    {"half_open_successes",
     KeyKind::kInteger,
     "good probes needed to close",
     {},
     &FitsCount,
     [](Config& c, const SettingValue& v) { c.half_open_successes = Count(v); }},
    {"batch_may_probe",
     KeyKind::kBool,
     "whether a batch call may take a probe slot",
     {},
     nullptr,
     [](Config& c, const SettingValue& v) { c.batch_may_probe = v.flag; }},
    {"inflight_slow_accounting",
     KeyKind::kBool,
     "window policies: running calls past slow_call_duration count as slow",
     {},
     nullptr,
     [](Config& c, const SettingValue& v) { c.inflight_slow_accounting = v.flag; }},
    {"cooldown_multiplier",
     KeyKind::kNumber,
     "growth of the cooldown after a failed probe",
     {},
     nullptr,
     [](Config& c, const SettingValue& v) { c.cooldown_multiplier = v.number; }},
    {"cooldown_max",
     KeyKind::kDuration,
     "cap of the grown cooldown",
     {},
     nullptr,
     [](Config& c, const SettingValue& v) { c.cooldown_max = Micro(v); }},
    {"cooldown_jitter",
     KeyKind::kNumber,
     "each cooldown drawn in [c*(1-j), c*(1+j)]",
     {},
     nullptr,
     [](Config& c, const SettingValue& v) { c.cooldown_jitter = v.number; }},
    {"recovery_ramp",
     KeyKind::kDuration,
     "after HALF_OPEN closes, admit a share growing to all over this long (0: none)",
     {},
     nullptr,
     [](Config& c, const SettingValue& v) { c.recovery_ramp = Micro(v); }},
});

}  // namespace

std::span<const Setting<CircuitBreakerConfig>> BreakerSettings() { return kBreakerSettings; }

void ScenarioReader::ApplyBreakerKey(std::string_view key, const toml::node& node,
                                     const std::string& full) {
  Apply(BreakerSettings(), scenario_.breaker, key, node, full);
}

}  // namespace fusebox::sim

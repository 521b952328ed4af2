// [limit]: the pieces in front of the upstream besides the breaker. `max_in_flight` is a fixed
// cap (a fusebox::Bulkhead) or "auto" (a fusebox::AdaptiveLimit); the adaptive keys are the fields
// of AdaptiveLimitConfig under their own names, used when it is "auto"; throttle_k and
// throttle_window are ThrottleConfig's k and window (a fusebox::Throttle, off while throttle_k is
// 0). Their ranges are the library's Validate()s', checked once the scenario is whole (the loader
// points a complaint at the key's line, as it does the breaker's).
#include <fmt/format.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <limits>

#include "scenario_reader.h"

namespace fusebox::sim {
namespace {

// A fixed cap is a Bulkhead's max_concurrent.
constexpr std::int64_t kMaxFixedLimit = 1'000'000;

std::optional<std::string> FixedOrAuto(const SettingValue& v) {
  if (!v.flag && (v.integer < 1 || v.integer > kMaxFixedLimit)) {
    return fmt::format("must be in [1, {}] or \"auto\", got {}", kMaxFixedLimit, v.integer);
  }
  return std::nullopt;
}

// A count of AdaptiveLimitConfig: its range is Validate()'s; here only that it fits the field.
std::optional<std::string> Count32(const SettingValue& v) {
  if (v.integer < 0 || v.integer > std::numeric_limits<std::uint32_t>::max()) {
    return fmt::format("must be a positive 32-bit integer, got {}", v.integer);
  }
  return std::nullopt;
}

std::uint32_t AsCount(const SettingValue& v) { return static_cast<std::uint32_t>(v.integer); }

Duration AsDuration(const SettingValue& v) {
  return Duration(std::chrono::microseconds(v.integer));
}

constexpr auto kLimitSettings = std::to_array<Setting<Limit>>({
    {"max_in_flight",
     KeyKind::kIntegerOrAuto,
     "calls in flight at once: a number (a fixed cap, in [1, 1000000]) or \"auto\" (an adaptive "
     "limit) (default: none; a [limit] needs it or throttle_k)",
     {},
     &FixedOrAuto,
     [](Limit& l, const SettingValue& v) {
       l.adaptive = v.flag;
       l.max_in_flight = v.flag ? 0 : static_cast<std::uint32_t>(v.integer);
     }},
    {"min_limit",
     KeyKind::kInteger,
     "auto: the lowest limit, and the limit while the no-load latency is measured (default 3), "
     "in [1, 100000]",
     {},
     &Count32,
     [](Limit& l, const SettingValue& v) { l.adaptive_config.min_limit = AsCount(v); }},
    {"max_limit",
     KeyKind::kInteger,
     "auto: the highest limit (default 1000), in [min_limit, 100000]",
     {},
     &Count32,
     [](Limit& l, const SettingValue& v) { l.adaptive_config.max_limit = AsCount(v); }},
    {"initial_limit",
     KeyKind::kInteger,
     "auto: where the limit starts (default 16), in [min_limit, max_limit]",
     {},
     &Count32,
     [](Limit& l, const SettingValue& v) { l.adaptive_config.initial_limit = AsCount(v); }},
    {"sample_window",
     KeyKind::kDuration,
     "auto: a window closes at its first record this old (default 1s), in [1ms, 1h]",
     {},
     nullptr,
     [](Limit& l, const SettingValue& v) { l.adaptive_config.sample_window = AsDuration(v); }},
    {"min_window_samples",
     KeyKind::kInteger,
     "auto: and with at least this many records (default 10), in [1, 100000]",
     {},
     &Count32,
     [](Limit& l, const SettingValue& v) { l.adaptive_config.min_window_samples = AsCount(v); }},
    {"tolerance",
     KeyKind::kNumber,
     "auto: how much slower than no-load a window may be before the limit comes down "
     "(default 1.25), in [1, 10]",
     {},
     nullptr,
     [](Limit& l, const SettingValue& v) { l.adaptive_config.tolerance = v.number; }},
    {"smoothing",
     KeyKind::kNumber,
     "auto: the share of a window's new limit taken in (default 0.2), in (0, 1]",
     {},
     nullptr,
     [](Limit& l, const SettingValue& v) { l.adaptive_config.smoothing = v.number; }},
    {"backoff_ratio",
     KeyKind::kNumber,
     "auto: the limit's factor after a window with a drop (default 0.9), in [0.5, 1)",
     {},
     nullptr,
     [](Limit& l, const SettingValue& v) { l.adaptive_config.backoff_ratio = v.number; }},
    {"no_load_reset",
     KeyKind::kDuration,
     "auto: how often the no-load latency is measured afresh (default 1m), in [1s, 1d]",
     {},
     nullptr,
     [](Limit& l, const SettingValue& v) { l.adaptive_config.no_load_reset = AsDuration(v); }},
    {"throttle_k",
     KeyKind::kNumber,
     "a client-side throttle after the breaker: nothing shed while more than 1/k of the calls "
     "sent succeed (default 0: no throttle), 0 or in [1, 100]",
     {},
     nullptr,
     [](Limit& l, const SettingValue& v) { l.throttle.k = v.number; }},
    {"throttle_window",
     KeyKind::kDuration,
     "the throttle's counts reach this far back (default 30s), in [100ms, 1h]",
     {},
     nullptr,
     [](Limit& l, const SettingValue& v) { l.throttle.window = AsDuration(v); }},
});

// A library config's complaint about `field`, as the [limit] key that sets it.
std::string LimitKeyOf(std::string_view prefix, const std::string& field) {
  return fmt::format("limit.{}{}", prefix, field);
}

}  // namespace

std::span<const Setting<Limit>> LimitSettings() { return kLimitSettings; }

void ScenarioReader::ApplyLimitKey(std::string_view key, const toml::node& node,
                                   const std::string& full) {
  if (!scenario_.limit) {
    scenario_.limit.emplace();
  }
  Apply(LimitSettings(), *scenario_.limit, key, node, full);
}

void ScenarioReader::ApplyLimit(const toml::table& table, const toml::node& table_node) {
  for (const auto& [k, v] : table) {
    ApplyLimitKey(k.str(), v, fmt::format("limit.{}", k.str()));
  }
  if (!scenario_.limit) {
    scenario_.limit.emplace();  // an empty [limit] table: Finish() asks for max_in_flight
  }
  Remember("limit", table_node);
}

// A [limit] needs max_in_flight or a throttle; an adaptive limit and a throttle, configs their
// Validate()s accept.
void ScenarioReader::CheckLimit() {
  if (!scenario_.limit) {
    return;
  }
  const Limit& limit = *scenario_.limit;
  // The library's complaint, at the key that set the field (or, for a default that no longer
  // fits a field that was set, e.g. initial_limit 16 below min_limit 20, at the [limit] table).
  auto complain = [&](const ConfigError& bad, std::string_view prefix) {
    const std::string key = LimitKeyOf(prefix, bad.field);
    if (where_.contains(key)) {
      FailAt(key, bad.message);
    } else {
      Fail(LocationOf("limit", key), bad.message);
    }
  };
  if (limit.adaptive) {
    if (std::optional<ConfigError> bad = limit.adaptive_config.Validate()) {
      complain(*bad, "");
      return;
    }
  }
  if (limit.throttle.k != 0.0) {  // 0 is off; anything else is the throttle's to accept
    if (std::optional<ConfigError> bad = limit.throttle.Validate()) {
      complain(*bad, "throttle_");
      return;
    }
  }
  if (!limit.has_concurrency_limit() && !limit.has_throttle()) {
    Fail(LocationOf("limit", "limit"),
         "[limit] needs max_in_flight (a number, or \"auto\") or throttle_k");
  }
}

}  // namespace fusebox::sim

// apps/common/gateway_breaker.h
//
// How vin-gateway reads its `vpic` breaker's settings from text (a flag's value, or a config
// file's key turned to text): the gateway's defaults where they differ from the library's, the
// gateway's earlier names still read, and the syntax of each of the library's settings
// (fusebox/breaker_settings.h; `window_size` may be a duration of whole seconds). The gateway's
// config (vin-gateway/config/config.cc) and fusebox-sim's reading of a gateway config file
// (`fusebox-sim replay --config`) both use it, so that one file means one breaker to both.
//
// Thread safety: pure functions. Time: none.
//
// Example:
//   fusebox::CircuitBreakerConfig breaker = fusebox::app::GatewayBreakerDefaults();
//   bool window_as_duration = false;
//   if (auto e = fusebox::app::ReadBreakerText(breaker, *fusebox::FindBreakerSetting("cooldown"),
//                                              "--cooldown", "30s", window_as_duration)) {
//     die(e->message);  // "--cooldown: cannot read ... as a duration such as 500ms, ..."
//   }
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "fusebox/breaker_settings.h"
#include "fusebox/circuit_breaker.h"

namespace fusebox::app {

// The gateway's breaker defaults, where they differ from the library's (docs/gateway.md):
// failure_threshold 3, slow_call_duration 3s with inflight_slow_accounting, cooldown 20s,
// half_open_successes 1, probe_mode active with probe_interval and probe_budget 2s.
CircuitBreakerConfig GatewayBreakerDefaults();

// A breaker setting's earlier name in the gateway, still read as a flag and as a key.
struct OldBreakerName {
  std::string_view setting;  // the library's name ("trip")
  std::string_view flag;     // "--policy"
  std::string_view key;      // "policy"
};
std::span<const OldBreakerName> OldBreakerNames() noexcept;

// The setting of the library's table whose config-file key (its name, or an earlier name) is
// `key`; nullptr when none.
const BreakerSetting* FindBreakerKey(std::string_view key) noexcept;

// Reads `value` as `setting`'s type into `breaker` (syntax only: the range is the library's
// Validate()). `flag` names the setting in errors ("--cooldown: cannot read 'x' as a duration
// such as 500ms, 7s, 20m, 1h or 30d"). `window_size` may be written as a duration of whole
// seconds; `window_as_duration` says whether it was (Validate() of the caller refuses it with
// count_window).
std::optional<ConfigError> ReadBreakerText(CircuitBreakerConfig& breaker,
                                           const BreakerSetting& setting, std::string_view flag,
                                           std::string_view value, bool& window_as_duration);

// The shortest exact spelling of `d` ("7s", "30d", "1500ms", "1184467us"), which the flag
// grammar (ParseFlagDuration) reads back as `d`; below a microsecond, seconds with nine decimals.
std::string FormatFlagDuration(Duration d);

}  // namespace fusebox::app

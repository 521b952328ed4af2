// apps/fusebox-sim/gateway_config.h
//
// vin-gateway's config file (TOML, every key at the top level; docs/gateway.md, "Command line")
// as `fusebox-sim replay --config` reads it: the `vpic` breaker's settings, read by the
// gateway's own reading (common/gateway_breaker.h: the gateway's defaults, its earlier names,
// `window_size` as a duration) and checked by the library's Validate(), and what stands in front
// of the breaker in the gateway (max_in_flight, a number or "auto", with max_in_flight_min and
// max_in_flight_max; throttle and throttle_window). Every other key is the gateway's business
// (listen, cache, ...): read by `vin-gateway --check-config`, ignored here.
//
// Thread safety: pure functions. Time: none.
//
// Example:
//   auto settings = fusebox::sim::LoadGatewayConfig("/etc/vin-gateway/vin-gateway.toml");
//   if (!settings) die(settings.error().ToString());  // file:line:column: key: message
//   settings->breaker.cooldown ...
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "fusebox/circuit_breaker.h"
#include "fusebox/status.h"
#include "scenario.h"

namespace fusebox::sim {

struct GatewaySettings {
  CircuitBreakerConfig breaker;      // the gateway's defaults, then the file's keys; valid
  std::uint32_t max_in_flight = 16;  // the gateway's fixed cap (a fusebox::Bulkhead)
  bool max_in_flight_auto = false;   // "auto": an AdaptiveLimit between the next two
  std::uint32_t max_in_flight_min = 3;
  std::uint32_t max_in_flight_max = 256;
  double throttle = 0;  // 0: off
  Duration throttle_window = std::chrono::seconds(30);

  // The pieces in front of the breaker as the simulator's [limit] runs them (the gateway's
  // UpstreamLimits: a Bulkhead, or an AdaptiveLimit starting at 16; a Throttle).
  Limit AsLimit() const;
};

GatewaySettings DefaultGatewaySettings();

// Reads and checks a gateway config file; the message names the file, line, column and key.
Result<GatewaySettings, LoadError> LoadGatewayConfig(const std::string& path);
Result<GatewaySettings, LoadError> ReadGatewayConfig(std::string_view text, std::string_view path);

// The breaker's part of a gateway config file for `breaker`: every setting that differs from
// the gateway's defaults, one `key = value` line each (top-level keys, as the gateway reads
// them), in the library's order; `# (the gateway's defaults)` when none does.
std::string GatewayBreakerToml(const CircuitBreakerConfig& breaker);

// The same in one line: "failure_threshold = 1, cooldown = \"10s\"" ("the gateway's defaults").
std::string GatewayBreakerSummary(const CircuitBreakerConfig& breaker);

}  // namespace fusebox::sim

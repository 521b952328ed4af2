// vin-gateway/config/config.h
//
// The gateway's configuration: defaults, then a TOML file (`--config`), then command-line flags,
// each overriding the one before. Every value is checked at start and a bad one is
// refused with the flag's name and its valid range, e.g.
//   "--call-timeout must be in (0s, 86400s], got 0s".
// The TOML keys are the flag names without the dashes, in snake_case (`call_timeout = "7s"`);
// a switch such as --inflight-slow-accounting is a TOML boolean (`inflight_slow_accounting =
// true`). The breaker's settings are the library's, by the same names as in a fusebox-sim
// scenario's [breaker] table; the gateway's earlier names (--policy, --window, --failure-rate,
// ...) are still read (kOldBreakerNames in config.cc).
// A repeatable flag such as --trusted-proxy is a TOML array of strings; flags given on the
// command line replace the file's list.
// Durations are written like 500ms, 7s, 20m, 1h, 30d (a bare number is seconds).
// The file must be a regular file of at most 1 MiB (kMaxConfigFileBytes) with something in it: a
// directory, a FIFO, a device, a larger file or an empty one is refused (ReadConfigFile).
// One table in config.cc is the single source of every setting: its flag, TOML key, --help text,
// parser and range check; ApplySetting, ApplyConfigFile, --help and Validate all read it.
//
// Thread safety: plain values; the parsing functions are pure apart from reading the config file.
// Time: none.
//
// Example:
//   auto parsed = fusebox::gateway::ParseCommandLine(argc, argv);
//   if (!parsed) die(parsed.error().message);     // names the flag and its range
//   if (parsed->help) print(parsed->help_text);
//   const GatewayConfig& config = parsed->config;
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/gateway_breaker.h"
#include "core/log_format.h"
#include "core/vin.h"
#include "fusebox/circuit_breaker.h"
#include "fusebox/redis_url.h"
#include "fusebox/status.h"

namespace fusebox::gateway {

using fusebox::ConfigError;
using fusebox::Duration;

// Where --offline-db looks by default, in order (GatewayConfig::offline_db).
inline constexpr std::string_view kOfflineDbPaths[] = {"var/vpic/vpic.lite.db",
                                                       "/usr/share/vin-gateway/vpic/vpic.lite.db"};

struct GatewayConfig {
  // --listen HOST:PORT. Default 127.0.0.1:8080. Port range [0, 65535]; 0 picks a free port.
  std::string listen_host = "127.0.0.1";
  std::uint16_t listen_port = 8080;
  // --upstream-url: vPIC's base URL, http:// or https:// with a host (and optional port and path
  // prefix). Default https://vpic.nhtsa.dot.gov.
  std::string upstream_url = "https://vpic.nhtsa.dot.gov";
  // --cache: `sqlite:PATH` (created on first run), `memory`, or a Redis URL (shared by a fleet,
  // docs/fleet.md): `redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]`, `rediss://...` (TLS) or
  // `redis+sentinel://...` (fusebox/redis_url.h). Default sqlite:var/vin-cache.sqlite.
  std::string cache_uri = "sqlite:var/vin-cache.sqlite";
  // --cache-ttl: how long a decode is served from the cache without asking vPIC.
  // Default 30d, range [1s, 3650d].
  Duration cache_ttl = std::chrono::hours(24 * 30);
  // The `vpic` breaker: every setting of the library's table (fusebox/breaker_settings.h,
  // docs/breaker-rules.md), under its own name: flag --NAME with dashes (--failure-threshold),
  // TOML key NAME (failure_threshold = 3), the library's range. The gateway's defaults differ from
  // the library's in three (DefaultBreaker): failure_threshold 3, cooldown 20s and
  // half_open_successes 1. call_timeout is also the budget of one upstream call (connect, TLS,
  // send, receive). window_size may be written as a duration ("60s"): seconds, for time_window.
  fusebox::CircuitBreakerConfig breaker = DefaultBreaker();
  // window_size was given as a duration: only time_window counts seconds (Validate refuses it
  // with count_window).
  bool window_size_given_as_duration = false;
  // The gateway's breaker defaults, where they differ from the library's (docs/gateway.md,
  // "Defaults"): three failures or slow calls in a row, a call running past 3 s counting as slow
  // while it runs (a hang at two decodes a second opens the breaker about 4 s in), and the
  // gateway's own probe every 2 s under a 2 s budget, never a user's request. `cooldown` (20 s)
  // applies with --probe-mode passive.
  static fusebox::CircuitBreakerConfig DefaultBreaker() {
    return fusebox::app::GatewayBreakerDefaults();  // shared with fusebox-sim's replay
  }
  // --max-in-flight: upstream calls at once: a number (a fixed cap, the bulkhead) or `auto` (an
  // adaptive limit, fusebox::AdaptiveLimit, that starts at 16 and moves between
  // --max-in-flight-min and --max-in-flight-max with vPIC's latency). Default 16, range
  // [1, 100000].
  std::uint32_t max_in_flight = 16;
  bool max_in_flight_auto = false;
  // --max-in-flight-min / --max-in-flight-max: the adaptive limit's bounds (with `auto` only).
  // Default 3 and 256, range [1, 100000], min <= max.
  std::uint32_t max_in_flight_min = 3;
  std::uint32_t max_in_flight_max = 256;
  // The most upstream calls that may ever be in flight: the fixed cap, or the adaptive maximum.
  std::uint32_t upstream_concurrency_cap() const {
    return max_in_flight_auto ? max_in_flight_max : max_in_flight;
  }
  // --throttle: client-side throttling of vPIC calls (fusebox::Throttle): k, the multiplier on
  // accepted calls (nothing is shed while more than 1/k succeed). 0 (default): off; else [1, 100].
  double throttle = 0;
  // --throttle-window: how far back the throttle's counts reach. Default 30s, range [100ms, 1h].
  Duration throttle_window = std::chrono::seconds(30);
  // --client-rate: tokens per second of each client's bucket (an address; an IPv6 client's
  // --client-ipv6-prefix network); 0 disables the limit.
  // Default 20, range [0, 1000000].
  double client_rate = 20;
  // --client-burst: size of each client's bucket. Default 2 x client-rate, and at least one
  // whole batch (kMaxBatchVins, 50: a batch takes a token per VIN it sends upstream), so 50 with
  // the default rate; range [1, 10000000].
  std::optional<double> client_burst = std::nullopt;
  // --client-ipv6-prefix: IPv6 clients share one bucket (and one admin-throttle count) per
  // network of this prefix length; IPv4 clients have one each. Default 64, range [1, 128].
  std::uint32_t client_ipv6_prefix = 64;
  // --cache-max-entries: decodes kept (least recently used out first).
  // Default 1000000, range [1, 1000000000].
  std::uint64_t cache_max_entries = 1'000'000;
  // --upstream-ca: PEM file of CAs to verify the upstream with instead of the system's.
  // Default "" (system CAs). Must be a readable file.
  std::string upstream_ca;
  // --probe-vin: the VIN an active prober decodes (breaker probe_mode = active); its answer
  // refreshes the cache for that VIN. Default a VIN vPIC decodes cleanly. Must be valid.
  std::string probe_vin = "1FTMW1T88MFA00001";
  // --answer-deadline: a decode that has a stale copy or an offline decode to fall back on gets
  // it when vPIC has not answered by then (UPSTREAM_LATE); the live call goes on. 0: off.
  // Default 2s, range [0, 10m].
  Duration answer_deadline = std::chrono::seconds(2);
  // --offline-db: NHTSA's vPIC database (SQLite) for offline decodes (docs/offline-decode.md).
  // "" (default): the first of kOfflineDbPaths that exists: var/vpic/vpic.lite.db, where
  // scripts/install-deps.sh puts it (relative to the working directory, like the cache), else
  // the vin-gateway-vpic-data package's; missing or bad only disables offline decodes (one log
  // line). `none` disables them. An explicit path that is missing or bad is a start-up error.
  std::string offline_db;
  // --log-format: text or json. Default text.
  LogFormat log_format = LogFormat::kText;
  // --client-timeout: a client must send a whole request within this (slow clients are cut
  // off). Default 10s, range [10ms, 10m].
  Duration client_timeout = std::chrono::seconds(10);
  // --shutdown-grace: on SIGTERM, how long in-flight requests may finish. Default 5s,
  // range [0s, 10m].
  Duration shutdown_grace = std::chrono::seconds(5);
  // --threads: I/O threads, one io_context each. Default 1, range [1, 64].
  std::uint32_t threads = 1;

  // ---- fleet mode (docs/fleet.md) ----
  // --fleet redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] (or rediss://, redis+sentinel://): share
  // the vpic breaker with the other instances through Redis. Default "" (this instance alone).
  // Must parse (an unreachable Redis is not an error).
  std::string fleet_url;
  // --instance-id: this instance's name in the fleet. Default "": HOSTNAME-PID-RANDOM (made once
  // per process, so that two processes never share it).
  std::string instance_id;
  std::string effective_instance_id() const;
  // --redis-password-file: a file whose one line is the password of the Redis servers of --fleet
  // and --cache (a URL's own password, discouraged because a process listing shows it, comes
  // first); else the environment's FUSEBOX_REDIS_PASSWORD. A regular file of at most 4 KiB.
  std::string redis_password_file;
  // --redis-ca, --redis-cert, --redis-key: PEM files for TLS (rediss://) to the Redis of --fleet
  // and --cache: the CAs its certificate must chain to (default "": the system's store), and a
  // client certificate with its private key, for a server that asks for one (both or neither).
  // Each must load at start-up (a bad one is a configuration error naming the flag and the file).
  std::string redis_ca;
  std::string redis_cert;
  std::string redis_key;
  // --fleet-secret-file: a file whose one line (at least 16 bytes) is the fleet's HMAC key: every
  // message is signed and checked (docs/fleet.md, "Signed messages"). Default "": unsigned.
  std::string fleet_secret_file;
  // --fleet-quorum N: this instance opens on its peers' evidence only once N distinct peers
  // reported vPIC failing within their cooldown (FleetOptions::quorum). Default 1 (any peer's trip
  // opens every instance), range [1, 64].
  std::uint32_t fleet_quorum = 1;
  // --cache-timeout: the budget of one Redis cache read or write (`--cache redis://...`), and the
  // call timeout of its `redis` breaker. Default 50ms, range [1ms, 10s].
  Duration cache_timeout = std::chrono::milliseconds(50);
  // --trusted-proxy CIDR, repeatable (TOML `trusted_proxy = ["127.0.0.1/32", "10.0.0.0/8"]`):
  // reverse proxies whose X-Forwarded-For names the client (the rate limit's and the access log's
  // address; docs/http-api.md, "Client address"). Default none: the client is the TCP peer. Kept
  // as text here; the HTTP layer parses the networks (main refuses a bad one naming the flag).
  std::vector<std::string> trusted_proxies;
  // The `redis` breaker of a Redis cache: 5 failures in a row open it for 5 s.
  fusebox::CircuitBreakerConfig RedisBreakerConfig() const;

  // The first value outside its range (field = the flag name), or nullopt.
  std::optional<ConfigError> Validate() const;

  double effective_client_burst() const noexcept {
    return client_burst.value_or(std::max(client_rate * 2, static_cast<double>(kMaxBatchVins)));
  }
  // The `vpic` breaker's config: `breaker`.
  const fusebox::CircuitBreakerConfig& BreakerConfig() const noexcept { return breaker; }
};

struct CommandLine {
  GatewayConfig config;
  std::string config_path;  // --config, "" when none
  bool help = false;
  std::string help_text;
  bool version = false;  // --version: print version_text and exit
  std::string version_text;
  // --print-config: print the settings in force (RenderConfigFile) and exit.
  // --check-config FILE: read FILE as --config does, validate it with the other flags, print the
  // settings in force and exit (0, or 2 with the first error): for operators and packaging hooks.
  bool print_config = false;
  bool check_config = false;
};

// Parses argv (argv[0] is the program name) and the --config file, then validates.
fusebox::Result<CommandLine, ConfigError> ParseCommandLine(const std::vector<std::string>& args);
fusebox::Result<CommandLine, ConfigError> ParseCommandLine(int argc, const char* const* argv);

// `config` as a TOML file that --config reads back to the same settings: a header, then every
// setting with its --help line; a setting that holds its default (or is unset) is commented out.
// What --print-config and --check-config print, and the package's
// /etc/vin-gateway/vin-gateway.toml (generated at build time, so it cannot drift from --help).
std::string RenderConfigFile(const GatewayConfig& config);

// The Redis server of `url` (--fleet, or --cache redis://...) with its login: the URL's own
// password, else --redis-password-file's, else FUSEBOX_REDIS_PASSWORD's; and the TLS files of
// --redis-ca, --redis-cert and --redis-key. Errors name the flag and never hold the password.
fusebox::Result<fusebox::RedisEndpoint, ConfigError> RedisEndpointOf(const GatewayConfig& config,
                                                                     std::string_view flag,
                                                                     const std::string& url);

// The fleet's secret from --fleet-secret-file ("" without one). Errors never hold the secret.
fusebox::Result<std::string, ConfigError> FleetSecret(const GatewayConfig& config);

// Applies one setting by flag name ("--call-timeout") from its text form; checks syntax only.
std::optional<ConfigError> ApplySetting(GatewayConfig& config, std::string_view flag,
                                        std::string_view value);

// The most a --config file may hold: a whole config is a few KiB.
inline constexpr std::size_t kMaxConfigFileBytes = std::size_t{1} << 20U;

// The text of the --config file at `path`, or a ConfigError (field "--config") naming the path
// and why: it cannot be opened or read, it is not a regular file (a directory, a FIFO, a device),
// it is larger than kMaxConfigFileBytes, or it is empty (nothing but whitespace; a file with
// only comments is fine). Does not wait on a FIFO or open a device: the path is checked before
// it is opened, opened O_NONBLOCK, and checked again through the descriptor before a byte is
// read. (A file on a hung network mount can still block; SIGHUP reads on its own thread.)
fusebox::Result<std::string, ConfigError> ReadConfigFile(const std::string& path);

// Reads a TOML file (ReadConfigFile) and applies its keys. Unknown keys are refused.
std::optional<ConfigError> ApplyConfigFile(GatewayConfig& config, const std::string& path);

// The flags ("--listen", ...) of the settings that differ between the running config and a
// re-read one and that only a restart applies: every setting but the breaker's (SIGHUP applies
// those to the live breaker).
std::vector<std::string_view> SettingsNeedingRestart(const GatewayConfig& running,
                                                     const GatewayConfig& reread);

// The flag ("--cooldown") of a CircuitBreakerConfig field ("cooldown"), for errors of the
// breaker's own Validate(); the field itself when the gateway has no flag for it.
std::string_view FlagOfBreakerField(std::string_view field);

// "500ms", "7s", "20m", "1h", "30d", "1.5s", "2m30s"; a bare number is seconds: the apps' one
// duration grammar (apps/common/duration.h), to the microsecond. nullopt when malformed or above
// 1e9 s.
std::optional<Duration> ParseDuration(std::string_view text);
// The shortest exact spelling of `d` in the units above ("7s", "30d", "1500ms", "1184467us"),
// which ParseDuration reads back as `d` for every duration it can return. A duration finer than
// a microsecond is written in seconds with nine decimals (it reads back rounded to the
// microsecond).
std::string FormatDuration(Duration d);

}  // namespace fusebox::gateway

#include "config/config.h"

#include <unistd.h>

#include <charconv>
#include <cmath>
#include <exception>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <toml++/toml.h>
#include <CLI/CLI.hpp>
#include <boost/url/parse.hpp>

namespace vin_gateway {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

enum class Kind { kListen, kString, kDuration, kUint32, kUint64, kDouble, kLogFormat };

struct Setting {
  std::string_view flag;  // "--call-timeout"
  std::string_view key;   // "call_timeout" (TOML)
  Kind kind;
  std::string_view help;
};

constexpr Setting kSettings[] = {
    {"--listen", "listen", Kind::kListen, "HOST:PORT to serve on (default 127.0.0.1:8080)"},
    {"--upstream-url", "upstream_url", Kind::kString,
     "vPIC base URL (default https://vpic.nhtsa.dot.gov)"},
    {"--cache", "cache", Kind::kString,
     "cache URI: sqlite:PATH or memory (default sqlite:var/vin-cache.sqlite)"},
    {"--cache-ttl", "cache_ttl", Kind::kDuration, "serve cached decodes this long (default 30d)"},
    {"--call-timeout", "call_timeout", Kind::kDuration, "budget of one upstream call (default 7s)"},
    {"--cooldown", "cooldown", Kind::kDuration, "open-breaker cooldown (default 20s)"},
    {"--failure-threshold", "failure_threshold", Kind::kUint32,
     "consecutive failures that open the breaker (default 3)"},
    {"--half-open-probes", "half_open_probes", Kind::kUint32,
     "probes at once while half-open (default 1)"},
    {"--max-in-flight", "max_in_flight", Kind::kUint32, "upstream calls at once (default 16)"},
    {"--client-rate", "client_rate", Kind::kDouble,
     "decodes per second per client address, 0 disables (default 20)"},
    {"--client-burst", "client_burst", Kind::kDouble,
     "burst per client address (default 2 x client-rate)"},
    {"--cache-max-entries", "cache_max_entries", Kind::kUint64,
     "decodes kept in the cache (default 1000000)"},
    {"--upstream-ca", "upstream_ca", Kind::kString,
     "PEM CA file for the upstream (default: system CAs)"},
    {"--log-format", "log_format", Kind::kLogFormat, "text or json (default text)"},
    {"--client-timeout", "client_timeout", Kind::kDuration,
     "a client must send a request within this (default 10s)"},
    {"--shutdown-grace", "shutdown_grace", Kind::kDuration,
     "SIGTERM: time in-flight requests may finish (default 5s)"},
    {"--threads", "threads", Kind::kUint32,
     "I/O threads, each with its own event loop; connections are spread over them (default 1)"},
};

const Setting* FindByFlag(std::string_view flag) {
  for (const Setting& s : kSettings) {
    if (s.flag == flag) {
      return &s;
    }
  }
  return nullptr;
}

const Setting* FindByKey(std::string_view key) {
  for (const Setting& s : kSettings) {
    if (s.key == key) {
      return &s;
    }
  }
  return nullptr;
}

ConfigError Malformed(std::string_view flag, std::string_view value, std::string_view expected) {
  return {std::string(flag), fmt::format("{}: cannot read '{}' as {}", flag, value, expected)};
}

template <typename T>
std::optional<T> ParseUnsigned(std::string_view text) {
  T value{};
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

std::string FormatNumber(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    return fmt::format("{}", static_cast<long long>(v));
  }
  return fmt::format("{}", v);
}

std::optional<ConfigError> RangeError(std::string_view flag, std::string_view range,
                                      std::string_view got) {
  return ConfigError{std::string(flag), fmt::format("{} must be in {}, got {}", flag, range, got)};
}

std::optional<ConfigError> CheckDuration(std::string_view flag, Duration value, Duration min,
                                         Duration max) {
  if (value < min || value > max) {
    return RangeError(flag, fmt::format("[{}, {}]", FormatDuration(min), FormatDuration(max)),
                      FormatDuration(value));
  }
  return std::nullopt;
}

template <typename T>
std::optional<ConfigError> CheckRange(std::string_view flag, T value, T min, T max) {
  if (value < min || value > max) {
    return RangeError(flag, fmt::format("[{}, {}]", min, max), fmt::format("{}", value));
  }
  return std::nullopt;
}

std::optional<ConfigError> CheckDouble(std::string_view flag, double value, double min,
                                       double max) {
  if (!(value >= min && value <= max)) {
    return RangeError(flag, fmt::format("[{}, {}]", FormatNumber(min), FormatNumber(max)),
                      FormatNumber(value));
  }
  return std::nullopt;
}

std::optional<ConfigError> CheckUrl(const std::string& url) {
  constexpr std::string_view kFlag = "--upstream-url";
  auto parsed = boost::urls::parse_absolute_uri(url);
  if (!parsed) {
    return ConfigError{
        std::string(kFlag),
        fmt::format("{} must be an http:// or https:// URL with a host, got '{}'", kFlag, url)};
  }
  const auto scheme = parsed->scheme_id();
  if ((scheme != boost::urls::scheme::http && scheme != boost::urls::scheme::https) ||
      parsed->encoded_host().empty() || parsed->has_query() || parsed->has_fragment() ||
      parsed->has_userinfo()) {
    return ConfigError{std::string(kFlag),
                       fmt::format("{} must be an http:// or https:// URL with a host and no "
                                   "query, got '{}'",
                                   kFlag, url)};
  }
  if (parsed->has_port()) {
    const auto port = ParseUnsigned<std::uint32_t>(parsed->port());
    if (!port || *port == 0 || *port > 65535) {
      return RangeError(kFlag, "port [1, 65535]", std::string(parsed->port()));
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<Duration> ParseDuration(std::string_view text) {
  std::size_t unit_at = 0;
  while (unit_at < text.size() &&
         ((text[unit_at] >= '0' && text[unit_at] <= '9') || text[unit_at] == '.')) {
    ++unit_at;
  }
  const std::optional<double> number = ParseDouble(text.substr(0, unit_at));
  if (!number || *number < 0) {
    return std::nullopt;
  }
  const std::string_view unit = text.substr(unit_at);
  double ns_per_unit = 0;
  if (unit == "ms") {
    ns_per_unit = 1e6;
  } else if (unit == "s" || unit.empty()) {
    ns_per_unit = 1e9;
  } else if (unit == "m") {
    ns_per_unit = 60e9;
  } else if (unit == "h") {
    ns_per_unit = 3600e9;
  } else if (unit == "d") {
    ns_per_unit = 86400e9;
  } else {
    return std::nullopt;
  }
  const double ns = *number * ns_per_unit;
  if (ns > 1e18) {
    return std::nullopt;
  }
  return Duration(static_cast<Duration::rep>(std::llround(ns)));
}

std::string FormatDuration(Duration d) {
  const auto ns = d.count();
  struct Unit {
    Duration::rep ns;
    std::string_view suffix;
  };
  constexpr Unit kUnits[] = {{86'400'000'000'000, "d"},
                             {3'600'000'000'000, "h"},
                             {60'000'000'000, "m"},
                             {1'000'000'000, "s"},
                             {1'000'000, "ms"}};
  if (ns == 0) {
    return "0s";
  }
  for (const Unit& u : kUnits) {
    if (ns % u.ns == 0) {
      return fmt::format("{}{}", ns / u.ns, u.suffix);
    }
  }
  return fmt::format("{}ns", ns);
}

std::optional<ConfigError> ApplySetting(GatewayConfig& config, std::string_view flag,
                                        std::string_view value) {
  const Setting* setting = FindByFlag(flag);
  if (setting == nullptr) {
    return ConfigError{std::string(flag), fmt::format("unknown setting {}", flag)};
  }
  switch (setting->kind) {
    case Kind::kListen: {
      const std::size_t colon = value.rfind(':');
      if (colon == std::string_view::npos || colon == 0) {
        return Malformed(flag, value, "HOST:PORT (port in [0, 65535])");
      }
      std::string_view host = value.substr(0, colon);
      if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
      }
      const auto port = ParseUnsigned<std::uint32_t>(value.substr(colon + 1));
      if (!port) {
        return Malformed(flag, value, "HOST:PORT (port in [0, 65535])");
      }
      if (*port > 65535) {
        return RangeError(flag, "port [0, 65535]", fmt::format("{}", *port));
      }
      config.listen_host = std::string(host);
      config.listen_port = static_cast<std::uint16_t>(*port);
      return std::nullopt;
    }
    case Kind::kString: {
      std::string* target = nullptr;
      if (flag == "--upstream-url") {
        target = &config.upstream_url;
      } else if (flag == "--cache") {
        target = &config.cache_uri;
      } else {
        target = &config.upstream_ca;
      }
      *target = std::string(value);
      return std::nullopt;
    }
    case Kind::kDuration: {
      const std::optional<Duration> d = ParseDuration(value);
      if (!d) {
        return Malformed(flag, value, "a duration such as 500ms, 7s, 20m, 1h or 30d");
      }
      if (flag == "--cache-ttl") {
        config.cache_ttl = *d;
      } else if (flag == "--call-timeout") {
        config.call_timeout = *d;
      } else if (flag == "--cooldown") {
        config.cooldown = *d;
      } else if (flag == "--client-timeout") {
        config.client_timeout = *d;
      } else {
        config.shutdown_grace = *d;
      }
      return std::nullopt;
    }
    case Kind::kUint32: {
      const auto n = ParseUnsigned<std::uint64_t>(value);
      if (!n) {
        return Malformed(flag, value, "a whole number");
      }
      const auto clamped = static_cast<std::uint32_t>(std::min<std::uint64_t>(*n, 0xFFFF'FFFFULL));
      if (flag == "--failure-threshold") {
        config.failure_threshold = clamped;
      } else if (flag == "--half-open-probes") {
        config.half_open_probes = clamped;
      } else if (flag == "--max-in-flight") {
        config.max_in_flight = clamped;
      } else {
        config.threads = clamped;
      }
      return std::nullopt;
    }
    case Kind::kUint64: {
      const auto n = ParseUnsigned<std::uint64_t>(value);
      if (!n) {
        return Malformed(flag, value, "a whole number");
      }
      config.cache_max_entries = *n;
      return std::nullopt;
    }
    case Kind::kDouble: {
      const auto d = ParseDouble(value);
      if (!d) {
        return Malformed(flag, value, "a number");
      }
      if (flag == "--client-rate") {
        config.client_rate = *d;
      } else {
        config.client_burst = *d;
      }
      return std::nullopt;
    }
    case Kind::kLogFormat:
      if (value == "text") {
        config.log_format = LogFormat::kText;
      } else if (value == "json") {
        config.log_format = LogFormat::kJson;
      } else {
        return ConfigError{std::string(flag),
                           fmt::format("{} must be text or json, got '{}'", flag, value)};
      }
      return std::nullopt;
  }
  return std::nullopt;
}

std::optional<ConfigError> GatewayConfig::Validate() const {
  if (listen_host.empty()) {
    return ConfigError{"--listen", "--listen must be HOST:PORT with a host, got an empty host"};
  }
  if (auto e = CheckUrl(upstream_url)) {
    return e;
  }
  if (cache_uri != "memory" && (cache_uri.rfind("sqlite:", 0) != 0 ||
                                cache_uri.size() == std::string_view("sqlite:").size())) {
    return ConfigError{"--cache",
                       fmt::format("--cache must be sqlite:PATH or memory, got '{}'", cache_uri)};
  }
  if (auto e = CheckDuration("--cache-ttl", cache_ttl, seconds(1), hours(24 * 3650))) {
    return e;
  }
  if (auto e = CheckDuration("--call-timeout", call_timeout, milliseconds(1), minutes(10))) {
    return e;
  }
  if (auto e = CheckDuration("--cooldown", cooldown, milliseconds(1), hours(24))) {
    return e;
  }
  if (auto e = CheckRange<std::uint32_t>("--failure-threshold", failure_threshold, 1, 1000)) {
    return e;
  }
  if (auto e = CheckRange<std::uint32_t>("--half-open-probes", half_open_probes, 1, 1000)) {
    return e;
  }
  if (auto e = CheckRange<std::uint32_t>("--max-in-flight", max_in_flight, 1, 100000)) {
    return e;
  }
  if (auto e = CheckDouble("--client-rate", client_rate, 0, 1e6)) {
    return e;
  }
  if (client_burst) {
    if (auto e = CheckDouble("--client-burst", *client_burst, 1, 1e7)) {
      return e;
    }
  }
  if (auto e =
          CheckRange<std::uint64_t>("--cache-max-entries", cache_max_entries, 1, 1'000'000'000)) {
    return e;
  }
  if (!upstream_ca.empty() && access(upstream_ca.c_str(), R_OK) != 0) {
    return ConfigError{
        "--upstream-ca",
        fmt::format("--upstream-ca must be a readable PEM file, got '{}'", upstream_ca)};
  }
  if (auto e = CheckDuration("--client-timeout", client_timeout, milliseconds(10), minutes(10))) {
    return e;
  }
  if (auto e = CheckDuration("--shutdown-grace", shutdown_grace, Duration::zero(), minutes(10))) {
    return e;
  }
  if (auto e = CheckRange<std::uint32_t>("--threads", threads, 1, 64)) {
    return e;
  }
  return std::nullopt;
}

fusebox::CircuitBreakerConfig GatewayConfig::BreakerConfig() const {
  fusebox::CircuitBreakerConfig breaker;
  breaker.trip = fusebox::TripPolicy::kConsecutive;
  breaker.failure_threshold = failure_threshold;
  breaker.call_timeout = call_timeout;
  breaker.cooldown = cooldown;
  breaker.half_open_max_probes = half_open_probes;
  breaker.half_open_successes = 1;
  breaker.batch_may_probe = false;
  return breaker;
}

std::optional<ConfigError> ApplyConfigFile(GatewayConfig& config, const std::string& path) {
  toml::table table;
  try {
    table = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    return ConfigError{"--config",
                       fmt::format("--config: cannot read '{}': {}", path, e.description())};
  }
  for (const auto& [key, node] : table) {
    const std::string_view name = key.str();
    const Setting* setting = FindByKey(name);
    if (setting == nullptr) {
      return ConfigError{"--config", fmt::format("--config: unknown key '{}' in '{}'", name, path)};
    }
    std::string text;
    if (const auto* s = node.as_string()) {
      text = s->get();
    } else if (const auto* i = node.as_integer()) {
      text = fmt::format("{}", i->get());
    } else if (const auto* f = node.as_floating_point()) {
      text = fmt::format("{}", f->get());
    } else {
      return ConfigError{std::string(setting->flag),
                         fmt::format("{} (key '{}' in '{}') must be a string or a number",
                                     setting->flag, name, path)};
    }
    if (auto e = ApplySetting(config, setting->flag, text)) {
      e->message += fmt::format(" (key '{}' in '{}')", name, path);
      return e;
    }
  }
  return std::nullopt;
}

fusebox::Result<CommandLine, ConfigError> ParseCommandLine(const std::vector<std::string>& args) {
  CLI::App app{"vin-gateway: VIN decodes in front of NHTSA vPIC, guarded by a circuit breaker",
               "vin-gateway"};
  std::string config_path;
  app.add_option("--config", config_path, "TOML file; flags override it");
  std::vector<std::string> values(std::size(kSettings));
  std::vector<CLI::Option*> options;
  for (std::size_t i = 0; i < std::size(kSettings); ++i) {
    // A flag given twice: the last one wins (scripts append overrides).
    options.push_back(
        app.add_option(std::string(kSettings[i].flag), values[i], std::string(kSettings[i].help))
            ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast));
  }
  CommandLine out;
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend() - (args.empty() ? 0 : 1));
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    out.help = true;
    out.help_text = app.help();
    return out;
  } catch (const CLI::ParseError& e) {
    return ConfigError{"command line", e.what()};
  }
  if (!config_path.empty()) {
    if (auto e = ApplyConfigFile(out.config, config_path)) {
      return *e;
    }
  }
  for (std::size_t i = 0; i < std::size(kSettings); ++i) {
    if (options[i]->count() > 0) {
      if (auto e = ApplySetting(out.config, kSettings[i].flag, values[i])) {
        return *e;
      }
    }
  }
  if (auto e = out.config.Validate()) {
    return *e;
  }
  return out;
}

fusebox::Result<CommandLine, ConfigError> ParseCommandLine(int argc, const char* const* argv) {
  std::vector<std::string> args;
  args.reserve(static_cast<std::size_t>(argc));
  for (int i = 0; i < argc; ++i) {
    args.emplace_back(argv[i]);
  }
  return ParseCommandLine(args);
}

}  // namespace vin_gateway

#include "config/config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <variant>

#include <fmt/format.h>
#include <toml++/toml.h>
#include <CLI/CLI.hpp>
#include <boost/url/parse.hpp>

#include "common/duration.h"
#include "core/vin.h"
#include "fusebox/breaker_settings.h"
#include "fusebox/redis_url.h"
#include "fusebox/version.h"

namespace fusebox::gateway {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

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

// ---- the settings table ----------------------------------------------------------------------
// One row per setting: the single source of its flag, its TOML key, its help text (--help), how
// its text is read into GatewayConfig, and its range check (Validate). A new setting is one row
// here and one field in config.h.

// How a setting's text is read into the config (syntax only): nullopt, or what was wrong.
using ApplyFn = std::optional<ConfigError> (*)(GatewayConfig&, std::string_view flag,
                                               std::string_view value);
// Whether the config's value of a setting is within its range: nullopt, or the range error.
using CheckFn = std::optional<ConfigError> (*)(const GatewayConfig&, std::string_view flag);

// Whether two configs hold the same value of a setting (SIGHUP: what changed).
using SameFn = bool (*)(const GatewayConfig&, const GatewayConfig&);

// The config's value of a setting as a TOML value (`"7s"`, `16`, `["10.0.0.0/8"]`), which reads
// back to the same value; nullopt when it is unset (a default computed from other settings).
using ShowFn = std::optional<std::string> (*)(const GatewayConfig&);

// What a setting is for: a breaker setting is applied to the live breaker on SIGHUP, any other
// one needs a restart.
enum class Scope : std::uint8_t { kProcess, kBreaker };
// How the command line takes it: `--flag VALUE`, a switch (`--flag`, TOML true/false), or a
// list (`--flag A --flag B`, a TOML array of strings; the command line's list replaces the
// file's, and each value is applied in turn to an emptied list).
enum class Form : std::uint8_t { kValue, kSwitch, kList };

// Empties a list setting before its values are applied (Form::kList only).
using ClearFn = void (*)(GatewayConfig&);

struct Setting {
  std::string_view flag;  // "--call-timeout"
  std::string_view key;   // "call_timeout" (TOML)
  std::string_view help;  // --help
  ApplyFn apply;
  CheckFn check;  // null: any value that reads is valid
  SameFn same;    // null for a breaker setting (SameValue compares it)
  ShowFn show;    // null for a breaker setting (ShowValue writes it)
  Scope scope = Scope::kProcess;
  Form form = Form::kValue;
  ClearFn clear = nullptr;  // Form::kList
  // A breaker setting: the library's row (apply, check and same then come from it).
  const fusebox::BreakerSetting* breaker = nullptr;
  std::string_view old_flag = {};  // the gateway's earlier name of a breaker setting, still read
  std::string_view old_key = {};
};

template <auto kField>
bool Same(const GatewayConfig& a, const GatewayConfig& b) {
  return a.*kField == b.*kField;
}

// Every duration is read by ParseDuration, the one duration grammar of the gateway.
template <Duration GatewayConfig::*kField>
std::optional<ConfigError> ApplyDuration(GatewayConfig& config, std::string_view flag,
                                         std::string_view value) {
  const std::optional<Duration> d = ParseDuration(value);
  if (!d) {
    return Malformed(flag, value, "a duration such as 500ms, 7s, 20m, 1h or 30d");
  }
  config.*kField = *d;
  return std::nullopt;
}

template <Duration GatewayConfig::*kField, Duration::rep kMinNs, Duration::rep kMaxNs>
std::optional<ConfigError> CheckDurationField(const GatewayConfig& config, std::string_view flag) {
  return CheckDuration(flag, config.*kField, Duration(kMinNs), Duration(kMaxNs));
}

template <typename T, T GatewayConfig::*kField>
std::optional<ConfigError> ApplyWhole(GatewayConfig& config, std::string_view flag,
                                      std::string_view value) {
  const auto n = ParseUnsigned<std::uint64_t>(value);
  if (!n) {
    return Malformed(flag, value, "a whole number");
  }
  // Larger than the field holds: the largest it holds, which the range check then refuses.
  config.*kField = static_cast<T>(
      std::min<std::uint64_t>(*n, static_cast<std::uint64_t>(std::numeric_limits<T>::max())));
  return std::nullopt;
}

template <typename T, T GatewayConfig::*kField, T kMin, T kMax>
std::optional<ConfigError> CheckWholeField(const GatewayConfig& config, std::string_view flag) {
  return CheckRange<T>(flag, config.*kField, kMin, kMax);
}

std::optional<ConfigError> ApplyListen(GatewayConfig& config, std::string_view flag,
                                       std::string_view value) {
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

std::optional<ConfigError> CheckListen(const GatewayConfig& config, std::string_view flag) {
  if (config.listen_host.empty()) {
    return ConfigError{std::string(flag),
                       fmt::format("{} must be HOST:PORT with a host, got an empty host", flag)};
  }
  return std::nullopt;
}

template <std::string GatewayConfig::*kField>
std::optional<ConfigError> ApplyText(GatewayConfig& config, std::string_view,
                                     std::string_view value) {
  config.*kField = std::string(value);
  return std::nullopt;
}

// One value of a list: appended. Its syntax is the reader's (a --trusted-proxy CIDR is parsed
// by the HTTP layer, which config may not include: main reports a bad one with the flag).
template <std::vector<std::string> GatewayConfig::*kField>
std::optional<ConfigError> ApplyListItem(GatewayConfig& config, std::string_view,
                                         std::string_view value) {
  (config.*kField).emplace_back(value);
  return std::nullopt;
}

template <std::vector<std::string> GatewayConfig::*kField>
void ClearList(GatewayConfig& config) {
  (config.*kField).clear();
}

// ---- a setting's value as TOML (--print-config, --check-config) ----

// A TOML basic string: quotes, backslashes and control characters escaped.
std::string TomlString(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20 || byte == 0x7f) {
      out += fmt::format("\\u{:04X}", byte);
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

// Unset when empty (the setting's default is then computed, or the feature is off).
template <std::string GatewayConfig::*kField>
std::optional<std::string> ShowText(const GatewayConfig& config) {
  if ((config.*kField).empty()) {
    return std::nullopt;
  }
  return TomlString(config.*kField);
}

// A Redis URL with its password replaced by "***": the printed settings go to terminals and
// packaging hooks' logs (the file itself keeps the password, where the operator put it).
template <std::string GatewayConfig::*kField>
std::optional<std::string> ShowRedacted(const GatewayConfig& config) {
  if ((config.*kField).empty()) {
    return std::nullopt;
  }
  return TomlString(fusebox::RedactRedisUrl(config.*kField));
}

template <Duration GatewayConfig::*kField>
std::optional<std::string> ShowDuration(const GatewayConfig& config) {
  return TomlString(FormatDuration(config.*kField));
}

template <typename T, T GatewayConfig::*kField>
std::optional<std::string> ShowWhole(const GatewayConfig& config) {
  return fmt::format("{}", config.*kField);
}

template <double GatewayConfig::*kField>
std::optional<std::string> ShowNumber(const GatewayConfig& config) {
  return FormatNumber(config.*kField);
}

std::optional<std::string> ShowListen(const GatewayConfig& config) {
  const bool v6 = config.listen_host.find(':') != std::string::npos;
  return TomlString(v6 ? fmt::format("[{}]:{}", config.listen_host, config.listen_port)
                       : fmt::format("{}:{}", config.listen_host, config.listen_port));
}

std::optional<std::string> ShowMaxInFlight(const GatewayConfig& config) {
  if (config.max_in_flight_auto) {
    return TomlString("auto");
  }
  return fmt::format("{}", config.max_in_flight);
}

std::optional<std::string> ShowClientBurst(const GatewayConfig& config) {
  if (!config.client_burst) {
    return std::nullopt;
  }
  return FormatNumber(*config.client_burst);
}

std::optional<std::string> ShowLogFormat(const GatewayConfig& config) {
  return TomlString(config.log_format == LogFormat::kJson ? "json" : "text");
}

template <std::vector<std::string> GatewayConfig::*kField>
std::optional<std::string> ShowList(const GatewayConfig& config) {
  if ((config.*kField).empty()) {
    return std::nullopt;
  }
  std::string out = "[";
  for (const std::string& item : config.*kField) {
    out += fmt::format("{}{}", out.size() > 1 ? ", " : "", TomlString(item));
  }
  return out + "]";
}

std::optional<ConfigError> CheckUpstreamUrl(const GatewayConfig& config, std::string_view) {
  return CheckUrl(config.upstream_url);
}

std::optional<ConfigError> CheckCacheUri(const GatewayConfig& config, std::string_view flag) {
  const std::string& uri = config.cache_uri;
  if (fusebox::IsRedisUrl(uri)) {
    if (auto parsed = fusebox::ParseRedisUrl(uri); !parsed) {
      return ConfigError{std::string(flag), fmt::format("{}: {}", flag, parsed.error())};
    }
    return std::nullopt;
  }
  if (uri != "memory" &&
      (uri.rfind("sqlite:", 0) != 0 || uri.size() == std::string_view("sqlite:").size())) {
    return ConfigError{
        std::string(flag),
        fmt::format("{} must be sqlite:PATH, memory or redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] "
                    "(or rediss://..., redis+sentinel://...), got '{}'",
                    flag, fusebox::RedactRedisUrl(uri))};
  }
  return std::nullopt;
}

std::optional<ConfigError> CheckFleetUrl(const GatewayConfig& config, std::string_view flag) {
  if (config.fleet_url.empty()) {
    return std::nullopt;
  }
  if (auto parsed = fusebox::ParseRedisUrl(config.fleet_url); !parsed) {
    return ConfigError{std::string(flag), fmt::format("{}: {}", flag, parsed.error())};
  }
  return std::nullopt;
}

std::optional<ConfigError> CheckInstanceId(const GatewayConfig& config, std::string_view flag) {
  // It travels as one space-separated field of a fleet message (docs/fleet.md), which peers
  // refuse beyond 128 bytes: refused here, at start, rather than by every peer.
  if (config.instance_id.size() > 128) {
    return ConfigError{std::string(flag), fmt::format("{} must be at most 128 bytes, got {}", flag,
                                                      config.instance_id.size())};
  }
  if (config.instance_id.find_first_of(" \t\r\n") != std::string::npos) {
    return ConfigError{std::string(flag), fmt::format("{} must not contain spaces, got '{}'", flag,
                                                      config.instance_id)};
  }
  return std::nullopt;
}

// The secret in a file: its one line (a final newline dropped), at least `min_bytes` long. The
// errors name the flag and the file, never what it holds.
fusebox::Result<std::string, ConfigError> ReadSecretFile(std::string_view kFlag,
                                                         const std::string& path,
                                                         std::size_t min_bytes) {
  constexpr std::size_t kMaxBytes = 4096;
  const auto error = [&](std::string_view why) {
    return ConfigError{std::string(kFlag), fmt::format("{}: '{}' {}", kFlag, path, why)};
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    return error(fmt::format("cannot be opened: {}", std::generic_category().message(errno)));
  }
  struct stat info {};
  std::string text;
  std::optional<ConfigError> failed;
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    failed = error("is not a regular file");
  } else if (static_cast<std::uintmax_t>(info.st_size) > kMaxBytes) {
    failed = error(fmt::format("is over the {} bytes a password file may hold", kMaxBytes));
  } else {
    std::array<char, kMaxBytes + 1> buffer{};
    ssize_t n = 0;
    do {
      n = ::read(fd, buffer.data(), buffer.size());
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
      failed = error(fmt::format("cannot be read: {}", std::generic_category().message(errno)));
    } else {
      text.assign(buffer.data(), static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  if (failed) {
    return *failed;
  }
  if (text.ends_with('\n')) {
    text.pop_back();
    if (text.ends_with('\r')) {
      text.pop_back();
    }
  }
  if (text.empty()) {
    return error("is empty");
  }
  if (text.find_first_of(std::string_view("\n\r\0", 3)) != std::string::npos) {
    return error("must hold one line, the secret");
  }
  if (text.size() < min_bytes) {
    return error(
        fmt::format("holds {} bytes: a secret must have at least {}", text.size(), min_bytes));
  }
  return text;
}

fusebox::Result<std::string, ConfigError> ReadRedisPasswordFile(const std::string& path) {
  return ReadSecretFile("--redis-password-file", path, 1);
}

// The fleet's HMAC key: 16 bytes at least (128 bits, if random).
constexpr std::size_t kMinFleetSecretBytes = 16;

std::optional<ConfigError> CheckFleetSecretFile(const GatewayConfig& config, std::string_view) {
  if (config.fleet_secret_file.empty()) {
    return std::nullopt;
  }
  auto secret =
      ReadSecretFile("--fleet-secret-file", config.fleet_secret_file, kMinFleetSecretBytes);
  if (!secret) {
    return secret.error();
  }
  return std::nullopt;
}

std::optional<ConfigError> CheckRedisPasswordFile(const GatewayConfig& config, std::string_view) {
  if (config.redis_password_file.empty()) {
    return std::nullopt;
  }
  auto password = ReadRedisPasswordFile(config.redis_password_file);
  if (!password) {
    return password.error();
  }
  return std::nullopt;
}

// --redis-ca, --redis-cert, --redis-key: each file must load as what it is (fusebox::
// CheckRedisTls), so that a typo stops the start rather than every TLS handshake after it. The
// certificate and its key go together, and must match.
std::optional<ConfigError> CheckRedisCa(const GatewayConfig& config, std::string_view flag) {
  if (config.redis_ca.empty()) {
    return std::nullopt;
  }
  fusebox::RedisEndpoint endpoint;
  endpoint.tls_ca_file = config.redis_ca;
  if (std::string error = fusebox::CheckRedisTls(endpoint); !error.empty()) {
    return ConfigError{std::string(flag), fmt::format("{}: {}", flag, error)};
  }
  return std::nullopt;
}

// `kCert`: the check of --redis-cert (the certificate file's errors), else of --redis-key.
template <bool kCert>
std::optional<ConfigError> CheckRedisClientPair(const GatewayConfig& config,
                                                std::string_view flag) {
  const std::string& mine = kCert ? config.redis_cert : config.redis_key;
  const std::string& other = kCert ? config.redis_key : config.redis_cert;
  if (mine.empty()) {
    return std::nullopt;
  }
  if (other.empty()) {
    return ConfigError{std::string(flag),
                       fmt::format("{} '{}' needs {} beside it", flag, mine,
                                   kCert ? "--redis-key (its private key)" : "--redis-cert")};
  }
  fusebox::RedisEndpoint endpoint;
  endpoint.tls_cert_file = config.redis_cert;
  endpoint.tls_key_file = config.redis_key;
  std::string error = fusebox::CheckRedisTls(endpoint);
  const bool about_cert = error.rfind("certificate file", 0) == 0;
  if (!error.empty() && about_cert == kCert) {
    return ConfigError{std::string(flag), fmt::format("{}: {}", flag, error)};
  }
  return std::nullopt;
}

std::optional<ConfigError> CheckUpstreamCa(const GatewayConfig& config, std::string_view flag) {
  if (!config.upstream_ca.empty() && access(config.upstream_ca.c_str(), R_OK) != 0) {
    return ConfigError{std::string(flag), fmt::format("{} must be a readable PEM file, got '{}'",
                                                      flag, config.upstream_ca)};
  }
  return std::nullopt;
}

std::optional<ConfigError> CheckProbeVin(const GatewayConfig& config, std::string_view flag) {
  const VinCheck check = ValidateVin(config.probe_vin);
  if (!check.ok() || check.vin != config.probe_vin) {
    return ConfigError{std::string(flag),
                       fmt::format("{} must be a valid 17-character VIN, got '{}'{}", flag,
                                   config.probe_vin, check.ok() ? "" : ": " + check.Summary())};
  }
  return std::nullopt;
}

template <double GatewayConfig::*kField>
std::optional<ConfigError> ApplyNumber(GatewayConfig& config, std::string_view flag,
                                       std::string_view value) {
  const auto d = ParseDouble(value);
  if (!d) {
    return Malformed(flag, value, "a number");
  }
  config.*kField = *d;
  return std::nullopt;
}

std::optional<ConfigError> CheckClientRate(const GatewayConfig& config, std::string_view flag) {
  return CheckDouble(flag, config.client_rate, 0, 1e6);
}

std::optional<ConfigError> ApplyMaxInFlight(GatewayConfig& config, std::string_view flag,
                                            std::string_view value) {
  if (value == "auto") {
    config.max_in_flight_auto = true;
    return std::nullopt;
  }
  const auto n = ParseUnsigned<std::uint64_t>(value);
  if (!n) {
    return Malformed(flag, value, "a whole number or auto");
  }
  config.max_in_flight_auto = false;
  config.max_in_flight = static_cast<std::uint32_t>(
      std::min<std::uint64_t>(*n, std::numeric_limits<std::uint32_t>::max()));
  return std::nullopt;
}

std::optional<ConfigError> CheckMaxInFlight(const GatewayConfig& config, std::string_view flag) {
  if (config.max_in_flight_auto) {
    return std::nullopt;
  }
  return CheckRange<std::uint32_t>(flag, config.max_in_flight, 1, 100000);
}

bool SameMaxInFlight(const GatewayConfig& a, const GatewayConfig& b) {
  return a.max_in_flight_auto == b.max_in_flight_auto && a.max_in_flight == b.max_in_flight;
}

std::optional<ConfigError> CheckMaxInFlightMax(const GatewayConfig& config, std::string_view flag) {
  if (auto error = CheckRange<std::uint32_t>(flag, config.max_in_flight_max, 1, 100000)) {
    return error;
  }
  if (config.max_in_flight_max < config.max_in_flight_min) {
    return ConfigError{std::string(flag),
                       fmt::format("{} must be at least --max-in-flight-min ({}), got {}", flag,
                                   config.max_in_flight_min, config.max_in_flight_max)};
  }
  return std::nullopt;
}

std::optional<ConfigError> CheckThrottle(const GatewayConfig& config, std::string_view flag) {
  if (config.throttle == 0) {
    return std::nullopt;
  }
  if (!(config.throttle >= 1 && config.throttle <= 100)) {
    return RangeError(flag, "0 (off) or [1, 100]", FormatNumber(config.throttle));
  }
  return std::nullopt;
}

std::optional<ConfigError> ApplyClientBurst(GatewayConfig& config, std::string_view flag,
                                            std::string_view value) {
  const auto d = ParseDouble(value);
  if (!d) {
    return Malformed(flag, value, "a number");
  }
  config.client_burst = *d;
  return std::nullopt;
}

std::optional<ConfigError> CheckClientBurst(const GatewayConfig& config, std::string_view flag) {
  if (!config.client_burst) {
    return std::nullopt;
  }
  return CheckDouble(flag, *config.client_burst, 1, 1e7);
}

std::optional<ConfigError> ApplyLogFormat(GatewayConfig& config, std::string_view flag,
                                          std::string_view value) {
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

// ---- the breaker's settings: the library's table (fusebox/breaker_settings.h) ----

// The gateway's names before it took the library's, still read (flag and TOML key).
const fusebox::app::OldBreakerName* OldNameOf(std::string_view setting) {
  for (const fusebox::app::OldBreakerName& old : fusebox::app::OldBreakerNames()) {
    if (old.setting == setting) {
      return &old;
    }
  }
  return nullptr;
}

// One breaker setting's text, read as its type into config.breaker (syntax only: the range is
// the library's Validate()); the gateway's reading, shared with fusebox-sim (common/).
std::optional<ConfigError> ApplyBreakerSetting(GatewayConfig& config,
                                               const fusebox::BreakerSetting& setting,
                                               std::string_view flag, std::string_view value) {
  return fusebox::app::ReadBreakerText(config.breaker, setting, flag, value,
                                       config.window_size_given_as_duration);
}

constexpr Duration::rep kMs = 1'000'000;
constexpr Duration::rep kSecond = 1000 * kMs;
constexpr Duration::rep kMinute = 60 * kSecond;
constexpr Duration::rep kDay = kMinute * 60 * 24;

using G = GatewayConfig;

bool SameListen(const GatewayConfig& a, const GatewayConfig& b) {
  return a.listen_host == b.listen_host && a.listen_port == b.listen_port;
}

// The process's settings, in the order of --help and of Validate (the first value out of range is
// the one reported); the breaker's come between the first four and the rest (Settings()).
constexpr Setting kProcessSettings[] = {
    {"--listen", "listen", "HOST:PORT to serve on (default 127.0.0.1:8080)", ApplyListen,
     CheckListen, SameListen, ShowListen},
    {"--upstream-url", "upstream_url", "vPIC base URL (default https://vpic.nhtsa.dot.gov)",
     ApplyText<&G::upstream_url>, CheckUpstreamUrl, Same<&G::upstream_url>,
     ShowText<&G::upstream_url>},
    {"--cache", "cache",
     "cache URI: sqlite:PATH, memory or redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] (also "
     "rediss:// for TLS, redis+sentinel://HOST:PORT[,...]/MASTER[/DB]; default "
     "sqlite:var/vin-cache.sqlite)",
     ApplyText<&G::cache_uri>, CheckCacheUri, Same<&G::cache_uri>, ShowRedacted<&G::cache_uri>},
    {"--cache-ttl", "cache_ttl", "serve cached decodes this long (default 30d)",
     ApplyDuration<&G::cache_ttl>, CheckDurationField<&G::cache_ttl, kSecond, 3650 * kDay>,
     Same<&G::cache_ttl>, ShowDuration<&G::cache_ttl>},
    // (the breaker's settings go here)
    {"--max-in-flight", "max_in_flight",
     "upstream calls at once: a number, or auto (an adaptive limit; default 16)", ApplyMaxInFlight,
     CheckMaxInFlight, SameMaxInFlight, ShowMaxInFlight},
    {"--max-in-flight-min", "max_in_flight_min",
     "with --max-in-flight auto: the least the limit goes to (default 3)",
     ApplyWhole<std::uint32_t, &G::max_in_flight_min>,
     CheckWholeField<std::uint32_t, &G::max_in_flight_min, 1, 100000>, Same<&G::max_in_flight_min>,
     ShowWhole<std::uint32_t, &G::max_in_flight_min>},
    {"--max-in-flight-max", "max_in_flight_max",
     "with --max-in-flight auto: the most the limit goes to (default 256)",
     ApplyWhole<std::uint32_t, &G::max_in_flight_max>, CheckMaxInFlightMax,
     Same<&G::max_in_flight_max>, ShowWhole<std::uint32_t, &G::max_in_flight_max>},
    {"--throttle", "throttle",
     "client-side throttling of vPIC calls: k, nothing is shed while more than 1/k succeed; "
     "0 disables (default 0)",
     ApplyNumber<&G::throttle>, CheckThrottle, Same<&G::throttle>, ShowNumber<&G::throttle>},
    {"--throttle-window", "throttle_window", "how far back the throttle counts (default 30s)",
     ApplyDuration<&G::throttle_window>,
     CheckDurationField<&G::throttle_window, 100 * kMs, 60 * kMinute>, Same<&G::throttle_window>,
     ShowDuration<&G::throttle_window>},
    {"--client-rate", "client_rate",
     "decodes per second per client (address; IPv6: per network, see --client-ipv6-prefix), "
     "0 disables (default 20)",
     ApplyNumber<&G::client_rate>, CheckClientRate, Same<&G::client_rate>,
     ShowNumber<&G::client_rate>},
    {"--client-burst", "client_burst",
     "burst per client (default 2 x client-rate, at least 50: one whole batch)", ApplyClientBurst,
     CheckClientBurst, Same<&G::client_burst>, ShowClientBurst},
    {"--client-ipv6-prefix", "client_ipv6_prefix",
     "IPv6 clients share a rate limit per network of this prefix length (default 64)",
     ApplyWhole<std::uint32_t, &G::client_ipv6_prefix>,
     CheckWholeField<std::uint32_t, &G::client_ipv6_prefix, 1, 128>, Same<&G::client_ipv6_prefix>,
     ShowWhole<std::uint32_t, &G::client_ipv6_prefix>},
    {"--cache-max-entries", "cache_max_entries", "decodes kept in the cache (default 1000000)",
     ApplyWhole<std::uint64_t, &G::cache_max_entries>,
     CheckWholeField<std::uint64_t, &G::cache_max_entries, 1, 1'000'000'000>,
     Same<&G::cache_max_entries>, ShowWhole<std::uint64_t, &G::cache_max_entries>},
    {"--upstream-ca", "upstream_ca", "PEM CA file for the upstream (default: system CAs)",
     ApplyText<&G::upstream_ca>, CheckUpstreamCa, Same<&G::upstream_ca>, ShowText<&G::upstream_ca>},
    {"--probe-vin", "probe_vin",
     "the VIN the gateway decodes to probe vPIC with --probe-mode active (default "
     "1FTMW1T88MFA00001, which vPIC decodes cleanly)",
     ApplyText<&G::probe_vin>, CheckProbeVin, Same<&G::probe_vin>, ShowText<&G::probe_vin>},
    {"--answer-deadline", "answer_deadline",
     "a decode with a stale copy or an offline decode gets it if vPIC has not answered by then; "
     "the live call goes on and fills the cache (default 2s; 0 turns it off)",
     ApplyDuration<&G::answer_deadline>, CheckDurationField<&G::answer_deadline, 0, 10 * kMinute>,
     Same<&G::answer_deadline>, ShowDuration<&G::answer_deadline>},
    {"--log-format", "log_format", "text or json (default text)", ApplyLogFormat, nullptr,
     Same<&G::log_format>, ShowLogFormat},
    {"--client-timeout", "client_timeout",
     "a client must send a request, and take each answer, within this (default 10s)",
     ApplyDuration<&G::client_timeout>,
     CheckDurationField<&G::client_timeout, 10 * kMs, 10 * kMinute>, Same<&G::client_timeout>,
     ShowDuration<&G::client_timeout>},
    {"--shutdown-grace", "shutdown_grace",
     "SIGTERM: time in-flight requests may finish (default 5s)", ApplyDuration<&G::shutdown_grace>,
     CheckDurationField<&G::shutdown_grace, 0, 10 * kMinute>, Same<&G::shutdown_grace>,
     ShowDuration<&G::shutdown_grace>},
    {"--threads", "threads",
     "I/O threads, each with its own event loop; connections are spread over them (default 1)",
     ApplyWhole<std::uint32_t, &G::threads>, CheckWholeField<std::uint32_t, &G::threads, 1, 64>,
     Same<&G::threads>, ShowWhole<std::uint32_t, &G::threads>},
    {"--offline-db", "offline_db",
     "vPIC SQLite database for offline decodes, or none (default var/vpic/vpic.lite.db, else "
     "/usr/share/vin-gateway/vpic/vpic.lite.db, if present)",
     ApplyText<&G::offline_db>, nullptr, Same<&G::offline_db>, ShowText<&G::offline_db>},
    // Fleet mode (docs/fleet.md).
    {"--fleet", "fleet",
     "share the breaker through Redis: redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] (also rediss:// "
     "for TLS, redis+sentinel://HOST:PORT[,...]/MASTER[/DB]; default off)",
     ApplyText<&G::fleet_url>, CheckFleetUrl, Same<&G::fleet_url>, ShowRedacted<&G::fleet_url>},
    {"--redis-password-file", "redis_password_file",
     "file whose one line is the password of the Redis of --fleet and --cache, unless the URL "
     "has one (default: FUSEBOX_REDIS_PASSWORD from the environment, else none)",
     ApplyText<&G::redis_password_file>, CheckRedisPasswordFile, Same<&G::redis_password_file>,
     ShowText<&G::redis_password_file>},
    {"--redis-ca", "redis_ca",
     "PEM file of the CAs that a TLS Redis (rediss://) of --fleet and --cache must be signed by "
     "(default: the system's store)",
     ApplyText<&G::redis_ca>, CheckRedisCa, Same<&G::redis_ca>, ShowText<&G::redis_ca>},
    {"--redis-cert", "redis_cert",
     "PEM client certificate shown to a TLS Redis that asks for one, with --redis-key (default "
     "none)",
     ApplyText<&G::redis_cert>, CheckRedisClientPair<true>, Same<&G::redis_cert>,
     ShowText<&G::redis_cert>},
    {"--redis-key", "redis_key", "PEM private key of --redis-cert (default none)",
     ApplyText<&G::redis_key>, CheckRedisClientPair<false>, Same<&G::redis_key>,
     ShowText<&G::redis_key>},
    {"--fleet-secret-file", "fleet_secret_file",
     "file whose one line (16 bytes or more) signs and checks every fleet message: the same on "
     "every instance (default none: unsigned, see docs/fleet.md)",
     ApplyText<&G::fleet_secret_file>, CheckFleetSecretFile, Same<&G::fleet_secret_file>,
     ShowText<&G::fleet_secret_file>},
    {"--fleet-quorum", "fleet_quorum",
     "open on the fleet's evidence only once this many other instances reported vPIC failing "
     "within their cooldown; an instance's own failures always open it (default 1)",
     ApplyWhole<std::uint32_t, &G::fleet_quorum>,
     CheckWholeField<std::uint32_t, &G::fleet_quorum, 1, 64>, Same<&G::fleet_quorum>,
     ShowWhole<std::uint32_t, &G::fleet_quorum>},
    {"--cache-timeout", "cache_timeout",
     "budget of one Redis cache read or write, --cache redis://... (default 50ms)",
     ApplyDuration<&G::cache_timeout>, CheckDurationField<&G::cache_timeout, kMs, 10 * kSecond>,
     Same<&G::cache_timeout>, ShowDuration<&G::cache_timeout>},
    {"--instance-id", "instance_id",
     "this instance's name in the fleet (default HOSTNAME-PID-RANDOM, unique per process)",
     ApplyText<&G::instance_id>, CheckInstanceId, Same<&G::instance_id>, ShowText<&G::instance_id>},
    {"--trusted-proxy", "trusted_proxy",
     "CIDR of a reverse proxy whose X-Forwarded-For names the client; repeatable (default none)",
     ApplyListItem<&G::trusted_proxies>, nullptr, Same<&G::trusted_proxies>,
     ShowList<&G::trusted_proxies>, Scope::kProcess, Form::kList, ClearList<&G::trusted_proxies>},
};

constexpr std::size_t kBreakerSettingsAfter = 4;  // --listen, --upstream-url, --cache, --cache-ttl

// "--failure-threshold" for "failure_threshold".
std::string FlagOf(std::string_view name) {
  std::string flag = "--" + std::string(name);
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

// --help for a breaker setting: the library's line, the gateway's default and the range (CLI11
// shows the old name beside the new).
std::string BreakerHelp(const fusebox::BreakerSetting& setting) {
  const fusebox::SettingValue value = fusebox::GetSetting(GatewayConfig::DefaultBreaker(), setting);
  const std::string default_text = std::holds_alternative<std::monostate>(value)
                                       ? std::string(setting.default_text)
                                       : fusebox::SettingText(value);
  if (setting.type == fusebox::SettingType::kBool && setting.range.empty()) {
    return fmt::format("{} (default {})", setting.help, default_text);
  }
  return fmt::format("{} (default {}; {})", setting.help, default_text,
                     fusebox::RangeText(setting));
}

// Every setting, the breaker's from the library's table. Built once; the strings it points into
// live as long as the program.
const std::vector<Setting>& Settings() {
  static const std::vector<Setting> settings = [] {
    // The breaker rows' flags and help: a deque never moves what it holds, so the views stay.
    static std::deque<std::string> text;
    const auto breaker = fusebox::BreakerSettings();
    std::vector<Setting> all(std::begin(kProcessSettings),
                             std::begin(kProcessSettings) + kBreakerSettingsAfter);
    for (const fusebox::BreakerSetting& b : breaker) {
      const std::string_view flag = text.emplace_back(FlagOf(b.name));
      const std::string_view help = text.emplace_back(BreakerHelp(b));
      const fusebox::app::OldBreakerName* old = OldNameOf(b.name);
      Setting row{flag,
                  b.name,
                  help,
                  nullptr,
                  nullptr,
                  nullptr,
                  nullptr,  // apply, check, same and show: from `breaker` (ApplySetting, ...)
                  Scope::kBreaker,
                  b.type == fusebox::SettingType::kBool ? Form::kSwitch : Form::kValue};
      row.breaker = &b;
      if (old != nullptr) {
        row.old_flag = old->flag;
        row.old_key = old->key;
      }
      all.push_back(row);
    }
    all.insert(all.end(), std::begin(kProcessSettings) + kBreakerSettingsAfter,
               std::end(kProcessSettings));
    return all;
  }();
  return settings;
}

const Setting* FindByFlag(std::string_view flag) {
  for (const Setting& s : Settings()) {
    if (s.flag == flag || (!s.old_flag.empty() && s.old_flag == flag)) {
      return &s;
    }
  }
  return nullptr;
}

const Setting* FindByKey(std::string_view key) {
  for (const Setting& s : Settings()) {
    if (s.key == key || (!s.old_key.empty() && s.old_key == key)) {
      return &s;
    }
  }
  return nullptr;
}

// Whether two configs hold the same value of a setting (SIGHUP: what changed).
bool SameValue(const Setting& setting, const GatewayConfig& a, const GatewayConfig& b) {
  if (setting.breaker != nullptr) {
    return fusebox::GetSetting(a.breaker, *setting.breaker) ==
           fusebox::GetSetting(b.breaker, *setting.breaker);
  }
  return setting.same(a, b);
}

// A setting's value in `config` as TOML (nullopt: unset).
std::optional<std::string> ShowValue(const Setting& setting, const GatewayConfig& config) {
  if (setting.breaker == nullptr) {
    return setting.show(config);
  }
  const fusebox::SettingValue value = fusebox::GetSetting(config.breaker, *setting.breaker);
  if (std::holds_alternative<std::monostate>(value)) {
    return std::nullopt;
  }
  if (const auto* d = std::get_if<Duration>(&value)) {
    return TomlString(FormatDuration(*d));  // the gateway's grammar: "500ms", not "0.5s"
  }
  if (std::holds_alternative<fusebox::TripPolicy>(value) ||
      std::holds_alternative<fusebox::ProbeMode>(value)) {
    return TomlString(fusebox::SettingText(value));
  }
  return fusebox::SettingText(value);
}

}  // namespace

std::optional<Duration> ParseDuration(std::string_view text) {
  // The apps' one grammar (apps/common/duration.h), with hours and days and bare seconds.
  auto parsed = fusebox::app::ParseFlagDuration(text);
  if (!parsed) {
    return std::nullopt;
  }
  return std::chrono::duration_cast<Duration>(*parsed);
}

std::string FormatDuration(Duration d) { return fusebox::app::FormatFlagDuration(d); }

fusebox::CircuitBreakerConfig GatewayConfig::RedisBreakerConfig() const {
  fusebox::CircuitBreakerConfig redis;
  redis.failure_threshold = 5;
  redis.cooldown = std::chrono::seconds(5);
  redis.call_timeout = cache_timeout;
  return redis;
}

fusebox::Result<fusebox::RedisEndpoint, ConfigError> RedisEndpointOf(const GatewayConfig& config,
                                                                     std::string_view flag,
                                                                     const std::string& url) {
  auto endpoint = fusebox::ParseRedisUrl(url);
  if (!endpoint) {
    return ConfigError{std::string(flag), fmt::format("{}: {}", flag, endpoint.error())};
  }
  endpoint->tls_ca_file = config.redis_ca;
  endpoint->tls_cert_file = config.redis_cert;
  endpoint->tls_key_file = config.redis_key;
  if (!endpoint->password.empty()) {
    return std::move(*endpoint);
  }
  if (!config.redis_password_file.empty()) {
    auto password = ReadRedisPasswordFile(config.redis_password_file);
    if (!password) {
      return password.error();
    }
    endpoint->password = std::move(*password);
  } else if (const char* env = std::getenv("FUSEBOX_REDIS_PASSWORD"); env != nullptr) {
    endpoint->password = env;
  }
  return std::move(*endpoint);
}

// The default is unique per process, not derived from --listen: every container started with
// `--listen 0.0.0.0:8080` would otherwise share one name, and each instance would take the
// others' messages for its own echo (the fleet silently doing nothing). The host name says where
// it runs; the pid and a random suffix tell apart processes on one host, or containers sharing
// a host name (host networking) where each is pid 1. Made once: the same for the whole process.
fusebox::Result<std::string, ConfigError> FleetSecret(const GatewayConfig& config) {
  if (config.fleet_secret_file.empty()) {
    return std::string();
  }
  return ReadSecretFile("--fleet-secret-file", config.fleet_secret_file, kMinFleetSecretBytes);
}

std::string GatewayConfig::effective_instance_id() const {
  if (!instance_id.empty()) {
    return instance_id;
  }
  static const std::string made = [] {
    std::array<char, 256> host{};
    if (::gethostname(host.data(), host.size() - 1) != 0 || host[0] == '\0') {
      host = {'g', 'w'};
    }
    // At most 64 bytes of it, and only what reads well in /status and a wire message (no
    // spaces): anything else becomes '_'.
    std::string name(host.data(), std::min<std::size_t>(std::strlen(host.data()), 64));
    for (char& c : name) {
      const bool ok =
          std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-' || c == '_';
      c = ok ? c : '_';
    }
    std::uint32_t suffix = 0;
    try {
      suffix = std::random_device()();
    } catch (const std::exception&) {
      // No entropy source: the clock's low bits still differ between processes.
      suffix =
          static_cast<std::uint32_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    }
    return fmt::format("{}-{}-{:08x}", name, ::getpid(), suffix);
  }();
  return made;
}

std::optional<ConfigError> ApplySetting(GatewayConfig& config, std::string_view flag,
                                        std::string_view value) {
  const Setting* setting = FindByFlag(flag);
  if (setting == nullptr) {
    return ConfigError{std::string(flag), fmt::format("unknown setting {}", flag)};
  }
  if (setting->breaker != nullptr) {
    return ApplyBreakerSetting(config, *setting->breaker, setting->flag, value);
  }
  return setting->apply(config, setting->flag, value);
}

std::optional<ConfigError> GatewayConfig::Validate() const {
  for (const Setting& setting : Settings()) {
    if (setting.check != nullptr) {
      if (auto e = setting.check(*this, setting.flag)) {
        return e;
      }
    }
  }
  if (window_size_given_as_duration && breaker.trip == fusebox::TripPolicy::kCountWindow) {
    return ConfigError{"--window-size",
                       fmt::format("--window-size must be a number of calls with trip = "
                                   "count_window, got the duration {}",
                                   FormatDuration(seconds(breaker.window_size)))};
  }
  // The breaker's ranges are the library's: its message, naming the flag rather than the field
  // ("failure_threshold must be in ..." -> "--failure-threshold must be in ...").
  if (auto e = breaker.Validate()) {
    const std::string_view flag = FlagOfBreakerField(e->field);
    std::string message = e->message;
    if (message.starts_with(e->field)) {
      message.replace(0, e->field.size(), flag);
    } else {
      message = fmt::format("{}: {}", flag, message);
    }
    return ConfigError{std::string(flag), std::move(message)};
  }
  return std::nullopt;
}

namespace {

// `text` as TOML comment lines of at most 100 columns, broken at spaces.
std::string CommentLines(std::string_view text) {
  constexpr std::size_t kWidth = 100 - 2;  // after "# "
  std::string out;
  while (!text.empty()) {
    std::size_t cut = text.size();
    if (cut > kWidth) {
      cut = text.rfind(' ', kWidth);
      if (cut == std::string_view::npos || cut == 0) {
        cut = std::min(text.find(' '), text.size());  // one long word: a long line
      }
    }
    out += fmt::format("# {}\n", text.substr(0, cut));
    text.remove_prefix(cut);
    while (!text.empty() && text.front() == ' ') {
      text.remove_prefix(1);
    }
  }
  return out;
}

}  // namespace

std::string RenderConfigFile(const GatewayConfig& config) {
  static const GatewayConfig kDefaults;
  std::string out = fmt::format(
      "# vin-gateway {} configuration (TOML), read with --config FILE; flags override it.\n"
      "# Every setting is here with its --help line. A line commented out holds the default;\n"
      "# remove the '# ' to change it. Durations: 500ms, 7s, 20m, 1h, 30d.\n"
      "# A reload (SIGHUP, `systemctl reload vin-gateway`) applies the settings marked\n"
      "# [reload] to the running breaker; the others need a restart.\n"
      "# Check a file before using it: vin-gateway --check-config FILE\n",
      fusebox::kVersion);
  for (const Setting& setting : Settings()) {
    const std::optional<std::string> value = ShowValue(setting, config);
    const bool is_default = SameValue(setting, config, kDefaults);
    out += "\n" + CommentLines(fmt::format("{}{}: {}", setting.flag,
                                           setting.scope == Scope::kBreaker ? " [reload]" : "",
                                           setting.help));
    if (!value) {
      out += fmt::format("# {} =\n", setting.key);  // unset: its default is the help's
    } else {
      out += fmt::format("{}{} = {}\n", is_default ? "# " : "", setting.key, *value);
    }
  }
  return out;
}

std::string_view FlagOfBreakerField(std::string_view field) {
  for (const Setting& s : Settings()) {
    if (s.breaker != nullptr && s.breaker->name == field) {
      return s.flag;
    }
  }
  return field;
}

std::vector<std::string_view> SettingsNeedingRestart(const GatewayConfig& running,
                                                     const GatewayConfig& reread) {
  std::vector<std::string_view> flags;
  for (const Setting& setting : Settings()) {
    if (setting.scope == Scope::kProcess && !SameValue(setting, running, reread)) {
      flags.push_back(setting.flag);
    }
  }
  return flags;
}

namespace {

ConfigError FileError(const std::string& path, std::string_view why) {
  return ConfigError{"--config", fmt::format("--config: '{}' {}", path, why)};
}

ConfigError FileErrno(const std::string& path, std::string_view what, int error) {
  // generic_category's message is strerror_r's: safe on the reload thread.
  return FileError(path, fmt::format("{}: {}", what, std::generic_category().message(error)));
}

// What a path that is not a regular file is, for the refusal.
std::string_view KindOf(mode_t mode) {
  if (S_ISDIR(mode)) {
    return "a directory";
  }
  if (S_ISFIFO(mode)) {
    return "a FIFO (named pipe)";
  }
  if (S_ISCHR(mode)) {
    return "a character device";
  }
  if (S_ISBLK(mode)) {
    return "a block device";
  }
  if (S_ISSOCK(mode)) {
    return "a socket";
  }
  return "an unknown kind of file";
}

bool Blank(std::string_view text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; });
}

// Reads `fd` to its end or past `cap` bytes, whichever comes first (a regular file may grow after
// fstat): the text, or nullopt with errno set.
std::optional<std::string> ReadUpTo(int fd, std::size_t cap) {
  std::string text;
  std::array<char, 8192> chunk{};
  while (text.size() <= cap) {
    const ssize_t n = ::read(fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      return std::nullopt;
    }
    if (n == 0) {
      break;
    }
    text.append(chunk.data(), static_cast<std::size_t>(n));
  }
  return text;
}

// The text of the open file `fd`, if it is a regular file within the cap.
fusebox::Result<std::string, ConfigError> ReadRegularFile(int fd, const std::string& path) {
  // The descriptor's own stat, not the path's: what is checked is what is read.
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    return FileErrno(path, "cannot be read", errno);
  }
  if (!S_ISREG(info.st_mode)) {
    return FileError(path, fmt::format("is {}, not a regular file", KindOf(info.st_mode)));
  }
  if (static_cast<std::uintmax_t>(info.st_size) > kMaxConfigFileBytes) {
    return FileError(path, fmt::format("is {} bytes, over the {} MiB a config file may hold",
                                       info.st_size, kMaxConfigFileBytes >> 20U));
  }
  std::optional<std::string> text = ReadUpTo(fd, kMaxConfigFileBytes);
  if (!text) {
    return FileErrno(path, "cannot be read", errno);
  }
  if (text->size() > kMaxConfigFileBytes) {
    // It grew between fstat and read.
    return FileError(
        path, fmt::format("is over the {} MiB a config file may hold", kMaxConfigFileBytes >> 20U));
  }
  return std::move(*text);
}

}  // namespace

fusebox::Result<std::string, ConfigError> ReadConfigFile(const std::string& path) {
  // The path's stat first: a device is refused without being opened (opening one can have side
  // effects, a tape rewinding). The descriptor's own fstat below still decides (the path may be
  // replaced in between); O_NONBLOCK so that opening a FIFO put there meanwhile does not wait.
  struct stat before {};
  if (::stat(path.c_str(), &before) == 0 && !S_ISREG(before.st_mode)) {
    return FileError(path, fmt::format("is {}, not a regular file", KindOf(before.st_mode)));
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    return FileErrno(path, "cannot be opened", errno);
  }
  auto text = ReadRegularFile(fd, path);
  ::close(fd);
  if (!text) {
    return text.error();
  }
  if (Blank(*text)) {
    // Most often a file being rewritten (an editor truncates it, then writes): the defaults it
    // would mean are never what the operator who named a config file wants.
    return FileError(path, "is empty (a file that sets nothing must hold at least a comment)");
  }
  return text;
}

std::optional<ConfigError> ApplyConfigFile(GatewayConfig& config, const std::string& path) {
  auto file = ReadConfigFile(path);
  if (!file) {
    return file.error();
  }
  toml::table table;
  try {
    table = toml::parse(*file, path);
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
    if (setting->form == Form::kList) {
      setting->clear(config);
      const toml::array* array = node.as_array();
      std::vector<std::string> items;
      if (const auto* one = node.as_string()) {
        items.push_back(one->get());
      } else if (array != nullptr) {
        for (const toml::node& item : *array) {
          const auto* text = item.as_string();
          if (text == nullptr) {
            return ConfigError{std::string(setting->flag),
                               fmt::format("{} (key '{}' in '{}') must be a list of strings",
                                           setting->flag, name, path)};
          }
          items.push_back(text->get());
        }
      } else {
        return ConfigError{std::string(setting->flag),
                           fmt::format("{} (key '{}' in '{}') must be a list of strings",
                                       setting->flag, name, path)};
      }
      for (const std::string& item : items) {
        if (auto e = ApplySetting(config, setting->flag, item)) {
          e->message += fmt::format(" (key '{}' in '{}')", name, path);
          return e;
        }
      }
      continue;
    }
    std::string text;
    if (setting->form == Form::kSwitch) {
      if (const auto* b = node.as_boolean()) {
        text = b->get() ? "true" : "false";
      } else {
        return ConfigError{
            std::string(setting->flag),
            fmt::format("{} (key '{}' in '{}') must be true or false", setting->flag, name, path)};
      }
    } else if (const auto* s = node.as_string()) {
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
  app.set_version_flag("--version", std::string(fusebox::kVersion), "print the version and exit");
  // Wide enough that "--window-size,--window TEXT" does not run into its help (and the man page,
  // made from this output, reads the same).
  app.get_formatter()->column_width(36);
  app.add_option("--config", config_path,
                 "TOML file (a regular file of at most 1 MiB, not empty); flags override it");
  std::string check_path;
  app.add_option("--check-config", check_path,
                 "read this TOML file as --config does, check it with the other flags, print "
                 "the settings in force and exit (2 with the first error)")
      ->excludes("--config");
  bool print_config = false;
  app.add_flag("--print-config", print_config,
               "print the settings in force as a commented TOML file --config reads, and exit");
  const std::vector<Setting>& settings = Settings();
  std::vector<std::string> values(settings.size());
  std::vector<std::vector<std::string>> lists(settings.size());
  std::vector<CLI::Option*> options;
  for (std::size_t i = 0; i < settings.size(); ++i) {
    // A breaker setting's old name is a second name of the same option.
    std::string names(settings[i].flag);
    if (!settings[i].old_flag.empty()) {
      names += fmt::format(",{}", settings[i].old_flag);
    }
    const std::string help(settings[i].help);
    if (settings[i].form == Form::kList) {
      options.push_back(app.add_option(names, lists[i], help)
                            ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
                            ->expected(1)
                            ->allow_extra_args(false));
      continue;
    }
    // A flag given twice: the last one wins (scripts append overrides). A switch may be given a
    // value (--inflight-slow-accounting=false) to override the file.
    options.push_back((settings[i].form == Form::kSwitch ? app.add_flag(names, values[i], help)
                                                         : app.add_option(names, values[i], help))
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
  } catch (const CLI::CallForVersion&) {
    out.version = true;
    out.version_text = fmt::format("vin-gateway {}\n", fusebox::kVersion);
    return out;
  } catch (const CLI::ParseError& e) {
    return ConfigError{"command line", e.what()};
  }
  if (!check_path.empty()) {
    config_path = check_path;
    out.check_config = true;
  }
  out.print_config = print_config;
  out.config_path = config_path;
  if (!config_path.empty()) {
    if (auto e = ApplyConfigFile(out.config, config_path)) {
      return *e;
    }
  }
  for (std::size_t i = 0; i < settings.size(); ++i) {
    if (options[i]->count() == 0) {
      continue;
    }
    if (settings[i].form == Form::kList) {
      settings[i].clear(out.config);
      for (const std::string& item : lists[i]) {
        if (auto e = ApplySetting(out.config, settings[i].flag, item)) {
          return *e;
        }
      }
    } else if (auto e = ApplySetting(out.config, settings[i].flag, values[i])) {
      return *e;
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

}  // namespace fusebox::gateway

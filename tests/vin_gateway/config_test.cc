// Command line, TOML file and validation: defaults, precedence, and errors that name the flag and
// its valid range.
#include "config/config.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fusebox/breaker_settings.h"
#include "fusebox/fleet.h"
#include "fusebox/version.h"

namespace {

using namespace std::chrono_literals;
using fusebox::gateway::GatewayConfig;
using fusebox::gateway::ParseCommandLine;

fusebox::Result<fusebox::gateway::CommandLine, fusebox::ConfigError> Parse(
    std::vector<std::string> args) {
  args.insert(args.begin(), "vin-gateway");
  return ParseCommandLine(args);
}

// A TOML file in the temp directory, removed when the test ends.
class TomlFile {
 public:
  TomlFile(const std::string& name, const std::string& text)
      : path_(std::filesystem::temp_directory_path() / name) {
    std::ofstream(path_) << text;
  }
  TomlFile(const TomlFile&) = delete;
  TomlFile& operator=(const TomlFile&) = delete;
  ~TomlFile() { std::filesystem::remove(path_); }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

TEST(ConfigTest, DefaultsMatchTheDocs) {
  auto parsed = Parse({});
  ASSERT_TRUE(parsed) << parsed.error().message;
  const GatewayConfig& c = parsed->config;
  EXPECT_EQ(c.listen_host, "127.0.0.1");
  EXPECT_EQ(c.listen_port, 8080);
  EXPECT_EQ(c.upstream_url, "https://vpic.nhtsa.dot.gov");
  EXPECT_EQ(c.cache_uri, "sqlite:var/vin-cache.sqlite");
  EXPECT_EQ(c.cache_ttl, std::chrono::hours(24 * 30));
  EXPECT_EQ(c.breaker.call_timeout, 7s);
  EXPECT_EQ(c.breaker.cooldown, 20s);
  EXPECT_EQ(c.breaker.failure_threshold, 3U);
  EXPECT_EQ(c.breaker.half_open_max_probes, 1U);
  EXPECT_EQ(c.max_in_flight, 16U);
  EXPECT_EQ(c.client_rate, 20);
  EXPECT_EQ(c.effective_client_burst(), 50);  // one whole batch, more than 2 x the rate
  EXPECT_EQ(c.client_ipv6_prefix, 64U);
  EXPECT_EQ(c.cache_max_entries, 1'000'000U);
  EXPECT_EQ(c.log_format, fusebox::gateway::LogFormat::kText);
}

TEST(ConfigTest, TheDefaultInstanceIdIsThisProcessesNotTheListenAddress) {
  // Every container of a deployment is started with the same --listen: a name made of it was
  // shared by all of them, and each took the others' fleet messages for its own echo.
  auto parsed = Parse({"--listen", "0.0.0.0:8080"});
  ASSERT_TRUE(parsed) << parsed.error().message;
  const std::string id = parsed->config.effective_instance_id();
  EXPECT_EQ(id.find("0.0.0.0"), std::string::npos) << id;
  EXPECT_NE(id.find(fmt::format("-{}-", ::getpid())), std::string::npos) << id;
  EXPECT_EQ(id, parsed->config.effective_instance_id()) << "made once per process";
  // It travels as the sender of every fleet message: within the bounds peers accept.
  EXPECT_LE(id.size(), fusebox::kMaxFleetSenderBytes);
  EXPECT_EQ(id.find_first_of(" \t\r\n"), std::string::npos) << id;
  auto named = Parse({"--listen", "0.0.0.0:8080", "--instance-id", "gw-1"});
  ASSERT_TRUE(named) << named.error().message;
  EXPECT_EQ(named->config.effective_instance_id(), "gw-1");
}

TEST(ConfigTest, BreakerConfigFollowsTheGatewaySeeds) {
  const fusebox::CircuitBreakerConfig b = GatewayConfig{}.BreakerConfig();
  EXPECT_EQ(b.trip, fusebox::TripPolicy::kConsecutive);
  EXPECT_EQ(b.failure_threshold, 3U);
  EXPECT_EQ(b.call_timeout, 7s);
  EXPECT_EQ(b.cooldown, 20s);
  EXPECT_EQ(b.half_open_max_probes, 1U);
  EXPECT_EQ(b.effective_half_open_successes(), 1U);
  EXPECT_FALSE(b.batch_may_probe);
  EXPECT_FALSE(b.Validate().has_value());
}

TEST(ConfigTest, FlagsAreRead) {
  auto parsed = Parse({"--listen",
                       "0.0.0.0:0",
                       "--upstream-url",
                       "http://127.0.0.1:9000/base",
                       "--cache",
                       "memory",
                       "--cache-ttl",
                       "90m",
                       "--call-timeout",
                       "1500ms",
                       "--cooldown",
                       "2s",
                       "--failure-threshold",
                       "5",
                       "--half-open-probes",
                       "2",
                       "--max-in-flight",
                       "64",
                       "--client-rate",
                       "0",
                       "--cache-max-entries",
                       "10",
                       "--log-format",
                       "json"});
  ASSERT_TRUE(parsed) << parsed.error().message;
  const GatewayConfig& c = parsed->config;
  EXPECT_EQ(c.listen_host, "0.0.0.0");
  EXPECT_EQ(c.listen_port, 0);
  EXPECT_EQ(c.upstream_url, "http://127.0.0.1:9000/base");
  EXPECT_EQ(c.cache_uri, "memory");
  EXPECT_EQ(c.cache_ttl, 90min);
  EXPECT_EQ(c.breaker.call_timeout, 1500ms);
  EXPECT_EQ(c.breaker.cooldown, 2s);
  EXPECT_EQ(c.breaker.failure_threshold, 5U);
  EXPECT_EQ(c.breaker.half_open_max_probes, 2U);
  EXPECT_EQ(c.max_in_flight, 64U);
  EXPECT_EQ(c.client_rate, 0);
  EXPECT_EQ(c.cache_max_entries, 10U);
  EXPECT_EQ(c.log_format, fusebox::gateway::LogFormat::kJson);
}

TEST(ConfigTest, FlagsOverrideTheFileWhichOverridesDefaults) {
  const TomlFile file("vin_gateway_config_test.toml",
                      "cooldown = \"5s\"\nfailure_threshold = 4\ncache = \"memory\"\n");
  auto parsed = Parse({"--config", file.path(), "--cooldown", "9s"});
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->config.breaker.cooldown, 9s);
  EXPECT_EQ(parsed->config.breaker.failure_threshold, 4U);
  EXPECT_EQ(parsed->config.cache_uri, "memory");
  EXPECT_EQ(parsed->config.breaker.call_timeout, 7s);
}

// The cooldown a scenario tunes ("2m30s") reads the same here, in the file and as a flag.
TEST(ConfigTest, CompoundDurationsAreReadFromTheFileAndFlags) {
  const TomlFile file("vin_gateway_config_test.toml", "cooldown = \"2m30s\"\n");
  auto parsed = Parse({"--config", file.path(), "--cache-ttl", "1d12h"});
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->config.breaker.cooldown, 150s);
  EXPECT_EQ(parsed->config.cache_ttl, std::chrono::hours(36));
}

TEST(ConfigTest, TheLastOfARepeatedFlagWins) {
  auto parsed = Parse({"--cooldown", "5s", "--cooldown", "6s"});
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->config.breaker.cooldown, 6s);
}

TEST(ConfigTest, TrustedProxyIsAListFromFlagsOrTheFile) {
  EXPECT_TRUE(Parse({})->config.trusted_proxies.empty());
  auto flags =
      Parse({"--trusted-proxy", "127.0.0.1/32", "--cooldown", "5s", "--trusted-proxy", "::1/128"});
  ASSERT_TRUE(flags) << flags.error().message;
  EXPECT_EQ(flags->config.trusted_proxies, (std::vector<std::string>{"127.0.0.1/32", "::1/128"}));

  const TomlFile file("vin_gateway_config_trusted.toml",
                      "trusted_proxy = [\"10.0.0.0/8\", \"fd00::/8\"]\n");
  auto from_file = Parse({"--config", file.path()});
  ASSERT_TRUE(from_file) << from_file.error().message;
  EXPECT_EQ(from_file->config.trusted_proxies,
            (std::vector<std::string>{"10.0.0.0/8", "fd00::/8"}));
  // The command line's list replaces the file's.
  auto both = Parse({"--config", file.path(), "--trusted-proxy", "127.0.0.1/32"});
  ASSERT_TRUE(both) << both.error().message;
  EXPECT_EQ(both->config.trusted_proxies, (std::vector<std::string>{"127.0.0.1/32"}));

  const TomlFile one("vin_gateway_config_trusted_one.toml", "trusted_proxy = \"10.0.0.0/8\"\n");
  auto single = Parse({"--config", one.path()});
  ASSERT_TRUE(single) << single.error().message;
  EXPECT_EQ(single->config.trusted_proxies, (std::vector<std::string>{"10.0.0.0/8"}));

  const TomlFile bad("vin_gateway_config_trusted_bad.toml", "trusted_proxy = [8]\n");
  auto wrong_type = Parse({"--config", bad.path()});
  ASSERT_FALSE(wrong_type);
  EXPECT_EQ(wrong_type.error().field, "--trusted-proxy");
  EXPECT_NE(wrong_type.error().message.find("must be a list of strings"), std::string::npos)
      << wrong_type.error().message;

  GatewayConfig reread = flags->config;
  reread.trusted_proxies.pop_back();
  EXPECT_EQ(fusebox::gateway::SettingsNeedingRestart(flags->config, reread),
            (std::vector<std::string_view>{"--trusted-proxy"}));
  EXPECT_NE(Parse({"--help"})->help_text.find("--trusted-proxy"), std::string::npos);
}

TEST(ConfigTest, ClientIpv6PrefixIsReadFromFlagsOrTheFileWithinOneTo128) {
  auto flag = Parse({"--client-ipv6-prefix", "48"});
  ASSERT_TRUE(flag) << flag.error().message;
  EXPECT_EQ(flag->config.client_ipv6_prefix, 48U);
  const TomlFile file("vin_gateway_config_ipv6_prefix.toml", "client_ipv6_prefix = 128\n");
  auto from_file = Parse({"--config", file.path()});
  ASSERT_TRUE(from_file) << from_file.error().message;
  EXPECT_EQ(from_file->config.client_ipv6_prefix, 128U);
  for (const char* bad : {"0", "129", "99999999999"}) {
    auto parsed = Parse({"--client-ipv6-prefix", bad});
    ASSERT_FALSE(parsed) << bad;
    EXPECT_EQ(parsed.error().field, "--client-ipv6-prefix");
    EXPECT_NE(parsed.error().message.find("--client-ipv6-prefix must be in [1, 128], got"),
              std::string::npos)
        << parsed.error().message;
  }
  auto words = Parse({"--client-ipv6-prefix", "/64"});
  ASSERT_FALSE(words);
  EXPECT_EQ(words.error().field, "--client-ipv6-prefix");
}

TEST(ConfigTest, OutOfRangeFlagIsRefusedWithItsNameAndRange) {
  auto parsed = Parse({"--call-timeout", "0s"});
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().field, "--call-timeout");
  EXPECT_EQ(parsed.error().message, "--call-timeout must be in (0s, 86400s], got 0s");
}

TEST(ConfigTest, EveryNumericFlagNamesItsRange) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"--failure-threshold", "0"}, {"--half-open-max-probes", "0"}, {"--max-in-flight", "0"},
      {"--client-rate", "-1"},      {"--cache-max-entries", "0"},    {"--cooldown", "2d"},
      {"--cache-ttl", "0s"},        {"--listen", "127.0.0.1:70000"}, {"--threads", "0"}};
  for (const auto& [flag, value] : bad) {
    auto parsed = Parse({flag, value});
    ASSERT_FALSE(parsed) << flag;
    EXPECT_EQ(parsed.error().field, flag);
    EXPECT_NE(parsed.error().message.find(flag), std::string::npos) << parsed.error().message;
    EXPECT_TRUE(parsed.error().message.find(" must be in ") != std::string::npos ||
                parsed.error().message.find("cannot read") != std::string::npos)
        << parsed.error().message;
  }
}

TEST(ConfigTest, MaxInFlightTakesAutoWithItsBounds) {
  auto parsed =
      Parse({"--max-in-flight", "auto", "--max-in-flight-min", "4", "--max-in-flight-max", "64"});
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_TRUE(parsed->config.max_in_flight_auto);
  EXPECT_EQ(parsed->config.max_in_flight_min, 4U);
  EXPECT_EQ(parsed->config.upstream_concurrency_cap(), 64U);

  const TomlFile file("vin_gateway_config_auto.toml", "max_in_flight = \"auto\"\n");
  auto from_file = Parse({"--config", file.path()});
  ASSERT_TRUE(from_file) << from_file.error().message;
  EXPECT_TRUE(from_file->config.max_in_flight_auto);
  // A number on the command line replaces the file's auto.
  auto fixed = Parse({"--config", file.path(), "--max-in-flight", "8"});
  ASSERT_TRUE(fixed) << fixed.error().message;
  EXPECT_FALSE(fixed->config.max_in_flight_auto);
  EXPECT_EQ(fixed->config.upstream_concurrency_cap(), 8U);

  auto word = Parse({"--max-in-flight", "lots"});
  ASSERT_FALSE(word);
  EXPECT_EQ(word.error().field, "--max-in-flight");
  auto inverted =
      Parse({"--max-in-flight", "auto", "--max-in-flight-min", "10", "--max-in-flight-max", "5"});
  ASSERT_FALSE(inverted);
  EXPECT_EQ(inverted.error().field, "--max-in-flight-max");
  EXPECT_EQ(inverted.error().message,
            "--max-in-flight-max must be at least --max-in-flight-min (10), got 5");
}

// The lines of `text` that set a key (not comments, not blank).
std::vector<std::string> KeyLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#') {
      lines.push_back(line);
    }
  }
  return lines;
}

TEST(ConfigTest, PrintedDefaultsAreEverySettingCommentedOut) {
  auto parsed = Parse({"--print-config"});
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_TRUE(parsed->print_config);
  const std::string text = fusebox::gateway::RenderConfigFile(parsed->config);
  EXPECT_THAT(KeyLines(text), testing::IsEmpty()) << text;
  // Every flag of --help has its line, with its help, and a commented key to uncomment.
  auto help = Parse({"--help"});
  ASSERT_TRUE(help);
  std::istringstream lines(help->help_text);
  int flags = 0;
  for (std::string line; std::getline(lines, line);) {
    const auto at = line.find("--");
    if (at == std::string::npos || line.compare(0, at, std::string(at, ' ')) != 0) {
      continue;
    }
    std::string flag = line.substr(at, line.find_first_of(" ,=", at) - at);
    if (flag == "--help" || flag == "--version" || flag == "--config" || flag == "--check-config" ||
        flag == "--print-config") {
      continue;
    }
    ++flags;
    EXPECT_THAT(text, testing::HasSubstr("\n# " + flag)) << flag;
    std::string key = flag.substr(2);
    std::replace(key.begin(), key.end(), '-', '_');
    EXPECT_THAT(text, testing::HasSubstr("\n# " + key + " =")) << key;
  }
  EXPECT_GT(flags, 40);
  std::istringstream all(text);
  for (std::string line; std::getline(all, line);) {
    EXPECT_LE(line.size(), 100U) << line;
  }
}

TEST(ConfigTest, PrintedConfigReadsBackToTheSameSettings) {
  auto parsed = Parse({"--listen",
                       "[::1]:9090",
                       "--cache",
                       "sqlite:/var/lib/vin \"gateway\"\\cache.sqlite",
                       "--cache-ttl",
                       "36h",
                       "--trip",
                       "time_window",
                       "--window-size",
                       "60",
                       "--failure-rate-threshold",
                       "0.25",
                       "--slow-call-duration",
                       "1500ms",
                       "--inflight-slow-accounting=false",
                       "--probe-mode",
                       "passive",
                       "--max-in-flight",
                       "auto",
                       "--max-in-flight-max",
                       "64",
                       "--throttle",
                       "2.5",
                       "--client-burst",
                       "75",
                       "--log-format",
                       "json",
                       "--instance-id",
                       "gw-\"1\"",
                       "--trusted-proxy",
                       "10.0.0.0/8",
                       "--trusted-proxy",
                       "::1/128"});
  ASSERT_TRUE(parsed) << parsed.error().message;
  const std::string text = fusebox::gateway::RenderConfigFile(parsed->config);
  EXPECT_THAT(KeyLines(text),
              testing::IsSupersetOf(
                  {"listen = \"[::1]:9090\"", "trip = \"time_window\"", "window_size = 60",
                   "failure_rate_threshold = 0.25", "slow_call_duration = \"1500ms\"",
                   "inflight_slow_accounting = false", "max_in_flight = \"auto\"", "throttle = 2.5",
                   "trusted_proxy = [\"10.0.0.0/8\", \"::1/128\"]"}));
  EXPECT_EQ(KeyLines(text).size(), 16U) << text;

  const TomlFile file("vin_gateway_printed_config.toml", text);
  auto reread = Parse({"--check-config", file.path()});
  ASSERT_TRUE(reread) << reread.error().message;
  EXPECT_TRUE(reread->check_config);
  EXPECT_EQ(reread->config_path, file.path());
  EXPECT_EQ(reread->config.cache_uri, parsed->config.cache_uri);
  EXPECT_EQ(reread->config.instance_id, "gw-\"1\"");
  EXPECT_EQ(fusebox::gateway::RenderConfigFile(reread->config), text);
}

TEST(ConfigTest, CheckConfigRefusesABadFileWithItsKeyAndTakesNoSecondConfig) {
  const TomlFile file("vin_gateway_check_config.toml", "cooldown = \"0s\"\n");
  auto parsed = Parse({"--check-config", file.path()});
  ASSERT_FALSE(parsed);
  EXPECT_THAT(parsed.error().message, testing::HasSubstr("--cooldown"));
  auto both = Parse({"--check-config", file.path(), "--config", file.path()});
  ASSERT_FALSE(both);
  EXPECT_THAT(both.error().message, testing::HasSubstr("excludes"));
  auto missing = Parse({"--check-config", "/nonexistent/vin-gateway.toml"});
  ASSERT_FALSE(missing);
  EXPECT_THAT(missing.error().message, testing::HasSubstr("/nonexistent/vin-gateway.toml"));
}

TEST(ConfigTest, RedisPasswordComesFromTheUrlThenTheFileThenTheEnvironment) {
  const TomlFile file("vin_gateway_redis_password", "from-file\n");
  auto parsed = Parse({"--fleet", "redis://fleet@10.0.0.5", "--redis-password-file", file.path()});
  ASSERT_FALSE(parsed);  // USER without :PASSWORD is not the grammar
  parsed = Parse({"--fleet", "redis://[::1]:6380/2", "--cache", "redis://u:in%40url@cache:7000",
                  "--redis-password-file", file.path()});
  ASSERT_TRUE(parsed) << parsed.error().message;
  auto fleet =
      fusebox::gateway::RedisEndpointOf(parsed->config, "--fleet", parsed->config.fleet_url);
  ASSERT_TRUE(fleet) << fleet.error().message;
  EXPECT_EQ(fleet->host, "::1");
  EXPECT_EQ(fleet->port, 6380);
  EXPECT_EQ(fleet->password, "from-file");
  auto cache =
      fusebox::gateway::RedisEndpointOf(parsed->config, "--cache", parsed->config.cache_uri);
  ASSERT_TRUE(cache) << cache.error().message;
  EXPECT_EQ(cache->user, "u");
  EXPECT_EQ(cache->password, "in@url");

  ::setenv("FUSEBOX_REDIS_PASSWORD", "from-env", 1);
  auto no_file = Parse({"--fleet", "redis://127.0.0.1:6379"});
  ASSERT_TRUE(no_file) << no_file.error().message;
  auto from_env =
      fusebox::gateway::RedisEndpointOf(no_file->config, "--fleet", no_file->config.fleet_url);
  ::unsetenv("FUSEBOX_REDIS_PASSWORD");
  ASSERT_TRUE(from_env);
  EXPECT_EQ(from_env->password, "from-env");
}

// --redis-ca, --redis-cert and --redis-key must load at start-up; the error names the flag and
// the file. (Good files, and TLS itself: tests/vin_gateway/fleet_integration_test.cc.)
TEST(ConfigTest, RedisTlsFilesAreCheckedNamingTheFlag) {
  auto parsed = Parse({"--redis-ca", "/nonexistent/ca.pem"});
  ASSERT_FALSE(parsed);
  EXPECT_THAT(parsed.error().message,
              testing::HasSubstr("--redis-ca: CA file '/nonexistent/ca.pem'"));
  EXPECT_THAT(parsed.error().message, testing::HasSubstr("cannot be read"));
  const TomlFile not_pem("vin_gateway_redis_ca", "hello\n");
  parsed = Parse({"--redis-ca", not_pem.path()});
  ASSERT_FALSE(parsed);
  EXPECT_THAT(parsed.error().message, testing::HasSubstr("no usable certificate"));
  parsed = Parse({"--redis-cert", not_pem.path()});
  ASSERT_FALSE(parsed);
  EXPECT_THAT(parsed.error().message, testing::HasSubstr("--redis-cert"));
  EXPECT_THAT(parsed.error().message, testing::HasSubstr("needs --redis-key"));
  parsed = Parse({"--redis-key", not_pem.path()});
  ASSERT_FALSE(parsed);
  EXPECT_THAT(parsed.error().message, testing::HasSubstr("--redis-key"));
  parsed = Parse({"--redis-cert", not_pem.path(), "--redis-key", not_pem.path()});
  ASSERT_FALSE(parsed);
  EXPECT_THAT(parsed.error().message, testing::HasSubstr("--redis-cert: certificate file"));
  // rediss:// and redis+sentinel:// are Redis caches and fleets too.
  EXPECT_TRUE(Parse({"--cache", "rediss://cache:6380/1", "--fleet",
                     "redis+sentinel://s1:26379,s2:26379/primary"}));
}

TEST(ConfigTest, RedisPasswordFileIsCheckedAndNeverQuoted) {
  const TomlFile two_lines("vin_gateway_redis_password_2", "hunter2\nsecond\n");
  auto parsed = Parse({"--redis-password-file", two_lines.path()});
  ASSERT_FALSE(parsed);
  EXPECT_THAT(parsed.error().message, testing::HasSubstr("--redis-password-file"));
  EXPECT_THAT(parsed.error().message, testing::HasSubstr("one line"));
  EXPECT_EQ(parsed.error().message.find("hunter2"), std::string::npos);
  const TomlFile empty("vin_gateway_redis_password_3", "\n");
  parsed = Parse({"--redis-password-file", empty.path()});
  ASSERT_FALSE(parsed);
  EXPECT_THAT(parsed.error().message, testing::HasSubstr("is empty"));
  parsed = Parse({"--redis-password-file", "/nonexistent/password"});
  ASSERT_FALSE(parsed);
  EXPECT_THAT(parsed.error().message, testing::HasSubstr("cannot be opened"));
  parsed = Parse({"--redis-password-file", std::filesystem::temp_directory_path().string()});
  ASSERT_FALSE(parsed);
  EXPECT_THAT(parsed.error().message, testing::HasSubstr("not a regular file"));
  // A URL's password is not repeated by an error, nor by the printed settings.
  parsed = Parse({"--cache", "redis://u:hunter2@cache:99999"});
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().message.find("hunter2"), std::string::npos) << parsed.error().message;
  parsed = Parse({"--fleet", "redis://u:hunter2@fleet:6379"});
  ASSERT_TRUE(parsed) << parsed.error().message;
  const std::string printed = fusebox::gateway::RenderConfigFile(parsed->config);
  EXPECT_EQ(printed.find("hunter2"), std::string::npos);
  EXPECT_THAT(printed, testing::HasSubstr("fleet = \"redis://u:***@fleet:6379\""));
}

TEST(ConfigTest, InstanceIdIsAtMost128BytesWithoutSpaces) {
  EXPECT_TRUE(Parse({"--instance-id", std::string(128, 'a')}));
  auto long_id = Parse({"--instance-id", std::string(129, 'a')});
  ASSERT_FALSE(long_id);
  EXPECT_EQ(long_id.error().field, "--instance-id");
  EXPECT_THAT(long_id.error().message, testing::HasSubstr("at most 128 bytes, got 129"));
  EXPECT_FALSE(Parse({"--instance-id", "a b"}));
}

TEST(ConfigTest, FleetSecretFileHoldsOneLineOfSixteenBytesOrMore) {
  const TomlFile short_secret("vin_gateway_fleet_secret_short", "only-15-bytes!!\n");
  auto parsed = Parse({"--fleet-secret-file", short_secret.path()});
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().field, "--fleet-secret-file");
  EXPECT_THAT(parsed.error().message, testing::HasSubstr("at least 16"));
  EXPECT_EQ(parsed.error().message.find("only-15"), std::string::npos);
  const TomlFile good("vin_gateway_fleet_secret_good", "sixteen-bytes-ok\n");
  parsed = Parse({"--fleet", "redis://127.0.0.1", "--fleet-secret-file", good.path()});
  ASSERT_TRUE(parsed) << parsed.error().message;
  auto secret = fusebox::gateway::FleetSecret(parsed->config);
  ASSERT_TRUE(secret);
  EXPECT_EQ(*secret, "sixteen-bytes-ok");
  auto none = Parse({"--fleet", "redis://127.0.0.1"});
  ASSERT_TRUE(none);
  EXPECT_EQ(fusebox::gateway::FleetSecret(none->config).value(), "");
}

TEST(ConfigTest, VersionIsTheProjects) {
  auto parsed = Parse({"--version"});
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_TRUE(parsed->version);
  EXPECT_EQ(parsed->version_text, std::string("vin-gateway ") + fusebox::kVersion + "\n");
}

TEST(ConfigTest, ThrottleIsOffByDefaultAndTakesKFromOne) {
  auto defaults = Parse({});
  ASSERT_TRUE(defaults) << defaults.error().message;
  EXPECT_EQ(defaults->config.throttle, 0);
  auto on = Parse({"--throttle", "2", "--throttle-window", "10s"});
  ASSERT_TRUE(on) << on.error().message;
  EXPECT_EQ(on->config.throttle, 2);
  EXPECT_EQ(on->config.throttle_window, 10s);
  auto below_one = Parse({"--throttle", "0.5"});
  ASSERT_FALSE(below_one);
  EXPECT_EQ(below_one.error().message, "--throttle must be in 0 (off) or [1, 100], got 0.5");
  auto short_window = Parse({"--throttle-window", "10ms"});
  ASSERT_FALSE(short_window);
  EXPECT_EQ(short_window.error().field, "--throttle-window");
}

TEST(ConfigTest, MalformedValuesNameTheFlag) {
  auto duration = Parse({"--cooldown", "soon"});
  ASSERT_FALSE(duration);
  EXPECT_EQ(duration.error().field, "--cooldown");
  auto url = Parse({"--upstream-url", "ftp://example.com"});
  ASSERT_FALSE(url);
  EXPECT_EQ(url.error().field, "--upstream-url");
  auto cache = Parse({"--cache", "redis://x:port"});
  ASSERT_FALSE(cache);
  EXPECT_EQ(cache.error().field, "--cache");
  auto format = Parse({"--log-format", "xml"});
  ASSERT_FALSE(format);
  EXPECT_EQ(format.error().field, "--log-format");
  auto ca = Parse({"--upstream-ca", "/nonexistent/ca.pem"});
  ASSERT_FALSE(ca);
  EXPECT_EQ(ca.error().field, "--upstream-ca");
}

TEST(ConfigTest, BadFileValueNamesTheFlagAndTheFile) {
  const TomlFile file("vin_gateway_config_bad.toml", "max_in_flight = 0\n");
  auto parsed = Parse({"--config", file.path()});
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().field, "--max-in-flight");
}

TEST(ConfigTest, UnknownFileKeyIsRefused) {
  const TomlFile file("vin_gateway_config_unknown.toml", "colour = \"red\"\n");
  auto parsed = Parse({"--config", file.path()});
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().message.find("colour"), std::string::npos);
}

// A --config path that is not a file with something in it is refused with the reason, naming
// --config and the path: it once read as an empty file, and the gateway ran on the defaults.
void ExpectConfigFileRefused(const std::string& path, const std::string& reason) {
  auto parsed = Parse({"--config", path});
  ASSERT_FALSE(parsed) << path;
  EXPECT_EQ(parsed.error().field, "--config");
  EXPECT_EQ(parsed.error().message, "--config: '" + path + "' " + reason);
}

TEST(ConfigTest, ConfigPathThatIsADirectoryIsRefused) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "vin_gateway_config_dir.toml";
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(std::filesystem::create_directory(dir));
  ExpectConfigFileRefused(dir.string(), "is a directory, not a regular file");
  std::filesystem::remove(dir);
}

// Opened without O_NONBLOCK, a FIFO with no writer blocks the open for ever (before the fix this
// test hung: run it under ctest's timeout to see it fail). Refused at once now.
TEST(ConfigTest, ConfigPathThatIsAFifoIsRefusedWithoutBlocking) {
  const std::filesystem::path fifo =
      std::filesystem::temp_directory_path() / "vin_gateway_config_fifo.toml";
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ExpectConfigFileRefused(fifo.string(), "is a FIFO (named pipe), not a regular file");
  std::filesystem::remove(fifo);
}

TEST(ConfigTest, ConfigFileOverOneMibIsRefused) {
  // Valid TOML throughout (comments): refused for its size alone.
  std::string text;
  while (text.size() <= fusebox::gateway::kMaxConfigFileBytes) {
    text += "# a comment line that fills the file up past the cap of a config file\n";
  }
  const TomlFile big("vin_gateway_config_big.toml", text);
  ExpectConfigFileRefused(big.path(), fmt::format("is {} bytes, over the 1 MiB a config file may "
                                                  "hold",
                                                  text.size()));
  // At the cap exactly: read.
  const std::string setting = "cooldown = \"9s\"\n";
  const TomlFile at_cap(
      "vin_gateway_config_at_cap.toml",
      setting + text.substr(0, fusebox::gateway::kMaxConfigFileBytes - setting.size()));
  EXPECT_EQ(std::filesystem::file_size(at_cap.path()), fusebox::gateway::kMaxConfigFileBytes);
  auto parsed = Parse({"--config", at_cap.path()});
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->config.breaker.cooldown, 9s);
}

TEST(ConfigTest, EmptyConfigFileIsRefusedButCommentsAloneAreRead) {
  const std::string reason = "is empty (a file that sets nothing must hold at least a comment)";
  const TomlFile empty("vin_gateway_config_empty.toml", "");
  ExpectConfigFileRefused(empty.path(), reason);
  const TomlFile blank("vin_gateway_config_blank.toml", "\n  \t\n\n");
  ExpectConfigFileRefused(blank.path(), reason);
  const TomlFile comments("vin_gateway_config_comments.toml", "# every setting at its default\n");
  auto parsed = Parse({"--config", comments.path()});
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->config.breaker.failure_threshold, 3U);
}

TEST(ConfigTest, MissingConfigFileNamesTheReason) {
  ExpectConfigFileRefused("/nonexistent/vin-gateway.toml",
                          "cannot be opened: No such file or directory");
}

TEST(ConfigTest, HelpListsEveryFlag) {
  auto parsed = Parse({"--help"});
  ASSERT_TRUE(parsed);
  EXPECT_TRUE(parsed->help);
  for (const char* flag : {"--config",
                           "--listen",
                           "--upstream-url",
                           "--cache",
                           "--cache-ttl",
                           "--call-timeout",
                           "--cooldown",
                           "--failure-threshold",
                           "--half-open-probes",
                           "--max-in-flight",
                           "--client-rate",
                           "--client-ipv6-prefix",
                           "--cache-max-entries",
                           "--upstream-ca",
                           "--log-format",
                           "--policy",
                           "--window",
                           "--minimum-calls",
                           "--failure-rate",
                           "--slow-call-duration",
                           "--slow-call-rate",
                           "--count-in-flight-slow",
                           "--cooldown-growth",
                           "--max-cooldown",
                           "--cooldown-jitter",
                           "--probes-to-close"}) {
    EXPECT_NE(parsed->help_text.find(flag), std::string::npos) << flag;
  }
}

TEST(ConfigTest, BreakerDefaultsStayTheConsecutivePolicy) {
  auto parsed = Parse({});
  ASSERT_TRUE(parsed) << parsed.error().message;
  const GatewayConfig& c = parsed->config;
  EXPECT_EQ(c.breaker.trip, fusebox::TripPolicy::kConsecutive);
  EXPECT_EQ(c.breaker.half_open_successes, 1U);
  EXPECT_EQ(c.breaker.window_size, 100U);
  EXPECT_FALSE(c.window_size_given_as_duration);
  EXPECT_EQ(c.breaker.minimum_calls, 10U);
  EXPECT_EQ(c.breaker.failure_rate_threshold, 0.5);
  EXPECT_EQ(c.breaker.slow_call_duration, 3s);
  EXPECT_EQ(c.breaker.slow_call_rate_threshold, 1.0);
  EXPECT_TRUE(c.breaker.inflight_slow_accounting);
  EXPECT_EQ(c.breaker.probe_mode, fusebox::ProbeMode::kActive);
  EXPECT_EQ(c.breaker.probe_interval, 2s);
  EXPECT_EQ(c.breaker.probe_budget, 2s);
  EXPECT_EQ(c.breaker.cooldown_multiplier, 1.0);
  EXPECT_FALSE(c.breaker.cooldown_max.has_value());
  EXPECT_EQ(c.breaker.cooldown_jitter, 0.0);
  EXPECT_FALSE(c.breaker.batch_may_probe);
  const fusebox::CircuitBreakerConfig& b = c.BreakerConfig();
  EXPECT_EQ(b.effective_slow_call_duration(), 3s);
  EXPECT_EQ(b.effective_cooldown_max(), 5min);
}

TEST(ConfigTest, EveryBreakerFlagReachesTheBreaker) {
  auto parsed = Parse({"--trip",
                       "time_window",
                       "--window-size",
                       "30s",
                       "--minimum-calls",
                       "4",
                       "--failure-rate-threshold",
                       "0.25",
                       "--slow-call-duration",
                       "2s",
                       "--slow-call-rate-threshold",
                       "0.5",
                       "--inflight-slow-accounting",
                       "--cooldown-multiplier",
                       "2",
                       "--cooldown-max",
                       "2m",
                       "--cooldown-jitter",
                       "0.2",
                       "--half-open-max-probes",
                       "3",
                       "--half-open-successes",
                       "2",
                       "--batch-may-probe"});
  ASSERT_TRUE(parsed) << parsed.error().message;
  const fusebox::CircuitBreakerConfig b = parsed->config.BreakerConfig();
  EXPECT_EQ(b.trip, fusebox::TripPolicy::kTimeWindow);
  EXPECT_EQ(b.window_size, 30U);
  EXPECT_EQ(b.minimum_calls, 4U);
  EXPECT_EQ(b.failure_rate_threshold, 0.25);
  EXPECT_EQ(b.slow_call_duration, 2s);
  EXPECT_EQ(b.slow_call_rate_threshold, 0.5);
  EXPECT_TRUE(b.inflight_slow_accounting);
  EXPECT_EQ(b.cooldown_multiplier, 2.0);
  EXPECT_EQ(b.cooldown_max, 2min);
  EXPECT_EQ(b.cooldown_jitter, 0.2);
  EXPECT_EQ(b.half_open_max_probes, 3U);
  EXPECT_EQ(b.half_open_successes, 2U);
  EXPECT_TRUE(b.batch_may_probe);
  EXPECT_FALSE(b.Validate().has_value());

  auto count = Parse({"--trip", "count_window", "--window-size", "20", "--minimum-calls", "20"});
  ASSERT_TRUE(count) << count.error().message;
  EXPECT_EQ(count->config.BreakerConfig().trip, fusebox::TripPolicy::kCountWindow);
  EXPECT_EQ(count->config.BreakerConfig().window_size, 20U);

  // As in a scenario, a time window's size may be a number of seconds.
  auto seconds = Parse({"--trip", "time_window", "--window-size", "60"});
  ASSERT_TRUE(seconds) << seconds.error().message;
  EXPECT_EQ(seconds->config.BreakerConfig().window_size, 60U);
}

// The gateway's names before it took the library's: the same settings, on the command line and
// in the file.
TEST(ConfigTest, TheOldBreakerNamesAreStillRead) {
  auto old_flags =
      Parse({"--policy", "count_window", "--window", "50", "--failure-rate", "0.4",
             "--slow-call-rate", "0.6", "--count-in-flight-slow", "--half-open-probes", "2",
             "--probes-to-close", "2", "--cooldown-growth", "1.5", "--max-cooldown", "10m"});
  ASSERT_TRUE(old_flags) << old_flags.error().message;
  auto new_flags = Parse(
      {"--trip", "count_window", "--window-size", "50", "--failure-rate-threshold", "0.4",
       "--slow-call-rate-threshold", "0.6", "--inflight-slow-accounting", "--half-open-max-probes",
       "2", "--half-open-successes", "2", "--cooldown-multiplier", "1.5", "--cooldown-max", "10m"});
  ASSERT_TRUE(new_flags) << new_flags.error().message;
  EXPECT_EQ(old_flags->config.breaker, new_flags->config.breaker);
  EXPECT_NE(old_flags->config.breaker, GatewayConfig::DefaultBreaker());

  const TomlFile file("vin_gateway_config_old_keys.toml",
                      "policy = \"count_window\"\nwindow = 50\nfailure_rate = 0.4\n"
                      "slow_call_rate = 0.6\ncount_in_flight_slow = true\nhalf_open_probes = 2\n"
                      "probes_to_close = 2\ncooldown_growth = 1.5\nmax_cooldown = \"10m\"\n");
  auto old_keys = Parse({"--config", file.path()});
  ASSERT_TRUE(old_keys) << old_keys.error().message;
  EXPECT_EQ(old_keys->config.breaker, new_flags->config.breaker);
}

TEST(ConfigTest, EveryBreakerKeyIsReadFromTheFile) {
  const TomlFile file("vin_gateway_config_breaker.toml",
                      "trip = \"count_window\"\nwindow_size = 50\nminimum_calls = 5\n"
                      "failure_rate_threshold = 0.4\nslow_call_duration = \"1500ms\"\n"
                      "slow_call_rate_threshold = 0.6\ninflight_slow_accounting = true\n"
                      "cooldown_multiplier = 1.5\ncooldown_max = \"10m\"\n"
                      "cooldown_jitter = 0.1\nhalf_open_successes = 2\nhalf_open_max_probes = 2\n"
                      "batch_may_probe = true\n");
  auto parsed = Parse({"--config", file.path()});
  ASSERT_TRUE(parsed) << parsed.error().message;
  const GatewayConfig& c = parsed->config;
  EXPECT_EQ(parsed->config_path, file.path());
  EXPECT_EQ(c.breaker.trip, fusebox::TripPolicy::kCountWindow);
  EXPECT_EQ(c.breaker.window_size, 50U);
  EXPECT_EQ(c.breaker.minimum_calls, 5U);
  EXPECT_EQ(c.breaker.failure_rate_threshold, 0.4);
  EXPECT_EQ(c.breaker.slow_call_duration, 1500ms);
  EXPECT_EQ(c.breaker.slow_call_rate_threshold, 0.6);
  EXPECT_TRUE(c.breaker.inflight_slow_accounting);
  EXPECT_EQ(c.breaker.cooldown_multiplier, 1.5);
  EXPECT_EQ(c.breaker.cooldown_max, 10min);
  EXPECT_EQ(c.breaker.cooldown_jitter, 0.1);
  EXPECT_EQ(c.breaker.half_open_successes, 2U);
  EXPECT_TRUE(c.breaker.batch_may_probe);

  // A switch set in the file is turned off by the command line.
  auto off = Parse({"--config", file.path(), "--inflight-slow-accounting=false"});
  ASSERT_TRUE(off) << off.error().message;
  EXPECT_FALSE(off->config.breaker.inflight_slow_accounting);

  const TomlFile time_file("vin_gateway_config_time.toml",
                           "trip = \"time_window\"\nwindow_size = \"2m\"\n");
  auto time = Parse({"--config", time_file.path()});
  ASSERT_TRUE(time) << time.error().message;
  EXPECT_TRUE(time->config.window_size_given_as_duration);
  EXPECT_EQ(time->config.BreakerConfig().window_size, 120U);
}

// Every breaker setting of the library is a flag and a key here, under its name, with the
// library's range: the boundaries the table gives are accepted, one step past them refused.
TEST(ConfigTest, EveryBreakerSettingIsAFlagWithTheLibrarysRange) {
  for (const fusebox::BreakerSetting& s : fusebox::BreakerSettings()) {
    std::string flag = "--" + std::string(s.name);
    std::replace(flag.begin(), flag.end(), '_', '-');
    EXPECT_EQ(fusebox::gateway::FlagOfBreakerField(s.name), flag);
    if (s.check != nullptr || s.type == fusebox::SettingType::kBool ||
        s.type == fusebox::SettingType::kTripPolicy || s.type == fusebox::SettingType::kProbeMode) {
      // A range that depends on other settings (the cases above and below): a valid value reads.
      // (A switch: the opposite of the gateway's default.)
      const bool on = s.type == fusebox::SettingType::kBool &&
                      std::get<bool>(fusebox::GetSetting(GatewayConfig::DefaultBreaker(), s));
      const char* valid = s.type == fusebox::SettingType::kBool         ? (on ? "false" : "true")
                          : s.type == fusebox::SettingType::kTripPolicy ? "count_window"
                          : s.type == fusebox::SettingType::kProbeMode  ? "passive"
                          : s.type == fusebox::SettingType::kDuration   ? "6m"
                                                                        : "12";
      GatewayConfig config;
      EXPECT_FALSE(fusebox::gateway::ApplySetting(config, flag, valid)) << flag;
      EXPECT_NE(fusebox::GetSetting(config.breaker, s),
                fusebox::GetSetting(GatewayConfig::DefaultBreaker(), s))
          << flag;
      continue;
    }
    auto text = [&](double bound, int step) {
      if (s.type == fusebox::SettingType::kCount) {
        return fmt::format("{}", static_cast<std::int64_t>(bound) + step);
      }
      if (s.type == fusebox::SettingType::kDuration) {
        return fmt::format("{}us", static_cast<std::int64_t>(bound * 1e6) + step);
      }
      return fmt::format("{}", bound + step * 1e-9);
    };
    auto parsed = [&](const std::string& value) { return Parse({flag, value}); };
    EXPECT_TRUE(parsed(text(s.max, 0))) << flag << " at its max";
    auto above = parsed(text(s.max, 1));
    ASSERT_FALSE(above) << flag << " above its max";
    EXPECT_EQ(above.error().field, flag);
    EXPECT_EQ(above.error().message.rfind(flag + " must be in " + fusebox::RangeText(s), 0), 0U)
        << above.error().message;
    EXPECT_EQ(static_cast<bool>(parsed(text(s.min, 0))), !s.min_open) << flag << " at its min";
    if (s.min > 0) {
      EXPECT_FALSE(parsed(text(s.min, -1))) << flag << " below its min";
    }
  }
}

TEST(ConfigTest, BreakerValuesOutOfRangeNameTheFlagAndRange) {
  struct Case {
    std::vector<std::string> args;
    std::string flag;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--half-open-successes", "0"},
       "--half-open-successes",
       "--half-open-successes must be in [1, 10000], got 0"},
      {{"--failure-threshold", "1000001"},
       "--failure-threshold",
       "--failure-threshold must be in [1, 1000000], got 1000001"},
      {{"--trip", "count_window", "--window-size", "0"},
       "--window-size",
       "--window-size must be in [1, 1000000], got 0"},
      {{"--trip", "time_window", "--window-size", "2h"},
       "--window-size",
       "--window-size must be in [1, 3600] (seconds, time_window), got 7200"},
      {{"--trip", "time_window", "--window-size", "1500ms"},
       "--window-size",
       "--window-size must be whole seconds (the window is kept in one-second buckets), got "
       "1500ms"},
      {{"--minimum-calls", "0"},
       "--minimum-calls",
       "--minimum-calls must be in [1, 1000000], got 0"},
      {{"--failure-rate-threshold", "0"},
       "--failure-rate-threshold",
       "--failure-rate-threshold must be in (0, 1], got 0"},
      {{"--failure-rate-threshold", "1.5"},
       "--failure-rate-threshold",
       "--failure-rate-threshold must be in (0, 1], got 1.5"},
      {{"--slow-call-rate-threshold", "-0.1"},
       "--slow-call-rate-threshold",
       "--slow-call-rate-threshold must be in (0, 1], got -0.1"},
      {{"--slow-call-duration", "0s"},
       "--slow-call-duration",
       "--slow-call-duration must be in (0s, 86400s], got 0s"},
      {{"--cooldown-multiplier", "0.5"},
       "--cooldown-multiplier",
       "--cooldown-multiplier must be in [1, 100], got 0.5"},
      {{"--cooldown-multiplier", "101"},
       "--cooldown-multiplier",
       "--cooldown-multiplier must be in [1, 100], got 101"},
      {{"--cooldown-jitter", "2"},
       "--cooldown-jitter",
       "--cooldown-jitter must be in [0, 1], got 2"},
      {{"--cooldown-max", "2d"},
       "--cooldown-max",
       "--cooldown-max must be in [cooldown (20s), 86400s], got 172800s"},
  };
  for (const Case& c : cases) {
    auto parsed = Parse(c.args);
    ASSERT_FALSE(parsed) << c.args.front();
    EXPECT_EQ(parsed.error().field, c.flag);
    EXPECT_EQ(parsed.error().message, c.message);
  }
}

TEST(ConfigTest, BreakerCrossFieldErrorsNameTheFlag) {
  struct Case {
    std::vector<std::string> args;
    std::string flag;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--trip", "count_window", "--window-size", "20", "--minimum-calls", "21"},
       "--minimum-calls",
       "--minimum-calls must be in [1, window_size (20)] (count_window), got 21"},
      {{"--trip", "count_window", "--minimum-calls", "101"},
       "--minimum-calls",
       "--minimum-calls must be in [1, window_size (100)] (count_window), got 101"},
      {{"--trip", "count_window", "--window-size", "60s"},
       "--window-size",
       "--window-size must be a number of calls with trip = count_window, got the duration 1m"},
      {{"--cooldown", "10m", "--cooldown-max", "5m"},
       "--cooldown-max",
       "--cooldown-max must be in [cooldown (600s), 86400s], got 300s"},
  };
  for (const Case& c : cases) {
    auto parsed = Parse(c.args);
    ASSERT_FALSE(parsed) << c.args.front();
    EXPECT_EQ(parsed.error().field, c.flag);
    EXPECT_EQ(parsed.error().message, c.message);
  }
}

TEST(ConfigTest, MalformedBreakerValuesNameTheFlag) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"--trip", "sliding"},
      {"--window-size", "many"},
      {"--minimum-calls", "-1"},
      {"--failure-rate-threshold", "half"},
      {"--slow-call-duration", "slow"},
      {"--slow-call-rate-threshold", "1/2"},
      {"--cooldown-multiplier", "x2"},
      {"--cooldown-max", "forever"},
      {"--cooldown-jitter", "10%"},
      {"--half-open-successes", "two"},
      {"--inflight-slow-accounting=maybe", ""},
      {"--batch-may-probe=perhaps", ""}};
  for (const auto& [flag, value] : bad) {
    auto parsed = value.empty() ? Parse({flag}) : Parse({flag, value});
    ASSERT_FALSE(parsed) << flag;
    const std::string name = flag.substr(0, flag.find('='));
    EXPECT_EQ(parsed.error().field, name);
    EXPECT_NE(parsed.error().message.find(name), std::string::npos) << parsed.error().message;
  }
}

TEST(ConfigTest, BreakerKeysOfTheWrongTypeAreRefused) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"trip = 3\n", "--trip"},
      {"window_size = true\n", "--window-size"},
      {"minimum_calls = \"ten\"\n", "--minimum-calls"},
      {"failure_rate_threshold = \"half\"\n", "--failure-rate-threshold"},
      {"slow_call_duration = [1]\n", "--slow-call-duration"},
      {"slow_call_rate_threshold = true\n", "--slow-call-rate-threshold"},
      {"inflight_slow_accounting = \"yes\"\n", "--inflight-slow-accounting"},
      {"inflight_slow_accounting = 1\n", "--inflight-slow-accounting"},
      {"cooldown_multiplier = \"double\"\n", "--cooldown-multiplier"},
      {"cooldown_max = 1.5e12\n", "--cooldown-max"},
      {"cooldown_jitter = \"some\"\n", "--cooldown-jitter"},
      {"half_open_successes = 1.5\n", "--half-open-successes"},
      {"policy = 3\n", "--trip"}};
  for (const auto& [text, flag] : bad) {
    const TomlFile file("vin_gateway_config_wrong_type.toml", text);
    auto parsed = Parse({"--config", file.path()});
    ASSERT_FALSE(parsed) << text;
    EXPECT_EQ(parsed.error().field, flag) << text << parsed.error().message;
    EXPECT_NE(parsed.error().message.find(flag), std::string::npos) << parsed.error().message;
  }
}

TEST(ConfigTest, BreakerErrorsMapToFlags) {
  EXPECT_EQ(fusebox::gateway::FlagOfBreakerField("cooldown_multiplier"), "--cooldown-multiplier");
  EXPECT_EQ(fusebox::gateway::FlagOfBreakerField("half_open_successes"), "--half-open-successes");
  EXPECT_EQ(fusebox::gateway::FlagOfBreakerField("window_size"), "--window-size");
  EXPECT_EQ(fusebox::gateway::FlagOfBreakerField("no_such_field"), "no_such_field");
}

TEST(ConfigTest, OnlyNonBreakerChangesNeedARestart) {
  GatewayConfig running;
  GatewayConfig reread = running;
  reread.breaker.cooldown = 5s;
  reread.breaker.trip = fusebox::TripPolicy::kTimeWindow;
  reread.breaker.window_size = 30;
  EXPECT_TRUE(fusebox::gateway::SettingsNeedingRestart(running, reread).empty());
  reread.listen_port = 9999;
  reread.max_in_flight = 4;
  const std::vector<std::string_view> restart =
      fusebox::gateway::SettingsNeedingRestart(running, reread);
  ASSERT_EQ(restart.size(), 2U);
  EXPECT_EQ(restart[0], "--listen");
  EXPECT_EQ(restart[1], "--max-in-flight");
}

TEST(DurationTest, ParsesAndFormatsUnits) {
  EXPECT_EQ(fusebox::gateway::ParseDuration("500ms"), 500ms);
  EXPECT_EQ(fusebox::gateway::ParseDuration("7"), 7s);
  EXPECT_EQ(fusebox::gateway::ParseDuration("1.5s"), 1500ms);
  EXPECT_EQ(fusebox::gateway::ParseDuration("30d"), std::chrono::hours(720));
  EXPECT_EQ(fusebox::gateway::ParseDuration("2m30s"), 150s);
  EXPECT_EQ(fusebox::gateway::ParseDuration("1h30m"), std::chrono::minutes(90));
  EXPECT_EQ(fusebox::gateway::ParseDuration("30s2m"), std::nullopt);
  EXPECT_EQ(fusebox::gateway::ParseDuration("7 s"), std::nullopt);
  EXPECT_EQ(fusebox::gateway::ParseDuration("-1s"), std::nullopt);
  EXPECT_EQ(fusebox::gateway::FormatDuration(std::chrono::hours(720)), "30d");
  EXPECT_EQ(fusebox::gateway::FormatDuration(1500ms), "1500ms");
}

// Every duration the grammar returns is written so that it reads back the same: a value with
// microseconds ("1.184467s" is 1184467us) once came out as "1184467000ns", which the grammar
// refuses (found by the config fuzzer).
TEST(DurationTest, FormatReadsBackForEveryParsedDuration) {
  for (const char* text : {"1.184467440737095516165s", "1.5ms", "0.000001s", "7us", "90s", "1.25m",
                           "36h", "2.000001s", "1000000000"}) {
    const auto parsed = fusebox::gateway::ParseDuration(text);
    ASSERT_TRUE(parsed.has_value()) << text;
    const std::string formatted = fusebox::gateway::FormatDuration(*parsed);
    EXPECT_EQ(fusebox::gateway::ParseDuration(formatted), parsed) << text << " -> " << formatted;
  }
  EXPECT_EQ(fusebox::gateway::FormatDuration(1184467us), "1184467us");
  EXPECT_EQ(fusebox::gateway::FormatDuration(std::chrono::nanoseconds(1'500)), "0.000001500s");
  EXPECT_EQ(fusebox::gateway::ParseDuration("0.000001500s"), 2us);
}

}  // namespace

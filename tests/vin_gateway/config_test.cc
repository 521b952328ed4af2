// Command line, TOML file and validation: defaults, precedence, and errors that name the flag and
// its valid range.
#include "config/config.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace {

using namespace std::chrono_literals;
using vin_gateway::GatewayConfig;
using vin_gateway::ParseCommandLine;

fusebox::Result<vin_gateway::CommandLine, fusebox::ConfigError> Parse(
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
  EXPECT_EQ(c.call_timeout, 7s);
  EXPECT_EQ(c.cooldown, 20s);
  EXPECT_EQ(c.failure_threshold, 3U);
  EXPECT_EQ(c.half_open_probes, 1U);
  EXPECT_EQ(c.max_in_flight, 16U);
  EXPECT_EQ(c.client_rate, 20);
  EXPECT_EQ(c.effective_client_burst(), 50);  // one whole batch, more than 2 x the rate
  EXPECT_EQ(c.client_ipv6_prefix, 64U);
  EXPECT_EQ(c.cache_max_entries, 1'000'000U);
  EXPECT_EQ(c.log_format, vin_gateway::LogFormat::kText);
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
  EXPECT_EQ(c.call_timeout, 1500ms);
  EXPECT_EQ(c.cooldown, 2s);
  EXPECT_EQ(c.failure_threshold, 5U);
  EXPECT_EQ(c.half_open_probes, 2U);
  EXPECT_EQ(c.max_in_flight, 64U);
  EXPECT_EQ(c.client_rate, 0);
  EXPECT_EQ(c.cache_max_entries, 10U);
  EXPECT_EQ(c.log_format, vin_gateway::LogFormat::kJson);
}

TEST(ConfigTest, FlagsOverrideTheFileWhichOverridesDefaults) {
  const TomlFile file("vin_gateway_config_test.toml",
                      "cooldown = \"5s\"\nfailure_threshold = 4\ncache = \"memory\"\n");
  auto parsed = Parse({"--config", file.path(), "--cooldown", "9s"});
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->config.cooldown, 9s);
  EXPECT_EQ(parsed->config.failure_threshold, 4U);
  EXPECT_EQ(parsed->config.cache_uri, "memory");
  EXPECT_EQ(parsed->config.call_timeout, 7s);
}

// The cooldown a scenario tunes ("2m30s") reads the same here, in the file and as a flag.
TEST(ConfigTest, CompoundDurationsAreReadFromTheFileAndFlags) {
  const TomlFile file("vin_gateway_config_test.toml", "cooldown = \"2m30s\"\n");
  auto parsed = Parse({"--config", file.path(), "--cache-ttl", "1d12h"});
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->config.cooldown, 150s);
  EXPECT_EQ(parsed->config.cache_ttl, std::chrono::hours(36));
}

TEST(ConfigTest, TheLastOfARepeatedFlagWins) {
  auto parsed = Parse({"--cooldown", "5s", "--cooldown", "6s"});
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->config.cooldown, 6s);
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
  EXPECT_EQ(vin_gateway::SettingsNeedingRestart(flags->config, reread),
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
  EXPECT_EQ(parsed.error().message, "--call-timeout must be in [1ms, 10m], got 0s");
}

TEST(ConfigTest, EveryNumericFlagNamesItsRange) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"--failure-threshold", "0"}, {"--half-open-probes", "0"},     {"--max-in-flight", "0"},
      {"--client-rate", "-1"},      {"--cache-max-entries", "0"},    {"--cooldown", "2d"},
      {"--cache-ttl", "0s"},        {"--listen", "127.0.0.1:70000"}, {"--threads", "0"}};
  for (const auto& [flag, value] : bad) {
    auto parsed = Parse({flag, value});
    ASSERT_FALSE(parsed) << flag;
    EXPECT_EQ(parsed.error().field, flag);
    EXPECT_NE(parsed.error().message.find(flag), std::string::npos) << parsed.error().message;
    EXPECT_TRUE(parsed.error().message.find('[') != std::string::npos ||
                parsed.error().message.find("cannot read") != std::string::npos)
        << parsed.error().message;
  }
}

TEST(ConfigTest, MalformedValuesNameTheFlag) {
  auto duration = Parse({"--cooldown", "soon"});
  ASSERT_FALSE(duration);
  EXPECT_EQ(duration.error().field, "--cooldown");
  auto url = Parse({"--upstream-url", "ftp://example.com"});
  ASSERT_FALSE(url);
  EXPECT_EQ(url.error().field, "--upstream-url");
  auto cache = Parse({"--cache", "redis://x"});
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
  while (text.size() <= vin_gateway::kMaxConfigFileBytes) {
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
      setting + text.substr(0, vin_gateway::kMaxConfigFileBytes - setting.size()));
  EXPECT_EQ(std::filesystem::file_size(at_cap.path()), vin_gateway::kMaxConfigFileBytes);
  auto parsed = Parse({"--config", at_cap.path()});
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->config.cooldown, 9s);
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
  EXPECT_EQ(parsed->config.failure_threshold, 3U);
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
  EXPECT_EQ(c.policy, fusebox::TripPolicy::kConsecutive);
  EXPECT_EQ(c.probes_to_close, 1U);
  EXPECT_FALSE(c.window_calls.has_value());
  EXPECT_FALSE(c.window_duration.has_value());
  EXPECT_EQ(c.minimum_calls, 10U);
  EXPECT_EQ(c.failure_rate, 0.5);
  EXPECT_FALSE(c.slow_call_duration.has_value());
  EXPECT_EQ(c.slow_call_rate, 1.0);
  EXPECT_FALSE(c.count_in_flight_slow);
  EXPECT_EQ(c.cooldown_growth, 1.0);
  EXPECT_FALSE(c.max_cooldown.has_value());
  EXPECT_EQ(c.cooldown_jitter, 0.0);
  const fusebox::CircuitBreakerConfig b = c.BreakerConfig();
  EXPECT_EQ(b.window_size, 100U);
  EXPECT_EQ(b.effective_slow_call_duration(), 7s);
  EXPECT_EQ(b.effective_cooldown_max(), 5min);
  EXPECT_FALSE(b.inflight_slow_accounting);
}

TEST(ConfigTest, EveryBreakerFlagReachesTheBreaker) {
  auto parsed = Parse({"--policy",
                       "time_window",
                       "--window",
                       "30s",
                       "--minimum-calls",
                       "4",
                       "--failure-rate",
                       "0.25",
                       "--slow-call-duration",
                       "2s",
                       "--slow-call-rate",
                       "0.5",
                       "--count-in-flight-slow",
                       "--cooldown-growth",
                       "2",
                       "--max-cooldown",
                       "2m",
                       "--cooldown-jitter",
                       "0.2",
                       "--half-open-probes",
                       "3",
                       "--probes-to-close",
                       "2"});
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
  EXPECT_FALSE(b.batch_may_probe);
  EXPECT_FALSE(b.Validate().has_value());

  auto count = Parse({"--policy", "count_window", "--window", "20", "--minimum-calls", "20"});
  ASSERT_TRUE(count) << count.error().message;
  EXPECT_EQ(count->config.BreakerConfig().trip, fusebox::TripPolicy::kCountWindow);
  EXPECT_EQ(count->config.BreakerConfig().window_size, 20U);
}

TEST(ConfigTest, EveryBreakerKeyIsReadFromTheFile) {
  const TomlFile file("vin_gateway_config_breaker.toml",
                      "policy = \"count_window\"\nwindow = 50\nminimum_calls = 5\n"
                      "failure_rate = 0.4\nslow_call_duration = \"1500ms\"\n"
                      "slow_call_rate = 0.6\ncount_in_flight_slow = true\n"
                      "cooldown_growth = 1.5\nmax_cooldown = \"10m\"\n"
                      "cooldown_jitter = 0.1\nprobes_to_close = 2\nhalf_open_probes = 2\n");
  auto parsed = Parse({"--config", file.path()});
  ASSERT_TRUE(parsed) << parsed.error().message;
  const GatewayConfig& c = parsed->config;
  EXPECT_EQ(parsed->config_path, file.path());
  EXPECT_EQ(c.policy, fusebox::TripPolicy::kCountWindow);
  EXPECT_EQ(c.window_calls, 50U);
  EXPECT_EQ(c.minimum_calls, 5U);
  EXPECT_EQ(c.failure_rate, 0.4);
  EXPECT_EQ(c.slow_call_duration, 1500ms);
  EXPECT_EQ(c.slow_call_rate, 0.6);
  EXPECT_TRUE(c.count_in_flight_slow);
  EXPECT_EQ(c.cooldown_growth, 1.5);
  EXPECT_EQ(c.max_cooldown, 10min);
  EXPECT_EQ(c.cooldown_jitter, 0.1);
  EXPECT_EQ(c.probes_to_close, 2U);

  // A switch set in the file is turned off by the command line.
  auto off = Parse({"--config", file.path(), "--count-in-flight-slow=false"});
  ASSERT_TRUE(off) << off.error().message;
  EXPECT_FALSE(off->config.count_in_flight_slow);

  const TomlFile time_file("vin_gateway_config_time.toml",
                           "policy = \"time_window\"\nwindow = \"2m\"\n");
  auto time = Parse({"--config", time_file.path()});
  ASSERT_TRUE(time) << time.error().message;
  EXPECT_EQ(time->config.window_duration, 2min);
  EXPECT_EQ(time->config.BreakerConfig().window_size, 120U);
}

TEST(ConfigTest, BreakerValuesOutOfRangeNameTheFlagAndRange) {
  struct Case {
    std::vector<std::string> args;
    std::string flag;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--probes-to-close", "0"},
       "--probes-to-close",
       "--probes-to-close must be in [1, 1000], got 0"},
      {{"--policy", "count_window", "--window", "0"},
       "--window",
       "--window must be in [1, 1000000], got 0"},
      {{"--policy", "time_window", "--window", "2h"},
       "--window",
       "--window must be in [1s, 1h], got 2h"},
      {{"--policy", "time_window", "--window", "1500ms"},
       "--window",
       "--window must be whole seconds (the window is kept in one-second buckets), got 1500ms"},
      {{"--minimum-calls", "0"},
       "--minimum-calls",
       "--minimum-calls must be in [1, 1000000], got 0"},
      {{"--failure-rate", "0"}, "--failure-rate", "--failure-rate must be in (0, 1], got 0"},
      {{"--failure-rate", "1.5"}, "--failure-rate", "--failure-rate must be in (0, 1], got 1.5"},
      {{"--slow-call-rate", "-0.1"},
       "--slow-call-rate",
       "--slow-call-rate must be in (0, 1], got -0.1"},
      {{"--slow-call-duration", "0s"},
       "--slow-call-duration",
       "--slow-call-duration must be in [1ms, 1d], got 0s"},
      {{"--cooldown-growth", "0.5"},
       "--cooldown-growth",
       "--cooldown-growth must be in [1, 100], got 0.5"},
      {{"--cooldown-growth", "101"},
       "--cooldown-growth",
       "--cooldown-growth must be in [1, 100], got 101"},
      {{"--cooldown-jitter", "2"},
       "--cooldown-jitter",
       "--cooldown-jitter must be in [0, 1], got 2"},
      {{"--max-cooldown", "2d"},
       "--max-cooldown",
       "--max-cooldown must be in [--cooldown (20s), 1d], got 2d"},
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
      {{"--policy", "count_window", "--window", "20", "--minimum-calls", "21"},
       "--minimum-calls",
       "--minimum-calls must be in [1, --window (20)] with --policy count_window, got 21"},
      {{"--policy", "count_window", "--minimum-calls", "101"},
       "--minimum-calls",
       "--minimum-calls must be in [1, --window (100)] with --policy count_window, got 101"},
      {{"--policy", "count_window", "--window", "60s"},
       "--window",
       "--window must be a number of calls with --policy count_window, got the duration 1m"},
      {{"--policy", "time_window", "--window", "60"},
       "--window",
       "--window must be a duration such as 60s with --policy time_window, got the number of "
       "calls 60"},
      {{"--count-in-flight-slow"},
       "--count-in-flight-slow",
       "--count-in-flight-slow needs --policy count_window or time_window (it feeds the "
       "slow-call rate), got --policy consecutive"},
      {{"--cooldown", "10m", "--max-cooldown", "5m"},
       "--max-cooldown",
       "--max-cooldown must be in [--cooldown (10m), 1d], got 5m"},
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
      {"--policy", "sliding"},
      {"--window", "many"},
      {"--minimum-calls", "-1"},
      {"--failure-rate", "half"},
      {"--slow-call-duration", "slow"},
      {"--slow-call-rate", "1/2"},
      {"--cooldown-growth", "x2"},
      {"--max-cooldown", "forever"},
      {"--cooldown-jitter", "10%"},
      {"--probes-to-close", "two"},
      {"--count-in-flight-slow=maybe", ""}};
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
      {"policy = 3\n", "--policy"},
      {"window = true\n", "--window"},
      {"minimum_calls = \"ten\"\n", "--minimum-calls"},
      {"failure_rate = \"half\"\n", "--failure-rate"},
      {"slow_call_duration = [1]\n", "--slow-call-duration"},
      {"slow_call_rate = true\n", "--slow-call-rate"},
      {"count_in_flight_slow = \"yes\"\n", "--count-in-flight-slow"},
      {"count_in_flight_slow = 1\n", "--count-in-flight-slow"},
      {"cooldown_growth = \"double\"\n", "--cooldown-growth"},
      {"max_cooldown = 1.5e12\n", "--max-cooldown"},
      {"cooldown_jitter = \"some\"\n", "--cooldown-jitter"},
      {"probes_to_close = 1.5\n", "--probes-to-close"}};
  for (const auto& [text, flag] : bad) {
    const TomlFile file("vin_gateway_config_wrong_type.toml", text);
    auto parsed = Parse({"--config", file.path()});
    ASSERT_FALSE(parsed) << text;
    EXPECT_EQ(parsed.error().field, flag) << text << parsed.error().message;
    EXPECT_NE(parsed.error().message.find(flag), std::string::npos) << parsed.error().message;
  }
}

TEST(ConfigTest, BreakerErrorsMapToFlags) {
  EXPECT_EQ(vin_gateway::FlagOfBreakerField("cooldown_multiplier"), "--cooldown-growth");
  EXPECT_EQ(vin_gateway::FlagOfBreakerField("half_open_successes"), "--probes-to-close");
  EXPECT_EQ(vin_gateway::FlagOfBreakerField("inflight_slow_accounting"), "--count-in-flight-slow");
  EXPECT_EQ(vin_gateway::FlagOfBreakerField("window_size"), "--window");
  EXPECT_EQ(vin_gateway::FlagOfBreakerField("no_such_field"), "no_such_field");
}

TEST(ConfigTest, OnlyNonBreakerChangesNeedARestart) {
  GatewayConfig running;
  GatewayConfig reread = running;
  reread.cooldown = 5s;
  reread.policy = fusebox::TripPolicy::kTimeWindow;
  reread.window_duration = 30s;
  EXPECT_TRUE(vin_gateway::SettingsNeedingRestart(running, reread).empty());
  reread.listen_port = 9999;
  reread.max_in_flight = 4;
  const std::vector<std::string_view> restart =
      vin_gateway::SettingsNeedingRestart(running, reread);
  ASSERT_EQ(restart.size(), 2U);
  EXPECT_EQ(restart[0], "--listen");
  EXPECT_EQ(restart[1], "--max-in-flight");
}

TEST(DurationTest, ParsesAndFormatsUnits) {
  EXPECT_EQ(vin_gateway::ParseDuration("500ms"), 500ms);
  EXPECT_EQ(vin_gateway::ParseDuration("7"), 7s);
  EXPECT_EQ(vin_gateway::ParseDuration("1.5s"), 1500ms);
  EXPECT_EQ(vin_gateway::ParseDuration("30d"), std::chrono::hours(720));
  EXPECT_EQ(vin_gateway::ParseDuration("2m30s"), 150s);
  EXPECT_EQ(vin_gateway::ParseDuration("1h30m"), std::chrono::minutes(90));
  EXPECT_EQ(vin_gateway::ParseDuration("30s2m"), std::nullopt);
  EXPECT_EQ(vin_gateway::ParseDuration("7 s"), std::nullopt);
  EXPECT_EQ(vin_gateway::ParseDuration("-1s"), std::nullopt);
  EXPECT_EQ(vin_gateway::FormatDuration(std::chrono::hours(720)), "30d");
  EXPECT_EQ(vin_gateway::FormatDuration(1500ms), "1500ms");
}

// Every duration the grammar returns is written so that it reads back the same: a value with
// microseconds ("1.184467s" is 1184467us) once came out as "1184467000ns", which the grammar
// refuses (found by the config fuzzer).
TEST(DurationTest, FormatReadsBackForEveryParsedDuration) {
  for (const char* text : {"1.184467440737095516165s", "1.5ms", "0.000001s", "7us", "90s", "1.25m",
                           "36h", "2.000001s", "1000000000"}) {
    const auto parsed = vin_gateway::ParseDuration(text);
    ASSERT_TRUE(parsed.has_value()) << text;
    const std::string formatted = vin_gateway::FormatDuration(*parsed);
    EXPECT_EQ(vin_gateway::ParseDuration(formatted), parsed) << text << " -> " << formatted;
  }
  EXPECT_EQ(vin_gateway::FormatDuration(1184467us), "1184467us");
  EXPECT_EQ(vin_gateway::FormatDuration(std::chrono::nanoseconds(1'500)), "0.000001500s");
  EXPECT_EQ(vin_gateway::ParseDuration("0.000001500s"), 2us);
}

}  // namespace

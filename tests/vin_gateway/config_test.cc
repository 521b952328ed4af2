// Command line, TOML file and validation: defaults, precedence, and errors that name the flag and
// its valid range.
#include "config/config.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

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
  EXPECT_EQ(c.effective_client_burst(), 40);
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

TEST(ConfigTest, TheLastOfARepeatedFlagWins) {
  auto parsed = Parse({"--cooldown", "5s", "--cooldown", "6s"});
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->config.cooldown, 6s);
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

TEST(ConfigTest, HelpListsEveryFlag) {
  auto parsed = Parse({"--help"});
  ASSERT_TRUE(parsed);
  EXPECT_TRUE(parsed->help);
  for (const char* flag :
       {"--config", "--listen", "--upstream-url", "--cache", "--cache-ttl", "--call-timeout",
        "--cooldown", "--failure-threshold", "--half-open-probes", "--max-in-flight",
        "--client-rate", "--cache-max-entries", "--upstream-ca", "--log-format"}) {
    EXPECT_NE(parsed->help_text.find(flag), std::string::npos) << flag;
  }
}

TEST(DurationTest, ParsesAndFormatsUnits) {
  EXPECT_EQ(vin_gateway::ParseDuration("500ms"), 500ms);
  EXPECT_EQ(vin_gateway::ParseDuration("7"), 7s);
  EXPECT_EQ(vin_gateway::ParseDuration("1.5s"), 1500ms);
  EXPECT_EQ(vin_gateway::ParseDuration("30d"), std::chrono::hours(720));
  EXPECT_EQ(vin_gateway::ParseDuration("7 s"), std::nullopt);
  EXPECT_EQ(vin_gateway::ParseDuration("-1s"), std::nullopt);
  EXPECT_EQ(vin_gateway::FormatDuration(std::chrono::hours(720)), "30d");
  EXPECT_EQ(vin_gateway::FormatDuration(1500ms), "1500ms");
}

}  // namespace

// fusebox-sim and vin-gateway speak of the breaker in one vocabulary, the library's table
// (fusebox/breaker_settings.h): a [breaker] table tuned in a scenario, pasted into the gateway's
// config file, configures the same breaker, and the gateway's breaker keys pasted into a
// scenario read the same.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "config/config.h"
#include "fusebox/breaker_settings.h"
#include "scenario.h"

namespace {

namespace sim = fusebox::sim;

// Every setting of the library, each away from the library's and the gateway's defaults.
constexpr const char* kBreakerTable = R"(
trip = "count_window"
failure_threshold = 4
window_size = 50
minimum_calls = 20
failure_rate_threshold = 0.4
slow_call_duration = "1500ms"
slow_call_rate_threshold = 0.6
call_timeout = "2s"
cooldown = "2m30s"
half_open_max_probes = 2
half_open_successes = 2
batch_may_probe = true
inflight_slow_accounting = true
cooldown_multiplier = 2.0
cooldown_max = "10m"
cooldown_jitter = 0.1
recovery_ramp = "30s"
recovery_ramp_start = 0.2
probe_mode = "active"
probe_interval = "3s"
probe_interval_max = "30s"
probe_budget = "1500ms"
)";

fusebox::CircuitBreakerConfig FromScenario(const std::string& breaker_table) {
  auto file = sim::LoadScenarioString("[breaker]\n" + breaker_table + "[traffic]\nrate = 1\n",
                                      "paste.toml");
  EXPECT_TRUE(file) << file.error().ToString();
  return file ? file->base().breaker : fusebox::CircuitBreakerConfig{};
}

fusebox::CircuitBreakerConfig FromGatewayConfig(const std::string& text) {
  const std::filesystem::path path =
      std::filesystem::path(::testing::TempDir()) / "breaker_paste_test.toml";
  std::ofstream(path) << text;
  auto parsed = fusebox::gateway::ParseCommandLine({"vin-gateway", "--config", path.string()});
  std::filesystem::remove(path);
  EXPECT_TRUE(parsed) << parsed.error().message;
  return parsed ? parsed->config.BreakerConfig() : fusebox::CircuitBreakerConfig{};
}

TEST(BreakerPasteTest, TheTableNamesEverySettingOfTheLibrary) {
  const std::string table = kBreakerTable;
  for (const fusebox::BreakerSetting& s : fusebox::BreakerSettings()) {
    std::string line = "\n";  // (built by appends: gcc 12 -O3 misreads "\n" + name as overlapping)
    line.append(s.name).append(" = ");
    EXPECT_NE(table.find(line), std::string::npos) << s.name;
  }
}

TEST(BreakerPasteTest, AScenariosBreakerTableIsAGatewayConfig) {
  const fusebox::CircuitBreakerConfig tuned = FromScenario(kBreakerTable);
  const fusebox::CircuitBreakerConfig deployed = FromGatewayConfig(kBreakerTable);
  EXPECT_EQ(tuned, deployed);
  EXPECT_NE(tuned, fusebox::CircuitBreakerConfig{});
  EXPECT_EQ(tuned.cooldown, std::chrono::seconds(150));
  EXPECT_EQ(DescribeChanges(tuned, deployed), std::vector<std::string>{});
}

}  // namespace

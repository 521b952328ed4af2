// The table of breaker settings: it covers every field, its ranges are the ones Validate()
// enforces, its defaults are the config's, and DescribeChanges speaks its names.
#include "fusebox/breaker_settings.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace fusebox {
namespace {

using std::chrono::seconds;

// A value of the setting's type that differs from `config`'s and stays valid where possible.
SettingValue Another(const BreakerSetting& s, const CircuitBreakerConfig& config) {
  switch (s.type) {
    case SettingType::kTripPolicy:
      return TripPolicy::kCountWindow;
    case SettingType::kCount:
      return std::uint32_t{7};
    case SettingType::kNumber:
      return std::get<double>(GetSetting(config, s)) == 1.0 ? 0.75 : 1.0;
    case SettingType::kDuration:
      // Within call_timeout for the probe budget, past the cooldown for the caps.
      return s.name == "probe_budget" ? Duration(std::chrono::seconds(5))
                                      : Duration(std::chrono::minutes(6));
    case SettingType::kBool:
      return !std::get<bool>(GetSetting(config, s));
    case SettingType::kProbeMode:
      return ProbeMode::kActive;
  }
  return std::monostate{};
}

// A value of the setting's type `steps` units away from `bound` (seconds for a duration).
SettingValue At(const BreakerSetting& s, double bound, double nudge) {
  switch (s.type) {
    case SettingType::kCount:
      return static_cast<std::uint32_t>(bound + nudge);
    case SettingType::kNumber:
      return bound + nudge * 1e-9;
    case SettingType::kDuration:
      return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(bound)) +
             Duration(static_cast<Duration::rep>(nudge));
    default:
      return std::monostate{};
  }
}

TEST(BreakerSettingsTest, NameEveryFieldOnceAndSetOnlyTheirOwn) {
  std::set<std::string_view> names;
  const CircuitBreakerConfig defaults;
  for (const BreakerSetting& s : BreakerSettings()) {
    EXPECT_TRUE(names.insert(s.name).second) << s.name << " twice";
    EXPECT_EQ(FindBreakerSetting(s.name), &s);
    CircuitBreakerConfig changed = defaults;
    const SettingValue value = Another(s, defaults);
    ASSERT_TRUE(SetSetting(changed, s, value)) << s.name;
    EXPECT_EQ(GetSetting(changed, s), value) << s.name;
    // Exactly one line of DescribeChanges, naming this setting: it touched its own field only.
    const std::vector<std::string> changes = DescribeChanges(defaults, changed);
    ASSERT_EQ(changes.size(), 1U) << s.name;
    EXPECT_EQ(changes[0].substr(0, s.name.size() + 2), std::string(s.name) + ": ");
  }
  // Every field: a config differing in all of them describes as many changes as there are rows.
  CircuitBreakerConfig all = defaults;
  for (const BreakerSetting& s : BreakerSettings()) {
    ASSERT_TRUE(SetSetting(all, s, Another(s, defaults)));
  }
  EXPECT_EQ(DescribeChanges(defaults, all).size(), BreakerSettings().size());
  EXPECT_EQ(sizeof(CircuitBreakerConfig), 184U)
      << "a field was added or removed: give it a row in the table (src/breaker_settings.cc)";
  EXPECT_EQ(FindBreakerSetting("no_such_setting"), nullptr);
}

TEST(BreakerSettingsTest, DefaultsAreTheConfigsOwn) {
  const CircuitBreakerConfig defaults;
  for (const BreakerSetting& s : BreakerSettings()) {
    const SettingValue value = GetSetting(defaults, s);
    if (s.optional) {
      EXPECT_TRUE(std::holds_alternative<std::monostate>(value)) << s.name;
    } else {
      EXPECT_EQ(SettingText(value), s.default_text) << s.name;
    }
  }
}

TEST(BreakerSettingsTest, ValidateEnforcesEveryStaticRangeAsWritten) {
  for (const BreakerSetting& s : BreakerSettings()) {
    if (s.check != nullptr || s.type == SettingType::kBool || s.type == SettingType::kTripPolicy ||
        s.type == SettingType::kProbeMode) {
      continue;
    }
    const std::string range = RangeText(s);
    auto validate = [&](const SettingValue& value) {
      CircuitBreakerConfig config;
      EXPECT_TRUE(SetSetting(config, s, value)) << s.name;
      return config.Validate();
    };
    EXPECT_EQ(validate(At(s, s.max, 0)), std::nullopt) << s.name << " at its max";
    const std::optional<ConfigError> above = validate(At(s, s.max, 1));
    ASSERT_TRUE(above.has_value()) << s.name << " above its max";
    EXPECT_EQ(above->field, s.name);
    EXPECT_EQ(above->message.substr(0, s.name.size() + 12 + range.size()),
              std::string(s.name) + " must be in " + range)
        << above->message;
    const std::optional<ConfigError> at_min = validate(At(s, s.min, 0));
    EXPECT_EQ(at_min.has_value(), s.min_open) << s.name << " at its min";
    if (s.min > 0) {
      EXPECT_TRUE(validate(At(s, s.min, -1)).has_value()) << s.name << " below its min";
    }
  }
}

TEST(BreakerSettingsTest, RangesReadAsTheContractWritesThem) {
  EXPECT_EQ(RangeText(*FindBreakerSetting("failure_threshold")), "[1, 1000000]");
  EXPECT_EQ(RangeText(*FindBreakerSetting("failure_rate_threshold")), "(0, 1]");
  EXPECT_EQ(RangeText(*FindBreakerSetting("cooldown")), "(0s, 86400s]");
  EXPECT_EQ(RangeText(*FindBreakerSetting("recovery_ramp")), "[0s, 86400s]");
  EXPECT_EQ(RangeText(*FindBreakerSetting("cooldown_max")), "[cooldown, 86400s]");
  EXPECT_EQ(RangeText(*FindBreakerSetting("trip")), "consecutive, count_window or time_window");
  EXPECT_EQ(RangeText(*FindBreakerSetting("batch_may_probe")), "true or false");
}

TEST(BreakerSettingsTest, SetRefusesAValueOfAnotherType) {
  CircuitBreakerConfig config;
  const BreakerSetting& cooldown = *FindBreakerSetting("cooldown");
  EXPECT_FALSE(SetSetting(config, cooldown, 30.0));
  EXPECT_FALSE(SetSetting(config, cooldown, std::monostate{}));  // not optional
  EXPECT_EQ(config.cooldown, seconds(10));
  const BreakerSetting& slow = *FindBreakerSetting("slow_call_duration");
  ASSERT_TRUE(SetSetting(config, slow, Duration(seconds(2))));
  EXPECT_EQ(config.slow_call_duration, seconds(2));
  ASSERT_TRUE(SetSetting(config, slow, std::monostate{}));  // back to call_timeout
  EXPECT_EQ(config.slow_call_duration, std::nullopt);
}

// docs/breaker-rules.md shows the table row by row, as written here.
TEST(BreakerSettingsTest, TheContractsTableIsThisTable) {
  std::ifstream in(std::string(FUSEBOX_SOURCE_DIR) + "/docs/breaker-rules.md");
  ASSERT_TRUE(in) << "docs/breaker-rules.md not found";
  std::stringstream doc;
  doc << in.rdbuf();
  for (const BreakerSetting& s : BreakerSettings()) {
    const std::string row = "| `" + std::string(s.name) + "` | " + std::string(s.default_text) +
                            " | " + RangeText(s) + " | " + std::string(s.help) + " |\n";
    EXPECT_NE(doc.str().find(row), std::string::npos) << "docs/breaker-rules.md lacks\n" << row;
  }
}

}  // namespace
}  // namespace fusebox

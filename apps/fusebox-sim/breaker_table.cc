// [breaker]: one key per breaker setting, the library's own table (fusebox/breaker_settings.h):
// the same names, and the ranges CircuitBreakerConfig::Validate() checks once the scenario is
// whole. Here a value is read as its setting's type, and a count checked to fit 32 bits.
#include <fmt/format.h>

#include <array>
#include <chrono>
#include <limits>

#include "fusebox/breaker_settings.h"
#include "scenario_reader.h"

namespace fusebox::sim {
namespace {

constexpr std::array<std::string_view, 3> kTripNames = {"consecutive", "count_window",
                                                        "time_window"};
constexpr std::array<std::string_view, 2> kProbeModeNames = {"passive", "active"};

KeyKind KindOf(SettingType type) {
  switch (type) {
    case SettingType::kTripPolicy:
    case SettingType::kProbeMode:
      return KeyKind::kString;
    case SettingType::kCount:
      return KeyKind::kInteger;
    case SettingType::kNumber:
      return KeyKind::kNumber;
    case SettingType::kDuration:
      return KeyKind::kDuration;
    case SettingType::kBool:
      return KeyKind::kBool;
  }
  return KeyKind::kString;
}

std::span<const std::string_view> ChoicesOf(SettingType type) {
  if (type == SettingType::kTripPolicy) {
    return kTripNames;
  }
  if (type == SettingType::kProbeMode) {
    return kProbeModeNames;
  }
  return {};
}

}  // namespace

std::optional<KeyKind> BreakerKeyKind(std::string_view key) {
  if (const BreakerSetting* setting = FindBreakerSetting(key)) {
    return KindOf(setting->type);
  }
  return std::nullopt;
}

void ScenarioReader::ApplyBreakerKey(std::string_view key, const toml::node& node,
                                     const std::string& full) {
  const BreakerSetting* setting = FindBreakerSetting(key);
  if (setting == nullptr) {
    Fail(node, full, "unknown key");
    return;
  }
  std::optional<SettingValue> read =
      Read(KindOf(setting->type), ChoicesOf(setting->type), node, full);
  if (!read) {
    return;
  }
  fusebox::SettingValue value;
  switch (setting->type) {
    case SettingType::kTripPolicy:
      value = *ParseTripPolicy(read->text);
      break;
    case SettingType::kProbeMode:
      value = *ParseProbeMode(read->text);
      break;
    case SettingType::kCount:
      if (read->integer < 0 || read->integer > std::numeric_limits<std::uint32_t>::max()) {
        Fail(node, full, fmt::format("must be a positive 32-bit integer, got {}", read->integer));
        return;
      }
      value = static_cast<std::uint32_t>(read->integer);
      break;
    case SettingType::kNumber:
      value = read->number;
      break;
    case SettingType::kDuration:
      value = Duration(std::chrono::microseconds(read->integer));
      break;
    case SettingType::kBool:
      value = read->flag;
      break;
  }
  SetSetting(scenario_.breaker, *setting, value);
  Remember(full, node);
}

}  // namespace fusebox::sim

// apps/fusebox-sim/scenario_reader.h (internal to the scenario loader)
//
// ScenarioReader applies TOML tables (the file, then a variant) and overrides onto a Scenario,
// remembering where every value came from so that later checks (overlaps, the breaker's
// Validate()) can point at it; it keeps the error that comes first in the file.
//
// Each [table]'s keys are a settings table (Setting<Target>): the single source of a key's name,
// kind (how its value is read), range check, help text and where the value goes. The reader
// itself only knows how to read a kind and where things are:
//   scenario_reader.cc  locations, errors, typed reads, the root keys, Finish()
//   breaker_table.cc    [breaker]
//   traffic_table.cc    [traffic] / [[traffic.stream]], the expected-calls limit
//   upstream_table.cc   [upstream] / [[upstream.phase]] (read with common/phase_schedule.h)
//   limit_table.cc      [limit]
//   overrides.cc        KEY=VALUE overrides and LookupKeyKind()
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <toml++/toml.h>

#include "common/located_error.h"
#include "scenario.h"

namespace fusebox::sim {

// A value read for a setting: the member its kind fills.
struct SettingValue {
  std::int64_t integer = 0;  // kInteger; kDuration (microseconds); kIntegerOrAuto's number
  double number = 0.0;       // kNumber
  bool flag = false;         // kBool; kIntegerOrAuto: "auto"
  std::string text;          // kString
  std::size_t choice = 0;    // kString with choices: the index into them
};

// One key of a [table] whose values land in a `Target`.
template <typename Target>
struct Setting {
  std::string_view name;
  KeyKind kind;
  std::string_view help;
  // kString: the names allowed (an empty span: any string).
  std::span<const std::string_view> choices;
  // The range: nullopt when `value` is fine, else why not ("must be > 0"). May be null.
  std::optional<std::string> (*check)(const SettingValue& value);
  void (*set)(Target& target, const SettingValue& value);
};

template <typename Target>
const Setting<Target>* FindSetting(std::span<const Setting<Target>> table, std::string_view name) {
  for (const Setting<Target>& setting : table) {
    if (setting.name == name) {
      return &setting;
    }
  }
  return nullptr;
}

// The settings tables, for LookupKeyKind() and the overrides.
std::span<const Setting<Scenario>> RootSettings();
// [breaker] keys are the library's breaker settings (fusebox/breaker_settings.h): the kind a key's
// value is read as, or nullopt for an unknown key.
std::optional<KeyKind> BreakerKeyKind(std::string_view key);
std::span<const Setting<Stream>> StreamSettings();
std::span<const Setting<Scenario>> UpstreamSettings();
std::span<const Setting<Phase>> PhaseSettings();
std::span<const Setting<Limit>> LimitSettings();

// Where a value sits in the file, and the key as the user reads it.
struct Location {
  int line = 0;
  int column = 0;
  std::string key;
};

enum class TrafficForm : std::uint8_t { kNone, kSingle, kStreams };

class ScenarioReader {
 public:
  ScenarioReader(std::string file, std::string default_name);

  // Applies a top-level table (the file, or one [[variant]] with `prefix` "variant[i].").
  void ApplyRoot(const toml::table& root, std::string prefix, bool is_variant);
  // Applies one `KEY=VALUE` override (from --param or a sweep point). overrides.cc.
  void ApplyOverride(const Override& override_value);
  void SetSeed(std::uint64_t seed) { scenario_.seed = seed; }
  // Checks what needs the whole scenario. Returns the scenario or the first error.
  Result<Scenario, LoadError> Finish();

 private:
  // ---- errors and locations (scenario_reader.cc) ----
  Location MakeLocation(const toml::node& node, const std::string& key) const;
  void Remember(const std::string& key, const toml::node& node);
  // Where `key` was last set, shown as `display_key`; else no place.
  Location LocationOf(const std::string& key, const std::string& display_key) const;
  void Fail(const Location& location, std::string message);
  void Fail(const toml::node& node, const std::string& key, std::string message);
  void Fail(const LoadError& error);
  void FailAt(const std::string& key, std::string message);
  void ForgetPrefix(std::string_view prefix);

  // ---- typed reads through a settings table (scenario_reader.cc) ----
  std::optional<SettingValue> Read(KeyKind kind, std::span<const std::string_view> choices,
                                   const toml::node& node, const std::string& key);
  template <typename Target>
  void Apply(std::span<const Setting<Target>> table, Target& target, std::string_view name,
             const toml::node& node, const std::string& full);

  // ---- the tables ----
  void ApplyRootKey(std::string_view key, const toml::node& node, const std::string& full);
  void ApplyBreakerKey(std::string_view key, const toml::node& node, const std::string& full);
  void ApplyStreamKey(Stream& stream, std::string_view key, const toml::node& node,
                      const std::string& full);
  void RequireRate(const toml::node& table_node, const std::string& prefix);
  void ApplyTraffic(const toml::table& table, const toml::node& table_node);
  void ApplyPhaseKey(Phase& phase, std::string_view key, const toml::node& node,
                     const std::string& full);
  void CheckPhaseKeys(const Phase& phase, const toml::node& table_node, const std::string& p);
  void CheckModeOverride(std::size_t i);  // a phase's mode set by an override
  void ApplyUpstream(const toml::table& table);
  void ApplyLimitKey(std::string_view key, const toml::node& node, const std::string& full);
  void ApplyLimit(const toml::table& table, const toml::node& table_node);

  // ---- overrides (overrides.cc) ----
  std::unique_ptr<toml::node> OverrideNode(const std::string& key, KeyKind kind,
                                           std::string_view text);
  void ApplyOverrideKey(const Override& o);

  // ---- whole-scenario checks ----
  void CheckTraffic();        // traffic_table.cc
  void CheckExpectedCalls();  // traffic_table.cc
  void CheckPhases();         // upstream_table.cc
  void CheckLimit();          // limit_table.cc

  std::string file_;
  std::string prefix_;  // display prefix of the table being applied ("variant[1].")
  bool overriding_ = false;
  Scenario scenario_;
  TrafficForm traffic_form_ = TrafficForm::kNone;
  // Canonical key ("breaker.cooldown", "upstream.phase[1].from") -> where it was last set.
  std::map<std::string, Location, std::less<>> where_;
  std::optional<LoadError> error_;
};

template <typename Target>
void ScenarioReader::Apply(std::span<const Setting<Target>> table, Target& target,
                           std::string_view name, const toml::node& node, const std::string& full) {
  const Setting<Target>* setting = FindSetting(table, name);
  if (setting == nullptr) {
    Fail(node, full, "unknown key");
    return;
  }
  std::optional<SettingValue> value = Read(setting->kind, setting->choices, node, full);
  if (!value) {
    return;
  }
  if (setting->check != nullptr) {
    if (std::optional<std::string> bad = setting->check(*value)) {
      Fail(node, full, std::move(*bad));
      return;
    }
  }
  setting->set(target, *value);
  Remember(full, node);
}

}  // namespace fusebox::sim

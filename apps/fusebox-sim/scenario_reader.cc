#include "scenario_reader.h"

#include <fmt/format.h>

#include <array>
#include <limits>
#include <utility>

#include "common/toml_read.h"

namespace fusebox::sim {
namespace {

std::optional<std::string> NotNegative(const SettingValue& v) {
  if (v.integer < 0) {
    return fmt::format("must be >= 0, got {}", v.integer);
  }
  return std::nullopt;
}

// The top-level keys (the tables [breaker], [traffic], [upstream], [limit] and [[variant]] aside).
constexpr auto kRootSettings = std::to_array<Setting<Scenario>>({
    {"name",
     KeyKind::kString,
     "labels the run (default: the file's stem)",
     {},
     nullptr,
     [](Scenario& s, const SettingValue& v) { s.name = v.text; }},
    {"seed",
     KeyKind::kInteger,
     "seeds poisson arrivals and cooldown jitter (default 1), >= 0",
     {},
     &NotNegative,
     [](Scenario& s, const SettingValue& v) { s.seed = static_cast<std::uint64_t>(v.integer); }},
    {"duration",
     KeyKind::kDuration,
     "arrivals happen in [0, duration) (default 60s), > 0",
     {},
     nullptr,
     [](Scenario& s, const SettingValue& v) { s.duration = v.integer; }},
});

}  // namespace

std::span<const Setting<Scenario>> RootSettings() { return kRootSettings; }

ScenarioReader::ScenarioReader(std::string file, std::string default_name)
    : file_(std::move(file)) {
  scenario_.name = std::move(default_name);
}

void ScenarioReader::ApplyRoot(const toml::table& root, std::string prefix, bool is_variant) {
  prefix_ = std::move(prefix);
  for (const auto& [key_node, node] : root) {
    const std::string_view key = key_node.str();
    auto table = [&](std::string_view name) -> const toml::table* {
      Result<const toml::table*, app::ReadError> t = app::ReadTable(node);
      if (!t) {
        Fail(node, std::string(name), t.error().message);
        return nullptr;
      }
      return *t;
    };
    if (key == "breaker") {
      if (const toml::table* breaker = table("breaker")) {
        for (const auto& [k, v] : *breaker) {
          ApplyBreakerKey(k.str(), v, fmt::format("breaker.{}", k.str()));
        }
        Remember("breaker", node);
      }
    } else if (key == "traffic") {
      if (const toml::table* traffic = table("traffic")) {
        ApplyTraffic(*traffic, node);
      }
    } else if (key == "upstream") {
      if (const toml::table* upstream = table("upstream")) {
        ApplyUpstream(*upstream);
      }
    } else if (key == "limit") {
      if (const toml::table* limit = table("limit")) {
        ApplyLimit(*limit, node);
      }
    } else if (key == "variant" && !is_variant) {
      // The caller applies variants one at a time.
    } else {
      ApplyRootKey(key, node, std::string(key));
    }
  }
}

void ScenarioReader::ApplyRootKey(std::string_view key, const toml::node& node,
                                  const std::string& full) {
  Apply(RootSettings(), scenario_, key, node, full);
}

Result<Scenario, LoadError> ScenarioReader::Finish() {
  if (!error_) {
    CheckTraffic();
  }
  if (!error_) {
    if (scenario_.duration <= 0) {
      FailAt("duration", "must be > 0");
    }
  }
  if (!error_) {
    CheckExpectedCalls();
  }
  if (!error_) {
    CheckPhases();
  }
  if (!error_) {
    CheckLimit();
  }
  if (!error_) {
    if (std::optional<ConfigError> bad = scenario_.breaker.Validate()) {
      const std::string key = "breaker." + bad->field;
      if (where_.contains(key)) {
        FailAt(key, bad->message);
      } else {
        // A default or a combination of fields: point at the [breaker] table if there is one.
        Fail(LocationOf("breaker", key), bad->message);
      }
    }
  }
  if (error_) {
    return *error_;
  }
  return scenario_;
}

// ---- errors and locations ----

Location ScenarioReader::MakeLocation(const toml::node& node, const std::string& key) const {
  const toml::source_region& source = node.source();
  if (overriding_ || source.begin.line == 0) {
    return Location{0, 0, key + " (override)"};
  }
  return Location{static_cast<int>(source.begin.line), static_cast<int>(source.begin.column),
                  prefix_ + key};
}

void ScenarioReader::Remember(const std::string& key, const toml::node& node) {
  where_[key] = MakeLocation(node, key);
}

Location ScenarioReader::LocationOf(const std::string& key, const std::string& display_key) const {
  if (auto it = where_.find(key); it != where_.end()) {
    Location location = it->second;
    location.key = display_key;
    return location;
  }
  return Location{0, 0, display_key};
}

void ScenarioReader::Fail(const LoadError& error) {
  // Keep the error that comes first in the file; errors without a place come last.
  if (!error_ || app::ComesFirst(error, *error_)) {
    error_ = error;
  }
}

void ScenarioReader::Fail(const Location& location, std::string message) {
  Fail(LoadError{file_, location.line, location.column, location.key, std::move(message)});
}

void ScenarioReader::Fail(const toml::node& node, const std::string& key, std::string message) {
  Fail(MakeLocation(node, key), std::move(message));
}

void ScenarioReader::FailAt(const std::string& key, std::string message) {
  Location location = LocationOf(key, key);
  if (auto it = where_.find(key); it != where_.end()) {
    location.key = it->second.key;
  }
  Fail(location, std::move(message));
}

void ScenarioReader::ForgetPrefix(std::string_view prefix) {
  std::erase_if(where_, [&](const auto& entry) { return entry.first.starts_with(prefix); });
}

// ---- typed reads ----

std::optional<SettingValue> ScenarioReader::Read(KeyKind kind,
                                                 std::span<const std::string_view> choices,
                                                 const toml::node& node, const std::string& key) {
  SettingValue value;
  std::optional<app::ReadError> bad;
  switch (kind) {
    case KeyKind::kDuration:
      if (auto micros = app::ReadDuration(node)) {
        value.integer = *micros;
      } else {
        bad = micros.error();
      }
      break;
    case KeyKind::kInteger:
      if (auto integer = app::ReadInteger(node)) {
        value.integer = *integer;
      } else {
        bad = integer.error();
      }
      break;
    case KeyKind::kNumber:
      if (auto number = app::ReadNumber(node)) {
        value.number = *number;
      } else {
        bad = number.error();
      }
      break;
    case KeyKind::kBool:
      if (auto flag = app::ReadBool(node)) {
        value.flag = *flag;
      } else {
        bad = flag.error();
      }
      break;
    case KeyKind::kIntegerOrAuto:
      if (node.is_string()) {
        static constexpr std::array<std::string_view, 1> kAuto = {"auto"};
        if (auto choice = app::ReadChoice(node, kAuto)) {
          value.flag = true;
          value.text = "auto";
        } else {
          bad = choice.error();
        }
      } else if (auto integer = app::ReadInteger(node)) {
        value.integer = *integer;
      } else {
        bad = app::ReadError{
            fmt::format("expected an integer or \"auto\", got {}", app::TypeName(node))};
      }
      break;
    case KeyKind::kString:
      if (choices.empty()) {
        if (auto text = app::ReadString(node)) {
          value.text = *text;
        } else {
          bad = text.error();
        }
      } else if (auto choice = app::ReadChoice(node, choices)) {
        value.choice = *choice;
        value.text = std::string(choices[*choice]);
      } else {
        bad = choice.error();
      }
      break;
  }
  if (bad) {
    Fail(node, key, std::move(bad->message));
    return std::nullopt;
  }
  return value;
}

}  // namespace fusebox::sim

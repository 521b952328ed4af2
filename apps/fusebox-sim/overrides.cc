// KEY=VALUE overrides (--param, sweep points): the key names a setting of one of the tables, the
// value is read by the setting's kind and applied like a value of the file.
#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>
#include <system_error>
#include <vector>

#include "scenario_reader.h"

namespace fusebox::sim {
namespace {

// One segment of a dotted key: `stream[1]` is {"stream", 1}.
struct KeySegment {
  std::string_view name;
  std::optional<std::size_t> index;
};

std::optional<std::vector<KeySegment>> SplitKey(std::string_view key) {
  std::vector<KeySegment> segments;
  while (true) {
    const std::size_t dot = key.find('.');
    std::string_view part = key.substr(0, dot);
    KeySegment segment;
    if (const std::size_t open = part.find('['); open != std::string_view::npos) {
      if (part.back() != ']' || open + 2 > part.size() - 1) {
        return std::nullopt;
      }
      const std::string_view digits = part.substr(open + 1, part.size() - open - 2);
      std::size_t index = 0;
      const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
      if (ec != std::errc() || end != digits.data() + digits.size()) {
        return std::nullopt;
      }
      segment.index = index;
      part = part.substr(0, open);
    }
    if (part.empty()) {
      return std::nullopt;
    }
    segment.name = part;
    segments.push_back(segment);
    if (dot == std::string_view::npos) {
      break;
    }
    key.remove_prefix(dot + 1);
  }
  return segments;
}

template <typename Target>
std::optional<KeyKind> KindIn(std::span<const Setting<Target>> table, std::string_view name) {
  if (const Setting<Target>* setting = FindSetting(table, name)) {
    return setting->kind;
  }
  return std::nullopt;
}

std::optional<double> ParseDouble(std::string_view text) {
  double value = 0.0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

std::optional<std::int64_t> ParseInt(std::string_view text) {
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

std::optional<KeyKind> LookupKeyKind(std::string_view dotted_key) {
  const std::optional<std::vector<KeySegment>> segments = SplitKey(dotted_key);
  if (!segments) {
    return std::nullopt;
  }
  const std::vector<KeySegment>& s = *segments;
  auto plain = [&](std::size_t i) { return !s[i].index.has_value(); };
  if (s.size() == 1 && plain(0)) {
    return KindIn(RootSettings(), s[0].name);
  }
  if (s.size() == 2 && plain(0) && plain(1)) {
    if (s[0].name == "breaker") {
      return BreakerKeyKind(s[1].name);
    }
    if (s[0].name == "traffic") {
      return KindIn(StreamSettings(), s[1].name);
    }
    if (s[0].name == "upstream") {
      return KindIn(UpstreamSettings(), s[1].name);
    }
    if (s[0].name == "limit") {
      return KindIn(LimitSettings(), s[1].name);
    }
    return std::nullopt;
  }
  if (s.size() == 3 && plain(0) && !plain(1) && plain(2)) {
    if (s[0].name == "traffic" && s[1].name == "stream") {
      return KindIn(StreamSettings(), s[2].name);
    }
    if (s[0].name == "upstream" && s[1].name == "phase") {
      return KindIn(PhaseSettings(), s[2].name);
    }
  }
  return std::nullopt;
}

void ScenarioReader::ApplyOverride(const Override& override_value) {
  prefix_.clear();
  overriding_ = true;
  ApplyOverrideKey(override_value);
  overriding_ = false;
}

// The override's text as the TOML value a file would hold, unquoted: a duration with a unit
// becomes the string a file would hold (common/duration.h), a number (exponents included, as in
// TOML) a number of seconds.
std::unique_ptr<toml::node> ScenarioReader::OverrideNode(const std::string& key, KeyKind kind,
                                                         std::string_view text) {
  switch (kind) {
    case KeyKind::kDuration: {
      bool too_large = false;
      if (ParseDuration(text, &too_large) || too_large) {
        // A value too large is refused by the duration read, with the range.
        return std::make_unique<toml::value<std::string>>(std::string(text));
      }
      if (std::optional<double> seconds = ParseDouble(text)) {
        return std::make_unique<toml::value<double>>(*seconds);
      }
      break;
    }
    case KeyKind::kInteger:
      if (std::optional<std::int64_t> value = ParseInt(text)) {
        return std::make_unique<toml::value<std::int64_t>>(*value);
      }
      break;
    case KeyKind::kNumber:
      if (std::optional<double> value = ParseDouble(text)) {
        return std::make_unique<toml::value<double>>(*value);
      }
      break;
    case KeyKind::kBool:
      if (text == "true" || text == "false") {
        return std::make_unique<toml::value<bool>>(text == "true");
      }
      break;
    case KeyKind::kString:
      return std::make_unique<toml::value<std::string>>(std::string(text));
    case KeyKind::kIntegerOrAuto:
      if (text == "auto") {
        return std::make_unique<toml::value<std::string>>(std::string(text));
      }
      if (std::optional<std::int64_t> value = ParseInt(text)) {
        return std::make_unique<toml::value<std::int64_t>>(*value);
      }
      break;
  }
  static constexpr std::array<std::string_view, 6> kExpected = {
      "a duration", "an integer", "a number", "true or false", "a string", "an integer or auto"};
  Fail(Location{0, 0, key + " (override)"}, fmt::format("bad value \"{}\": expected {}", text,
                                                        kExpected[static_cast<std::size_t>(kind)]));
  return nullptr;
}

void ScenarioReader::ApplyOverrideKey(const Override& o) {
  const std::optional<KeyKind> kind = LookupKeyKind(o.key);
  if (!kind) {
    Fail(Location{0, 0, o.key + " (override)"}, "unknown key");
    return;
  }
  const std::unique_ptr<toml::node> node = OverrideNode(o.key, *kind, o.value);
  if (node == nullptr) {
    return;
  }
  const std::optional<std::vector<KeySegment>> split = SplitKey(o.key);
  if (!split) {
    return;  // LookupKeyKind() refused it above
  }
  const std::vector<KeySegment>& segments = *split;
  const std::string_view head = segments[0].name;
  if (segments.size() == 1) {
    ApplyRootKey(head, *node, o.key);
  } else if (head == "breaker") {
    ApplyBreakerKey(segments[1].name, *node, o.key);
  } else if (head == "limit") {
    ApplyLimitKey(segments[1].name, *node, o.key);
  } else if (head == "traffic" && segments[1].name != "stream") {
    if (traffic_form_ != TrafficForm::kSingle) {
      Fail(Location{0, 0, o.key + " (override)"},
           "the scenario has [[traffic.stream]] tables: use traffic.stream[i].<key>");
      return;
    }
    ApplyStreamKey(scenario_.streams.front(), segments[1].name, *node, o.key);
  } else if (head == "traffic") {
    const std::size_t i = segments[1].index.value_or(0);
    if (traffic_form_ != TrafficForm::kStreams || i >= scenario_.streams.size()) {
      Fail(Location{0, 0, o.key + " (override)"}, "no such stream");
      return;
    }
    ApplyStreamKey(scenario_.streams[i], segments[2].name, *node, o.key);
  } else if (head == "upstream" && segments[1].name == "latency") {
    Apply(UpstreamSettings(), scenario_, "latency", *node, o.key);
  } else {
    const std::size_t i = segments[1].index.value_or(0);
    if (i >= scenario_.phases.size()) {
      Fail(Location{0, 0, o.key + " (override)"}, "no such phase");
      return;
    }
    ApplyPhaseKey(scenario_.phases[i], segments[2].name, *node, o.key);
    if (segments[2].name == "mode") {
      CheckModeOverride(i);
    }
  }
}

}  // namespace fusebox::sim

#include "format_keys.h"

#include <fmt/format.h>

#include <span>
#include <string_view>
#include <vector>

#include "fusebox/breaker_settings.h"
#include "scenario_reader.h"

namespace fusebox::sim {
namespace {

// Where descriptions start, and where lines end: --help's habits (help2man finds a key's
// description as the text after two spaces, or on the next line indented at least 20).
constexpr std::size_t kKeyIndent = 2;
constexpr std::size_t kDescriptionColumn = 34;
constexpr std::size_t kWidth = 100;

std::string Quoted(std::span<const std::string_view> names) {
  std::string text;
  for (std::size_t i = 0; i < names.size(); ++i) {
    text += fmt::format("{}\"{}\"", i == 0 ? "" : " | ", names[i]);
  }
  return text;
}

std::string KindText(KeyKind kind, std::span<const std::string_view> choices) {
  switch (kind) {
    case KeyKind::kDuration:
      return "DURATION";
    case KeyKind::kInteger:
      return "INTEGER";
    case KeyKind::kNumber:
      return "NUMBER";
    case KeyKind::kBool:
      return "true | false";
    case KeyKind::kString:
      return choices.empty() ? "\"TEXT\"" : Quoted(choices);
    case KeyKind::kIntegerOrAuto:
      return "INTEGER | \"auto\"";
  }
  return "VALUE";
}

// One key: "  key = KIND" and its description in the column, wrapped at word boundaries.
void AppendKey(std::string& out, std::string_view key, const std::string& kind,
               std::string_view description) {
  std::string line = fmt::format("{:{}}{} = {}", "", kKeyIndent, key, kind);
  if (line.size() + 2 > kDescriptionColumn) {
    out += line + "\n";
    line.clear();
  }
  line.resize(kDescriptionColumn, ' ');
  bool first_word = true;
  std::size_t start = 0;
  while (start < description.size()) {
    // A word runs to a space outside brackets: a range ("(0, 1]", "[from, to)") stays on one line.
    std::size_t end = start;
    int depth = 0;
    while (end < description.size() && (description[end] != ' ' || depth > 0)) {
      const char c = description[end];
      depth += (c == '(' || c == '[') ? 1 : (c == ')' || c == ']') ? -1 : 0;
      ++end;
    }
    const std::string_view word = description.substr(start, end - start);
    start = end + 1;
    if (word.empty()) {
      continue;
    }
    if (!first_word && line.size() + 1 + word.size() > kWidth) {
      out += line + "\n";
      line.assign(kDescriptionColumn, ' ');
      first_word = true;
    }
    line += first_word ? "" : " ";
    line += word;
    first_word = false;
  }
  out += line + "\n";
}

template <typename Target>
void AppendTable(std::string& out, std::string_view heading,
                 std::span<const Setting<Target>> table) {
  out += fmt::format("\n{}\n", heading);
  for (const Setting<Target>& setting : table) {
    AppendKey(out, setting.name, KindText(setting.kind, setting.choices), setting.help);
  }
}

// [breaker]: the library's table, read as breaker_table.cc reads it (BreakerKeyKind). Choices are
// printed in the tag, so their range is not repeated; a count, number or duration gets its range.
void AppendBreaker(std::string& out) {
  static constexpr std::string_view kTrips[] = {"consecutive", "count_window", "time_window"};
  static constexpr std::string_view kProbeModes[] = {"passive", "active"};
  out += "\n[breaker]:\n";
  for (const BreakerSetting& setting : BreakerSettings()) {
    std::span<const std::string_view> choices;
    if (setting.type == SettingType::kTripPolicy) {
      choices = kTrips;
    } else if (setting.type == SettingType::kProbeMode) {
      choices = kProbeModes;
    }
    std::string description = fmt::format("{} (default {})", setting.help, setting.default_text);
    if (setting.type == SettingType::kCount || setting.type == SettingType::kNumber ||
        setting.type == SettingType::kDuration) {
      description += fmt::format(", in {}", RangeText(setting));
    }
    AppendKey(out, setting.name, KindText(*BreakerKeyKind(setting.name), choices), description);
  }
}

}  // namespace

std::string ScenarioKeysText() {
  std::string out =
      "fusebox-sim scenario files (TOML): every key the loader reads, printed from its own "
      "tables.\n"
      "A DURATION is a string of terms from the largest unit to the smallest, units d, h, m, s, "
      "ms,\n"
      "us (\"250ms\", \"2m30s\"), or a number of seconds (10, not \"10\").\n";
  AppendTable(out, "Top-level keys:", RootSettings());
  AppendBreaker(out);
  AppendTable(out, "[traffic] (one stream) or [[traffic.stream]] (several):", StreamSettings());
  AppendTable(out, "[upstream]:", UpstreamSettings());
  AppendTable(out, "[[upstream.phase]]:", PhaseSettings());
  AppendTable(out, "[limit]:", LimitSettings());
  // A variant has no table of its own: scenario.cc takes its `name` and applies the rest of it
  // through the tables above.
  out += "\n[[variant]]:\n";
  AppendKey(out, "name", KindText(KeyKind::kString, {}),
            "names the variant (required, unique); any key or table above may follow, applied "
            "over the base scenario");
  return out;
}

}  // namespace fusebox::sim

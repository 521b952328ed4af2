// Tests of `fusebox-sim format`'s text (format_keys.h): every key of every settings table the
// loader reads is listed, in the layout help2man makes fusebox-scenario(5) of.
#include "format_keys.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "fusebox/breaker_settings.h"
#include "scenario_reader.h"

namespace fusebox::sim {
namespace {

using ::testing::HasSubstr;

// The text from `heading` to the next blank line: one table's keys.
std::string Section(const std::string& text, const std::string& heading) {
  const std::size_t start = text.find("\n" + heading + "\n");
  if (start == std::string::npos) {
    return {};
  }
  const std::size_t end = text.find("\n\n", start + 1);
  return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

template <typename Target>
void ExpectEveryKey(const std::string& section, std::span<const Setting<Target>> table) {
  ASSERT_FALSE(section.empty());
  for (const Setting<Target>& setting : table) {
    EXPECT_THAT(section, HasSubstr("\n  " + std::string(setting.name) + " = ")) << setting.name;
  }
}

TEST(FormatKeysTest, ListsEveryKeyOfEveryTableUnderItsHeading) {
  const std::string text = ScenarioKeysText();
  ExpectEveryKey(Section(text, "Top-level keys:"), RootSettings());
  ExpectEveryKey(Section(text, "[traffic] (one stream) or [[traffic.stream]] (several):"),
                 StreamSettings());
  ExpectEveryKey(Section(text, "[upstream]:"), UpstreamSettings());
  ExpectEveryKey(Section(text, "[[upstream.phase]]:"), PhaseSettings());
  ExpectEveryKey(Section(text, "[limit]:"), LimitSettings());
  const std::string breaker = Section(text, "[breaker]:");
  ASSERT_FALSE(breaker.empty());
  for (const BreakerSetting& setting : BreakerSettings()) {
    EXPECT_THAT(breaker, HasSubstr("\n  " + std::string(setting.name) + " = ")) << setting.name;
  }
}

// The text with each run of spaces and line breaks as one space: descriptions as they read.
std::string Squeezed(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool space = c == ' ' || c == '\n';
    if (!space || (!out.empty() && out.back() != ' ')) {
      out += space ? ' ' : c;
    }
  }
  return out;
}

TEST(FormatKeysTest, PrintsKindsChoicesDefaultsAndRanges) {
  const std::string text = Squeezed(ScenarioKeysText());
  EXPECT_THAT(text, HasSubstr(" trip = \"consecutive\" | \"count_window\" | \"time_window\" how "));
  EXPECT_THAT(text, HasSubstr(" cooldown = DURATION how long OPEN rejects before a probe may run "
                              "(default 10s), in (0s, 86400s] "));
  EXPECT_THAT(text, HasSubstr(" batch_may_probe = true | false whether"));
  EXPECT_THAT(text, HasSubstr(" arrivals = \"uniform\" | \"poisson\" uniform (default)"));
  EXPECT_THAT(text, HasSubstr(" max_in_flight = INTEGER | \"auto\" calls in flight"));
}

// help2man reads a key as an indented tag, then two spaces or a line break to a description at
// column 34, continued by lines indented exactly as far; --help keeps to 100 columns.
TEST(FormatKeysTest, KeepsTheColumnsHelp2manReads) {
  std::istringstream lines(ScenarioKeysText());
  std::string line;
  bool in_table = false;
  while (std::getline(lines, line)) {
    EXPECT_LE(line.size(), 100U) << line;
    if (line.empty()) {
      in_table = false;
      continue;
    }
    if (line.ends_with(":") && line.front() != ' ') {
      in_table = true;
      continue;
    }
    if (!in_table) {
      continue;
    }
    ASSERT_TRUE(line.starts_with("  ")) << line;
    if (line.starts_with(std::string(34, ' '))) {
      EXPECT_NE(line[34], ' ') << line;  // a continuation, in the column
      continue;
    }
    const std::size_t gap = line.find("  ", 2);
    if (gap == std::string::npos) {
      EXPECT_GT(line.size(), 32U) << line;  // a key too long for the column, alone on its line
    } else {
      EXPECT_LE(gap, 32U) << line;  // a key, then its description in the column
      EXPECT_EQ(line.find_first_not_of(' ', gap), 34U) << line;
    }
  }
}

}  // namespace
}  // namespace fusebox::sim

// apps/fusebox-sim/format_keys.h
//
// The scenario file's keys as `fusebox-sim format` prints them: every key of every table, printed
// from the settings tables the loader reads the file with (scenario_reader.h, and the library's
// breaker settings for [breaker]), so the list cannot drift from what is read. The man page
// fusebox-scenario(5) is generated from this text (cmake/man_pages.cmake). The contract, with
// the timing rules, stays docs/scenario-format.md.
//
// The layout is `--help`'s, which help2man reads: a heading that ends with a colon, then one
// indented "key = KIND" line per key with its description in a column (on the next line when
// the key is long), continuation lines aligned with the description.
//
// Thread safety: a pure function.
//
// Example:
//   fmt::print("{}", fusebox::sim::ScenarioKeysText());
#pragma once

#include <string>

namespace fusebox::sim {

std::string ScenarioKeysText();

}  // namespace fusebox::sim

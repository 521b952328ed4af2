// apps/common/phase_schedule.h
//
// The upstream's schedule, `[[upstream.phase]]` tables, as fusebox-sim and vpic-sim both read
// it (docs/scenario-format.md states the format):
//
//   [[upstream.phase]]
//   from = "10s"      # required, a duration (common/toml_read.h: "10s" or 10, not "10")
//   to = "60s"        # required, a duration after `from`; the phase covers [from, to)
//   mode = "error"    # required, one of the tool's modes
//   ...               # the tool's own keys (latency, capacity, relapse, status, ...)
//
// Phases may be written in any order; no two may overlap. Errors use the one format of
// located_error.h, and phases are indexed from 0 in file order in every message and key
// (`upstream.phase[0].from`), as fusebox-sim's --param keys are.
//
// The shared part reads from/to/mode and refuses unknown keys; each tool reads its own keys from
// PhaseTable::table and says which modes it runs (PhaseVocabulary), so both tools accept the
// same syntax and word the same mistakes the same way.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include "common/duration.h"
#include "common/located_error.h"
#include "fusebox/status.h"

namespace fusebox::app {

// "upstream.phase[2]": the key of the phase with 0-based `index`.
std::string PhaseKey(std::size_t index);

// What a tool accepts in a phase beyond from/to/mode.
struct PhaseVocabulary {
  std::span<const std::string_view> modes;  // in the order the error message lists them
  std::span<const std::string_view> keys;   // the tool's own keys
};

// One phase table as read: its span and mode; the tool reads its own keys from `table`.
struct PhaseTable {
  std::size_t index = 0;  // 0-based, file order
  const toml::table* table = nullptr;
  Micros from = 0;
  Micros to = 0;
  std::size_t mode = 0;  // index into PhaseVocabulary::modes
};

// Reads the value of `upstream.phase`: an array of tables, each with from, to and mode of the
// right types and no key outside from/to/mode and `vocabulary.keys`. Does not compare spans
// (CheckPhaseSpans does). Errors: the first one in the file; keys are prefixed by `key_prefix`
// ("variant[1]." when a scenario variant holds the phases). A missing key points at the phase's
// [[upstream.phase]] header ("missing key: to").
Result<std::vector<PhaseTable>, LocatedError> ReadPhaseTables(const toml::node& phases,
                                                              std::string_view file,
                                                              std::string_view key_prefix,
                                                              const PhaseVocabulary& vocabulary);

struct PhaseSpan {
  Micros from = 0;
  Micros to = 0;
};

struct PhaseProblem {
  std::size_t index = 0;   // the phase to point at
  std::string_view field;  // "from" or "to"
  std::string message;
};

// Checks spans given in file order. The first problem: a phase whose `to` is not after its
// `from` (at its `to`: "must be after from (5.0 s), got 5.0 s"); else two phases that overlap,
// at the `from` of the one later in the file ("phase [20.0 s, 40.0 s) overlaps upstream.phase[0]
// [10.0 s, 30.0 s)").
std::optional<PhaseProblem> CheckPhaseSpans(std::span<const PhaseSpan> spans);

// The indexes of `spans` sorted by `from` (stable).
std::vector<std::size_t> TimeOrder(std::span<const PhaseSpan> spans);

}  // namespace fusebox::app

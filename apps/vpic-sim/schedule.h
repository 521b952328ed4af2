// apps/vpic-sim/schedule.h
//
// vpic-sim's schedule (--schedule FILE): the `[upstream]` table of a fusebox-sim scenario and its
// `[[upstream.phase]]` array, read by the apps' shared phase reader (common/phase_schedule.h), so
// a phase means the same to both tools: from/to/mode are the common keys (a duration is "10s" or
// 10, never "10"), phases are indexed from 0 in errors, and errors read
// "file:line:column: key: message". vpic-sim accepts every fault mode (fault_spec.h; `fragile`
// included) and every fault setting of FaultFields() in a phase. The scenario's other top-level
// keys (seed, duration, name, breaker, traffic, limit, variant) are ignored, so a scenario file
// works as is: vpic-sim plays the base scenario's upstream (a variant's phases are fusebox-sim's).
//
// Thread safety: values only.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fault_spec.h"
#include "fusebox/status.h"

namespace fusebox::vpic_sim {

// One [[upstream.phase]]: `spec` is in force for requests admitted in [from, to).
struct Phase {
  Micros from = 0;
  Micros to = 0;
  FaultSpec spec;
};

struct Schedule {
  std::vector<Phase> phases;              // sorted by `from`, not overlapping
  std::optional<Micros> healthy_latency;  // [upstream] latency, if given

  // The phase covering `now`, or nullptr.
  const Phase* PhaseAt(Micros now) const;
};

// Parses a schedule. Errors: ConfigError{key, "source:line:column: key: message"} locating the
// offending value (an overlap: the `from` of the phase later in the file; a missing key: the
// phase's [[upstream.phase]] header); a TOML syntax error has field "schedule".
Result<Schedule, ConfigError> ParseSchedule(std::string_view toml_text, std::string_view source);
// Reads and parses `path`. A directory, or a file that cannot be opened or read, is an error
// naming the path and the reason.
Result<Schedule, ConfigError> LoadScheduleFile(const std::string& path);

}  // namespace fusebox::vpic_sim

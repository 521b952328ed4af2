// apps/fusebox-sim/sweep.h
//
// `fusebox-sim sweep`: runs one scenario once per point of a parameter grid, on a pool of
// threads, each point with its own breaker and clock (Simulate() shares nothing).
//
// A parameter is `KEY=FROM:TO:STEP` (FROM and TO included; TO - FROM must be a whole number of
// STEPs; durations step in the unit given, e.g. `breaker.cooldown=1s:30s:1s`) or a list
// `KEY=V1,V2,...` (any kind, e.g. `breaker.half_open_max_probes=1,10,10000` or
// `breaker.trip=consecutive,count_window`). Points come in grid order, the last parameter varying
// fastest; results do not depend on the number of threads.
//
// Thread safety: RunSweep() blocks; the progress callback runs on the calling thread.
//
// Example:
//   auto param = fusebox::sim::ParseParam("breaker.cooldown=1s:30s:1s");
//   auto sweep = fusebox::sim::RunSweep(file, {}, {*param}, {.jobs = 4});
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "fusebox/status.h"
#include "scenario.h"
#include "simulator.h"

namespace fusebox::sim {

struct ParamValue {
  std::string override_text;  // what BuildScenario applies ("1500000us", "10", "true")
  std::string csv;            // durations in seconds, strings unquoted
  std::string json;           // durations in seconds, strings quoted
  double numeric = 0.0;       // for plots; durations in seconds; bools 0/1
  bool is_numeric = true;
};

struct ParamSpec {
  std::string key;  // as given
  KeyKind kind = KeyKind::kNumber;
  std::vector<ParamValue> values;
};

// Parses one `KEY=FROM:TO:STEP` or `KEY=V1,V2,...`; the error names the problem.
Result<ParamSpec, std::string> ParseParam(std::string_view text);

struct SweepPoint {
  std::vector<std::size_t> value_index;  // one per ParamSpec
  Counters counters;
  std::size_t transitions = 0;
  TripPolicy trip = TripPolicy::kConsecutive;  // the point's breaker.trip
};

struct SweepResult {
  std::vector<ParamSpec> params;
  std::vector<SweepPoint> points;  // grid order
};

struct SweepOptions {
  unsigned jobs = 1;                    // threads, >= 1
  std::size_t max_points = 10'000'000;  // refuses larger grids
  // Called on the calling thread about ten times a second with (done, total).
  std::function<void(std::size_t, std::size_t)> progress;
};

// The number of points of the grid (the product of the value counts).
std::size_t GridSize(const std::vector<ParamSpec>& params);

// Runs every point. Fails with the first (in grid order) point's load error, e.g. a value the
// breaker refuses, or a simulation error.
Result<SweepResult, std::string> RunSweep(const ScenarioFile& file, const BuildOptions& base,
                                          std::vector<ParamSpec> params,
                                          const SweepOptions& options);

// A note per swept parameter that changed nothing: every point equals (counters and number of
// transitions) the points that differ from it in that parameter alone. When the trip policy in
// force at every point explains it (failure_threshold under a window policy; window_size,
// minimum_calls or a rate threshold under the consecutive policy) the note says so:
//   "breaker.failure_threshold has no effect under trip = count_window: every row is identical"
// otherwise "breaker.cooldown changed nothing here: every row is identical". With several
// parameters "every row" becomes "the rows that differ only in it are identical". Empty when
// every parameter changed something (or took a single value).
std::vector<std::string> NoEffectNotes(const SweepResult& sweep);

// The sweep's progress bar ("[####....] 3/4 points"), one line redrawn in place on `out` (a
// terminal). Close() it before printing anything else: a complete bar stays as a line of its
// own; an unfinished one (the sweep failed) is wiped, so that the error starts a clean line.
class ProgressLine {
 public:
  explicit ProgressLine(std::FILE* out) : out_(out) {}
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  ~ProgressLine() { Close(); }

  void Draw(std::size_t done, std::size_t total);
  void Close();

 private:
  std::FILE* out_;
  std::size_t width_ = 0;  // 0: nothing on the line (never drawn, or closed)
  bool complete_ = false;
};

}  // namespace fusebox::sim

// apps/fusebox-sim/report.h
//
// The outputs of `fusebox-sim` (docs/scenario-format.md, "Output"): a run as text (the lesson's
// transition list with each transition's cause, then the counters), as JSON (`{"seed",
// "transitions", "counters", ...}`) or as CSV (`t,from,to`); a sweep as CSV (the swept keys, then
// the counters) or JSON (`{"points":
// ...}`). Times are seconds with microsecond precision ("64.02"). The JSON adds keys beyond the
// contract (a transition's `cause`; counters `late`, `relapses`, `max_in_flight`, and those
// of CounterColumns when a run has them; `name`, `streams`, `variants`) and renames none.
//
// Thread safety: pure functions.
//
// Example:
//   std::string text = fusebox::sim::RunText(result);
//   fmt::print("{}", text);
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "simulator.h"
#include "sweep.h"

namespace fusebox::sim {

// The counters that only some scenarios have: a report shows one when any of its runs has it,
// after the others, so that the outputs of the other scenarios stay as they were.
struct CounterColumns {
  bool recovering = false;  // rejected_recovering: a run's breaker has a recovery_ramp
  bool refused = false;     // refused: a run has a refuse phase
  bool overloaded = false;  // overloaded: a run has a concurrency limit
  bool throttled = false;   // throttled: a run has a throttle

  CounterColumns& operator|=(const CounterColumns& other) noexcept {
    recovering = recovering || other.recovering;
    refused = refused || other.refused;
    overloaded = overloaded || other.overloaded;
    throttled = throttled || other.throttled;
    return *this;
  }
};

// The columns a run's counters call for; those of any point of a sweep.
CounterColumns ColumnsOf(const Counters& counters);
CounterColumns ColumnsOf(const SweepResult& sweep);

// The counter names, in output order: the contract's, then the extras, then those of `columns`.
std::vector<std::string_view> CounterNames(CounterColumns columns = {});

// The counters' values as text, in CounterNames(columns) order (recovery_delay_s empty when
// absent).
std::vector<std::string> CounterValues(const Counters& counters, CounterColumns columns = {});

// Why a transition happened, for a person: "5 consecutive failures", "failure rate 62.5% >= 50%
// over 8 calls", "slow-call rate 100% >= 80% over 10 calls", "cooldown elapsed (10.0 s)",
// "probe failed", "probe timed out", "probe succeeded" ("3 probes succeeded"), "operator",
// "reconfigured", "failed or slow call during the recovery ramp", "adopted from a peer".
std::string CauseText(const Transition& transition);

// `runs` holds the base first, then the variants (empty when the file has none). Each transition
// line ends with its CauseText. With more than one run, a "=== side by side ===" RunsTable
// (kText) ends the text.
std::string RunText(const std::vector<RunResult>& runs, bool with_headers);
std::string RunJson(const RunResult& base, const std::vector<RunResult>& variants);

// The runs side by side (the base and its variants): one column per run, one row per figure a
// person tuning a breaker compares, from the counters and the transitions. Rows: first OPEN (s)
// ("never"), times opened, last CLOSED (s) (the last transition into CLOSED, "-" without one),
// recovery_delay (s), served, failed, timed out, slow, refused by the breaker and each of its
// codes, upstream calls, upstream calls while failing (Counters::allowed_while_failing), probes
// (wasted), max in flight; relapses when a run has one, and the rows of CounterColumns
// when a run has them. kText aligns the columns under a header row ("run", then the names);
// kMarkdown is a GitHub table, numbers right-aligned.
enum class TableStyle : std::uint8_t { kText, kMarkdown };
std::string RunsTable(const std::vector<RunResult>& runs, TableStyle style);
std::string RunCsv(const RunResult& run);

std::string SweepCsv(const SweepResult& sweep);
// The sweep as a table for a person: the swept keys, then the counters, one row per point, each
// column headed by its name and, on the line below, its unit: "(s)" or "(ms)" for durations
// (milliseconds when every value is below a second), "(%)" for the rate thresholds and
// cooldown_jitter (shown as percentages), "(calls/s)" for traffic rates, "(calls)" for counts of
// calls, "(x)" for cooldown_multiplier; recovery_delay_s is "recovery_delay" in "(s)", "-" when
// there is none. A "note: ..." line follows for each NoEffectNotes (sweep.h).
std::string SweepText(const SweepResult& sweep);
std::string SweepJson(const SweepResult& sweep);

// A JSON string literal.
std::string JsonQuote(std::string_view text);

}  // namespace fusebox::sim

// apps/fusebox-sim/simulator.h
//
// Runs a Scenario in virtual time against the real fusebox::CircuitBreaker.
//
// The simulator is a discrete-event loop over integer microseconds. Each arrival sets a
// testing::ManualClock to its instant and asks for admission (below); each admitted call's fate
// is decided by the upstream mode in force at its admission (upstream_model.h,
// docs/scenario-format.md) and its completion sets the clock to its instant and records the
// outcome. Events at the same instant run completions first (in admission order), then
// arrivals in stream order. A call whose time to answer is >= call_timeout completes at
// start + call_timeout as a timeout. A queue upstream's call waits for a server
// (server_queue.h): it completes when its service ends, or at its budget if that comes first.
//
// Each arrival passes the pieces in front of the upstream in the library's own order,
// fusebox::Admit (upstream_guards.h): a scenario's [limit] (the library's Bulkhead or
// AdaptiveLimit, on the same clock) first, refused: OVERLOADED, counted in `overloaded`; then the
// breaker; then a throttle (THROTTLED, counted in `throttled`). An admitted call's outcome goes to
// every piece through its Admission. Without a [limit] the breaker alone is asked (Admit's answer,
// without an Admission per call); the active prober's probes always ask it alone.
//
// Nothing here decides a breaker rule: transitions come from the breaker's TransitionEvents, a
// call's slowness and lateness from its OutcomeEvent, a probe from Permit::is_probe(); the
// simulator only counts.
//
// Thread safety: Simulate() is reentrant; each call owns its breaker and clock, so a sweep runs
// many at once on different threads.
//
// Cost: no heap allocation per event once the in-flight pool and the completion heap have grown
// to the peak number of calls in flight (the transition list grows with the transitions).
//
// Example:
//   auto result = fusebox::sim::Simulate(scenario);
//   if (!result) die(result.error());
//   for (const auto& t : result->transitions) fmt::print("{} -> {}\n", ToString(t.from),
//                                                         ToString(t.to));
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fusebox/events.h"
#include "fusebox/outcome.h"
#include "fusebox/status.h"
#include "scenario.h"

namespace fusebox::sim {

struct Transition {
  Micros t = 0;  // the TransitionEvent's instant
  State from = State::kClosed;
  State to = State::kClosed;
  TransitionCause cause = TransitionCause::kOperator;
  // The figures behind the cause, for the trace (CauseText in report.h): what the breaker's
  // Snapshot() showed to the listener, and its config.
  //   consecutive_failures: judged = bad = failure_threshold (the run that reached it);
  //   failure_rate, slow_call_rate: the window's calls and its failures (or slow calls), and the
  //     rate threshold;
  //   cooldown_elapsed: the cooldown (or active probe interval) that elapsed;
  //   probes_succeeded: judged = bad = the good probes it took.
  std::uint64_t judged = 0;
  std::uint64_t bad = 0;
  double threshold = 0.0;
  Micros waited = 0;
  bool slow_counts = false;  // consecutive: slow calls join the run (slow_call_duration <
                             // call_timeout), so the run was of failed or slow calls
};

// The contract's counters (docs/scenario-format.md, "Output") plus a few extras.
struct Counters {
  std::uint64_t calls = 0;                // arrivals
  std::uint64_t allowed = 0;              // admitted (each one an upstream call)
  std::uint64_t rejected_open = 0;        // CIRCUIT_OPEN
  std::uint64_t rejected_probe_cap = 0;   // CIRCUIT_HALF_OPEN (batch in HALF_OPEN included)
  std::uint64_t rejected_recovering = 0;  // CIRCUIT_RECOVERING (the recovery ramp)
  bool recovery_ramp = false;   // the breaker had a recovery_ramp: reports show the counter above
  std::uint64_t succeeded = 0;  // slow successes included
  std::uint64_t failed = 0;     // timeouts included
  std::uint64_t timeouts = 0;   // aborted at call_timeout
  std::uint64_t slow = 0;       // every slow call (the OutcomeEvent's flag)
  std::uint64_t probes = 0;     // admitted in HALF_OPEN (Permit::is_probe)
  std::uint64_t wasted_probes = 0;  // probes that failed, timed out or were slow
  // From the latest `to` of the non-ok phases to the first transition into CLOSED at or after it.
  std::optional<Micros> recovery_delay;
  // Extras.
  std::uint64_t late = 0;           // outcomes of calls admitted in an earlier generation
  std::uint64_t relapses = 0;       // collapses of a fragile or warming upstream
  std::uint64_t max_in_flight = 0;  // peak number of upstream calls at once
  std::uint64_t refused = 0;        // calls a refuse upstream refused (counted in failed too)
  bool refuse_mode = false;      // the scenario has a refuse phase: reports show the counter above
  std::uint64_t overloaded = 0;  // arrivals the [limit] refused (OVERLOADED), before the breaker
  bool limited = false;  // the scenario has a concurrency limit: reports show the counter above
  std::uint64_t throttled = 0;  // arrivals the throttle refused (THROTTLED), after the breaker
  bool throttling = false;      // the scenario has a throttle: reports show the counter above
  // Calls admitted while a phase whose mode is not ok was in force (probes included): the
  // upstream calls the breaker let through while the upstream was failing. Shown only in the
  // runs' side-by-side table (RunsTable in report.h).
  std::uint64_t allowed_while_failing = 0;
};

struct StreamCounters {
  std::string name;
  Priority priority = Priority::kInteractive;
  std::uint64_t calls = 0;
  std::uint64_t allowed = 0;
  std::uint64_t rejected_open = 0;
  std::uint64_t rejected_probe_cap = 0;
  std::uint64_t probes = 0;
};

// Calls per time bin, by arrival time, for plots.
struct Timeline {
  struct Bin {
    std::uint32_t succeeded = 0;       // fast successes
    std::uint32_t slow_succeeded = 0;  // successes the breaker called slow
    std::uint32_t failed = 0;          // timeouts not included here
    std::uint32_t timeouts = 0;
    std::uint32_t rejected_open = 0;
    std::uint32_t rejected_probe_cap = 0;
    std::uint32_t rejected_recovering = 0;
    std::uint32_t overloaded = 0;  // refused by the [limit]
    std::uint32_t throttled = 0;   // refused by the throttle
    std::uint32_t refused = 0;     // admitted, then refused by a refuse upstream (in failed too)
    std::uint32_t probes = 0;
    std::uint32_t max_in_flight = 0;  // the most upstream calls at once during the bin
  };
  Micros bin_width = 0;
  std::vector<Bin> bins;  // bin i covers [i * bin_width, (i + 1) * bin_width) of [0, duration)
};

// One call, admitted at `start`, ended at `end` (SimOptions::record_calls).
struct CallRecord {
  Micros start = 0;
  Micros end = 0;
  Outcome outcome = Outcome::kSuccess;
  bool refused = false;  // refused by a refuse upstream
};

struct RunResult {
  std::string name;
  std::uint64_t seed = 0;
  std::vector<Transition> transitions;
  Counters counters;
  std::vector<StreamCounters> streams;
  Micros end = 0;     // the instant of the last event
  Timeline timeline;  // empty unless SimOptions::record_timeline
  // The fragile (or warming) upstream's collapses, [from, to) (clipped to their phase).
  std::vector<std::pair<Micros, Micros>> collapses;
  // Every admitted call, in the order they ended; empty unless SimOptions::record_calls. The
  // active prober's probes are not calls and are not recorded.
  std::vector<CallRecord> calls;
  // The [limit]'s value over time: (instant, limit from then on), from (0, the initial limit);
  // empty without a [limit] or unless SimOptions::record_timeline.
  std::vector<std::pair<Micros, std::uint32_t>> limit_changes;
};

struct SimOptions {
  bool record_timeline = false;
  bool record_calls = false;  // RunResult::calls (for tests and measurements)
  // Upper bound of timeline bins; the width is rounded up to a readable step (1-2-5 series).
  std::size_t max_bins = 240;
  // A run stops with an error when more calls than this are in flight at once (memory bound).
  double max_calls_in_flight = kMaxCallsInFlight;
};

// Runs the scenario. Fails if the breaker refuses the config or answers outside its contract
// (e.g. an unexpected rejection code), or when more than options.max_calls_in_flight calls are
// in flight at once; the message says which.
Result<RunResult, std::string> Simulate(const Scenario& scenario, const SimOptions& options = {});

// Time from the latest `to` among phases whose mode is not ok to the first transition into
// CLOSED at or after that instant; nullopt when there is none.
std::optional<Micros> RecoveryDelay(const Scenario& scenario,
                                    const std::vector<Transition>& transitions);

}  // namespace fusebox::sim

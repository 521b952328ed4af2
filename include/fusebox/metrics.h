// fusebox/metrics.h
//
// A point-in-time view of one breaker: its state, totals since creation, and the trip window's
// current rates. Totals are monotonic (Prometheus counters); operator `Reset()` clears the trip
// state, never the totals.
//
// Invariants a snapshot keeps (taken under the breaker's lock, from counters that every thread
// updates on its own shard, so a snapshot taken while calls run may lag those calls by a few
// increments but never shows a total decreasing):
//   calls == allowed + rejected_open + rejected_half_open + rejected_recovering
//   succeeded + failed + ignored <= allowed   (the rest are in flight)
//   timeouts <= failed, wasted_probes <= probes
//
// Example:
//   fusebox::MetricsSnapshot m = breaker.Snapshot();
//   std::string text;
//   fusebox::AppendPrometheus(text, m);   // fusebox_calls_total{breaker="vpic",...} ...
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "fusebox/clock.h"
#include "fusebox/events.h"

namespace fusebox {

struct MetricsSnapshot {
  std::string name;
  State state = State::kClosed;
  std::uint64_t generation = 0;
  TimePoint taken_at{};

  // Totals since creation (late outcomes included).
  std::uint64_t calls = 0;
  std::uint64_t allowed = 0;
  std::uint64_t rejected_open = 0;        // CIRCUIT_OPEN
  std::uint64_t rejected_half_open = 0;   // CIRCUIT_HALF_OPEN (probe cap, batch in HALF_OPEN)
  std::uint64_t rejected_recovering = 0;  // CIRCUIT_RECOVERING (recovery ramp)
  std::uint64_t succeeded = 0;            // slow successes included
  std::uint64_t failed = 0;               // timeouts included
  std::uint64_t timeouts = 0;
  std::uint64_t slow = 0;  // every slow call, timeouts included
  std::uint64_t ignored = 0;
  std::uint64_t late = 0;           // outcomes of calls admitted in an earlier generation
  std::uint64_t probes = 0;         // calls admitted in HALF_OPEN
  std::uint64_t wasted_probes = 0;  // probes that failed, timed out or were slow
  std::uint64_t transitions = 0;
  std::uint64_t opened = 0;  // transitions into OPEN

  // The trip state now.
  std::uint32_t consecutive_failures = 0;  // the run (consecutive policy)
  std::uint64_t window_calls = 0;          // outcomes in the window (window policies)
  std::uint64_t window_failures = 0;
  std::uint64_t window_slow = 0;
  std::uint64_t inflight_slow = 0;  // calls running past slow_call_duration (if enabled)
  double failure_rate = 0.0;        // window_failures / window_calls, 0 when empty
  double slow_call_rate = 0.0;
  std::uint32_t probes_in_flight = 0;
  std::uint32_t good_probes = 0;
  Duration retry_after{0};       // OPEN: time left until a probe may be admitted
  Duration current_cooldown{0};  // the cooldown of the current (or last) OPEN period
  // The recovery ramp: whether one runs now, the share of its length elapsed (0 to 1; 0 when
  // none runs) and the share of calls it admits now (1 when none runs).
  bool recovering = false;
  double recovery_progress = 0.0;
  double recovery_share = 1.0;
};

// Appends the snapshot in Prometheus text exposition format, every series labelled
// breaker="<name>". Emits the HELP/TYPE lines when `with_help` (once per scrape, for the first
// breaker). Metric names: fusebox_state{state=...} (1 for the current state), fusebox_calls_total,
// fusebox_rejections_total{reason=...}, fusebox_outcomes_total{outcome=...},
// fusebox_slow_calls_total, fusebox_late_outcomes_total, fusebox_probes_total,
// fusebox_wasted_probes_total, fusebox_transitions_total, fusebox_failure_rate,
// fusebox_slow_call_rate, fusebox_retry_after_seconds, fusebox_recovering,
// fusebox_recovery_progress.
void AppendPrometheus(std::string& out, const MetricsSnapshot& snapshot, bool with_help = true);

}  // namespace fusebox

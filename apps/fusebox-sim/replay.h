// apps/fusebox-sim/replay.h
//
// Replays a recorded incident (replay_log.h) through a candidate gateway configuration
// (gateway_config.h): the same arrivals, at the same instants, ask the library's own pieces in
// the gateway's order (fusebox::Admit: the cap, the `vpic` breaker, the throttle; the real
// fusebox::CircuitBreaker on a testing::ManualClock), and each call the candidate lets through
// gets a fate:
//   - a request that made its own call in the log gets that call's (its latency and outcome,
//     cut at the candidate's call_timeout);
//   - any other call (one the recorded breaker refused, a probe at another instant) gets what
//     vPIC did then, rebuilt from the calls observed around it: the nearest observation within
//     kObservationMatch, else the two observations on either side. Where they disagree, vPIC was
//     not observed when it changed (the recorded breaker kept calls away): the optimistic reading
//     takes the better of the two, the pessimistic one the worse, so the probes' results bound
//     both. A timeout observed is censored (vPIC took at least that): the pessimistic reading
//     reads it as a hang, the optimistic one as an answer just then.
// A request for a VIN whose call is in flight joins it (single-flight), as in the gateway. With
// probe_mode = active the gateway's prober is simulated as fusebox-sim's run does; a probe the log
// shows starting up to 100 ms after one is due is taken to be it (the gateway's prober runs on
// its event loop, late when the loop is busy).
//
// Counters: what users got (refused, served, served a stale or offline copy, failed, waited on
// a slow or hung call), what vPIC got (calls, probes included; calls while it was failing: a
// failure, a timeout or a slow answer: of ReplayOptions::slow or more), and the recovery delay
// after each revival: from vPIC's revival (the first good call after a bad run of the log's calls;
// the optimistic reading: just after the last bad one) to the breaker's CLOSED.
//
// Thread safety: Replay() is reentrant (each run owns its breaker and clock); the advisor runs
// many at once on one Incident.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fusebox/status.h"
#include "gateway_config.h"
#include "replay_log.h"
#include "simulator.h"

namespace fusebox::sim {

// An observation this close to a call's start is what vPIC did to it.
inline constexpr Micros kObservationMatch = 250'000;

enum class Reading : std::uint8_t { kOptimistic, kPessimistic };
std::string_view ToString(Reading reading) noexcept;  // "optimistic", "pessimistic"

struct ReplayCounts {
  std::uint64_t requests = 0;            // decode requests, the log's
  std::uint64_t refused = 0;             // by the breaker, the cap or the throttle
  std::uint64_t refused_open = 0;        // CIRCUIT_OPEN
  std::uint64_t refused_half_open = 0;   // CIRCUIT_HALF_OPEN
  std::uint64_t refused_recovering = 0;  // CIRCUIT_RECOVERING
  std::uint64_t overloaded = 0;          // OVERLOADED (the cap)
  std::uint64_t throttled = 0;           // THROTTLED
  std::uint64_t served = 0;              // a fresh decode: live, or from the cache
  std::uint64_t stale_served = 0;        // a stale or offline copy instead
  std::uint64_t failed = 0;              // a failed or timed-out live decode
  std::uint64_t waited = 0;       // users whose call took slow_call_duration or more, or timed out
  std::uint64_t slow_served = 0;  // of those, the ones served (a slow success)
  std::uint64_t upstream_calls = 0;  // calls sent to vPIC, probes included
  std::uint64_t probes = 0;
  std::uint64_t calls_while_failing = 0;  // calls that failed, timed out or were slow
};

// One revival of vPIC and how long the breaker took to close after it.
// The users a run hurt: refused, failed, or served only after a slow call.
inline std::uint64_t UsersHurt(const ReplayCounts& c) {
  return c.refused + c.failed + c.slow_served;
}

struct Revival {
  Micros earliest = 0;          // just after the last bad call of the run
  Micros latest = 0;            // the first good call after it
  std::optional<Micros> delay;  // to the breaker's CLOSED; nullopt: it never closed
};

struct ReplayRun {
  std::string name;
  Reading reading = Reading::kPessimistic;
  std::vector<Transition> transitions;  // t from the incident's origin
  ReplayCounts counts;
  std::vector<Revival> revivals;
  Micros total_recovery_delay = 0;  // the sum of the revivals' delays (a never: to the log's end)
  bool read_gaps = false;  // a call fell where the readings differ (else both are this run)
  Timeline timeline;       // SimOptions-like: empty unless ReplayOptions::record_timeline
};

struct ReplayOptions {
  Reading reading = Reading::kPessimistic;
  // What counts as a slow answer in the counters (users who waited, calls to a failing vPIC) and
  // the readings; nullopt: the candidate's slow_call_duration. The advisor holds it to one value
  // for every candidate, so that a candidate's own setting does not change how it is judged.
  std::optional<Duration> slow;
  bool record_timeline = false;
  std::size_t max_bins = 240;
};

// The revivals of vPIC in the incident: each run of bad calls (failed, timed out, or answered in
// `slow` or more) followed by a good one.
std::vector<Revival> FindRevivals(const Incident& incident, Duration slow);

Result<ReplayRun, std::string> Replay(const Incident& incident, const GatewaySettings& settings,
                                      const std::vector<Revival>& revivals,
                                      const ReplayOptions& options = {});

// What the log says the gateway did, in the replay's terms (transitions, counters, revivals and
// their delays after the logged transitions; a timeline when asked).
// `slow`: the recorded configuration's slow_call_duration (what counts as waiting).
ReplayRun RecordedRun(const Incident& incident, const std::vector<Revival>& revivals, Duration slow,
                      const ReplayOptions& options = {});

}  // namespace fusebox::sim

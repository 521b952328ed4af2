// apps/fusebox-sim/replay_log.h
//
// A recorded incident: vin-gateway's JSON log (`--log-format json`: the access log's request
// lines, the `breaker vpic: FROM -> TO (cause)` transition events, the gateway's probes and the
// `upstream_call` lines of calls that ended after their request was answered; docs/gateway.md,
// "Logs") read into what a replay needs:
//
//   - the arrivals: every decode request that reached the pieces in front of vPIC (the
//     concurrency cap, the breaker, the throttle): those that made their own upstream call
//     (`upstream: "call"`), joined another's (`"joined"`), or were refused there (CIRCUIT_OPEN,
//     CIRCUIT_HALF_OPEN, CIRCUIT_RECOVERING, OVERLOADED, THROTTLED); each at the instant it asked
//     (a call's start: its line's time less `upstream_ms`; else its line's time less
//     `elapsed_ms`), with the fate of its own call when it made one;
//   - the observations of vPIC: every upstream call that ended (users' calls and the gateway's
//     probes), its start, latency and outcome; a timeout is censored (vPIC took at least that);
//   - the transitions the gateway logged, and what the gateway recorded (the counters the replay
//     reports, counted from the log's statuses).
// A log from before the `upstream` field is read too: a line with `upstream_ms` is then taken as
// its own call (a single-flight follower cannot be told from its leader there).
//
// Every other request (fresh cache hits, invalid VINs, rate-limited clients, other routes) is
// counted and kept out of the replay: no breaker setting changes it.
//
// Streams its input (one line at a time); a malformed line is reported with its number and
// skipped, and the rest is read.
//
// Time: microseconds from `origin`, the earliest instant of the incident (an arrival may come
// before the first line, whose `ts` is when the request ended); `first_line` is the first
// line's instant, the zero of every time the replay reports.
//
// Thread safety: an Incident is immutable once read; replays read it from several threads.
#pragma once

#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <vector>

#include "fusebox/events.h"
#include "fusebox/outcome.h"
#include "fusebox/status.h"
#include "scenario.h"

namespace fusebox::sim {

// One call of vPIC seen in the log.
struct Observation {
  Micros start = 0;
  Micros latency = 0;
  Outcome outcome = Outcome::kSuccess;  // kTimeout: censored (vPIC took at least `latency`)
  bool probe = false;                   // the gateway's own probe
};

enum class ArrivalKind : std::uint8_t {
  kCall,            // made its own upstream call (its fate in `observation`, or unknown)
  kJoined,          // joined another request's call (single-flight)
  kBreakerRefused,  // CIRCUIT_OPEN, CIRCUIT_HALF_OPEN, CIRCUIT_RECOVERING
  kGuardRefused,    // OVERLOADED, THROTTLED
};

// How the gateway refused an arrival (kBreakerRefused, kGuardRefused).
enum class Refusal : std::uint8_t { kNone, kOpen, kHalfOpen, kRecovering, kOverloaded, kThrottled };

struct LoggedArrival {
  Micros t = 0;                   // when it asked
  std::uint64_t vin = 0;          // hash of the VIN (or "batch:N"); single-flight's key
  std::int64_t observation = -1;  // index into Incident::observations of its own call; -1: none
  ArrivalKind kind = ArrivalKind::kCall;
  Refusal refusal = Refusal::kNone;  // the log's refusal
  bool batch = false;                // a batch (batch priority)
  bool fallback = false;  // a stale or offline copy was there for it (served when refused)
};

struct LoggedTransition {
  Micros t = 0;
  State from = State::kClosed;
  State to = State::kClosed;
  std::string cause;  // as logged ("consecutive_failures")
};

// What the gateway did, counted from the log (the replay's counters, ReplayCounts).
struct RecordedCounts {
  std::uint64_t requests = 0;            // decode requests (single and batch; not the probes)
  std::uint64_t refused = 0;             // refused by the breaker, the cap or the throttle
  std::uint64_t refused_open = 0;        // CIRCUIT_OPEN
  std::uint64_t refused_half_open = 0;   // CIRCUIT_HALF_OPEN
  std::uint64_t refused_recovering = 0;  // CIRCUIT_RECOVERING
  std::uint64_t overloaded = 0;          // OVERLOADED
  std::uint64_t throttled = 0;           // THROTTLED
  std::uint64_t served = 0;              // a fresh decode: live, or from the cache within its TTL
  std::uint64_t stale_served = 0;        // a stale or offline copy in place of a live decode
  std::uint64_t failed = 0;              // UPSTREAM_SLOW, UPSTREAM_ERROR, LOCAL_OVERLOADED
  std::uint64_t upstream_calls = 0;      // calls sent to vPIC, the probes included
  std::uint64_t probes = 0;              // the gateway's own probes (and, passive, none)
};

struct LineError {
  std::uint64_t line = 0;  // 1-based
  std::string message;
};

struct Incident {
  std::string name;                           // the log's file name
  std::int64_t origin_unix_us = 0;            // the wall-clock instant of t = 0 (UTC, microseconds)
  Micros first_line = 0;                      // the first line's instant
  Micros end = 0;                             // the last instant of the log
  std::vector<LoggedArrival> arrivals;        // by t (then line order)
  std::vector<Observation> observations;      // by start
  std::vector<LoggedTransition> transitions;  // of the breaker named in ReadOptions
  RecordedCounts recorded;
  // Requests kept out of the replay (no breaker setting changes them), by what they got.
  std::uint64_t other_served = 0;        // fresh cache hits
  std::uint64_t other_stale_served = 0;  // (none expected: stale answers follow a refusal)
  std::uint64_t other_requests = 0;      // all of them
  bool offline_answers = false;          // the gateway served offline decodes (it had a snapshot)
  std::uint64_t lines = 0;               // lines read (blank ones included)
  std::uint64_t errors = 0;              // malformed lines, all of them
  std::vector<LineError> first_errors;   // the first kMaxLineErrors of them
  std::uint64_t unknown_fates = 0;       // own calls whose end the log never told
  // The gateway's breaker clock less the incident's time, modulo a second, in [0, 1 s): a time
  // window counts whole seconds of that clock, so a replay puts its seconds in the same phase.
  // From the gateway's "breaker vpic: clock at S s" line; 0 when the log has none.
  Micros clock_phase = 0;
};

inline constexpr std::size_t kMaxLineErrors = 100;

struct ReadOptions {
  std::string breaker = "vpic";  // whose transition events to read
};

// Reads a log from `in`; `name` labels it. Fails only when nothing of it could be read (no
// line parsed); malformed lines are in Incident::errors.
Result<Incident, std::string> ReadIncident(std::istream& in, const std::string& name,
                                           const ReadOptions& options = {});
Result<Incident, std::string> ReadIncidentFile(const std::string& path,
                                               const ReadOptions& options = {});

// "2024-05-01T12:34:56.789Z" (RFC 3339, UTC, any number of decimals) as microseconds since the
// Unix epoch; nullopt when malformed.
std::optional<std::int64_t> ParseTimestamp(std::string_view text);

}  // namespace fusebox::sim

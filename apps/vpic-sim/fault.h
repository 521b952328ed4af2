// apps/vpic-sim/fault.h
//
// What vpic-sim does to each decode request: the fault modes, how they are configured (flags,
// control JSON, TOML schedule), and the FaultEngine that turns "the fault in force now" into a
// Decision for one request.
//
//   ok         answer after `latency` (default 0)
//   error      fail with `status` (500, 502, 503, 504, or 429 with Retry-After) after `latency`
//   hang       read the request, never answer (until the client or the server closes)
//   slow       answer after `latency` (default 5 s): fixed, uniform or lognormal, seeded
//   reset      read the request, then close the connection with a TCP RST
//   garbage    200 whose body is not JSON
//   truncated  Content-Length larger than the body sent, then close
//   drip       send the answer `drip_bytes` bytes every `drip_interval` (default 4 per second)
//   flap       `every` requests answered ok, the next `every` fail with `status`, and so on
//   capacity   at most `capacity` requests in flight; one more gets 503, or, with `relapse` > 0,
//              collapses the service into `error` for `relapse` (like the fusebox-sim `fragile`
//              upstream; `fragile` is accepted as a name for capacity with relapse 5 s)
//
// Which fault is in force: a fault set at run time (POST /__control/faults) until a reset; else
// the schedule phase covering the time since start (or since the last reset); else the
// startup fault (flags).
//
// Thread safety: FaultSpec and Schedule are values. FaultEngine is not thread-safe: the server
// calls it from its one I/O thread. Time: the engine reads no clock; callers pass `now` (time
// since start, microseconds). Randomness: a SplitMix64 seeded from the constructor's seed.
//
// Example:
//   auto spec = ParseFaultJson(R"({"mode":"error","status":503})");
//   FaultEngine engine(FaultSpec{}, Schedule{}, /*seed=*/1);
//   engine.SetOverride(*spec);
//   Decision d = engine.Admit(/*now=*/0, /*in_flight=*/1);  // d.action == Action::kError
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "fusebox/random.h"
#include "fusebox/status.h"

namespace fusebox::vpic_sim {

// Durations and time since start, in microseconds.
using Micros = std::int64_t;
inline constexpr Micros kMicrosPerMilli = 1'000;
inline constexpr Micros kMicrosPerSecond = 1'000'000;

enum class FaultMode : std::uint8_t {
  kOk,
  kError,
  kHang,
  kSlow,
  kReset,
  kGarbage,
  kTruncated,
  kDrip,
  kFlap,
  kCapacity,
};

// "ok", "error", "hang", "slow", "reset", "garbage", "truncated", "drip", "flap", "capacity".
std::string_view ToString(FaultMode mode);
// The inverse of ToString; also accepts "fragile" (kCapacity). nullopt for anything else.
std::optional<FaultMode> ParseFaultMode(std::string_view name);

enum class LatencyDist : std::uint8_t { kFixed, kUniform, kLognormal };
// "fixed", "uniform", "lognormal".
std::string_view ToString(LatencyDist dist);

struct LatencySpec {
  LatencyDist dist = LatencyDist::kFixed;
  // fixed: the latency; lognormal: the median. Default 0; range [0, 1 h].
  Micros value = 0;
  // uniform: the range [min, max]; lognormal: max caps a draw (0 = no cap). Default 0; [0, 1 h].
  Micros min = 0;
  Micros max = 0;
  // lognormal: sigma of the underlying normal. Default 0.5; range [0, 10].
  double sigma = 0.5;

  friend bool operator==(const LatencySpec&, const LatencySpec&) = default;
};

struct FaultSpec {
  FaultMode mode = FaultMode::kOk;
  // Delay before the answer (ok, slow, flap, capacity), the failure (error), the reset, the
  // garbage, the truncated answer or the first dripped byte. Ignored by hang.
  LatencySpec latency;
  // error, flap and capacity's relapse: the HTTP status. Default 503; one of 429, 500, 502, 503,
  // 504.
  int status = 503;
  // Retry-After in whole seconds: default 1 with status 429, else unset (no header); [0, 86400].
  std::optional<int> retry_after_s;
  // flap: the run length of ok and of error answers. Default 5; range [1, 1000000].
  int every = 5;
  // capacity: requests in flight that are served. Default 1; range [1, 1000000].
  int capacity = 1;
  // capacity: how long one request over capacity collapses the service into error. Default 0
  // (no collapse: that request alone gets 503); range [0, 1 h].
  Micros relapse = 0;
  // drip: bytes sent per interval. Default 4; range [1, 65536].
  int drip_bytes = 4;
  // drip: the interval. Default 1 s; range [1 ms, 60 s].
  Micros drip_interval = kMicrosPerSecond;

  // The first field outside its range (named as in the TOML schedule), or nullopt.
  std::optional<ConfigError> Validate() const;

  friend bool operator==(const FaultSpec&, const FaultSpec&) = default;
};

// How fields are spelled where a setting came from: JSON uses `latency_ms`, flags `--latency`,
// TOML `latency`. Errors name the field the way the user wrote it.
enum class Syntax : std::uint8_t { kJson, kFlags, kToml };
// `canonical` is the TOML spelling ("latency", "retry_after", "drip_interval", ...).
std::string FieldName(std::string_view canonical, Syntax syntax);

// A fault as given, before defaults: every unset field takes its mode's default.
struct FaultOptions {
  std::string mode = "ok";
  std::optional<std::int64_t> status;
  std::optional<std::int64_t> retry_after_s;
  std::optional<Micros> latency;
  std::optional<std::string> latency_dist;
  std::optional<Micros> latency_min;
  std::optional<Micros> latency_max;
  std::optional<double> latency_sigma;
  std::optional<std::int64_t> every;
  std::optional<std::int64_t> capacity;
  std::optional<Micros> relapse;
  std::optional<std::int64_t> drip_bytes;
  std::optional<Micros> drip_interval;
};

// Applies the mode's defaults (slow: 5 s; fragile: relapse 5 s; 429: Retry-After 1; uniform when
// only latency_min/latency_max are given) and validates. Errors name fields per `syntax`.
Result<FaultSpec, ConfigError> BuildFaultSpec(const FaultOptions& options, Syntax syntax);

// The body of POST /__control/faults: a JSON object with "mode" and any of "status",
// "retry_after_s", "latency_ms", "latency_dist", "latency_min_ms", "latency_max_ms",
// "latency_sigma", "every", "capacity", "relapse_ms", "drip_bytes", "drip_interval_ms".
// Unknown fields, wrong types, out-of-range values and a field given twice ({"mode":"ok",
// "mode":"hang"}) are errors naming the field; a body that is not a JSON object is an error with
// field "body".
Result<FaultSpec, ConfigError> ParseFaultJson(std::string_view body);
// The same fields, all present (retry_after_s only when set); ParseFaultJson reads it back.
boost::json::object FaultSpecToJson(const FaultSpec& spec);

// "250ms", "1.5s", "2m", "300us", or a plain number of seconds ("3", "0.25"); rounded to the
// nearest microsecond. nullopt when malformed or negative.
std::optional<Micros> ParseDuration(std::string_view text);

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

// Parses a schedule: the `[upstream]` table and its `[[upstream.phase]]` array of a fusebox-sim
// scenario (docs/vpic-sim.md), with vpic-sim's extra phase keys. The scenario's other top-level
// keys (seed, duration, name, breaker, traffic, variant) are ignored, so a scenario file works as
// is. Unknown keys, bad values, overlaps and to <= from are errors whose message starts with
// "source:line:column: key: " locating the offending value (an overlap: the `from` of the phase
// that starts later; a missing key: the phase's [[upstream.phase]] header).
Result<Schedule, ConfigError> ParseSchedule(std::string_view toml_text, std::string_view source);
// Reads and parses `path`. A directory, or a file that cannot be opened or read, is an error
// naming the path and the reason.
Result<Schedule, ConfigError> LoadScheduleFile(const std::string& path);

// What the server does with one request.
enum class Action : std::uint8_t {
  kAnswer,     // the real answer, after `delay`
  kError,      // `status` with an error body, after `delay`
  kHang,       // never answer
  kReset,      // TCP RST after `delay`
  kGarbage,    // 200 with a non-JSON body, after `delay`
  kTruncated,  // the answer cut short, after `delay`
  kDrip,       // the answer, `drip_bytes` per `drip_interval`, after `delay`
  kReject,     // capacity exceeded: `status` (503) at once
};

struct Decision {
  Action action = Action::kAnswer;
  Micros delay = 0;
  int status = 200;
  std::optional<int> retry_after_s;
  int drip_bytes = 0;
  Micros drip_interval = 0;
  // The fault served, as counted in /__control/stats: one of FaultLabels().
  std::string_view label = "ok";
};

// "ok", "slow", "error", "hang", "reset", "garbage", "truncated", "drip", "capacity_rejected".
const std::vector<std::string_view>& FaultLabels();

class FaultEngine {
 public:
  FaultEngine(FaultSpec startup, Schedule schedule, std::uint64_t seed);

  // Decides the fate of a request admitted at `now` while `in_flight` requests (this one
  // included) are being handled.
  Decision Admit(Micros now, std::int64_t in_flight);

  // Puts `spec` in force until the next Reset (flap counts and relapse start afresh).
  void SetOverride(const FaultSpec& spec);
  // Clears the override and restarts the schedule: its phases count from `now`.
  void Reset(Micros now);

  // The fault in force at `now`, and where it comes from: "control", "schedule phase N" (1-based)
  // or "startup".
  const FaultSpec& Effective(Micros now, std::string* source) const;

 private:
  Micros SampleLatency(const LatencySpec& latency);
  std::int64_t ActiveKey(Micros now) const;

  FaultSpec startup_;
  Schedule schedule_;
  std::optional<FaultSpec> override_;
  std::int64_t override_generation_ = 0;
  Micros origin_ = 0;
  SplitMix64Random random_;
  // The state of the fault in force, reset whenever another one takes over.
  std::int64_t active_key_ = -1;
  std::uint64_t flap_count_ = 0;
  std::optional<Micros> relapse_until_;
};

}  // namespace fusebox::vpic_sim

// apps/vpic-sim/fault_spec.h
//
// What a fault is, and the one table of its settings. A fault is one of these modes:
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
//   queue      `capacity` requests served at once, each for `latency`; the others wait in
//              arrival order for a server (a saturated service: latency grows with load), at
//              most `queue_limit` of them (default: no bound; one more gets 503); a request
//              whose client leaves while it waits leaves the queue, no work done for it (one
//              being served keeps its server to the end of its service)
//   interim    one answer in `every` (default 1: all) is preceded by an informational answer
//              (`interim_status`, default 103 Early Hints) sent at once; the answer follows after
//              `latency` (a CDN's early hints, a server's 100 Continue nobody asked for)
//
// A fault is set three ways: flags (`--latency 250ms`), the control API's JSON
// (`"latency_ms": 250`, fault_json.h) and a TOML schedule phase (`latency = "250ms"`,
// schedule.h). FaultFields() is the single list of the settings besides `mode`: each one's
// name in the three syntaxes, how its value is read, its range and its help text. Durations use
// the apps' one grammar (common/duration.h); JSON gives them in milliseconds.
//
// Thread safety: values only.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

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
  kQueue,
  kInterim,
};

// "ok", "error", "hang", "slow", "reset", "garbage", "truncated", "drip", "flap", "capacity",
// "queue", "interim".
std::string_view ToString(FaultMode mode);
// The inverse of ToString; also accepts "fragile" (kCapacity). nullopt for anything else.
std::optional<FaultMode> ParseFaultMode(std::string_view name);
// Every name ParseFaultMode accepts, in the order messages list them (fragile last).
std::span<const std::string_view> FaultModeNames();

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
  // Delay before the answer (ok, slow, flap, capacity; queue: from when a server is free), the
  // failure (error), the reset, the garbage, the truncated answer or the first dripped byte.
  // Ignored by hang.
  LatencySpec latency;
  // error, flap and capacity's relapse: the HTTP status. Default 503; one of 429, 500, 502, 503,
  // 504.
  int status = 503;
  // Retry-After in whole seconds: default 1 with status 429, else unset (no header); [0, 86400].
  // Also sent with the 503 of a capacity or queue overload.
  std::optional<int> retry_after_s;
  // flap: the run length of ok and of error answers. Default 5; range [1, 1000000].
  // interim: one answer in `every` gets an interim answer first. Default 1; same range.
  int every = 5;
  // capacity: requests in flight that are served; queue: requests served at once (servers).
  // Default 1; range [1, 1000000].
  int capacity = 1;
  // queue: requests that may wait for a server; one more gets 503 at once. Default unset (no
  // bound); range [0, 1000000] (0: nobody waits).
  std::optional<int> queue_limit;
  // capacity: how long one request over capacity collapses the service into error. Default 0
  // (no collapse: that request alone gets 503); range [0, 1 h].
  Micros relapse = 0;
  // drip: bytes sent per interval. Default 4; range [1, 65536].
  int drip_bytes = 4;
  // drip: the interval. Default 1 s; range [1 ms, 60 s].
  Micros drip_interval = kMicrosPerSecond;
  // interim: the informational status sent before the answer. Default 103; range [100, 199]
  // but 101 (Switching Protocols is no interim answer: it ends HTTP on the connection).
  int interim_status = 103;

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
  std::optional<std::int64_t> queue_limit;
  std::optional<Micros> relapse;
  std::optional<std::int64_t> drip_bytes;
  std::optional<Micros> drip_interval;
  std::optional<std::int64_t> interim_status;
};

// How a setting's value is written.
enum class FieldKind : std::uint8_t {
  kInteger,       // a whole number
  kNumber,        // a number
  kDuration,      // a duration; JSON: a number of milliseconds
  kWholeSeconds,  // TOML: a duration, rounded up to whole seconds; JSON and flags: an integer
  kText,          // a string (checked when the fault is built)
};

// One setting of a fault (besides `mode`, which every syntax requires or defaults itself).
struct FaultField {
  std::string_view name;  // the TOML spelling; flags are "--" + name with '-' for '_'
  std::string_view json;  // the control API's spelling
  FieldKind kind;
  std::string_view help;  // the flag's help
  // The range of the built FaultSpec's value (FaultSpec::Validate); lo > hi: checked otherwise.
  std::int64_t lo;
  std::int64_t hi;
  // The value in a built FaultSpec (nullopt when unset).
  std::optional<double> (*in_spec)(const FaultSpec&);
  // Where a given value goes: exactly one of these is set.
  std::optional<std::int64_t> FaultOptions::*integer;
  std::optional<double> FaultOptions::*number;
  std::optional<std::string> FaultOptions::*text;
};

// Every setting, in the order they are validated and listed in --help.
std::span<const FaultField> FaultFields();
// The setting named `name` in `syntax`, or nullptr.
const FaultField* FindFaultField(std::string_view name, Syntax syntax);

// Applies the mode's defaults (slow: 5 s; fragile: relapse 5 s; 429: Retry-After 1; uniform when
// only latency_min/latency_max are given) and validates. Errors name fields per `syntax`.
Result<FaultSpec, ConfigError> BuildFaultSpec(const FaultOptions& options, Syntax syntax);

}  // namespace fusebox::vpic_sim

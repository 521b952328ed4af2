// apps/fusebox-sim/scenario.h
//
// A simulator scenario: the breaker's config, the traffic, and what the upstream does when.
// Loaded from TOML as docs/scenario-format.md states (the contract), with two additions that the
// shipped comparisons need:
//   - a top-level `name` (default: the file's stem) that labels the run;
//   - `[[variant]]` tables, each a `name` plus any top-level keys or tables, applied over the
//     base scenario key by key (a variant's `[[variant.traffic.stream]]` or
//     `[[variant.upstream.phase]]` replaces the whole array). `run` runs the base and then every
//     variant, so one file can put "1 probe / 10 probes / unlimited" side by side.
//
// Durations, errors and the [[upstream.phase]] table follow the grammar every fusebox app shares
// (apps/common: common/duration.h, common/located_error.h, common/phase_schedule.h), so vpic-sim
// reads a scenario's [upstream] the same way. Every error names the file, the line and column,
// and the dotted key, indexes from 0 (`breaker.cooldown`, `upstream.phase[1].from`,
// `variant[2].breaker.half_open_max_probes`): unknown keys, wrong types, bad durations,
// overlapping phases, rates outside [kMinRate, kMaxRate], traffic above kMaxExpectedCalls calls,
// and every range that CircuitBreakerConfig::Validate() refuses (the breaker's own rule; the
// loader does not repeat it), and likewise AdaptiveLimitConfig::Validate() for [limit]. Each key's
// name, kind, range and help live in one settings table per [table] (breaker_table.cc,
// traffic_table.cc, upstream_table.cc, limit_table.cc, scenario_reader.cc for the root).
//
// Time in the simulator is integer microseconds from 0 (`Micros`).
//
// Thread safety: a ScenarioFile is immutable after loading; BuildScenario() may be called on one
// file from several threads at once (the sweep does).
//
// Example:
//   auto file = fusebox::sim::LoadScenarioFile("scenarios/lesson5.toml");
//   if (!file) { std::cerr << file.error().ToString() << "\n"; return 1; }
//   auto scenario = fusebox::sim::BuildScenario(*file, {});
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/duration.h"
#include "common/located_error.h"
#include "common/rate.h"
#include "fusebox/adaptive_limit.h"
#include "fusebox/circuit_breaker.h"
#include "fusebox/outcome.h"
#include "fusebox/status.h"
#include "fusebox/throttle.h"

namespace fusebox::sim {

// Simulated time and durations: integer microseconds (time starts at 0).
using Micros = app::Micros;

inline constexpr Micros kMicrosPerSecond = app::kMicrosPerSecond;

// The limits that keep every instant of a run representable (they are the loader's ranges):
//   - any duration key is in [0, kMaxDuration] (1e9 s, about 31.7 years);
//   - a stream's rate is in [kMinRate, kMaxRate] calls per second: its mean gap between arrivals
//     is at least 1 us (the simulator's time resolution) and at most kMaxDuration;
//   - the traffic asks for at most kMaxExpectedCalls calls per run: the sum over the streams of
//     rate x (duration - start);
//   - (checked while running, not here) at most kMaxCallsInFlight calls in flight at once.
inline constexpr Micros kMaxDuration = app::kMaxDuration;
inline constexpr double kMinRate = app::kMinCallRate;
inline constexpr double kMaxRate = app::kMaxCallRate;
inline constexpr double kMaxExpectedCalls = 1e9;
// Calls in flight at once beyond which a run stops with an error: each one holds a permit and an
// event until it ends (about 150 bytes), so this bounds a run's memory near 300 MB whatever the
// upstream does (a hang at a high rate keeps rate x call_timeout calls).
inline constexpr double kMaxCallsInFlight = 2e6;

enum class Arrivals : std::uint8_t { kUniform, kPoisson };
// "uniform", "poisson".
std::string_view ToString(Arrivals arrivals) noexcept;

// What the upstream does to a call admitted while a phase is in force.
enum class Mode : std::uint8_t {
  kOk,       // success after `latency` (default 0, as for every phase)
  kError,    // failure after `latency` (default 0)
  kHang,     // never answers: every call times out at call_timeout
  kSlow,     // success after `latency` (default 0); a timeout when latency >= call_timeout
  kFragile,  // serves at most `capacity` calls in flight (each answers after `latency`, default
             // 0); one more call fails and collapses it: every call fails at once for `relapse`
             // (within the phase), then it serves again
  kWarming,  // fragile whose capacity grows: from `cold_capacity` at the phase's start (and again
             // when a collapse ends: it comes back cold) linearly to `capacity` over `warmup`,
             // as a service warming its caches after a revival
  kQueue,    // `capacity` servers, each serving one call for `latency` (default 0); the calls
             // beyond wait in FIFO order for a free server, so their latency grows
             // (simulator.h says what a timeout does to a waiting or served call)
  kRefuse,   // serves at most `capacity` calls in flight (each answers after `latency`,
             // default 0); one more is refused at once: a failure, and a drop for a limit
};
// "ok", "error", "hang", "slow", "fragile", "warming", "queue", "refuse".
std::string_view ToString(Mode mode) noexcept;

struct Stream {
  std::string name;  // default: "traffic" for [traffic], "stream<i>" for [[traffic.stream]]
  Priority priority = Priority::kInteractive;
  double rate = 0.0;  // calls per second, > 0 (required)
  Micros start = 0;   // default 0 s, >= 0
  Arrivals arrivals = Arrivals::kUniform;
};

struct Phase {
  Micros from = 0;  // >= 0
  Micros to = 0;    // > from; the phase covers [from, to)
  Mode mode = Mode::kError;
  Micros latency = 0;               // >= 0; default 0 (the contract's default for every mode)
  std::uint32_t capacity = 0;       // fragile, warming, queue, refuse (required there), >= 1
  Micros relapse = 0;               // fragile and warming (required there), > 0
  std::uint32_t cold_capacity = 0;  // warming only (required there), in [1, capacity]
  Micros warmup = 0;                // warming only (required there), > 0
};

// The pieces in front of the upstream besides the breaker (the [limit] table), taken in the
// library's order (fusebox::Admit, docs/composition.md): a concurrency limit's slot first, then
// the breaker's permit, then the throttle's ticket. A fixed max_in_flight runs a
// fusebox::Bulkhead of that size; max_in_flight = "auto" a fusebox::AdaptiveLimit with
// `adaptive_config`; throttle_k > 0 a fusebox::Throttle; all on the simulation's clock.
struct Limit {
  bool adaptive = false;            // max_in_flight = "auto"
  std::uint32_t max_in_flight = 0;  // the fixed cap, in [1, 1000000]; 0 and not adaptive: none
  // The AdaptiveLimit's settings under their own names (used when adaptive; valid then).
  AdaptiveLimitConfig adaptive_config;
  // ThrottleConfig's k and window (throttle_k, throttle_window); k 0: no throttle (else valid).
  ThrottleConfig throttle{.k = 0.0, .window = std::chrono::seconds(30)};

  bool has_concurrency_limit() const noexcept { return adaptive || max_in_flight > 0; }
  bool has_throttle() const noexcept { return throttle.k > 0.0; }
};

struct Scenario {
  std::string name;                         // base: `name` or the file's stem; variant: its name
  std::uint64_t seed = 1;                   // poisson arrivals and cooldown jitter
  Micros duration = 60 * kMicrosPerSecond;  // arrivals happen in [0, duration), > 0
  CircuitBreakerConfig breaker;             // valid (Validate() passed)
  std::vector<Stream> streams;              // at least one
  Micros upstream_latency = 20'000;         // healthy latency, default 20 ms
  std::vector<Phase> phases;                // sorted by `from`, not overlapping
  std::optional<Limit> limit;               // none without a [limit] table
};

// A load error: where, which key, what is wrong; ToString() gives "file:line:column: key:
// message" (the parts that are known). line is 0 when the value has no place in the file (a
// --param override).
using LoadError = app::LocatedError;

// One `KEY=VALUE` override: KEY dotted as in the messages above (`breaker.cooldown`,
// `traffic.rate`, `traffic.stream[1].rate`, `upstream.phase[0].to`, `limit.max_in_flight`,
// `seed`, `duration`), VALUE written as in TOML but unquoted (`2.5s`, `10`, `0.5`, `true`,
// `count_window`, `auto`).
struct Override {
  std::string key;
  std::string value;
};

struct BuildOptions {
  std::optional<std::string> variant;  // the variant's name; nullopt: the base
  std::vector<Override> overrides;     // applied in order after the file (and variant)
  std::optional<std::uint64_t> seed;   // replaces the scenario's seed
};

// A parsed scenario file: the base scenario and its variants, validated, plus what it takes to
// rebuild them with overrides (sweeps).
class ScenarioFile {
 public:
  ScenarioFile(ScenarioFile&&) noexcept;
  ScenarioFile& operator=(ScenarioFile&&) noexcept;
  ~ScenarioFile();

  const std::string& path() const noexcept { return path_; }
  const Scenario& base() const noexcept { return base_; }
  // In file order.
  const std::vector<Scenario>& variants() const noexcept { return variants_; }

 private:
  struct Parsed;  // the TOML document, kept to rebuild variants with overrides

  friend Result<ScenarioFile, LoadError> LoadScenarioString(std::string_view text,
                                                            std::string_view path);
  friend Result<Scenario, LoadError> BuildScenario(const ScenarioFile& file,
                                                   const BuildOptions& options);
  ScenarioFile();

  std::string path_;
  std::unique_ptr<Parsed> parsed_;
  Scenario base_;
  std::vector<Scenario> variants_;
};

// Reads and validates a scenario file (the base and every variant).
Result<ScenarioFile, LoadError> LoadScenarioFile(const std::string& path);
// Same, from text; `path` is only used in messages and for the default name.
Result<ScenarioFile, LoadError> LoadScenarioString(std::string_view text, std::string_view path);

// The base or a variant with overrides applied, validated like the file.
Result<Scenario, LoadError> BuildScenario(const ScenarioFile& file, const BuildOptions& options);

// What kind of value a dotted key holds; nullopt for an unknown key.
// kIntegerOrAuto: an integer, or the string "auto" (limit.max_in_flight).
enum class KeyKind : std::uint8_t { kDuration, kInteger, kNumber, kBool, kString, kIntegerOrAuto };
std::optional<KeyKind> LookupKeyKind(std::string_view dotted_key);

// Parses a duration as a scenario file's strings hold it (common/duration.h, a unit required):
// "<decimal><unit>" with unit us|ms|s|m, rounded to the nearest microsecond. Returns nullopt on
// anything else (negative values and bare numbers included), and for a well-formed value above
// kMaxDuration, when it also sets `*too_large` (if given).
std::optional<Micros> ParseDuration(std::string_view text, bool* too_large = nullptr);

// Seconds with microsecond precision and no trailing zeros beyond the first decimal:
// 14000000 -> "14.0", 64020000 -> "64.02", 1 -> "0.000001".
using app::FormatSeconds;

}  // namespace fusebox::sim

// apps/fusebox-sim/advise.h
//
// `fusebox-sim advise`: replays one incident (replay.h) through a grid of the breaker settings
// that matter (the threshold, or the rates and the window; the probe interval, or the cooldown;
// the slow-call duration), on all cores, and keeps the configurations on the trade-off front
// of three costs, each the lower the better:
//   - users hurt: refused, failed, or served only after a slow call (UsersHurt);
//   - load on the sick upstream: calls sent to vPIC while it was failing (calls_while_failing);
//   - recovery delay: the sum over vPIC's revivals of the time the breaker took to close.
// A configuration is on the front when no other is at least as good in all three and better in
// one. Each cost is the worse of the two readings of the log's gaps (or the one asked for).
// From the front it picks the fewest users hurt, the least load, the fastest recovery and a
// balanced one (the least sum of the three, each over its largest value on the front), each
// printed as the breaker part of the gateway's config file.
//
// Thread safety: Advise() runs its replays on `jobs` threads of its own; the rest are pure.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fusebox/status.h"
#include "gateway_config.h"
#include "replay.h"
#include "replay_log.h"

namespace fusebox::sim {

// One swept setting: a breaker key of the gateway's config and its values as the file writes
// them ("failure_threshold" {"1", "2", "3"}; "probe_interval" {"500ms", "1s"}).
struct AdviseAxis {
  std::string key;
  std::vector<std::string> values;
};

enum class Judge : std::uint8_t { kBoth, kPessimistic, kOptimistic };

struct AdviseOptions {
  std::vector<AdviseAxis> axes;  // empty: DefaultAxes(base)
  unsigned jobs = 1;
  Judge judge = Judge::kBoth;
  std::size_t picks = 5;  // at most this many picks (the balanced one first)
  // What counts as slow for every candidate (ReplayOptions::slow); nullopt: the base config's
  // slow_call_duration.
  std::optional<Duration> slow;
};

struct Candidate {
  std::vector<std::pair<std::string, std::string>> params;  // the axes' values
  GatewaySettings settings;
  std::string error;  // the breaker refused the combination (then nothing else is set)
  ReplayCounts pessimistic;
  ReplayCounts optimistic;
  Micros delay_pessimistic = 0;
  Micros delay_optimistic = 0;
  // The costs as judged.
  std::uint64_t hurt = 0;
  std::uint64_t sick_calls = 0;
  Micros delay = 0;
  bool front = false;
};

struct Advice {
  std::vector<AdviseAxis> axes;
  Candidate base;                     // the configuration given, replayed
  std::vector<Candidate> candidates;  // every point of the grid, in grid order
  std::vector<std::size_t> front;     // indexes into candidates, by users hurt
  // (why, index into candidates): "balanced", "fewest users hurt", "least load on the sick
  // upstream", "fastest recovery"; one line per distinct configuration.
  std::vector<std::pair<std::string, std::size_t>> picks;
};

// The default grid for `base`: its policy's threshold or rates and window, its probing's
// interval or cooldown, and the slow-call duration.
std::vector<AdviseAxis> DefaultAxes(const GatewaySettings& base);

// "KEY=V1,V2,..." with KEY a breaker key of the gateway's config.
Result<AdviseAxis, std::string> ParseAxis(std::string_view text);

// `progress(done, total)` is called from the worker threads (may be empty).
Result<Advice, std::string> Advise(const Incident& incident, const GatewaySettings& base,
                                   const AdviseOptions& options,
                                   const std::function<void(std::size_t, std::size_t)>& progress);

std::string AdviceText(const Advice& advice, const Incident& incident);
std::string AdviceJson(const Advice& advice, const Incident& incident);
// Users hurt against calls to the sick upstream, every candidate a dot, the front joined and
// labelled with its recovery delay, the base and the picks marked.
std::string AdviceSvg(const Advice& advice, const Incident& incident);

}  // namespace fusebox::sim

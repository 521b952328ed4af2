// apps/fusebox-sim/plot.h
//
// SVG pictures of simulator results, readable in any browser without a script.
//
// A run plot has one panel per run (the base, then each variant), sharing the time axis:
//   - "upstream": the phases as shaded bands (error, hang, slow, fragile, warming, queue, refuse,
//     ok), labelled (a queue or refuse phase with its capacity);
//   - "breaker": the state over time as coloured bands (CLOSED green, OPEN red, HALF_OPEN amber;
//     an instantaneous HALF_OPEN bounce still shows as a thin amber mark), transitions as ticks
//     with their times (every tick has a tooltip with from -> to and the cause);
//   - "calls": calls per time bin by arrival, stacked by fate (succeeded, failed, refused by the
//     upstream, timed out, rejected CIRCUIT_OPEN, rejected CIRCUIT_HALF_OPEN, refused by a
//     [limit]'s limit or throttle), probes marked with a diamond;
//   - "in flight": the peak number of upstream calls at once per bin (when it ever exceeds 1),
//     with a queue or refuse phase's capacity and a concurrency limit's value drawn over it;
//   - "refused" (a run with a refuse phase or a throttle): per bin, the share of the calls sent
//     that the upstream refused, and the share of the arrivals the throttle refused.
// A sweep plot is a grid of small charts, one per counter that varies (plus wasted_probes and
// recovery_delay_s), each against the first swept parameter, one line per combination of the
// other parameters.
//
// Thread safety: pure functions.
//
// Example:
//   fusebox::sim::SimOptions options{.record_timeline = true};
//   auto run = fusebox::sim::Simulate(scenario, options);
//   std::string svg = fusebox::sim::RunSvg(scenario, {*run}, {scenario});
#pragma once

#include <string>
#include <vector>

#include "scenario.h"
#include "simulator.h"
#include "sweep.h"

namespace fusebox::sim {

// `runs[i]` is the result of `scenarios[i]`, simulated with SimOptions::record_timeline.
std::string RunSvg(const std::vector<Scenario>& scenarios, const std::vector<RunResult>& runs);

// `title` heads the picture (e.g. the scenario's name).
std::string SweepSvg(const std::string& title, const SweepResult& sweep);

}  // namespace fusebox::sim

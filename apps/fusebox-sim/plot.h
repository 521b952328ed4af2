// apps/fusebox-sim/plot.h
//
// SVG pictures of simulator results, readable in any browser without a script.
//
// A run plot has one panel per run (the base, then each variant), sharing the time axis:
//   - "upstream": the phases as shaded bands (error, hang, slow, fragile, warming, queue, refuse,
//     ok), labelled (a queue or refuse phase with its capacity);
//   - "breaker": the state over time as coloured bands (CLOSED green, OPEN red, HALF_OPEN amber;
//     an instantaneous HALF_OPEN bounce still shows as a thin amber mark), transitions as ticks
//     (every tick has a tooltip with from -> to and the cause) with their times below, rounded
//     to what the time axis can show and laid out on up to three rows so that no two overlap
//     (LayoutTransitionLabels);
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

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "scenario.h"
#include "simulator.h"
#include "sweep.h"

namespace fusebox::sim {

// The time labels under the breaker row: font size and the distance between two label rows (px).
inline constexpr double kTransitionLabelFontSize = 9;
inline constexpr double kTransitionLabelRowHeight = 11;
inline constexpr int kTransitionLabelRows = 3;

// One label under the breaker row: the time of transitions[first, first + count). A lone
// transition reads "64.0"; a group that could not be told apart at the plot's scale reads
// "64.0-64.5 (7)" (first and last time, number of transitions), or "64.0 (2)" when both round
// alike. Times are rounded to the axis's resolution: 1 s, 0.1 s, 0.01 s or 1 ms, whichever is
// the coarsest step under about 5 px.
struct TransitionLabel {
  std::string text;
  double x0 = 0;  // the box's left and right edges (px, in the picture's coordinates)
  double x1 = 0;
  int row = 0;  // 0: just under the breaker row; each next row kTransitionLabelRowHeight lower
  std::size_t first = 0;
  std::size_t count = 0;
};

// The labels of `transitions` (in time order) on a run plot whose time axis spans [0, t_max]
// seconds, in time order. Two labels on one row keep at least 4 px apart, so no two boxes meet:
// a label is centred under its ticks and takes the first row with room, and a label with none
// joins the one before it (whose text then names both).
std::vector<TransitionLabel> LayoutTransitionLabels(const std::vector<Transition>& transitions,
                                                    double t_max);

// The width (px) that the label layout reserves for `text` at kTransitionLabelFontSize.
double TransitionLabelWidth(const std::string& text);

// `runs[i]` is the result of `scenarios[i]`, simulated with SimOptions::record_timeline.
std::string RunSvg(const std::vector<Scenario>& scenarios, const std::vector<RunResult>& runs);

// `title` heads the picture (e.g. the scenario's name).
std::string SweepSvg(const std::string& title, const SweepResult& sweep);

// `text` with XML's special characters (& < > ") escaped, for SVG text and attribute values.
std::string SvgEscape(std::string_view text);

}  // namespace fusebox::sim

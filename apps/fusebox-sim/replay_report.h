// apps/fusebox-sim/replay_report.h
//
// The outputs of `fusebox-sim replay`: a table (what the log recorded beside the candidate's
// pessimistic and optimistic readings, then the transitions and the revivals), one JSON object,
// and an SVG in the style of the scenario plots (plot.h): one panel per run (the log's own, then
// each reading), vPIC's behaviour as rebuilt from the log drawn as the upstream's phases.
//
// Times are seconds since the log's first line.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "gateway_config.h"
#include "replay.h"
#include "replay_log.h"

namespace fusebox::sim {

struct ReplayReport {
  const Incident* incident = nullptr;
  GatewaySettings settings;  // the candidate
  std::string config_name;   // the candidate config's file ("" when none)
  ReplayRun recorded;        // RecordedRun
  ReplayRun pessimistic;
  ReplayRun optimistic;     // the same as pessimistic unless pessimistic.read_gaps
  double read_seconds = 0;  // wall time reading the log
};

std::string ReplayText(const ReplayReport& report);
std::string ReplayJson(const ReplayReport& report);
// The runs need ReplayOptions::record_timeline.
std::string ReplaySvg(const ReplayReport& report);

// vPIC as rebuilt from the log (pessimistic reading): each run of bad calls as a phase (hang for
// timeouts, error for failures, slow for slow answers), for the plots.
std::vector<Phase> RebuiltPhases(const Incident& incident, Duration slow);

// Seconds since the log's first line of an instant of the incident, as text ("12.5").
std::string SinceFirstLine(const Incident& incident, Micros t);

// The counters' lines of a table: name, then one value per run.
std::vector<std::pair<std::string, std::vector<std::string>>> CounterRows(
    const std::vector<const ReplayRun*>& runs);

}  // namespace fusebox::sim

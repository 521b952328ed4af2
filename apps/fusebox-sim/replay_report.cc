#include "replay_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "plot.h"
#include "report.h"

namespace fusebox::sim {
namespace {

Micros ToMicros(Duration d) {
  return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}

// "0.02 (revived at 7.85 s), never (at 40.0 s)": each revival's delay and when it was.
std::string Delays(const ReplayRun& run, const Incident& incident) {
  std::string out;
  for (const Revival& r : run.revivals) {
    const Micros at = run.reading == Reading::kOptimistic ? r.earliest : r.latest;
    out += fmt::format("{}{} (revived at {} s)", out.empty() ? "" : ", ",
                       r.delay ? FormatSeconds(*r.delay) : std::string("never"),
                       SinceFirstLine(incident, at));
  }
  return out.empty() ? std::string("-") : out;
}

std::string TransitionsJson(const Incident& incident, const std::vector<Transition>& transitions) {
  std::string out = "[";
  for (std::size_t i = 0; i < transitions.size(); ++i) {
    const Transition& t = transitions[i];
    out += fmt::format("{}{{\"t\": {}, \"from\": \"{}\", \"to\": \"{}\", \"cause\": \"{}\"}}",
                       i == 0 ? "" : ", ", SinceFirstLine(incident, t.t), ToString(t.from),
                       ToString(t.to), ToString(t.cause));
  }
  return out + "]";
}

// A run's counters and transitions as JSON members (no braces).
std::string RunMembers(const Incident& incident, const ReplayRun& run) {
  const ReplayCounts& c = run.counts;
  std::string delays = "[";
  for (std::size_t i = 0; i < run.revivals.size(); ++i) {
    const Revival& r = run.revivals[i];
    delays += fmt::format(
        "{}{{\"revived\": {}, \"delay_s\": {}}}", i == 0 ? "" : ", ",
        SinceFirstLine(incident, run.reading == Reading::kOptimistic ? r.earliest : r.latest),
        r.delay ? FormatSeconds(*r.delay) : std::string("null"));
  }
  delays += "]";
  return fmt::format(
      "\"transitions\": {}, \"requests\": {}, \"refused\": {}, \"refused_open\": {}, "
      "\"refused_half_open\": {}, \"refused_recovering\": {}, \"overloaded\": {}, "
      "\"throttled\": {}, \"served\": {}, \"stale_served\": {}, \"failed\": {}, \"waited\": {}, "
      "\"slow_served\": {}, \"users_hurt\": {}, \"upstream_calls\": {}, \"probes\": {}, "
      "\"calls_while_failing\": {}, \"revivals\": {}, \"total_recovery_delay_s\": {}",
      TransitionsJson(incident, run.transitions), c.requests, c.refused, c.refused_open,
      c.refused_half_open, c.refused_recovering, c.overloaded, c.throttled, c.served,
      c.stale_served, c.failed, c.waited, c.slow_served, UsersHurt(c), c.upstream_calls, c.probes,
      c.calls_while_failing, delays, FormatSeconds(run.total_recovery_delay));
}

std::string TransitionLines(const Incident& incident, const std::vector<Transition>& transitions) {
  std::string out;
  for (const Transition& t : transitions) {
    out += fmt::format("  {:>10} s  {} -> {}  ({})\n", SinceFirstLine(incident, t.t),
                       ToString(t.from), ToString(t.to), ToString(t.cause));
  }
  return out.empty() ? std::string("  (none)\n") : out;
}

// The simulator's counters of a replay run, for the plot's summaries.
RunResult AsRunResult(const ReplayRun& run, const std::string& name, Micros end) {
  RunResult result;
  result.name = name;
  result.seed = 1;
  result.transitions = run.transitions;
  result.timeline = run.timeline;
  result.end = end;
  Counters& c = result.counters;
  c.calls = run.counts.requests;
  c.allowed = run.counts.upstream_calls - run.counts.probes;
  c.rejected_open = run.counts.refused_open;
  c.rejected_probe_cap = run.counts.refused_half_open;
  c.rejected_recovering = run.counts.refused_recovering;
  c.recovery_ramp = run.counts.refused_recovering > 0;
  c.probes = run.counts.probes;
  c.overloaded = run.counts.overloaded;
  c.throttled = run.counts.throttled;
  c.limited = true;
  c.throttling = run.counts.throttled > 0;
  return result;
}

}  // namespace

std::string SinceFirstLine(const Incident& incident, Micros t) {
  return FormatSeconds(t - incident.first_line);
}

std::vector<Phase> RebuiltPhases(const Incident& incident, Duration slow) {
  const Micros slow_us = ToMicros(slow);
  std::vector<Phase> phases;
  const std::vector<Observation>& obs = incident.observations;
  const auto mode_of = [slow_us](const Observation& o) {
    if (o.outcome == Outcome::kTimeout) {
      return Mode::kHang;
    }
    if (o.outcome == Outcome::kFailure) {
      return Mode::kError;
    }
    return o.latency >= slow_us ? Mode::kSlow : Mode::kOk;
  };
  for (std::size_t i = 0; i < obs.size(); ++i) {
    const Mode mode = mode_of(obs[i]);
    if (mode == Mode::kOk) {
      continue;
    }
    const Micros to = i + 1 < obs.size() ? obs[i + 1].start : obs[i].start + obs[i].latency;
    if (!phases.empty() && phases.back().mode == mode && phases.back().to >= obs[i].start) {
      phases.back().to = std::max(phases.back().to, to);
      continue;
    }
    const Micros from = phases.empty() ? obs[i].start : std::max(obs[i].start, phases.back().to);
    if (to > from) {
      Phase phase;
      phase.from = from;
      phase.to = to;
      phase.mode = mode;
      phase.latency = mode == Mode::kSlow ? obs[i].latency : 0;
      phases.push_back(phase);
    }
  }
  return phases;
}

std::vector<std::pair<std::string, std::vector<std::string>>> CounterRows(
    const std::vector<const ReplayRun*>& runs) {
  std::vector<std::pair<std::string, std::vector<std::string>>> rows;
  const auto row = [&](std::string name, auto value) {
    std::vector<std::string> cells;
    cells.reserve(runs.size());
    for (const ReplayRun* run : runs) {
      cells.push_back(value(*run));
    }
    rows.emplace_back(std::move(name), std::move(cells));
  };
  const auto count = [](std::uint64_t ReplayCounts::*field) {
    return [field](const ReplayRun& run) { return fmt::format("{}", run.counts.*field); };
  };
  row("transitions",
      [](const ReplayRun& run) { return fmt::format("{}", run.transitions.size()); });
  row("requests", count(&ReplayCounts::requests));
  row("refused", count(&ReplayCounts::refused));
  row("  CIRCUIT_OPEN", count(&ReplayCounts::refused_open));
  row("  CIRCUIT_HALF_OPEN", count(&ReplayCounts::refused_half_open));
  row("  CIRCUIT_RECOVERING", count(&ReplayCounts::refused_recovering));
  row("  OVERLOADED", count(&ReplayCounts::overloaded));
  row("  THROTTLED", count(&ReplayCounts::throttled));
  row("served (fresh)", count(&ReplayCounts::served));
  row("served stale/offline", count(&ReplayCounts::stale_served));
  row("failed", count(&ReplayCounts::failed));
  row("waited (slow or timeout)", count(&ReplayCounts::waited));
  row("users hurt", [](const ReplayRun& run) { return fmt::format("{}", UsersHurt(run.counts)); });
  row("upstream calls", count(&ReplayCounts::upstream_calls));
  row("  probes", count(&ReplayCounts::probes));
  row("  while failing", count(&ReplayCounts::calls_while_failing));
  row("recovery delay total (s)",
      [](const ReplayRun& run) { return FormatSeconds(run.total_recovery_delay); });
  return rows;
}

std::string ReplayText(const ReplayReport& report) {
  const Incident& in = *report.incident;
  std::string out =
      fmt::format("log {}: {} lines, {} decode requests, {} s", in.name, in.lines,
                  in.recorded.requests, FormatSeconds(std::max<Micros>(0, in.end - in.first_line)));
  if (report.read_seconds > 0) {
    out += fmt::format(" (read in {:.2f} s, {:.0f} lines/s)", report.read_seconds,
                       static_cast<double>(in.lines) / report.read_seconds);
  }
  out += "\n";
  if (in.errors > 0) {
    out += fmt::format("  {} malformed lines skipped (stderr names them)\n", in.errors);
  }
  if (in.unknown_fates > 0) {
    out += fmt::format(
        "  {} calls whose end the log never told: read from vPIC's calls around "
        "them\n",
        in.unknown_fates);
  }
  out += fmt::format(
      "candidate {}: {}\n\n",
      report.config_name.empty() ? std::string("(the gateway's defaults)") : report.config_name,
      GatewayBreakerSummary(report.settings.breaker));
  const std::vector<const ReplayRun*> runs = {&report.recorded, &report.pessimistic,
                                              &report.optimistic};
  const auto rows = CounterRows(runs);
  out += fmt::format("{:<26}{:>12}{:>12}{:>12}\n", "", "recorded", "pessimistic", "optimistic");
  for (const auto& [name, cells] : rows) {
    out += fmt::format("{:<26}{:>12}{:>12}{:>12}\n", name, cells[0], cells[1], cells[2]);
  }
  out += fmt::format(
      "\nrecovery delay after each revival (s):\n  recorded:    {}\n  pessimistic: "
      "{}\n  optimistic:  {}\n",
      Delays(report.recorded, in), Delays(report.pessimistic, in), Delays(report.optimistic, in));
  if (!report.pessimistic.read_gaps) {
    out += "\n(no call of the candidate fell where vPIC was not observed: both readings agree)\n";
  }
  out += "\ntransitions, recorded:\n" + TransitionLines(in, report.recorded.transitions);
  out += "transitions, candidate (pessimistic):\n" +
         TransitionLines(in, report.pessimistic.transitions);
  if (report.pessimistic.read_gaps) {
    out += "transitions, candidate (optimistic):\n" +
           TransitionLines(in, report.optimistic.transitions);
  }
  return out;
}

std::string ReplayJson(const ReplayReport& report) {
  const Incident& in = *report.incident;
  return fmt::format(
      "{{\"log\": {{\"file\": {}, \"lines\": {}, \"malformed\": {}, \"requests\": {}, "
      "\"duration_s\": {}}}, \"config\": {}, {}, \"readings\": {{\"pessimistic\": {{{}}}, "
      "\"optimistic\": {{{}}}}}, \"recorded\": {{{}}}}}\n",
      JsonQuote(in.name), in.lines, in.errors, in.recorded.requests,
      FormatSeconds(std::max<Micros>(0, in.end - in.first_line)), JsonQuote(report.config_name),
      RunMembers(in, report.pessimistic), RunMembers(in, report.pessimistic),
      RunMembers(in, report.optimistic), RunMembers(in, report.recorded));
}

std::string ReplaySvg(const ReplayReport& report) {
  const Incident& in = *report.incident;
  Scenario scenario;
  scenario.name = in.name;
  scenario.duration = std::max<Micros>(in.end, 1);
  scenario.breaker = report.settings.breaker;
  scenario.limit = report.settings.AsLimit();
  scenario.phases = RebuiltPhases(in, report.settings.breaker.effective_slow_call_duration());
  std::vector<Scenario> scenarios = {scenario, scenario};
  std::vector<RunResult> runs = {
      AsRunResult(report.recorded, "recorded: the log (the line below: the candidate's settings)",
                  in.end),
      AsRunResult(report.pessimistic, "candidate, pessimistic reading", in.end)};
  if (report.pessimistic.read_gaps) {
    scenarios.push_back(scenario);
    runs.push_back(AsRunResult(report.optimistic, "candidate, optimistic reading", in.end));
  }
  return RunSvg(scenarios, runs);
}

}  // namespace fusebox::sim

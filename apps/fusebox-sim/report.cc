#include "report.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "fusebox/events.h"
#include "fusebox/outcome.h"

namespace fusebox::sim {
namespace {

std::string Count(std::uint64_t value) { return fmt::format("{}", value); }

// A share as a percentage to a tenth at most: "62.5%", "50%".
std::string Percent(double share) {
  std::string text = fmt::format("{:.1f}", share * 100);
  if (text.size() > 2 && text.compare(text.size() - 2, 2, ".0") == 0) {
    text.resize(text.size() - 2);
  }
  return text + "%";
}

// Every counter once, in output order: its name, its value as text, and for a counter only some
// scenarios have, the column that shows it.
struct CounterSpec {
  std::string_view name;
  std::string (*value)(const Counters&);
  bool (*shown)(const CounterColumns&);  // null: always shown
};

const std::array<CounterSpec, 18> kCounterSpecs = {{
    {"calls", [](const Counters& c) { return Count(c.calls); }, nullptr},
    {"allowed", [](const Counters& c) { return Count(c.allowed); }, nullptr},
    {"rejected_open", [](const Counters& c) { return Count(c.rejected_open); }, nullptr},
    {"rejected_probe_cap", [](const Counters& c) { return Count(c.rejected_probe_cap); }, nullptr},
    {"succeeded", [](const Counters& c) { return Count(c.succeeded); }, nullptr},
    {"failed", [](const Counters& c) { return Count(c.failed); }, nullptr},
    {"timeouts", [](const Counters& c) { return Count(c.timeouts); }, nullptr},
    {"slow", [](const Counters& c) { return Count(c.slow); }, nullptr},
    {"probes", [](const Counters& c) { return Count(c.probes); }, nullptr},
    {"wasted_probes", [](const Counters& c) { return Count(c.wasted_probes); }, nullptr},
    {"recovery_delay_s",
     [](const Counters& c) {
       return c.recovery_delay ? FormatSeconds(*c.recovery_delay) : std::string();
     },
     nullptr},
    {"late", [](const Counters& c) { return Count(c.late); }, nullptr},
    {"relapses", [](const Counters& c) { return Count(c.relapses); }, nullptr},
    {"max_in_flight", [](const Counters& c) { return Count(c.max_in_flight); }, nullptr},
    {"rejected_recovering", [](const Counters& c) { return Count(c.rejected_recovering); },
     [](const CounterColumns& columns) { return columns.recovering; }},
    {"refused", [](const Counters& c) { return Count(c.refused); },
     [](const CounterColumns& columns) { return columns.refused; }},
    {"overloaded", [](const Counters& c) { return Count(c.overloaded); },
     [](const CounterColumns& columns) { return columns.overloaded; }},
    {"throttled", [](const Counters& c) { return Count(c.throttled); },
     [](const CounterColumns& columns) { return columns.throttled; }},
}};

void AppendTransitionsJson(std::string& out, const std::vector<Transition>& transitions,
                           std::string_view indent) {
  if (transitions.empty()) {
    out += "[]";
    return;
  }
  out += "[\n";
  for (std::size_t i = 0; i < transitions.size(); ++i) {
    const Transition& t = transitions[i];
    out += fmt::format("{}  {{\"t\": {}, \"from\": \"{}\", \"to\": \"{}\", \"cause\": \"{}\"}}{}\n",
                       indent, FormatSeconds(t.t), ToString(t.from), ToString(t.to),
                       ToString(t.cause), i + 1 < transitions.size() ? "," : "");
  }
  out += fmt::format("{}]", indent);
}

void AppendCountersJson(std::string& out, const Counters& counters, std::string_view indent,
                        CounterColumns columns) {
  const std::vector<std::string_view> names = CounterNames(columns);
  const std::vector<std::string> values = CounterValues(counters, columns);
  out += "{\n";
  for (std::size_t i = 0; i < names.size(); ++i) {
    out += fmt::format("{}  \"{}\": {}{}\n", indent, names[i],
                       values[i].empty() ? "null" : values[i], i + 1 < names.size() ? "," : "");
  }
  out += fmt::format("{}}}", indent);
}

void AppendStreamsJson(std::string& out, const std::vector<StreamCounters>& streams,
                       std::string_view indent) {
  out += "[\n";
  for (std::size_t i = 0; i < streams.size(); ++i) {
    const StreamCounters& s = streams[i];
    out += fmt::format(
        "{}  {{\"name\": {}, \"priority\": \"{}\", \"calls\": {}, \"allowed\": {}, "
        "\"rejected_open\": {}, \"rejected_probe_cap\": {}, \"probes\": {}}}{}\n",
        indent, JsonQuote(s.name), ToString(s.priority), s.calls, s.allowed, s.rejected_open,
        s.rejected_probe_cap, s.probes, i + 1 < streams.size() ? "," : "");
  }
  out += fmt::format("{}]", indent);
}

// One run as a JSON object whose members are indented by `indent` + 2.
void AppendRunJson(std::string& out, const RunResult& run, const std::string& indent,
                   bool with_name_first, CounterColumns columns) {
  const std::string inner = indent + "  ";
  out += "{\n";
  if (with_name_first) {
    out += fmt::format("{}\"name\": {},\n", inner, JsonQuote(run.name));
  }
  out += fmt::format("{}\"seed\": {},\n", inner, run.seed);
  out += fmt::format("{}\"transitions\": ", inner);
  AppendTransitionsJson(out, run.transitions, inner);
  out += fmt::format(",\n{}\"counters\": ", inner);
  AppendCountersJson(out, run.counters, inner, columns);
  if (!with_name_first) {
    out += fmt::format(",\n{}\"name\": {}", inner, JsonQuote(run.name));
  }
  out += fmt::format(",\n{}\"streams\": ", inner);
  AppendStreamsJson(out, run.streams, inner);
}

// The columns of any of the runs: every output of them shows those counters.
CounterColumns ColumnsOf(const std::vector<RunResult>& runs) {
  CounterColumns columns;
  for (const RunResult& run : runs) {
    columns |= ColumnsOf(run.counters);
  }
  return columns;
}

}  // namespace

CounterColumns ColumnsOf(const Counters& counters) {
  return CounterColumns{.recovering = counters.recovery_ramp,
                        .refused = counters.refuse_mode,
                        .overloaded = counters.limited,
                        .throttled = counters.throttling};
}

CounterColumns ColumnsOf(const SweepResult& sweep) {
  CounterColumns columns;
  for (const SweepPoint& point : sweep.points) {
    columns |= ColumnsOf(point.counters);
  }
  return columns;
}

std::vector<std::string_view> CounterNames(CounterColumns columns) {
  std::vector<std::string_view> names;
  for (const CounterSpec& spec : kCounterSpecs) {
    if (spec.shown == nullptr || spec.shown(columns)) {
      names.push_back(spec.name);
    }
  }
  return names;
}

std::vector<std::string> CounterValues(const Counters& counters, CounterColumns columns) {
  std::vector<std::string> values;
  for (const CounterSpec& spec : kCounterSpecs) {
    if (spec.shown == nullptr || spec.shown(columns)) {
      values.push_back(spec.value(counters));
    }
  }
  return values;
}

std::string JsonQuote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out += c;
        }
    }
  }
  out += "\"";
  return out;
}

std::string CauseText(const Transition& t) {
  switch (t.cause) {
    case TransitionCause::kConsecutiveFailures:
      return fmt::format("{} consecutive {}", t.bad,
                         t.slow_counts ? "failed or slow calls" : "failures");
    case TransitionCause::kFailureRate:
    case TransitionCause::kSlowCallRate: {
      const std::string_view what =
          t.cause == TransitionCause::kFailureRate ? "failure rate" : "slow-call rate";
      const double rate =
          t.judged == 0 ? 0.0 : static_cast<double>(t.bad) / static_cast<double>(t.judged);
      if (t.judged == 0 || rate < t.threshold) {
        // Calls still running slow joined the rate (inflight_slow_accounting); the transition
        // forgot them.
        return fmt::format("{} >= {} (calls still running slow included)", what,
                           Percent(t.threshold));
      }
      return fmt::format("{} {} >= {} over {} call{}", what, Percent(rate), Percent(t.threshold),
                         t.judged, t.judged == 1 ? "" : "s");
    }
    case TransitionCause::kCooldownElapsed:
      return t.waited > 0 ? fmt::format("cooldown elapsed ({} s)", FormatSeconds(t.waited))
                          : std::string("cooldown elapsed");
    case TransitionCause::kProbeFailed:
      return "probe failed";
    case TransitionCause::kProbeTimedOut:
      return "probe timed out";
    case TransitionCause::kProbesSucceeded:
      return t.bad > 1 ? fmt::format("{} probes succeeded", t.bad) : std::string("probe succeeded");
    case TransitionCause::kOperator:
      return "operator";
    case TransitionCause::kReconfigured:
      return "reconfigured";
    case TransitionCause::kRecoveryFailed:
      return "failed or slow call during the recovery ramp";
    case TransitionCause::kFleet:
      return "adopted from a peer";
  }
  return std::string(ToString(t.cause));
}

std::string RunText(const std::vector<RunResult>& runs, bool with_headers) {
  std::string out;
  const CounterColumns columns = ColumnsOf(runs);
  for (const RunResult& run : runs) {
    if (with_headers) {
      out += fmt::format("{}=== {} ===\n", out.empty() ? "" : "\n", run.name);
    }
    out += "--- transitions (t, from -> to, cause) ---\n";
    for (const Transition& t : run.transitions) {
      out += fmt::format("    t={:>5}s{:>12} -> {:<11}  {}\n", FormatSeconds(t.t), ToString(t.from),
                         ToString(t.to), CauseText(t));
    }
    if (run.transitions.empty()) {
      out += "    (none)\n";
    }
    out += fmt::format("--- counters (seed {}) ---\n", run.seed);
    const std::vector<std::string_view> names = CounterNames(columns);
    const std::vector<std::string> values = CounterValues(run.counters, columns);
    for (std::size_t i = 0; i < names.size(); ++i) {
      out += fmt::format("    {:<20}{}\n", names[i], values[i].empty() ? "-" : values[i]);
    }
    if (run.streams.size() > 1) {
      out += "--- streams (calls allowed rejected_open rejected_probe_cap probes) ---\n";
      for (const StreamCounters& s : run.streams) {
        out +=
            fmt::format("    {:<12}{:<13}{:>8}{:>8}{:>8}{:>8}{:>8}\n", s.name, ToString(s.priority),
                        s.calls, s.allowed, s.rejected_open, s.rejected_probe_cap, s.probes);
      }
    }
  }
  if (runs.size() > 1) {
    out += "\n=== side by side ===\n";
    out += RunsTable(runs, TableStyle::kText);
  }
  return out;
}

namespace {

// One row of the side-by-side table: its label, its value for a run, and whether it is shown.
struct TableRow {
  std::string_view label;
  std::string (*value)(const RunResult&);
  bool (*shown)(const std::vector<RunResult>&, const CounterColumns&);  // null: always
};

std::optional<Micros> FirstInto(const RunResult& run, State state) {
  for (const Transition& t : run.transitions) {
    if (t.to == state) {
      return t.t;
    }
  }
  return std::nullopt;
}

std::optional<Micros> LastInto(const RunResult& run, State state) {
  for (auto it = run.transitions.rbegin(); it != run.transitions.rend(); ++it) {
    if (it->to == state) {
      return it->t;
    }
  }
  return std::nullopt;
}

const std::array<TableRow, 20> kTableRows = {{
    {"first OPEN (s)",
     [](const RunResult& r) {
       const std::optional<Micros> t = FirstInto(r, State::kOpen);
       return t ? FormatSeconds(*t) : std::string("never");
     },
     nullptr},
    {"times opened",
     [](const RunResult& r) {
       return Count(static_cast<std::uint64_t>(
           std::count_if(r.transitions.begin(), r.transitions.end(),
                         [](const Transition& t) { return t.to == State::kOpen; })));
     },
     nullptr},
    {"last CLOSED (s)",
     [](const RunResult& r) {
       const std::optional<Micros> t = LastInto(r, State::kClosed);
       return t ? FormatSeconds(*t) : std::string("-");
     },
     nullptr},
    {"recovery_delay (s)",
     [](const RunResult& r) {
       return r.counters.recovery_delay ? FormatSeconds(*r.counters.recovery_delay)
                                        : std::string("-");
     },
     nullptr},
    {"served", [](const RunResult& r) { return Count(r.counters.succeeded); }, nullptr},
    {"failed", [](const RunResult& r) { return Count(r.counters.failed); }, nullptr},
    {"timed out", [](const RunResult& r) { return Count(r.counters.timeouts); }, nullptr},
    {"slow", [](const RunResult& r) { return Count(r.counters.slow); }, nullptr},
    {"refused by the breaker",
     [](const RunResult& r) {
       return Count(r.counters.rejected_open + r.counters.rejected_probe_cap +
                    r.counters.rejected_recovering);
     },
     nullptr},
    {"  CIRCUIT_OPEN", [](const RunResult& r) { return Count(r.counters.rejected_open); }, nullptr},
    {"  CIRCUIT_HALF_OPEN", [](const RunResult& r) { return Count(r.counters.rejected_probe_cap); },
     nullptr},
    {"  CIRCUIT_RECOVERING",
     [](const RunResult& r) { return Count(r.counters.rejected_recovering); },
     [](const std::vector<RunResult>&, const CounterColumns& c) { return c.recovering; }},
    {"refused by the limit", [](const RunResult& r) { return Count(r.counters.overloaded); },
     [](const std::vector<RunResult>&, const CounterColumns& c) { return c.overloaded; }},
    {"refused by the throttle", [](const RunResult& r) { return Count(r.counters.throttled); },
     [](const std::vector<RunResult>&, const CounterColumns& c) { return c.throttled; }},
    {"upstream calls", [](const RunResult& r) { return Count(r.counters.allowed); }, nullptr},
    {"upstream calls while failing",
     [](const RunResult& r) { return Count(r.counters.allowed_while_failing); }, nullptr},
    {"refused by the upstream", [](const RunResult& r) { return Count(r.counters.refused); },
     [](const std::vector<RunResult>&, const CounterColumns& c) { return c.refused; }},
    {"probes (wasted)",
     [](const RunResult& r) {
       return fmt::format("{} ({})", r.counters.probes, r.counters.wasted_probes);
     },
     nullptr},
    {"relapses", [](const RunResult& r) { return Count(r.counters.relapses); },
     [](const std::vector<RunResult>& runs, const CounterColumns&) {
       return std::any_of(runs.begin(), runs.end(),
                          [](const RunResult& r) { return r.counters.relapses > 0; });
     }},
    {"max in flight", [](const RunResult& r) { return Count(r.counters.max_in_flight); }, nullptr},
}};

// A markdown cell: a pipe would end it.
std::string MarkdownCell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += '\\';
    }
    out += c;
  }
  return out;
}

}  // namespace

std::string RunsTable(const std::vector<RunResult>& runs, TableStyle style) {
  const CounterColumns columns = ColumnsOf(runs);
  std::vector<std::vector<std::string>> cells;  // [row][0: label, 1..: runs]
  cells.push_back({"run"});
  for (const RunResult& run : runs) {
    cells.back().push_back(run.name);
  }
  for (const TableRow& row : kTableRows) {
    if (row.shown != nullptr && !row.shown(runs, columns)) {
      continue;
    }
    cells.push_back({std::string(row.label)});
    for (const RunResult& run : runs) {
      cells.back().push_back(row.value(run));
    }
  }
  std::string out;
  if (style == TableStyle::kMarkdown) {
    for (std::size_t r = 0; r < cells.size(); ++r) {
      for (std::size_t c = 0; c < cells[r].size(); ++c) {
        // Markdown drops leading spaces: a code's row says what it is part of instead.
        std::string_view text = cells[r][c];
        const bool sub = c == 0 && text.starts_with("  ");
        out += fmt::format("| {}{} ", sub ? "refused: " : "",
                           MarkdownCell(sub ? text.substr(2) : text));
      }
      out += "|\n";
      if (r == 0) {
        out += "|---|";
        for (std::size_t c = 1; c < cells[r].size(); ++c) {
          out += "---:|";
        }
        out += '\n';
      }
    }
    return out;
  }
  std::vector<std::size_t> widths(cells.front().size(), 0);
  for (const auto& row : cells) {
    for (std::size_t c = 0; c < row.size(); ++c) {
      widths[c] = std::max(widths[c], row[c].size());
    }
  }
  for (const auto& row : cells) {
    std::string line = fmt::format("    {:<{}}", row[0], widths[0]);
    for (std::size_t c = 1; c < row.size(); ++c) {
      line += fmt::format("  {:>{}}", row[c], widths[c]);
    }
    out += line + "\n";
  }
  return out;
}

std::string RunJson(const RunResult& base, const std::vector<RunResult>& variants) {
  std::string out;
  CounterColumns columns = ColumnsOf(variants);
  columns |= ColumnsOf(base.counters);
  AppendRunJson(out, base, "", /*with_name_first=*/false, columns);
  if (!variants.empty()) {
    out += ",\n  \"variants\": [\n";
    for (std::size_t i = 0; i < variants.size(); ++i) {
      out += "    ";
      AppendRunJson(out, variants[i], "    ", /*with_name_first=*/true, columns);
      out += fmt::format("\n    }}{}\n", i + 1 < variants.size() ? "," : "");
    }
    out += "  ]";
  }
  out += "\n}\n";
  return out;
}

std::string RunCsv(const RunResult& run) {
  std::string out = "t,from,to\n";
  for (const Transition& t : run.transitions) {
    out += fmt::format("{},{},{}\n", FormatSeconds(t.t), ToString(t.from), ToString(t.to));
  }
  return out;
}

std::string SweepCsv(const SweepResult& sweep) {
  std::string out;
  for (const ParamSpec& p : sweep.params) {
    out += p.key;
    out += ',';
  }
  const CounterColumns columns = ColumnsOf(sweep);
  const std::vector<std::string_view> names = CounterNames(columns);
  for (std::size_t i = 0; i < names.size(); ++i) {
    out += names[i];
    out += i + 1 < names.size() ? ',' : '\n';
  }
  for (const SweepPoint& point : sweep.points) {
    for (std::size_t p = 0; p < sweep.params.size(); ++p) {
      out += sweep.params[p].values[point.value_index[p]].csv;
      out += ',';
    }
    const std::vector<std::string> values = CounterValues(point.counters, columns);
    for (std::size_t i = 0; i < values.size(); ++i) {
      out += values[i];
      out += i + 1 < values.size() ? ',' : '\n';
    }
  }
  return out;
}

namespace {

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A swept parameter's unit and its values in that unit, for SweepText.
struct ParamColumn {
  std::string unit;
  std::vector<std::string> values;
};

ParamColumn ParamColumnOf(const ParamSpec& p) {
  ParamColumn column;
  auto scaled = [&p, &column](double factor) {
    for (const ParamValue& v : p.values) {
      column.values.push_back(fmt::format("{:.10g}", v.numeric * factor));
    }
  };
  if (p.kind == KeyKind::kDuration) {
    const bool under_a_second = std::all_of(p.values.begin(), p.values.end(),
                                            [](const ParamValue& v) { return v.numeric < 1.0; });
    if (under_a_second) {
      column.unit = "ms";
      scaled(1e3);
    } else {
      column.unit = "s";
      for (const ParamValue& v : p.values) {
        column.values.push_back(v.csv);
      }
    }
    return column;
  }
  const std::string_view key = p.key;
  if (p.kind == KeyKind::kNumber &&
      (EndsWith(key, "rate_threshold") || EndsWith(key, "cooldown_jitter"))) {
    column.unit = "%";
    scaled(100);
    return column;
  }
  if (p.kind == KeyKind::kNumber && EndsWith(key, ".rate")) {
    column.unit = "calls/s";
  } else if (EndsWith(key, "failure_threshold") || EndsWith(key, "minimum_calls") ||
             EndsWith(key, "half_open_max_probes") || EndsWith(key, "half_open_successes") ||
             EndsWith(key, "capacity") || EndsWith(key, "max_in_flight") ||
             EndsWith(key, "_limit")) {
    column.unit = "calls";
  } else if (EndsWith(key, "cooldown_multiplier")) {
    column.unit = "x";
  }
  for (const ParamValue& v : p.values) {
    column.values.push_back(v.csv);
  }
  return column;
}

// A counter's header and unit in SweepText.
std::pair<std::string_view, std::string_view> CounterHeading(std::string_view name) {
  if (name == "recovery_delay_s") {
    return {"recovery_delay", "s"};
  }
  if (name == "relapses") {
    return {name, "times"};
  }
  return {name, "calls"};
}

}  // namespace

std::string SweepText(const SweepResult& sweep) {
  const CounterColumns columns = ColumnsOf(sweep);
  const std::vector<std::string_view> names = CounterNames(columns);
  // Columns of cells: the header, the unit, then one per point.
  std::vector<std::vector<std::string>> table;
  for (std::size_t p = 0; p < sweep.params.size(); ++p) {
    const ParamColumn column = ParamColumnOf(sweep.params[p]);
    std::vector<std::string> cells = {sweep.params[p].key, column.unit.empty()
                                                               ? std::string()
                                                               : fmt::format("({})", column.unit)};
    for (const SweepPoint& point : sweep.points) {
      cells.push_back(column.values[point.value_index[p]]);
    }
    table.push_back(std::move(cells));
  }
  for (std::string_view name : names) {
    const auto [heading, unit] = CounterHeading(name);
    table.push_back({std::string(heading), fmt::format("({})", unit)});
  }
  for (const SweepPoint& point : sweep.points) {
    const std::vector<std::string> values = CounterValues(point.counters, columns);
    for (std::size_t i = 0; i < values.size(); ++i) {
      table[sweep.params.size() + i].push_back(values[i].empty() ? "-" : values[i]);
    }
  }
  std::vector<std::size_t> widths;
  for (const auto& column : table) {
    std::size_t width = 0;
    for (const std::string& cell : column) {
      width = std::max(width, cell.size());
    }
    widths.push_back(width);
  }
  std::string out;
  const std::size_t rows = sweep.points.size() + 2;
  for (std::size_t r = 0; r < rows; ++r) {
    std::string line;
    for (std::size_t c = 0; c < table.size(); ++c) {
      line += fmt::format("{}{:>{}}", c == 0 ? "" : "  ", table[c][r], widths[c]);
    }
    out += line + "\n";
  }
  for (const std::string& note : NoEffectNotes(sweep)) {
    out += fmt::format("note: {}\n", note);
  }
  return out;
}

std::string SweepJson(const SweepResult& sweep) {
  std::string out = "{\"points\": [";
  const CounterColumns columns = ColumnsOf(sweep);
  const std::vector<std::string_view> names = CounterNames(columns);
  for (std::size_t k = 0; k < sweep.points.size(); ++k) {
    const SweepPoint& point = sweep.points[k];
    out += k == 0 ? "\n  " : ",\n  ";
    out += "{\"params\": {";
    for (std::size_t p = 0; p < sweep.params.size(); ++p) {
      out += fmt::format("{}{}: {}", p == 0 ? "" : ", ", JsonQuote(sweep.params[p].key),
                         sweep.params[p].values[point.value_index[p]].json);
    }
    out += "}, \"counters\": {";
    const std::vector<std::string> values = CounterValues(point.counters, columns);
    for (std::size_t i = 0; i < names.size(); ++i) {
      out += fmt::format("{}\"{}\": {}", i == 0 ? "" : ", ", names[i],
                         values[i].empty() ? "null" : values[i]);
    }
    out += "}}";
  }
  out += sweep.points.empty() ? "]}\n" : "\n]}\n";
  return out;
}

}  // namespace fusebox::sim

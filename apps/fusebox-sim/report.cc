#include "report.h"

#include <fmt/format.h>

#include <algorithm>

#include <cstdint>
#include <string>

#include "fusebox/events.h"
#include "fusebox/outcome.h"

namespace fusebox::sim {
namespace {

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
                        bool with_recovering) {
  const std::vector<std::string_view>& names = CounterNames(with_recovering);
  const std::vector<std::string> values = CounterValues(counters, with_recovering);
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
                   bool with_name_first, bool with_recovering) {
  const std::string inner = indent + "  ";
  out += "{\n";
  if (with_name_first) {
    out += fmt::format("{}\"name\": {},\n", inner, JsonQuote(run.name));
  }
  out += fmt::format("{}\"seed\": {},\n", inner, run.seed);
  out += fmt::format("{}\"transitions\": ", inner);
  AppendTransitionsJson(out, run.transitions, inner);
  out += fmt::format(",\n{}\"counters\": ", inner);
  AppendCountersJson(out, run.counters, inner, with_recovering);
  if (!with_name_first) {
    out += fmt::format(",\n{}\"name\": {}", inner, JsonQuote(run.name));
  }
  out += fmt::format(",\n{}\"streams\": ", inner);
  AppendStreamsJson(out, run.streams, inner);
}

// Whether any of the runs had a recovery ramp: then every output of them shows
// rejected_recovering.
bool AnyRamp(const std::vector<RunResult>& runs) {
  return std::any_of(runs.begin(), runs.end(),
                     [](const RunResult& r) { return r.counters.recovery_ramp; });
}

bool AnyRamp(const SweepResult& sweep) {
  return std::any_of(sweep.points.begin(), sweep.points.end(),
                     [](const SweepPoint& p) { return p.counters.recovery_ramp; });
}

}  // namespace

const std::vector<std::string_view>& CounterNames(bool with_recovering) {
  static const std::vector<std::string_view> counter_names = {
      "calls",     "allowed",       "rejected_open",    "rejected_probe_cap",
      "succeeded", "failed",        "timeouts",         "slow",
      "probes",    "wasted_probes", "recovery_delay_s", "late",
      "relapses",  "max_in_flight",
  };
  static const std::vector<std::string_view> with_recovering_names = [] {
    std::vector<std::string_view> names = counter_names;
    names.emplace_back("rejected_recovering");
    return names;
  }();
  return with_recovering ? with_recovering_names : counter_names;
}

std::vector<std::string> CounterValues(const Counters& c, bool with_recovering) {
  auto n = [](std::uint64_t v) { return fmt::format("{}", v); };
  std::vector<std::string> values = {
      n(c.calls),
      n(c.allowed),
      n(c.rejected_open),
      n(c.rejected_probe_cap),
      n(c.succeeded),
      n(c.failed),
      n(c.timeouts),
      n(c.slow),
      n(c.probes),
      n(c.wasted_probes),
      c.recovery_delay ? FormatSeconds(*c.recovery_delay) : std::string(),
      n(c.late),
      n(c.relapses),
      n(c.max_in_flight),
  };
  if (with_recovering) {
    values.push_back(n(c.rejected_recovering));
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

std::string RunText(const std::vector<RunResult>& runs, bool with_headers) {
  std::string out;
  const bool with_recovering = AnyRamp(runs);
  for (const RunResult& run : runs) {
    if (with_headers) {
      out += fmt::format("{}=== {} ===\n", out.empty() ? "" : "\n", run.name);
    }
    out += "--- transitions (t, from -> to) ---\n";
    for (const Transition& t : run.transitions) {
      out += fmt::format("    t={:>5}s{:>12} -> {}\n", FormatSeconds(t.t), ToString(t.from),
                         ToString(t.to));
    }
    if (run.transitions.empty()) {
      out += "    (none)\n";
    }
    out += fmt::format("--- counters (seed {}) ---\n", run.seed);
    const std::vector<std::string_view>& names = CounterNames(with_recovering);
    const std::vector<std::string> values = CounterValues(run.counters, with_recovering);
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
  return out;
}

std::string RunJson(const RunResult& base, const std::vector<RunResult>& variants) {
  std::string out;
  const bool with_recovering = base.counters.recovery_ramp || AnyRamp(variants);
  AppendRunJson(out, base, "", /*with_name_first=*/false, with_recovering);
  if (!variants.empty()) {
    out += ",\n  \"variants\": [\n";
    for (std::size_t i = 0; i < variants.size(); ++i) {
      out += "    ";
      AppendRunJson(out, variants[i], "    ", /*with_name_first=*/true, with_recovering);
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
  const bool with_recovering = AnyRamp(sweep);
  const std::vector<std::string_view>& names = CounterNames(with_recovering);
  for (std::size_t i = 0; i < names.size(); ++i) {
    out += names[i];
    out += i + 1 < names.size() ? ',' : '\n';
  }
  for (const SweepPoint& point : sweep.points) {
    for (std::size_t p = 0; p < sweep.params.size(); ++p) {
      out += sweep.params[p].values[point.value_index[p]].csv;
      out += ',';
    }
    const std::vector<std::string> values = CounterValues(point.counters, with_recovering);
    for (std::size_t i = 0; i < values.size(); ++i) {
      out += values[i];
      out += i + 1 < values.size() ? ',' : '\n';
    }
  }
  return out;
}

std::string SweepJson(const SweepResult& sweep) {
  std::string out = "{\"points\": [";
  const bool with_recovering = AnyRamp(sweep);
  const std::vector<std::string_view>& names = CounterNames(with_recovering);
  for (std::size_t k = 0; k < sweep.points.size(); ++k) {
    const SweepPoint& point = sweep.points[k];
    out += k == 0 ? "\n  " : ",\n  ";
    out += "{\"params\": {";
    for (std::size_t p = 0; p < sweep.params.size(); ++p) {
      out += fmt::format("{}{}: {}", p == 0 ? "" : ", ", JsonQuote(sweep.params[p].key),
                         sweep.params[p].values[point.value_index[p]].json);
    }
    out += "}, \"counters\": {";
    const std::vector<std::string> values = CounterValues(point.counters, with_recovering);
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

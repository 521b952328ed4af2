#include "fusebox/metrics.h"

#include <array>
#include <charconv>
#include <cmath>
#include <string>
#include <system_error>

namespace fusebox {
namespace {

// The shortest text that reads back as `value` (0.2, not %.17g's 0.20000000000000001), in
// Prometheus's spelling of the special values.
void AppendNumber(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
    return;
  }
  if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
    return;
  }
  std::array<char, 32> number{};
  const auto [end, ec] = std::to_chars(number.data(), number.data() + number.size(), value);
  out.append(number.data(), ec == std::errc() ? end : number.data());
}

void Line(std::string& out, const char* metric, const std::string& name, const char* extra_label,
          double value) {
  out += metric;
  out += "{breaker=\"";
  out += name;
  out += '"';
  if (extra_label != nullptr) {
    out += ',';
    out += extra_label;
  }
  out += "} ";
  AppendNumber(out, value);
  out += '\n';
}

void Help(std::string& out, bool with_help, const char* metric, const char* type,
          const char* help) {
  if (!with_help) {
    return;
  }
  out += "# HELP ";
  out += metric;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += metric;
  out += ' ';
  out += type;
  out += '\n';
}

// Label values must escape backslash, quote and newline (Prometheus text format).
std::string EscapeLabel(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

void AppendPrometheus(std::string& out, const MetricsSnapshot& snapshot, bool with_help) {
  const MetricsSnapshot& m = snapshot;
  const std::string name = EscapeLabel(m.name);
  auto d = [](std::uint64_t v) { return static_cast<double>(v); };

  Help(out, with_help, "fusebox_state", "gauge", "1 for the breaker's current state.");
  for (State s : {State::kClosed, State::kOpen, State::kHalfOpen, State::kDisabled,
                  State::kMetricsOnly, State::kForcedOpen}) {
    const std::string label = "state=\"" + std::string(ToString(s)) + "\"";
    Line(out, "fusebox_state", name, label.c_str(), s == m.state ? 1.0 : 0.0);
  }
  Help(out, with_help, "fusebox_calls_total", "counter", "Calls that asked for a permit.");
  Line(out, "fusebox_calls_total", name, nullptr, d(m.calls));
  Help(out, with_help, "fusebox_allowed_total", "counter", "Calls admitted.");
  Line(out, "fusebox_allowed_total", name, nullptr, d(m.allowed));
  Help(out, with_help, "fusebox_rejections_total", "counter", "Calls rejected, by reason.");
  Line(out, "fusebox_rejections_total", name, "reason=\"CIRCUIT_OPEN\"", d(m.rejected_open));
  Line(out, "fusebox_rejections_total", name, "reason=\"CIRCUIT_HALF_OPEN\"",
       d(m.rejected_half_open));
  Line(out, "fusebox_rejections_total", name, "reason=\"CIRCUIT_RECOVERING\"",
       d(m.rejected_recovering));
  Help(out, with_help, "fusebox_outcomes_total", "counter",
       "Outcomes of admitted calls (failure excludes timeouts here).");
  Line(out, "fusebox_outcomes_total", name, "outcome=\"success\"", d(m.succeeded));
  Line(out, "fusebox_outcomes_total", name, "outcome=\"failure\"", d(m.failed - m.timeouts));
  Line(out, "fusebox_outcomes_total", name, "outcome=\"timeout\"", d(m.timeouts));
  Line(out, "fusebox_outcomes_total", name, "outcome=\"ignored\"", d(m.ignored));
  Help(out, with_help, "fusebox_slow_calls_total", "counter", "Slow calls, timeouts included.");
  Line(out, "fusebox_slow_calls_total", name, nullptr, d(m.slow));
  Help(out, with_help, "fusebox_late_outcomes_total", "counter",
       "Outcomes of calls admitted in an earlier generation.");
  Line(out, "fusebox_late_outcomes_total", name, nullptr, d(m.late));
  Help(out, with_help, "fusebox_probes_total", "counter", "Calls admitted in HALF_OPEN.");
  Line(out, "fusebox_probes_total", name, nullptr, d(m.probes));
  Help(out, with_help, "fusebox_wasted_probes_total", "counter",
       "Probes that failed, timed out or were slow.");
  Line(out, "fusebox_wasted_probes_total", name, nullptr, d(m.wasted_probes));
  Help(out, with_help, "fusebox_transitions_total", "counter", "State transitions.");
  Line(out, "fusebox_transitions_total", name, nullptr, d(m.transitions));
  Help(out, with_help, "fusebox_failure_rate", "gauge", "Failure rate over the trip window.");
  Line(out, "fusebox_failure_rate", name, nullptr, m.failure_rate);
  Help(out, with_help, "fusebox_slow_call_rate", "gauge", "Slow-call rate over the trip window.");
  Line(out, "fusebox_slow_call_rate", name, nullptr, m.slow_call_rate);
  Help(out, with_help, "fusebox_retry_after_seconds", "gauge",
       "Seconds until a probe may be admitted (0 unless OPEN).");
  Line(out, "fusebox_retry_after_seconds", name, nullptr, ToSeconds(m.retry_after));
  Help(out, with_help, "fusebox_recovering", "gauge", "1 while the recovery ramp runs.");
  Line(out, "fusebox_recovering", name, nullptr, m.recovering ? 1.0 : 0.0);
  Help(out, with_help, "fusebox_recovery_progress", "gauge",
       "Share of the recovery ramp elapsed (0 to 1; 0 when none runs).");
  Line(out, "fusebox_recovery_progress", name, nullptr, m.recovery_progress);
}

}  // namespace fusebox

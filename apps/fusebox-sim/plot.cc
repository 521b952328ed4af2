#include "plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <string_view>
#include <utility>

#include "fusebox/events.h"
#include "report.h"

namespace fusebox::sim {
namespace {

constexpr double kWidth = 1000.0;
constexpr double kLeft = 110.0;  // room for row labels
constexpr double kRight = 24.0;
constexpr double kPlotWidth = kWidth - kLeft - kRight;

constexpr std::string_view kFont = "font-family=\"Helvetica,Arial,sans-serif\"";

std::string Escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string_view StateColor(State state) {
  switch (state) {
    case State::kClosed:
      return "#66bb6a";
    case State::kOpen:
      return "#e53935";
    case State::kHalfOpen:
      return "#ffa000";
    case State::kDisabled:
      return "#b0bec5";
    case State::kMetricsOnly:
      return "#90caf9";
    case State::kForcedOpen:
      return "#8d6e63";
  }
  return "#000000";
}

std::string_view ModeColor(Mode mode) {
  switch (mode) {
    case Mode::kOk:
      return "#c5e1a5";
    case Mode::kError:
      return "#ef9a9a";
    case Mode::kHang:
      return "#ce93d8";
    case Mode::kSlow:
      return "#ffe082";
    case Mode::kFragile:
      return "#ffcc80";
    case Mode::kWarming:
      return "#ffe0b2";
    case Mode::kQueue:
      return "#b3e5fc";
    case Mode::kRefuse:
      return "#f8bbd0";
  }
  return "#ffffff";
}

// The modes whose `capacity` is a number of servers or calls in flight the in-flight chart draws.
bool HasServingCapacity(Mode mode) { return mode == Mode::kQueue || mode == Mode::kRefuse; }

// A phase's label on the upstream row: its mode, and the capacity of a queue or refuse phase.
std::string PhaseLabel(const Phase& phase) {
  if (HasServingCapacity(phase.mode)) {
    return fmt::format("{} {}", ToString(phase.mode), phase.capacity);
  }
  return std::string(ToString(phase.mode));
}

constexpr std::string_view kCollapsedColor = "#b71c1c";

struct Series {
  std::string_view label;
  std::string_view color;
};

constexpr Series kSucceeded{"succeeded", "#43a047"};
constexpr Series kSlowSucceeded{"succeeded, slow", "#fdd835"};
constexpr Series kFailed{"failed", "#e53935"};
constexpr Series kTimedOut{"timed out", "#8e24aa"};
constexpr Series kRejectedOpen{"rejected: CIRCUIT_OPEN", "#bdbdbd"};
constexpr Series kRejectedProbeCap{"rejected: CIRCUIT_HALF_OPEN", "#64b5f6"};
constexpr Series kRejectedRecovering{"rejected: CIRCUIT_RECOVERING", "#4dd0e1"};
constexpr Series kOverloaded{"rejected: OVERLOADED (limit)", "#a1887f"};
constexpr Series kThrottled{"rejected: THROTTLED (throttle)", "#7986cb"};
constexpr Series kRefusedByUpstream{"failed: refused by the upstream", "#f48fb1"};

constexpr std::string_view kLimitColor = "#ef6c00";

// A 1-2-5 step giving about `ticks` intervals over `range`.
double NiceStep(double range, int ticks) {
  if (!(range > 0.0)) {
    return 1.0;
  }
  const double raw = range / ticks;
  const double decade = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * decade >= raw) {
      return m * decade;
    }
  }
  return 10.0 * decade;
}

std::string Num(double value) {
  if (std::abs(value - std::round(value)) < 1e-9) {
    return fmt::format("{}", static_cast<std::int64_t>(std::llround(value)));
  }
  return fmt::format("{:.6g}", value);
}

class Svg {
 public:
  void Rect(double x, double y, double w, double h, std::string_view fill,
            std::string_view extra = "") {
    fmt::format_to(std::back_inserter(out_),
                   "<rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" "
                   "fill=\"{}\"{}{}/>\n",
                   x, y, std::max(w, 0.0), std::max(h, 0.0), fill, extra.empty() ? "" : " ", extra);
  }
  void RectWithTitle(double x, double y, double w, double h, std::string_view fill,
                     std::string_view title) {
    fmt::format_to(std::back_inserter(out_),
                   "<rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" "
                   "fill=\"{}\"><title>{}</title></rect>\n",
                   x, y, std::max(w, 0.0), std::max(h, 0.0), fill, Escape(title));
  }
  void Line(double x1, double y1, double x2, double y2, std::string_view stroke, double width = 1.0,
            std::string_view extra = "") {
    fmt::format_to(std::back_inserter(out_),
                   "<line x1=\"{:.2f}\" y1=\"{:.2f}\" x2=\"{:.2f}\" y2=\"{:.2f}\" stroke=\"{}\" "
                   "stroke-width=\"{}\"{}{}/>\n",
                   x1, y1, x2, y2, stroke, width, extra.empty() ? "" : " ", extra);
  }
  void Text(double x, double y, std::string_view text, double size = 11,
            std::string_view anchor = "start", std::string_view extra = "") {
    fmt::format_to(std::back_inserter(out_),
                   "<text x=\"{:.2f}\" y=\"{:.2f}\" font-size=\"{}\" text-anchor=\"{}\" {}{}{}>"
                   "{}</text>\n",
                   x, y, size, anchor, kFont, extra.empty() ? "" : " ", extra, Escape(text));
  }
  void Raw(std::string_view text) { out_ += text; }

  std::string Finish(double height) const {
    return fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" height=\"{1:.0f}\" "
        "viewBox=\"0 0 {0:.0f} {1:.0f}\">\n<rect width=\"100%\" height=\"100%\" "
        "fill=\"#ffffff\"/>\n{2}</svg>\n",
        kWidth, height, out_);
  }

 private:
  std::string out_;
};

void Legend(Svg& svg, double x, double y, const std::vector<Series>& items) {
  for (const Series& item : items) {
    svg.Rect(x, y - 9, 12, 12, item.color);
    svg.Text(x + 16, y + 1, item.label, 11);
    x += 26 + 6.2 * static_cast<double>(item.label.size());
  }
}

std::string BreakerSummary(const Scenario& s) {
  const CircuitBreakerConfig& b = s.breaker;
  auto secs = [](Duration d) {
    return FormatSeconds(std::chrono::duration_cast<std::chrono::microseconds>(d).count());
  };
  std::string text = fmt::format("trip={}", ToString(b.trip));
  if (b.trip == TripPolicy::kConsecutive) {
    text += fmt::format(" threshold={}", b.failure_threshold);
  } else {
    text += fmt::format(" window={} min_calls={} failure_rate>={} slow_rate>={}", b.window_size,
                        b.minimum_calls, b.failure_rate_threshold, b.slow_call_rate_threshold);
  }
  text +=
      fmt::format(" timeout={}s slow>={}s cooldown={}s probes={}", secs(b.call_timeout),
                  secs(b.effective_slow_call_duration()), secs(b.cooldown), b.half_open_max_probes);
  if (b.effective_half_open_successes() != b.half_open_max_probes) {
    text += fmt::format(" successes={}", b.effective_half_open_successes());
  }
  if (b.batch_may_probe) {
    text += " batch_may_probe";
  }
  if (b.recovery_ramp > Duration::zero()) {
    text += fmt::format(" recovery_ramp={}s", secs(b.recovery_ramp));
  }
  return text;
}

std::string Seconds(Duration d) {
  return FormatSeconds(std::chrono::duration_cast<std::chrono::microseconds>(d).count());
}

// The [limit] in a few words: "limit=80", "limit=auto(3..1000, from 16, window 1.0s,
// tolerance 1)", "throttle k=2 window=10.0s".
std::string LimitSummary(const Limit& limit) {
  std::string text;
  if (limit.adaptive) {
    const AdaptiveLimitConfig& a = limit.adaptive_config;
    text = fmt::format("limit=auto({}..{}, from {}, window {}s, tolerance {})", a.min_limit,
                       a.max_limit, a.initial_limit, Seconds(a.sample_window), a.tolerance);
  } else if (limit.max_in_flight > 0) {
    text = fmt::format("limit={}", limit.max_in_flight);
  }
  if (limit.has_throttle()) {
    text += fmt::format("{}throttle k={} window={}s", text.empty() ? "" : " ", limit.throttle.k,
                        Seconds(limit.throttle.window));
  }
  return text;
}

// ---- run plots ----

constexpr double kRow = 20;                 // the upstream and breaker rows
constexpr double kCallsHeight = 110;        // the calls chart
constexpr double kInFlightHeight = 46;      // the in-flight chart
constexpr double kTallInFlightHeight = 90;  // ... with a capacity or a limit drawn over it
constexpr double kRefusalHeight = 60;       // the refusals chart

// Where an instant of simulated time falls across the plot; every panel of a run plot shares one
// scale, so that their times line up.
struct TimeScale {
  double t_max;  // seconds at the right edge

  double XOfSeconds(double seconds) const { return kLeft + seconds / t_max * kPlotWidth; }
  double XOfMicros(Micros micros) const { return XOfSeconds(static_cast<double>(micros) / 1e6); }
};

// The run's name and its breaker settings; returns the y below them.
double PanelHeading(Svg& svg, double y, const Scenario& scenario, const RunResult& run) {
  svg.Text(kLeft, y + 12, run.name, 14, "start", "font-weight=\"bold\"");
  std::string summary = BreakerSummary(scenario);
  if (scenario.limit) {
    summary += "   " + LimitSummary(*scenario.limit);
  }
  svg.Text(kLeft, y + 26, fmt::format("{}   (seed {})", summary, run.seed), 10, "start",
           "fill=\"#555555\"");
  return y + 34;
}

// The upstream's phases in their modes' colours, and a fragile upstream's collapses over them.
double UpstreamRow(Svg& svg, double y, const Scenario& scenario, const RunResult& run,
                   const TimeScale& time) {
  svg.Text(10, y + 14, "upstream", 11);
  svg.Rect(kLeft, y, kPlotWidth, kRow, "#f1f8e9");
  for (const Phase& phase : scenario.phases) {
    const double x0 = time.XOfMicros(phase.from);
    const double x1 = time.XOfMicros(phase.to);
    std::string title = fmt::format("{}: [{} s, {} s)", PhaseLabel(phase),
                                    FormatSeconds(phase.from), FormatSeconds(phase.to));
    svg.RectWithTitle(x0, y, x1 - x0, kRow, ModeColor(phase.mode), title);
    if (x1 - x0 > 40) {
      svg.Text((x0 + x1) / 2, y + 14, PhaseLabel(phase), 10, "middle");
    }
  }
  for (const auto& [from, to] : run.collapses) {
    const double x0 = time.XOfMicros(from);
    svg.RectWithTitle(
        x0, y + 3, std::max(time.XOfMicros(to) - x0, 2.0), kRow - 6, kCollapsedColor,
        fmt::format("collapsed (relapse): [{} s, {} s)", FormatSeconds(from), FormatSeconds(to)));
  }
  return y + kRow + 4;
}

void StateBand(Svg& svg, double y, const TimeScale& time, Micros from, Micros to, State state) {
  const double x0 = time.XOfMicros(from);
  double w = time.XOfMicros(to) - x0;
  if (state == State::kHalfOpen && w < 3) {
    w = 3;  // an instant bounce still shows
  }
  svg.RectWithTitle(
      x0, y, w, kRow, StateColor(state),
      fmt::format("{} from {} s to {} s", ToString(state), FormatSeconds(from), FormatSeconds(to)));
}

// The breaker's state over time, one band per stay in a state.
void StateBands(Svg& svg, double y, const std::vector<Transition>& transitions,
                const TimeScale& time) {
  const Micros t_end = static_cast<Micros>(std::llround(time.t_max * 1e6));
  State state = State::kClosed;
  Micros since = 0;
  for (const Transition& t : transitions) {
    if (state != State::kHalfOpen) {
      StateBand(svg, y, time, since, t.t, state);
    }
    state = t.to;
    since = t.t;
  }
  StateBand(svg, y, time, since, t_end, state);
  // HALF_OPEN bands go on top so that a bounce is never hidden by its neighbours.
  state = State::kClosed;
  since = 0;
  for (const Transition& t : transitions) {
    if (state == State::kHalfOpen) {
      StateBand(svg, y, time, since, t.t, state);
    }
    state = t.to;
    since = t.t;
  }
  if (state == State::kHalfOpen) {
    StateBand(svg, y, time, since, t_end, state);
  }
}

// A tick across the breaker row per transition, its tooltip saying from -> to and why.
void TransitionTicks(Svg& svg, double y, const std::vector<Transition>& transitions,
                     const TimeScale& time) {
  for (const Transition& t : transitions) {
    svg.Raw(
        fmt::format("<line x1=\"{0:.2f}\" y1=\"{1:.2f}\" x2=\"{0:.2f}\" y2=\"{2:.2f}\" "
                    "stroke=\"#212121\" stroke-width=\"1\"><title>{3}</title></line>\n",
                    time.XOfMicros(t.t), y - 2, y + kRow + 2,
                    Escape(fmt::format("t={} s: {} -> {}: {}", FormatSeconds(t.t), ToString(t.from),
                                       ToString(t.to), CauseText(t)))));
  }
}

double BreakerRow(Svg& svg, double y, const RunResult& run, const TimeScale& time) {
  svg.Text(10, y + 14, "breaker", 11);
  StateBands(svg, y, run.transitions, time);
  TransitionTicks(svg, y, run.transitions, time);
  const std::vector<TransitionLabel> labels = LayoutTransitionLabels(run.transitions, time.t_max);
  int rows = 1;
  for (const TransitionLabel& label : labels) {
    rows = std::max(rows, label.row + 1);
    const double baseline = y + kRow + 11 + kTransitionLabelRowHeight * label.row;
    std::string tooltip =
        label.count == 1
            ? fmt::format("t={} s", FormatSeconds(run.transitions[label.first].t))
            : fmt::format("{} transitions from {} s to {} s", label.count,
                          FormatSeconds(run.transitions[label.first].t),
                          FormatSeconds(run.transitions[label.first + label.count - 1].t));
    svg.Raw(
        fmt::format("<text class=\"transition-label\" x=\"{:.2f}\" y=\"{:.2f}\" font-size=\"{}\" "
                    "text-anchor=\"middle\" {} fill=\"#212121\"><title>{}</title>{}</text>\n",
                    (label.x0 + label.x1) / 2, baseline, kTransitionLabelFontSize, kFont,
                    Escape(tooltip), Escape(label.text)));
  }
  return y + kRow + 5 + kTransitionLabelRowHeight * rows;
}

// The most calls of any bin, at least 1 (the chart's scale).
std::uint32_t PeakCalls(const Timeline& timeline) {
  std::uint32_t peak = 1;
  for (const Timeline::Bin& bin : timeline.bins) {
    peak = std::max(peak, bin.succeeded + bin.slow_succeeded + bin.failed + bin.timeouts +
                              bin.rejected_open + bin.rejected_probe_cap + bin.rejected_recovering +
                              bin.overloaded + bin.throttled);
  }
  return peak;
}

// The calls chart's label, background and count grid.
void CallsFrame(Svg& svg, double y, Micros bin_width, double y_step, double y_max) {
  svg.Text(10, y + kCallsHeight / 2 - 6, "calls", 11);
  svg.Text(10, y + kCallsHeight / 2 + 7, fmt::format("per {} s", FormatSeconds(bin_width)), 9,
           "start", "fill=\"#555555\"");
  svg.Rect(kLeft, y, kPlotWidth, kCallsHeight, "#fafafa");
  for (double v = 0; v <= y_max + 1e-9; v += y_step) {
    const double yy = y + kCallsHeight - v / y_max * kCallsHeight;
    svg.Line(kLeft, yy, kLeft + kPlotWidth, yy, "#e0e0e0");
    svg.Text(kLeft - 4, yy + 3, Num(v), 9, "end", "fill=\"#555555\"");
  }
}

// The diamond over a bin that admitted probes (`cx`, `cy`: its centre).
void ProbeMarker(Svg& svg, double cx, double cy, std::uint32_t probes, Micros from,
                 Micros bin_width) {
  svg.Raw(fmt::format(
      "<path d=\"M{0:.2f} {1:.2f} l4 4 l-4 4 l-4 -4 z\" fill=\"#ff6f00\" "
      "stroke=\"#212121\" stroke-width=\"0.5\"><title>{2} probe{3} at [{4} "
      "s, +{5} s)</title></path>\n",
      cx, cy - 4, probes, probes == 1 ? "" : "s", FormatSeconds(from), FormatSeconds(bin_width)));
}

// One bar per bin, its calls stacked by fate from the bottom up, and the probe marker above it.
void CallBars(Svg& svg, double y, const Timeline& timeline, const TimeScale& time, double y_max) {
  const double bin_w = time.XOfMicros(timeline.bin_width) - kLeft;
  const double bar_w = std::max(bin_w * 0.85, 0.6);
  for (std::size_t i = 0; i < timeline.bins.size(); ++i) {
    const Timeline::Bin& bin = timeline.bins[i];
    const Micros from = static_cast<Micros>(i) * timeline.bin_width;
    const double x = time.XOfMicros(from);
    double base = y + kCallsHeight;
    const std::array<std::pair<std::uint32_t, const Series*>, 10> stack = {{
        {bin.succeeded, &kSucceeded},
        {bin.slow_succeeded, &kSlowSucceeded},
        {bin.failed - bin.refused, &kFailed},
        {bin.refused, &kRefusedByUpstream},
        {bin.timeouts, &kTimedOut},
        {bin.rejected_recovering, &kRejectedRecovering},
        {bin.rejected_probe_cap, &kRejectedProbeCap},
        {bin.rejected_open, &kRejectedOpen},
        {bin.throttled, &kThrottled},
        {bin.overloaded, &kOverloaded},
    }};
    for (const auto& [count, series] : stack) {
      if (count == 0) {
        continue;
      }
      const double h = count / y_max * kCallsHeight;
      svg.RectWithTitle(x, base - h, bar_w, h, series->color,
                        fmt::format("[{} s, +{} s): {} {}", FormatSeconds(from),
                                    FormatSeconds(timeline.bin_width), count, series->label));
      base -= h;
    }
    if (bin.probes > 0) {
      ProbeMarker(svg, x + bar_w / 2, std::max(base - 6, y + 4), bin.probes, from,
                  timeline.bin_width);
    }
  }
}

// Calls per bin, stacked by fate.
double CallsChart(Svg& svg, double y, const Timeline& timeline, const TimeScale& time) {
  const std::uint32_t peak = PeakCalls(timeline);
  const double y_step = std::max(NiceStep(peak, 4), 1.0);  // counts: whole steps
  const double y_max = std::ceil(static_cast<double>(peak) / y_step) * y_step;
  CallsFrame(svg, y, timeline.bin_width, y_step, y_max);
  if (timeline.bin_width > 0) {
    CallBars(svg, y, timeline, time, y_max);
  }
  return y + kCallsHeight;
}

// Where the in-flight chart puts a number of calls: 0 at `base`, `f_max` at `base - height`.
struct FlightScale {
  double base;
  double height;
  double f_max;

  double Y(double calls) const { return base - std::min(calls, f_max) / f_max * height; }
};

// The capacity of each queue or refuse phase, dashed.
void CapacityLines(Svg& svg, const FlightScale& scale, const Scenario& scenario,
                   const TimeScale& time) {
  for (const Phase& phase : scenario.phases) {
    if (!HasServingCapacity(phase.mode)) {
      continue;
    }
    const double yy = scale.Y(phase.capacity);
    svg.Raw(fmt::format(
        "<line x1=\"{:.2f}\" y1=\"{:.2f}\" x2=\"{:.2f}\" y2=\"{:.2f}\" stroke=\"#616161\" "
        "stroke-width=\"1\" stroke-dasharray=\"4 3\"><title>{}</title></line>\n",
        time.XOfMicros(phase.from), yy, time.XOfMicros(phase.to), yy,
        Escape(fmt::format("capacity {} ({}) from {} s to {} s", phase.capacity,
                           ToString(phase.mode), FormatSeconds(phase.from),
                           FormatSeconds(phase.to)))));
  }
}

// The [limit] over time, a step line (clipped to the chart), each step with its tooltip.
void LimitLine(Svg& svg, const FlightScale& scale, const RunResult& run, const TimeScale& time,
               Micros end) {
  const auto& changes = run.limit_changes;
  std::string points;
  for (std::size_t i = 0; i < changes.size(); ++i) {
    const Micros to = i + 1 < changes.size() ? changes[i + 1].first : end;
    const double yy = scale.Y(changes[i].second);
    fmt::format_to(std::back_inserter(points), "{:.2f},{:.2f} {:.2f},{:.2f} ",
                   time.XOfMicros(changes[i].first), yy, time.XOfMicros(to), yy);
  }
  svg.Raw(
      fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"3\" "
                  "stroke-opacity=\"0.7\"><title>{}</title></polyline>\n",
                  points, kLimitColor,
                  Escape(fmt::format("limit: {} changes, last {} at {} s", changes.size() - 1,
                                     changes.back().second, FormatSeconds(changes.back().first)))));
}

// The scale of the in-flight chart: the peak in flight, the capacities and the limit; a limit
// that stays far above the others (a fixed limit no load reaches) is left out, and not drawn.
struct FlightRange {
  double f_max = 1;
  bool draw_limit = false;
};

FlightRange FlightRangeOf(const Scenario& scenario, const RunResult& run) {
  double f_max = std::max(1.0, static_cast<double>(run.counters.max_in_flight));
  for (const Phase& phase : scenario.phases) {
    if (HasServingCapacity(phase.mode)) {
      f_max = std::max(f_max, static_cast<double>(phase.capacity));
    }
  }
  double limit_min = std::numeric_limits<double>::max();
  double limit_max = 0;
  for (const auto& [t, limit] : run.limit_changes) {
    limit_min = std::min(limit_min, static_cast<double>(limit));
    limit_max = std::max(limit_max, static_cast<double>(limit));
  }
  if (run.limit_changes.empty() || limit_min > 2 * f_max) {
    return FlightRange{f_max, false};
  }
  return FlightRange{std::max(f_max, std::min(limit_max, 2 * f_max)), true};
}

// Peak calls in flight per bin; drawn only for a run that ever had more than one at once. The
// capacity of a queue or refuse upstream and the [limit] are drawn over it, on a taller chart.
double InFlightChart(Svg& svg, double y, const Scenario& scenario, const RunResult& run,
                     const TimeScale& time) {
  const Timeline& timeline = run.timeline;
  if (!(run.counters.max_in_flight > 1 && !timeline.bins.empty())) {
    return y;
  }
  const bool tall = !run.limit_changes.empty() ||
                    std::any_of(scenario.phases.begin(), scenario.phases.end(),
                                [](const Phase& p) { return HasServingCapacity(p.mode); });
  const double height = tall ? kTallInFlightHeight : kInFlightHeight;
  y += 6;
  svg.Text(10, y + height / 2 + 4, "in flight", 11);
  svg.Rect(kLeft, y, kPlotWidth, height, "#fafafa");
  const FlightRange range = FlightRangeOf(scenario, run);
  const FlightScale scale{y + height, height - 4, range.f_max};
  svg.Text(kLeft - 4, y + 8, Num(scale.f_max), 9, "end", "fill=\"#555555\"");
  svg.Text(kLeft - 4, y + height, "0", 9, "end", "fill=\"#555555\"");
  // The limit under the calls in flight, which it bounds and so often meets.
  if (range.draw_limit) {
    LimitLine(svg, scale, run, time,
              static_cast<Micros>(timeline.bins.size()) * timeline.bin_width);
  }
  std::string points;
  for (std::size_t i = 0; i < timeline.bins.size(); ++i) {
    const double x0 = time.XOfMicros(static_cast<Micros>(i) * timeline.bin_width);
    const double x1 = time.XOfMicros(static_cast<Micros>(i + 1) * timeline.bin_width);
    const double yy = scale.Y(timeline.bins[i].max_in_flight);
    fmt::format_to(std::back_inserter(points), "{:.2f},{:.2f} {:.2f},{:.2f} ", x0, yy, x1, yy);
  }
  svg.Raw(
      fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"#3949ab\" "
                  "stroke-width=\"1.2\"/>\n",
                  points));
  CapacityLines(svg, scale, scenario, time);
  return y + height;
}

bool HasRefusePhase(const Scenario& scenario) {
  return std::any_of(scenario.phases.begin(), scenario.phases.end(),
                     [](const Phase& p) { return p.mode == Mode::kRefuse; });
}

// A line of shares per bin (0 at `base`, 1 at `base - height`); a bin with nothing to share is
// a gap.
void ShareLine(Svg& svg, double base, double height, const Timeline& timeline,
               const TimeScale& time, std::string_view color,
               std::pair<std::uint32_t, std::uint32_t> (*share)(const Timeline::Bin&)) {
  std::string points;
  auto flush = [&] {
    if (!points.empty()) {
      svg.Raw(fmt::format(
          "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.6\"/>\n", points,
          color));
      points.clear();
    }
  };
  for (std::size_t i = 0; i < timeline.bins.size(); ++i) {
    const auto [part, whole] = share(timeline.bins[i]);
    if (whole == 0) {
      flush();
      continue;
    }
    const double x0 = time.XOfMicros(static_cast<Micros>(i) * timeline.bin_width);
    const double x1 = time.XOfMicros(static_cast<Micros>(i + 1) * timeline.bin_width);
    const double yy = base - static_cast<double>(part) / whole * height;
    fmt::format_to(std::back_inserter(points), "{:.2f},{:.2f} {:.2f},{:.2f} ", x0, yy, x1, yy);
  }
  flush();
}

// Per bin, the share of the calls sent that a refuse upstream refused and, with a throttle, the
// share of the arrivals the throttle refused; drawn for a run with either.
double RefusalChart(Svg& svg, double y, const Scenario& scenario, const RunResult& run,
                    const TimeScale& time) {
  const Timeline& timeline = run.timeline;
  if (!(run.counters.throttling || HasRefusePhase(scenario)) || timeline.bins.empty()) {
    return y;
  }
  y += 6;
  svg.Text(10, y + kRefusalHeight / 2 + 4, "refused", 11);
  svg.Rect(kLeft, y, kPlotWidth, kRefusalHeight, "#fafafa");
  const double base = y + kRefusalHeight;
  const double height = kRefusalHeight - 4;
  for (const double share : {0.5, 1.0}) {
    svg.Line(kLeft, base - share * height, kLeft + kPlotWidth, base - share * height, "#e0e0e0");
    svg.Text(kLeft - 4, base - share * height + 3, fmt::format("{:.0f} %", share * 100), 9, "end",
             "fill=\"#555555\"");
  }
  svg.Text(kLeft - 4, base, "0", 9, "end", "fill=\"#555555\"");
  ShareLine(svg, base, height, timeline, time, kRefusedByUpstream.color,
            [](const Timeline::Bin& b) {
              return std::pair<std::uint32_t, std::uint32_t>{
                  b.refused, b.succeeded + b.slow_succeeded + b.failed + b.timeouts};
            });
  if (run.counters.throttling) {
    ShareLine(svg, base, height, timeline, time, kThrottled.color, [](const Timeline::Bin& b) {
      return std::pair<std::uint32_t, std::uint32_t>{
          b.throttled, b.succeeded + b.slow_succeeded + b.failed + b.timeouts + b.rejected_open +
                           b.rejected_probe_cap + b.rejected_recovering + b.overloaded +
                           b.throttled};
    });
  }
  return y + kRefusalHeight;
}

double TimeAxis(Svg& svg, double y, const TimeScale& time) {
  const double t_step = NiceStep(time.t_max, 10);
  for (double t = 0; t <= time.t_max + 1e-9; t += t_step) {
    const double x = time.XOfSeconds(t);
    svg.Line(x, y, x, y + 4, "#424242");
    svg.Text(x, y + 15, Num(t), 9, "middle");
  }
  svg.Line(kLeft, y, kLeft + kPlotWidth, y, "#424242");
  svg.Text(kLeft + kPlotWidth, y + 28, "time (s)", 10, "end", "fill=\"#555555\"");
  return y + 36;
}

// One panel: the upstream row, the breaker row, the calls chart and the in-flight chart; returns
// the y below it.
double RunPanel(Svg& svg, double y, const Scenario& scenario, const RunResult& run, double t_max) {
  const TimeScale time{t_max};
  y = PanelHeading(svg, y, scenario, run);
  y = UpstreamRow(svg, y, scenario, run, time);
  y = BreakerRow(svg, y, run, time);
  y = CallsChart(svg, y, run.timeline, time);
  y = InFlightChart(svg, y, scenario, run, time);
  y = RefusalChart(svg, y, scenario, run, time);
  return TimeAxis(svg, y, time);
}

// The end of the shared time axis: the longest scenario, or the last transition if later.
double TimeSpan(const std::vector<Scenario>& scenarios, const std::vector<RunResult>& runs) {
  double t_max = 1.0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    t_max = std::max(t_max, static_cast<double>(scenarios[i].duration) / 1e6);
    if (!runs[i].transitions.empty()) {
      t_max = std::max(t_max, static_cast<double>(runs[i].transitions.back().t) / 1e6);
    }
  }
  return t_max;
}

// Where a run has a concurrency limit: its refusals and its line; where a run has a throttle or
// a refuse upstream: their refusals and their lines in the refusals chart. Returns the y below.
double LimitLegend(Svg& svg, double y, const std::vector<Scenario>& scenarios,
                   const std::vector<RunResult>& runs) {
  if (std::any_of(runs.begin(), runs.end(),
                  [](const RunResult& r) { return r.counters.limited; })) {
    svg.Text(10, y + 1, "limit", 11);
    Legend(svg, kLeft, y, {kOverloaded});
    svg.Line(kLeft + 320, y - 3, kLeft + 344, y - 3, kLimitColor, 3, "stroke-opacity=\"0.7\"");
    svg.Text(kLeft + 350, y + 1, "the limit (in flight chart)", 11);
    y += 20;
  }
  const bool throttle = std::any_of(runs.begin(), runs.end(),
                                    [](const RunResult& r) { return r.counters.throttling; });
  if (throttle || std::any_of(scenarios.begin(), scenarios.end(), HasRefusePhase)) {
    if (throttle) {
      Legend(svg, kLeft, y, {kRefusedByUpstream, kThrottled});
    } else {
      Legend(svg, kLeft, y, {kRefusedByUpstream});
    }
    y += 20;
    svg.Text(10, y + 1, "refused", 11);
    svg.Line(kLeft, y - 3, kLeft + 24, y - 3, kRefusedByUpstream.color, 1.6);
    svg.Text(kLeft + 30, y + 1, "share of the calls sent that the upstream refused", 11);
    if (throttle) {
      svg.Line(kLeft + 360, y - 3, kLeft + 384, y - 3, kThrottled.color, 1.6);
      svg.Text(kLeft + 390, y + 1, "share of the arrivals the throttle refused", 11);
    }
    y += 20;
  }
  return y;
}

// The colour keys under the panels; returns the y below them.
double RunLegends(Svg& svg, double y, const std::vector<Scenario>& scenarios,
                  const std::vector<RunResult>& runs) {
  y += 4;
  svg.Text(10, y + 1, "calls", 11);
  Legend(svg, kLeft, y,
         {kSucceeded, kSlowSucceeded, kFailed, kTimedOut, kRejectedOpen, kRejectedProbeCap});
  y += 20;
  y = LimitLegend(svg, y, scenarios, runs);
  // Only where a run has a recovery ramp, so the other scenarios' plots stay as they were.
  if (std::any_of(runs.begin(), runs.end(),
                  [](const RunResult& r) { return r.counters.recovery_ramp; })) {
    Legend(svg, kLeft, y, {kRejectedRecovering});
    y += 20;
  }
  svg.Raw(
      fmt::format("<path d=\"M{0:.2f} {1:.2f} l4 4 l-4 4 l-4 -4 z\" fill=\"#ff6f00\" "
                  "stroke=\"#212121\" stroke-width=\"0.5\"/>\n",
                  kLeft + 6, y - 8));
  svg.Text(kLeft + 16, y + 1, "a bin with probes (admitted in HALF_OPEN)", 11);
  y += 20;
  svg.Text(10, y + 1, "breaker", 11);
  Legend(svg, kLeft, y,
         {{"CLOSED", StateColor(State::kClosed)},
          {"OPEN", StateColor(State::kOpen)},
          {"HALF_OPEN", StateColor(State::kHalfOpen)}});
  svg.Text(kLeft - 8 + 320, y + 1, "upstream", 11, "end");
  Legend(svg, kLeft + 320, y,
         {{"healthy", "#f1f8e9"},
          {"error", ModeColor(Mode::kError)},
          {"hang", ModeColor(Mode::kHang)},
          {"slow", ModeColor(Mode::kSlow)},
          {"fragile", ModeColor(Mode::kFragile)},
          {"collapsed", kCollapsedColor},
          {"ok", ModeColor(Mode::kOk)}});
  // Only where a run has a queue or refuse phase, so the other scenarios' plots stay as they were.
  const bool serving = std::any_of(scenarios.begin(), scenarios.end(), [](const Scenario& s) {
    return std::any_of(s.phases.begin(), s.phases.end(),
                       [](const Phase& p) { return HasServingCapacity(p.mode); });
  });
  if (serving) {
    y += 20;
    Legend(svg, kLeft + 320, y,
           {{"queue", ModeColor(Mode::kQueue)}, {"refuse", ModeColor(Mode::kRefuse)}});
    svg.Line(kLeft + 500, y - 3, kLeft + 524, y - 3, "#616161", 1, "stroke-dasharray=\"4 3\"");
    svg.Text(kLeft + 530, y + 1, "capacity (in flight chart)", 11);
  }
  return y + 16;
}

// ---- sweep plots ----

constexpr int kSweepColumns = 3;
constexpr double kSweepCellWidth = kWidth / kSweepColumns;
constexpr double kSweepCellHeight = 210;
constexpr double kSweepTop = 56;  // below the heading

// One colour per line of a chart, the same line the same colour in every chart.
constexpr std::array<std::string_view, 8> kPalette = {"#1e88e5", "#e53935", "#43a047", "#fb8c00",
                                                      "#8e24aa", "#00897b", "#6d4c41", "#3949ab"};

std::string_view LineColor(std::size_t line_index) {
  return kPalette[line_index % kPalette.size()];
}

// The counters worth a chart and every counter's value at every point.
struct ChartedCounters {
  // [counter][point], counters in CounterNames() order; nullopt: no value (no recovery).
  std::vector<std::vector<std::optional<double>>> values;
  std::vector<std::size_t> shown;  // the counters charted, in chart order
};

// The two counters the trade-off is about first, then any that varies.
ChartedCounters ChartedCountersOf(const SweepResult& sweep) {
  const CounterColumns columns = ColumnsOf(sweep);
  const std::vector<std::string_view> names = CounterNames(columns);
  ChartedCounters counters;
  counters.values.resize(names.size());
  std::vector<std::size_t> varying;
  for (std::size_t c = 0; c < names.size(); ++c) {
    std::vector<std::optional<double>>& values = counters.values[c];
    for (const SweepPoint& point : sweep.points) {
      const std::string text = CounterValues(point.counters, columns)[c];
      values.push_back(text.empty() ? std::nullopt : std::optional<double>(std::stod(text)));
    }
    if (names[c] == "wasted_probes" || names[c] == "recovery_delay_s") {
      counters.shown.push_back(c);
    } else if (std::adjacent_find(values.begin(), values.end(), std::not_equal_to<>()) !=
               values.end()) {
      varying.push_back(c);
    }
  }
  counters.shown.insert(counters.shown.end(), varying.begin(), varying.end());
  return counters;
}

// The lines of every chart: one per combination of the other parameters' value indices (the key),
// through the points (indices into SweepResult::points) that have it.
using SweepLines = std::map<std::vector<std::size_t>, std::vector<std::size_t>>;

SweepLines SweepLinesOf(const SweepResult& sweep) {
  const bool has_params = !sweep.params.empty();
  SweepLines lines;
  for (std::size_t k = 0; k < sweep.points.size(); ++k) {
    std::vector<std::size_t> others(sweep.points[k].value_index.begin() + (has_params ? 1 : 0),
                                    sweep.points[k].value_index.end());
    lines[others].push_back(k);
  }
  return lines;
}

// The x axis every chart of a sweep shares: the first swept parameter.
struct SweepAxis {
  const ParamSpec* param = nullptr;  // nullptr: nothing swept, every point at x = 0
  bool categorical = false;
  std::vector<std::pair<double, std::string>> category_ticks;  // (x, label), one per position
  double lo = std::numeric_limits<double>::max();
  double hi = std::numeric_limits<double>::lowest();

  // A value that is not a number sits at its position among the parameter's values.
  double XOf(const SweepPoint& point) const {
    if (param == nullptr) {
      return 0.0;
    }
    const std::size_t i = point.value_index.front();
    return param->values[i].is_numeric ? param->values[i].numeric : static_cast<double>(i);
  }
};

SweepAxis SweepAxisOf(const SweepResult& sweep) {
  SweepAxis axis;
  axis.param = sweep.params.empty() ? nullptr : &sweep.params.front();
  // Text and true/false values are categories: one tick per value, not a numeric scale (whose
  // ticks at fractions would land between the categories).
  axis.categorical = axis.param != nullptr &&
                     (axis.param->kind == KeyKind::kString || axis.param->kind == KeyKind::kBool ||
                      !axis.param->values.front().is_numeric);
  if (axis.categorical) {
    for (std::size_t i = 0; i < axis.param->values.size(); ++i) {
      const ParamValue& v = axis.param->values[i];
      const double x = v.is_numeric ? v.numeric : static_cast<double>(i);
      if (std::none_of(axis.category_ticks.begin(), axis.category_ticks.end(),
                       [&](const auto& tick) { return tick.first == x; })) {
        axis.category_ticks.emplace_back(x, v.csv);
      }
    }
  }
  for (const SweepPoint& point : sweep.points) {
    axis.lo = std::min(axis.lo, axis.XOf(point));
    axis.hi = std::max(axis.hi, axis.XOf(point));
  }
  if (!(axis.hi > axis.lo)) {
    axis.lo -= 1;
    axis.hi += 1;
  }
  return axis;
}

// Where the n-th chart sits in the grid, and how it maps (x, value) to the page.
struct ChartArea {
  double cell_top;
  double left;
  double top;
  double w;
  double h;
  double x_lo;
  double x_hi;
  double y_step;
  double y_max;

  double Px(double x) const { return left + (x - x_lo) / (x_hi - x_lo) * w; }
  double Py(double v) const { return top + h - v / y_max * h; }
};

ChartArea ChartAreaOf(std::size_t n, const std::vector<std::optional<double>>& values,
                      const SweepAxis& axis) {
  const std::size_t column = n % kSweepColumns;
  const std::size_t row = n / kSweepColumns;
  const double cx = static_cast<double>(column) * kSweepCellWidth;
  const double cy = kSweepTop + static_cast<double>(row) * kSweepCellHeight;
  double y_hi = 0;
  for (const auto& v : values) {
    y_hi = std::max(y_hi, v.value_or(0));
  }
  const double y_step = NiceStep(y_hi > 0 ? y_hi : 1, 4);
  const double y_max = std::max(std::ceil(y_hi / y_step), 1.0) * y_step;
  return ChartArea{.cell_top = cy,
                   .left = cx + 52,
                   .top = cy + 24,
                   .w = kSweepCellWidth - 70,
                   .h = kSweepCellHeight - 70,
                   .x_lo = axis.lo,
                   .x_hi = axis.hi,
                   .y_step = y_step,
                   .y_max = y_max};
}

// A chart's title, background, value grid and x ticks.
void ChartFrame(Svg& svg, const ChartArea& area, std::string_view counter, const SweepAxis& axis) {
  const double left = area.left;
  const double top = area.top;
  const double w = area.w;
  const double h = area.h;
  svg.Text(left, area.cell_top + 16, counter, 12, "start", "font-weight=\"bold\"");
  svg.Rect(left, top, w, h, "#fafafa");
  for (double v = 0; v <= area.y_max + 1e-9; v += area.y_step) {
    svg.Line(left, area.Py(v), left + w, area.Py(v), "#e0e0e0");
    svg.Text(left - 4, area.Py(v) + 3, Num(v), 9, "end", "fill=\"#555555\"");
  }
  if (axis.categorical) {
    // One tick per value, at the value's own position, labelled with the value.
    for (const auto& [x, label] : axis.category_ticks) {
      svg.Line(area.Px(x), top + h, area.Px(x), top + h + 3, "#424242");
      svg.Text(area.Px(x), top + h + 14, label, 9, "middle");
    }
  } else {
    const double x_step = NiceStep(axis.hi - axis.lo, 5);
    for (double x = std::ceil(axis.lo / x_step) * x_step; x <= axis.hi + 1e-9; x += x_step) {
      svg.Line(area.Px(x), top + h, area.Px(x), top + h + 3, "#424242");
      svg.Text(area.Px(x), top + h + 14, Num(x), 9, "middle");
    }
  }
  if (axis.param != nullptr) {
    svg.Text(left + w, top + h + 28, axis.param->key, 9, "end", "fill=\"#555555\"");
  }
}

// A point's tooltip: every parameter's value, then the counter's.
std::string PointTip(const SweepResult& sweep, std::size_t k, std::string_view counter,
                     double value) {
  std::string tip;
  for (std::size_t p = 0; p < sweep.params.size(); ++p) {
    tip += fmt::format("{}={} ", sweep.params[p].key,
                       sweep.params[p].values[sweep.points[k].value_index[p]].csv);
  }
  tip += fmt::format("-> {}={}", counter, Num(value));
  return tip;
}

// One line of a chart through the points `ks`, and a dot with a tooltip on each. A point without
// a value (recovery_delay_s when the breaker never recovered) is a gap, not a zero.
void ChartLine(Svg& svg, const ChartArea& area, const SweepResult& sweep, const SweepAxis& axis,
               std::string_view counter, const std::vector<std::optional<double>>& values,
               const std::vector<std::size_t>& ks, std::string_view color) {
  std::string points;
  for (std::size_t k : ks) {
    const std::optional<double>& v = values[k];
    if (!v) {
      continue;
    }
    fmt::format_to(std::back_inserter(points), "{:.2f},{:.2f} ", area.Px(axis.XOf(sweep.points[k])),
                   area.Py(*v));
  }
  svg.Raw(
      fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" "
                  "stroke-width=\"1.5\"/>\n",
                  points, color));
  for (std::size_t k : ks) {
    const std::optional<double>& v = values[k];
    if (!v) {
      continue;
    }
    svg.Raw(
        fmt::format("<circle cx=\"{:.2f}\" cy=\"{:.2f}\" r=\"2.2\" fill=\"{}\">"
                    "<title>{}</title></circle>\n",
                    area.Px(axis.XOf(sweep.points[k])), area.Py(*v), color,
                    Escape(PointTip(sweep, k, counter, *v))));
  }
}

// Which colour is which combination of the other parameters; returns the y below the key.
double LinesLegend(Svg& svg, double y, const SweepLines& lines, const SweepResult& sweep) {
  double x = 20;
  std::size_t line_index = 0;
  for (const auto& [others, ks] : lines) {
    std::string label;
    for (std::size_t p = 1; p < sweep.params.size(); ++p) {
      label += fmt::format("{}{}={}", p == 1 ? "" : " ", sweep.params[p].key,
                           sweep.params[p].values[others[p - 1]].csv);
    }
    if (x + 30 + 6.0 * static_cast<double>(label.size()) > kWidth) {
      x = 20;
      y += 18;
    }
    svg.Rect(x, y - 9, 12, 12, LineColor(line_index));
    svg.Text(x + 16, y + 1, label, 10);
    x += 30 + 6.0 * static_cast<double>(label.size());
    ++line_index;
  }
  return y + 18;
}

}  // namespace

double TransitionLabelWidth(const std::string& text) {
  // Helvetica's digits are 0.556 em wide, its widest other characters here ("(", ")", "-")
  // narrower: a digit's width for every character, plus a pixel a side, is never short.
  return 0.556 * kTransitionLabelFontSize * static_cast<double>(text.size()) + 2;
}

std::vector<TransitionLabel> LayoutTransitionLabels(const std::vector<Transition>& transitions,
                                                    double t_max) {
  constexpr double kGap = 4;
  const TimeScale time{t_max > 0 ? t_max : 1.0};
  // The coarsest decimal step (1 s down to 1 ms) that is at most about 5 px on this axis.
  const double seconds_per_px = time.t_max / kPlotWidth;
  int decimals = 0;
  while (decimals < 3 && std::pow(10.0, -decimals) > 5 * seconds_per_px) {
    ++decimals;
  }
  auto time_text = [decimals](Micros t) {
    return fmt::format("{:.{}f}", static_cast<double>(t) / 1e6, decimals);
  };
  auto make = [&](std::size_t first, std::size_t count) {
    TransitionLabel label;
    label.first = first;
    label.count = count;
    const std::string from = time_text(transitions[first].t);
    const std::string to = time_text(transitions[first + count - 1].t);
    if (count == 1) {
      label.text = from;
    } else if (from == to) {
      label.text = fmt::format("{} ({})", from, count);
    } else {
      label.text = fmt::format("{}-{} ({})", from, to, count);
    }
    const double width = TransitionLabelWidth(label.text);
    const double centre =
        (time.XOfMicros(transitions[first].t) + time.XOfMicros(transitions[first + count - 1].t)) /
        2;
    // Inside the picture: the left edge may reach into the row labels' margin, not past it.
    label.x0 = std::clamp(centre - width / 2, kLeft / 2, kWidth - 2 - width);
    label.x1 = label.x0 + width;
    return label;
  };
  // Greedy, left to right: each label takes the first row whose last label ends kGap before it.
  // A transition whose time reads as the previous label's last joins that label. A label with no
  // room joins the label placed before it, which is then placed afresh from the
  // row ends as they were before it (a lone label always fits: nothing is left of it then).
  using RowEnds = std::array<double, kTransitionLabelRows>;
  RowEnds ends;
  ends.fill(-std::numeric_limits<double>::infinity());
  std::vector<TransitionLabel> placed;
  std::vector<RowEnds> ends_before;  // the row ends before each placed label
  for (std::size_t i = 0; i < transitions.size(); ++i) {
    TransitionLabel label = make(i, 1);
    // Transitions whose times read alike share a label from the start.
    bool alike = !placed.empty() &&
                 time_text(transitions[i].t) ==
                     time_text(transitions[placed.back().first + placed.back().count - 1].t);
    for (;;) {
      const auto row = std::find_if(ends.begin(), ends.end(),
                                    [&label](double end) { return end + kGap <= label.x0; });
      if (!alike && (row != ends.end() || placed.empty())) {
        label.row = row != ends.end() ? static_cast<int>(row - ends.begin()) : 0;
        ends_before.push_back(ends);
        ends[static_cast<std::size_t>(label.row)] = label.x1;
        placed.push_back(std::move(label));
        break;
      }
      const std::size_t first = placed.back().first;
      ends = ends_before.back();
      placed.pop_back();
      ends_before.pop_back();
      label = make(first, label.first + label.count - first);
      alike = false;
    }
  }
  return placed;
}

std::string RunSvg(const std::vector<Scenario>& scenarios, const std::vector<RunResult>& runs) {
  Svg svg;
  const double t_max = TimeSpan(scenarios, runs);
  double y = 8;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    y = RunPanel(svg, y, scenarios[i], runs[i], t_max);
  }
  return svg.Finish(RunLegends(svg, y, scenarios, runs));
}

std::string SweepSvg(const std::string& title, const SweepResult& sweep) {
  Svg svg;
  const std::vector<std::string_view> names = CounterNames(ColumnsOf(sweep));
  const ChartedCounters counters = ChartedCountersOf(sweep);
  const SweepLines lines = SweepLinesOf(sweep);
  const SweepAxis axis = SweepAxisOf(sweep);
  svg.Text(20, 24, fmt::format("sweep: {}", title), 15, "start", "font-weight=\"bold\"");
  svg.Text(20, 42,
           fmt::format("{} points; x = {}", sweep.points.size(),
                       axis.param != nullptr ? axis.param->key : std::string("(none)")),
           11, "start", "fill=\"#555555\"");
  for (std::size_t n = 0; n < counters.shown.size(); ++n) {
    const std::size_t c = counters.shown[n];
    const ChartArea area = ChartAreaOf(n, counters.values[c], axis);
    ChartFrame(svg, area, names[c], axis);
    std::size_t line_index = 0;
    for (const auto& [others, ks] : lines) {
      ChartLine(svg, area, sweep, axis, names[c], counters.values[c], ks, LineColor(line_index));
      ++line_index;
    }
  }
  double y = kSweepTop + std::ceil(static_cast<double>(counters.shown.size()) / kSweepColumns) *
                             kSweepCellHeight;
  if (lines.size() > 1) {
    y = LinesLegend(svg, y, lines, sweep);
  }
  return svg.Finish(y + 8);
}

std::string SvgEscape(std::string_view text) { return Escape(text); }

}  // namespace fusebox::sim

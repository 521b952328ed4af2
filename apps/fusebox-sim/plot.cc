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
  }
  return "#ffffff";
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

// One panel: the upstream row, the breaker row, the calls chart and the in-flight chart.
double RunPanel(Svg& svg, double y, const Scenario& scenario, const RunResult& run, double t_max) {
  auto x_of = [&](double seconds) { return kLeft + seconds / t_max * kPlotWidth; };
  auto x_of_us = [&](Micros micros) { return x_of(static_cast<double>(micros) / 1e6); };

  svg.Text(kLeft, y + 12, run.name, 14, "start", "font-weight=\"bold\"");
  svg.Text(kLeft, y + 26, fmt::format("{}   (seed {})", BreakerSummary(scenario), run.seed), 10,
           "start", "fill=\"#555555\"");
  y += 34;

  // Upstream phases.
  constexpr double kRow = 20;
  svg.Text(10, y + 14, "upstream", 11);
  svg.Rect(kLeft, y, kPlotWidth, kRow, "#f1f8e9");
  for (const Phase& phase : scenario.phases) {
    const double x0 = x_of_us(phase.from);
    const double x1 = x_of_us(phase.to);
    std::string title = fmt::format("{}: [{} s, {} s)", ToString(phase.mode),
                                    FormatSeconds(phase.from), FormatSeconds(phase.to));
    svg.RectWithTitle(x0, y, x1 - x0, kRow, ModeColor(phase.mode), title);
    if (x1 - x0 > 40) {
      svg.Text((x0 + x1) / 2, y + 14, ToString(phase.mode), 10, "middle");
    }
  }
  for (const auto& [from, to] : run.collapses) {
    const double x0 = x_of_us(from);
    svg.RectWithTitle(
        x0, y + 3, std::max(x_of_us(to) - x0, 2.0), kRow - 6, kCollapsedColor,
        fmt::format("collapsed (relapse): [{} s, {} s)", FormatSeconds(from), FormatSeconds(to)));
  }
  y += kRow + 4;

  // Breaker state bands and transitions.
  svg.Text(10, y + 14, "breaker", 11);
  State state = State::kClosed;
  Micros since = 0;
  auto band = [&](Micros from, Micros to, State s) {
    double x0 = x_of_us(from);
    double w = x_of_us(to) - x0;
    if (s == State::kHalfOpen && w < 3) {
      w = 3;  // an instant bounce still shows
    }
    svg.RectWithTitle(
        x0, y, w, kRow, StateColor(s),
        fmt::format("{} from {} s to {} s", ToString(s), FormatSeconds(from), FormatSeconds(to)));
  };
  const Micros t_end = static_cast<Micros>(std::llround(t_max * 1e6));
  for (const Transition& t : run.transitions) {
    if (state != State::kHalfOpen) {
      band(since, t.t, state);
    }
    state = t.to;
    since = t.t;
  }
  band(since, t_end, state);
  // HALF_OPEN bands go on top so that a bounce is never hidden by its neighbours.
  state = State::kClosed;
  since = 0;
  for (const Transition& t : run.transitions) {
    if (state == State::kHalfOpen) {
      band(since, t.t, state);
    }
    state = t.to;
    since = t.t;
  }
  if (state == State::kHalfOpen) {
    band(since, t_end, state);
  }
  const double label_y = y + kRow + 11;
  // Transitions closer than a label's width share one label: "64.0-64.02".
  struct Label {
    double x;
    Micros first;
    Micros last;
  };
  std::vector<Label> labels;
  for (const Transition& t : run.transitions) {
    const double x = x_of_us(t.t);
    svg.Raw(
        fmt::format("<line x1=\"{0:.2f}\" y1=\"{1:.2f}\" x2=\"{0:.2f}\" y2=\"{2:.2f}\" "
                    "stroke=\"#212121\" stroke-width=\"1\"><title>{3}</title></line>\n",
                    x, y - 2, y + kRow + 2,
                    Escape(fmt::format("t={} s: {} -> {} ({})", FormatSeconds(t.t),
                                       ToString(t.from), ToString(t.to), ToString(t.cause)))));
    if (!labels.empty() && x - labels.back().x < 34) {
      labels.back().last = t.t;
    } else {
      labels.push_back(Label{x, t.t, t.t});
    }
  }
  for (const Label& label : labels) {
    svg.Text(label.x, label_y,
             label.first == label.last
                 ? FormatSeconds(label.first)
                 : fmt::format("{}-{}", FormatSeconds(label.first), FormatSeconds(label.last)),
             9, "middle", "fill=\"#212121\"");
  }
  y += kRow + 16;

  // Calls per bin, stacked by fate.
  constexpr double kChart = 110;
  const Timeline& timeline = run.timeline;
  std::uint32_t peak = 1;
  for (const Timeline::Bin& bin : timeline.bins) {
    peak = std::max(peak, bin.succeeded + bin.slow_succeeded + bin.failed + bin.timeouts +
                              bin.rejected_open + bin.rejected_probe_cap + bin.rejected_recovering);
  }
  const double y_step = std::max(NiceStep(peak, 4), 1.0);  // counts: whole steps
  const double y_max = std::ceil(static_cast<double>(peak) / y_step) * y_step;
  svg.Text(10, y + kChart / 2 - 6, "calls", 11);
  svg.Text(10, y + kChart / 2 + 7, fmt::format("per {} s", FormatSeconds(timeline.bin_width)), 9,
           "start", "fill=\"#555555\"");
  svg.Rect(kLeft, y, kPlotWidth, kChart, "#fafafa");
  for (double v = 0; v <= y_max + 1e-9; v += y_step) {
    const double yy = y + kChart - v / y_max * kChart;
    svg.Line(kLeft, yy, kLeft + kPlotWidth, yy, "#e0e0e0");
    svg.Text(kLeft - 4, yy + 3, Num(v), 9, "end", "fill=\"#555555\"");
  }
  if (timeline.bin_width > 0) {
    const double bin_w = x_of_us(timeline.bin_width) - kLeft;
    const double bar_w = std::max(bin_w * 0.85, 0.6);
    for (std::size_t i = 0; i < timeline.bins.size(); ++i) {
      const Timeline::Bin& bin = timeline.bins[i];
      const double x = x_of_us(static_cast<Micros>(i) * timeline.bin_width);
      double base = y + kChart;
      const std::array<std::pair<std::uint32_t, const Series*>, 7> stack = {{
          {bin.succeeded, &kSucceeded},
          {bin.slow_succeeded, &kSlowSucceeded},
          {bin.failed, &kFailed},
          {bin.timeouts, &kTimedOut},
          {bin.rejected_recovering, &kRejectedRecovering},
          {bin.rejected_probe_cap, &kRejectedProbeCap},
          {bin.rejected_open, &kRejectedOpen},
      }};
      for (const auto& [count, series] : stack) {
        if (count == 0) {
          continue;
        }
        const double h = count / y_max * kChart;
        svg.RectWithTitle(x, base - h, bar_w, h, series->color,
                          fmt::format("[{} s, +{} s): {} {}",
                                      FormatSeconds(static_cast<Micros>(i) * timeline.bin_width),
                                      FormatSeconds(timeline.bin_width), count, series->label));
        base -= h;
      }
      if (bin.probes > 0) {
        const double cx = x + bar_w / 2;
        const double cy = std::max(base - 6, y + 4);
        svg.Raw(
            fmt::format("<path d=\"M{0:.2f} {1:.2f} l4 4 l-4 4 l-4 -4 z\" fill=\"#ff6f00\" "
                        "stroke=\"#212121\" stroke-width=\"0.5\"><title>{2} probe{3} at [{4} "
                        "s, +{5} s)</title></path>\n",
                        cx, cy - 4, bin.probes, bin.probes == 1 ? "" : "s",
                        FormatSeconds(static_cast<Micros>(i) * timeline.bin_width),
                        FormatSeconds(timeline.bin_width)));
      }
    }
  }
  y += kChart;

  // Peak calls in flight per bin.
  if (run.counters.max_in_flight > 1 && !timeline.bins.empty()) {
    constexpr double kFlight = 46;
    y += 6;
    svg.Text(10, y + kFlight / 2 + 4, "in flight", 11);
    svg.Rect(kLeft, y, kPlotWidth, kFlight, "#fafafa");
    const double f_max = static_cast<double>(run.counters.max_in_flight);
    svg.Text(kLeft - 4, y + 8, Num(f_max), 9, "end", "fill=\"#555555\"");
    svg.Text(kLeft - 4, y + kFlight, "0", 9, "end", "fill=\"#555555\"");
    std::string points;
    for (std::size_t i = 0; i < timeline.bins.size(); ++i) {
      const double x0 = x_of_us(static_cast<Micros>(i) * timeline.bin_width);
      const double x1 = x_of_us(static_cast<Micros>(i + 1) * timeline.bin_width);
      const double yy = y + kFlight - timeline.bins[i].max_in_flight / f_max * (kFlight - 4);
      fmt::format_to(std::back_inserter(points), "{:.2f},{:.2f} {:.2f},{:.2f} ", x0, yy, x1, yy);
    }
    svg.Raw(
        fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"#3949ab\" "
                    "stroke-width=\"1.2\"/>\n",
                    points));
    y += kFlight;
  }

  // Time axis.
  const double t_step = NiceStep(t_max, 10);
  for (double t = 0; t <= t_max + 1e-9; t += t_step) {
    const double x = x_of(t);
    svg.Line(x, y, x, y + 4, "#424242");
    svg.Text(x, y + 15, Num(t), 9, "middle");
  }
  svg.Line(kLeft, y, kLeft + kPlotWidth, y, "#424242");
  svg.Text(kLeft + kPlotWidth, y + 28, "time (s)", 10, "end", "fill=\"#555555\"");
  return y + 36;
}

}  // namespace

std::string RunSvg(const std::vector<Scenario>& scenarios, const std::vector<RunResult>& runs) {
  Svg svg;
  double t_max = 1.0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    t_max = std::max(t_max, static_cast<double>(scenarios[i].duration) / 1e6);
    if (!runs[i].transitions.empty()) {
      t_max = std::max(t_max, static_cast<double>(runs[i].transitions.back().t) / 1e6);
    }
  }
  double y = 8;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    y = RunPanel(svg, y, scenarios[i], runs[i], t_max);
  }
  // Legends.
  y += 4;
  svg.Text(10, y + 1, "calls", 11);
  Legend(svg, kLeft, y,
         {kSucceeded, kSlowSucceeded, kFailed, kTimedOut, kRejectedOpen, kRejectedProbeCap});
  y += 20;
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
  y += 16;
  return svg.Finish(y);
}

std::string SweepSvg(const std::string& title, const SweepResult& sweep) {
  Svg svg;
  const std::vector<std::string_view>& names = CounterNames();
  // The counters worth a chart: the two the trade-off is about first, then any that varies.
  std::vector<std::size_t> shown;
  std::vector<std::vector<std::optional<double>>> values(names.size());
  std::vector<std::size_t> varying;
  for (std::size_t c = 0; c < names.size(); ++c) {
    for (const SweepPoint& point : sweep.points) {
      const std::string text = CounterValues(point.counters)[c];
      values[c].push_back(text.empty() ? std::nullopt : std::optional<double>(std::stod(text)));
    }
    if (names[c] == "wasted_probes" || names[c] == "recovery_delay_s") {
      shown.push_back(c);
    } else if (std::adjacent_find(values[c].begin(), values[c].end(), std::not_equal_to<>()) !=
               values[c].end()) {
      varying.push_back(c);
    }
  }
  shown.insert(shown.end(), varying.begin(), varying.end());
  const bool has_params = !sweep.params.empty();
  const ParamSpec* x_param = has_params ? &sweep.params.front() : nullptr;
  // One line per combination of the other parameters.
  std::map<std::vector<std::size_t>, std::vector<std::size_t>> lines;
  for (std::size_t k = 0; k < sweep.points.size(); ++k) {
    std::vector<std::size_t> others(sweep.points[k].value_index.begin() + (has_params ? 1 : 0),
                                    sweep.points[k].value_index.end());
    lines[others].push_back(k);
  }
  auto x_value = [&](std::size_t k) {
    if (x_param == nullptr) {
      return 0.0;
    }
    const std::size_t i = sweep.points[k].value_index.front();
    return x_param->values[i].is_numeric ? x_param->values[i].numeric : static_cast<double>(i);
  };
  // Text and true/false values are categories: one tick per value, not a numeric scale (whose
  // ticks at fractions would land between the categories).
  const bool categorical =
      x_param != nullptr && (x_param->kind == KeyKind::kString || x_param->kind == KeyKind::kBool ||
                             !x_param->values.front().is_numeric);
  std::vector<std::pair<double, std::string>> category_ticks;  // (x, label), one per position
  if (categorical) {
    for (std::size_t i = 0; i < x_param->values.size(); ++i) {
      const ParamValue& v = x_param->values[i];
      const double x = v.is_numeric ? v.numeric : static_cast<double>(i);
      if (std::none_of(category_ticks.begin(), category_ticks.end(),
                       [&](const auto& tick) { return tick.first == x; })) {
        category_ticks.emplace_back(x, v.csv);
      }
    }
  }
  double x_lo = std::numeric_limits<double>::max();
  double x_hi = std::numeric_limits<double>::lowest();
  for (std::size_t k = 0; k < sweep.points.size(); ++k) {
    x_lo = std::min(x_lo, x_value(k));
    x_hi = std::max(x_hi, x_value(k));
  }
  if (!(x_hi > x_lo)) {
    x_lo -= 1;
    x_hi += 1;
  }
  static constexpr std::array<std::string_view, 8> kPalette = {
      "#1e88e5", "#e53935", "#43a047", "#fb8c00", "#8e24aa", "#00897b", "#6d4c41", "#3949ab"};

  svg.Text(20, 24, fmt::format("sweep: {}", title), 15, "start", "font-weight=\"bold\"");
  svg.Text(20, 42,
           fmt::format("{} points; x = {}", sweep.points.size(),
                       x_param != nullptr ? x_param->key : std::string("(none)")),
           11, "start", "fill=\"#555555\"");
  constexpr int kColumns = 3;
  constexpr double kCellW = kWidth / kColumns;
  constexpr double kCellH = 210;
  constexpr double kTop = 56;
  for (std::size_t n = 0; n < shown.size(); ++n) {
    const std::size_t c = shown[n];
    const std::size_t column = n % kColumns;
    const std::size_t row = n / kColumns;
    const double cx = static_cast<double>(column) * kCellW;
    const double cy = kTop + static_cast<double>(row) * kCellH;
    const double left = cx + 52;
    const double top = cy + 24;
    const double w = kCellW - 70;
    const double h = kCellH - 70;
    double y_hi = 0;
    for (const auto& v : values[c]) {
      y_hi = std::max(y_hi, v.value_or(0));
    }
    const double y_step = NiceStep(y_hi > 0 ? y_hi : 1, 4);
    const double y_max = std::max(std::ceil(y_hi / y_step), 1.0) * y_step;
    auto px = [&](double x) { return left + (x - x_lo) / (x_hi - x_lo) * w; };
    auto py = [&](double v) { return top + h - v / y_max * h; };

    svg.Text(left, cy + 16, names[c], 12, "start", "font-weight=\"bold\"");
    svg.Rect(left, top, w, h, "#fafafa");
    for (double v = 0; v <= y_max + 1e-9; v += y_step) {
      svg.Line(left, py(v), left + w, py(v), "#e0e0e0");
      svg.Text(left - 4, py(v) + 3, Num(v), 9, "end", "fill=\"#555555\"");
    }
    if (categorical) {
      // One tick per value, at the value's own position, labelled with the value.
      for (const auto& [x, label] : category_ticks) {
        svg.Line(px(x), top + h, px(x), top + h + 3, "#424242");
        svg.Text(px(x), top + h + 14, label, 9, "middle");
      }
    } else {
      const double x_step = NiceStep(x_hi - x_lo, 5);
      for (double x = std::ceil(x_lo / x_step) * x_step; x <= x_hi + 1e-9; x += x_step) {
        svg.Line(px(x), top + h, px(x), top + h + 3, "#424242");
        svg.Text(px(x), top + h + 14, Num(x), 9, "middle");
      }
    }
    if (x_param != nullptr) {
      svg.Text(left + w, top + h + 28, x_param->key, 9, "end", "fill=\"#555555\"");
    }
    std::size_t line_index = 0;
    for (const auto& [others, ks] : lines) {
      const std::string_view color = kPalette[line_index % kPalette.size()];
      std::string points;
      for (std::size_t k : ks) {
        const std::optional<double>& v = values[c][k];
        if (!v) {
          continue;  // recovery_delay_s absent: a gap, not a zero
        }
        fmt::format_to(std::back_inserter(points), "{:.2f},{:.2f} ", px(x_value(k)), py(*v));
      }
      svg.Raw(
          fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" "
                      "stroke-width=\"1.5\"/>\n",
                      points, color));
      for (std::size_t k : ks) {
        const std::optional<double>& v = values[c][k];
        if (!v) {
          continue;
        }
        std::string tip;
        for (std::size_t p = 0; p < sweep.params.size(); ++p) {
          tip += fmt::format("{}={} ", sweep.params[p].key,
                             sweep.params[p].values[sweep.points[k].value_index[p]].csv);
        }
        tip += fmt::format("-> {}={}", names[c], Num(*v));
        svg.Raw(
            fmt::format("<circle cx=\"{:.2f}\" cy=\"{:.2f}\" r=\"2.2\" fill=\"{}\">"
                        "<title>{}</title></circle>\n",
                        px(x_value(k)), py(*v), color, Escape(tip)));
      }
      ++line_index;
    }
  }
  double y = kTop + std::ceil(static_cast<double>(shown.size()) / kColumns) * kCellH;
  if (lines.size() > 1) {
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
      svg.Rect(x, y - 9, 12, 12, kPalette[line_index % kPalette.size()]);
      svg.Text(x + 16, y + 1, label, 10);
      x += 30 + 6.0 * static_cast<double>(label.size());
      ++line_index;
    }
    y += 18;
  }
  return svg.Finish(y + 8);
}

}  // namespace fusebox::sim

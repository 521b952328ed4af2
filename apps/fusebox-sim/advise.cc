#include "advise.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

#include "common/gateway_breaker.h"
#include "plot.h"
#include "report.h"

namespace fusebox::sim {
namespace {

std::string DurationText(Duration d) { return app::FormatFlagDuration(d); }

// Applies the axes' values to `base`; the error of the first that does not read, or of the
// breaker's Validate().
std::optional<std::string> Apply(GatewaySettings& settings,
                                 const std::vector<std::pair<std::string, std::string>>& params) {
  bool window_as_duration = false;
  for (const auto& [key, value] : params) {
    const BreakerSetting* setting = app::FindBreakerKey(key);
    if (setting == nullptr) {
      return fmt::format("{}: not a breaker setting", key);
    }
    if (auto e = app::ReadBreakerText(settings.breaker, *setting, key, value, window_as_duration)) {
      return e->message;
    }
  }
  if (auto e = settings.breaker.Validate()) {
    return e->message;
  }
  return std::nullopt;
}

void Judged(Candidate& c, Judge judge) {
  switch (judge) {
    case Judge::kPessimistic:
      c.hurt = UsersHurt(c.pessimistic);
      c.sick_calls = c.pessimistic.calls_while_failing;
      c.delay = c.delay_pessimistic;
      return;
    case Judge::kOptimistic:
      c.hurt = UsersHurt(c.optimistic);
      c.sick_calls = c.optimistic.calls_while_failing;
      c.delay = c.delay_optimistic;
      return;
    case Judge::kBoth:
      c.hurt = std::max(UsersHurt(c.pessimistic), UsersHurt(c.optimistic));
      c.sick_calls = std::max(c.pessimistic.calls_while_failing, c.optimistic.calls_while_failing);
      c.delay = std::max(c.delay_pessimistic, c.delay_optimistic);
      return;
  }
}

// Replays `c` under both readings (once when no call fell in a gap).
void Evaluate(const Incident& incident, const std::vector<Revival>& revivals, Candidate& c,
              Judge judge, Duration slow) {
  ReplayOptions options;
  options.reading = Reading::kPessimistic;
  options.slow = slow;
  auto pessimistic = Replay(incident, c.settings, revivals, options);
  if (!pessimistic) {
    c.error = pessimistic.error();
    return;
  }
  c.pessimistic = pessimistic->counts;
  c.delay_pessimistic = pessimistic->total_recovery_delay;
  c.optimistic = c.pessimistic;
  c.delay_optimistic = c.delay_pessimistic;
  if (pessimistic->read_gaps && judge != Judge::kPessimistic) {
    options.reading = Reading::kOptimistic;
    auto optimistic = Replay(incident, c.settings, revivals, options);
    if (!optimistic) {
      c.error = optimistic.error();
      return;
    }
    c.optimistic = optimistic->counts;
    c.delay_optimistic = optimistic->total_recovery_delay;
  }
  Judged(c, judge);
}

bool Dominates(const Candidate& a, const Candidate& b) {
  const bool no_worse = a.hurt <= b.hurt && a.sick_calls <= b.sick_calls && a.delay <= b.delay;
  const bool better = a.hurt < b.hurt || a.sick_calls < b.sick_calls || a.delay < b.delay;
  return no_worse && better;
}

std::string Params(const Candidate& c) {
  std::string out;
  for (const auto& [key, value] : c.params) {
    out += fmt::format("{}{}={}", out.empty() ? "" : " ", key, value);
  }
  return out;
}

std::string Costs(const Candidate& c) {
  return fmt::format("{} users hurt, {} calls to the sick upstream, recovery {} s", c.hurt,
                     c.sick_calls, FormatSeconds(c.delay));
}

}  // namespace

std::vector<AdviseAxis> DefaultAxes(const GatewaySettings& base) {
  const CircuitBreakerConfig& b = base.breaker;
  std::vector<AdviseAxis> axes;
  if (b.trip == TripPolicy::kConsecutive) {
    axes.push_back({"failure_threshold", {"1", "2", "3", "5", "10"}});
  } else {
    axes.push_back({"failure_rate_threshold", {"0.25", "0.5", "0.75"}});
    const std::uint32_t w = b.window_size;
    std::vector<std::string> windows;
    for (const std::uint32_t v : {std::max<std::uint32_t>(1, w / 2), w, w * 2}) {
      if (v >= b.minimum_calls || b.trip == TripPolicy::kTimeWindow) {
        windows.push_back(fmt::format("{}", v));
      }
    }
    axes.push_back({"window_size", windows});
  }
  if (b.probe_mode == ProbeMode::kActive) {
    axes.push_back({"probe_interval", {"500ms", "1s", "2s", "5s", "10s"}});
  } else {
    axes.push_back({"cooldown", {"5s", "10s", "20s", "40s", "60s"}});
  }
  std::vector<std::string> slow;
  for (const Duration d : {Duration(std::chrono::seconds(1)), Duration(std::chrono::seconds(2)),
                           Duration(std::chrono::seconds(3)), Duration(std::chrono::seconds(5))}) {
    if (d < b.call_timeout) {
      slow.push_back(DurationText(d));
    }
  }
  slow.push_back(DurationText(b.call_timeout));
  axes.push_back({"slow_call_duration", slow});
  return axes;
}

Result<AdviseAxis, std::string> ParseAxis(std::string_view text) {
  const std::size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size()) {
    return fmt::format("--param must be KEY=V1,V2,..., got \"{}\"", text);
  }
  AdviseAxis axis;
  axis.key = std::string(text.substr(0, eq));
  if (app::FindBreakerKey(axis.key) == nullptr) {
    return fmt::format("--param {}: not a breaker setting of the gateway's config", axis.key);
  }
  std::string_view rest = text.substr(eq + 1);
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view value = rest.substr(0, comma);
    if (value.empty()) {
      return fmt::format("--param {}: an empty value in \"{}\"", axis.key, text);
    }
    axis.values.emplace_back(value);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return axis;
}

Result<Advice, std::string> Advise(const Incident& incident, const GatewaySettings& base,
                                   const AdviseOptions& options,
                                   const std::function<void(std::size_t, std::size_t)>& progress) {
  Advice advice;
  advice.axes = options.axes.empty() ? DefaultAxes(base) : options.axes;
  const Duration slow = options.slow.value_or(base.breaker.effective_slow_call_duration());
  const std::vector<Revival> revivals = FindRevivals(incident, slow);
  // The grid, the last axis varying fastest.
  std::size_t total = 1;
  for (const AdviseAxis& axis : advice.axes) {
    if (axis.values.empty()) {
      return fmt::format("--param {}: no values", axis.key);
    }
    total *= axis.values.size();
    if (total > 100'000) {
      return std::string("the grid has more than 100000 points: fewer --param values");
    }
  }
  advice.candidates.resize(total);
  for (std::size_t i = 0; i < total; ++i) {
    Candidate& c = advice.candidates[i];
    std::size_t rest = i;
    for (std::size_t a = advice.axes.size(); a-- > 0;) {
      const AdviseAxis& axis = advice.axes[a];
      c.params.emplace_back(axis.key, axis.values[rest % axis.values.size()]);
      rest /= axis.values.size();
    }
    std::reverse(c.params.begin(), c.params.end());
    c.settings = base;
    if (auto e = Apply(c.settings, c.params)) {
      c.error = *e;
    }
  }
  advice.base.settings = base;
  Evaluate(incident, revivals, advice.base, options.judge, slow);
  if (!advice.base.error.empty()) {
    return fmt::format("the configuration given: {}", advice.base.error);
  }
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> done{0};
  const auto work = [&] {
    for (std::size_t i = next.fetch_add(1); i < total; i = next.fetch_add(1)) {
      Candidate& c = advice.candidates[i];
      if (c.error.empty()) {
        Evaluate(incident, revivals, c, options.judge, slow);
      }
      const std::size_t n = done.fetch_add(1) + 1;
      if (progress) {
        progress(n, total);
      }
    }
  };
  std::vector<std::thread> threads;
  const unsigned jobs =
      std::max(1U, std::min<unsigned>(options.jobs, static_cast<unsigned>(total)));
  for (unsigned j = 1; j < jobs; ++j) {
    threads.emplace_back(work);
  }
  work();
  for (std::thread& t : threads) {
    t.join();
  }
  // The front.
  for (std::size_t i = 0; i < total; ++i) {
    Candidate& c = advice.candidates[i];
    if (!c.error.empty()) {
      continue;
    }
    c.front = std::none_of(advice.candidates.begin(), advice.candidates.end(),
                           [&](const Candidate& o) { return o.error.empty() && Dominates(o, c); });
    // Equal costs: the first in grid order stands for them.
    for (std::size_t j = 0; c.front && j < i; ++j) {
      const Candidate& o = advice.candidates[j];
      c.front =
          !(o.front && o.hurt == c.hurt && o.sick_calls == c.sick_calls && o.delay == c.delay);
    }
    if (c.front) {
      advice.front.push_back(i);
    }
  }
  if (advice.front.empty()) {
    return std::string("no configuration of the grid could be replayed");
  }
  const auto by = [&](auto key) {
    return *std::min_element(advice.front.begin(), advice.front.end(),
                             [&](std::size_t a, std::size_t b) {
                               return key(advice.candidates[a]) < key(advice.candidates[b]);
                             });
  };
  std::sort(advice.front.begin(), advice.front.end(), [&](std::size_t a, std::size_t b) {
    const Candidate& x = advice.candidates[a];
    const Candidate& y = advice.candidates[b];
    return std::tie(x.hurt, x.sick_calls, x.delay) < std::tie(y.hurt, y.sick_calls, y.delay);
  });
  double max_hurt = 1;
  double max_sick = 1;
  double max_delay = 1;
  for (const std::size_t i : advice.front) {
    const Candidate& c = advice.candidates[i];
    max_hurt = std::max(max_hurt, static_cast<double>(c.hurt));
    max_sick = std::max(max_sick, static_cast<double>(c.sick_calls));
    max_delay = std::max(max_delay, static_cast<double>(c.delay));
  }
  const std::size_t balanced = by([&](const Candidate& c) {
    return static_cast<double>(c.hurt) / max_hurt + static_cast<double>(c.sick_calls) / max_sick +
           static_cast<double>(c.delay) / max_delay;
  });
  const std::vector<std::pair<std::string, std::size_t>> picks = {
      {"balanced", balanced},
      {"fewest users hurt",
       by([](const Candidate& c) { return std::make_tuple(c.hurt, c.sick_calls, c.delay); })},
      {"least load on the sick upstream",
       by([](const Candidate& c) { return std::make_tuple(c.sick_calls, c.hurt, c.delay); })},
      {"fastest recovery",
       by([](const Candidate& c) { return std::make_tuple(c.delay, c.hurt, c.sick_calls); })},
  };
  for (const auto& [why, index] : picks) {
    auto same = std::find_if(advice.picks.begin(), advice.picks.end(),
                             [index = index](const auto& p) { return p.second == index; });
    if (same != advice.picks.end()) {
      same->first += ", " + why;
    } else if (advice.picks.size() < options.picks) {
      advice.picks.emplace_back(why, index);
    }
  }
  return advice;
}

std::string AdviceText(const Advice& advice, const Incident& incident) {
  std::string out = fmt::format(
      "advise {}: {} configurations replayed ({} refused by the breaker's rules), {} on the "
      "front\n",
      incident.name, advice.candidates.size(),
      std::count_if(advice.candidates.begin(), advice.candidates.end(),
                    [](const Candidate& c) { return !c.error.empty(); }),
      advice.front.size());
  out += fmt::format("the configuration given: {}\n\n", Costs(advice.base));
  out += fmt::format("{:>12}{:>12}{:>14}  {}\n", "users hurt", "sick calls", "recovery (s)",
                     "settings (the front)");
  for (const std::size_t i : advice.front) {
    const Candidate& c = advice.candidates[i];
    out += fmt::format("{:>12}{:>12}{:>14}  {}\n", c.hurt, c.sick_calls, FormatSeconds(c.delay),
                       Params(c));
  }
  out += "\n";
  for (const auto& [why, index] : advice.picks) {
    const Candidate& c = advice.candidates[index];
    out += fmt::format("# {}: {}\n# (the configuration given: {})\n", why, Costs(c),
                       Costs(advice.base));
    out += GatewayBreakerToml(c.settings.breaker) + "\n";
  }
  return out;
}

std::string AdviceJson(const Advice& advice, const Incident& incident) {
  const auto candidate = [](const Candidate& c) {
    std::string params = "{";
    for (std::size_t i = 0; i < c.params.size(); ++i) {
      params += fmt::format("{}{}: {}", i == 0 ? "" : ", ", JsonQuote(c.params[i].first),
                            JsonQuote(c.params[i].second));
    }
    params += "}";
    if (!c.error.empty()) {
      return fmt::format("{{\"params\": {}, \"error\": {}}}", params, JsonQuote(c.error));
    }
    return fmt::format(
        "{{\"params\": {}, \"users_hurt\": {}, \"calls_while_failing\": {}, "
        "\"recovery_delay_s\": {}, \"front\": {}, \"pessimistic\": {{\"refused\": {}, \"served\": "
        "{}, \"upstream_calls\": {}}}, \"optimistic\": {{\"refused\": {}, \"served\": {}, "
        "\"upstream_calls\": {}}}, \"breaker\": {}}}",
        params, c.hurt, c.sick_calls, FormatSeconds(c.delay), c.front ? "true" : "false",
        c.pessimistic.refused, c.pessimistic.served, c.pessimistic.upstream_calls,
        c.optimistic.refused, c.optimistic.served, c.optimistic.upstream_calls,
        JsonQuote(GatewayBreakerToml(c.settings.breaker)));
  };
  std::string out = fmt::format("{{\"log\": {}, \"base\": {}, \"candidates\": [",
                                JsonQuote(incident.name), candidate(advice.base));
  for (std::size_t i = 0; i < advice.candidates.size(); ++i) {
    out += (i == 0 ? "" : ", ") + candidate(advice.candidates[i]);
  }
  out += "], \"front\": [";
  for (std::size_t i = 0; i < advice.front.size(); ++i) {
    out += fmt::format("{}{}", i == 0 ? "" : ", ", advice.front[i]);
  }
  out += "], \"picks\": [";
  for (std::size_t i = 0; i < advice.picks.size(); ++i) {
    out += fmt::format("{}{{\"why\": {}, \"candidate\": {}}}", i == 0 ? "" : ", ",
                       JsonQuote(advice.picks[i].first), advice.picks[i].second);
  }
  return out + "]}\n";
}

std::string AdviceSvg(const Advice& advice, const Incident& incident) {
  constexpr double kWidth = 760;
  constexpr double kHeight = 580;
  constexpr double kLeft = 80;
  constexpr double kTop = 60;
  constexpr double kPlotW = 620;
  constexpr double kPlotH = 380;
  double max_x = 1;
  double max_y = 1;
  const auto consider = [&](const Candidate& c) {
    if (c.error.empty()) {
      max_x = std::max(max_x, static_cast<double>(c.sick_calls));
      max_y = std::max(max_y, static_cast<double>(c.hurt));
    }
  };
  consider(advice.base);
  for (const Candidate& c : advice.candidates) {
    consider(c);
  }
  max_x *= 1.05;
  max_y *= 1.05;
  const auto x_of = [&](double v) { return kLeft + v / max_x * kPlotW; };
  const auto y_of = [&](double v) { return kTop + kPlotH - v / max_y * kPlotH; };
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
      "{1}\" font-family=\"sans-serif\">\n<rect width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n",
      kWidth, kHeight);
  svg += fmt::format(
      "<text x=\"{}\" y=\"24\" font-size=\"15\" font-weight=\"bold\">advise: {}</text>\n"
      "<text x=\"{}\" y=\"42\" font-size=\"11\" fill=\"#555555\">each dot a configuration "
      "replayed; the front (no other is better in all of users hurt, calls to the sick "
      "upstream and recovery delay) in blue, its recovery delay beside it</text>\n",
      kLeft, SvgEscape(incident.name), kLeft);
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fafafa\" stroke=\"#999999\"/>\n",
      kLeft, kTop, kPlotW, kPlotH);
  for (int i = 0; i <= 4; ++i) {
    const double vx = max_x * i / 4;
    const double vy = max_y * i / 4;
    svg += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" text-anchor=\"middle\">{:.0f}</text>\n",
        x_of(vx), kTop + kPlotH + 14, vx);
    svg += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" text-anchor=\"end\">{:.0f}</text>\n",
        kLeft - 6, y_of(vy) + 3, vy);
  }
  svg += fmt::format(
      "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"middle\">calls sent to the "
      "upstream while it was failing</text>\n",
      kLeft + kPlotW / 2, kTop + kPlotH + 32);
  svg += fmt::format(
      "<text x=\"16\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"middle\" "
      "transform=\"rotate(-90 16 {:.1f})\">users hurt (refused, failed or slow)</text>\n",
      kTop + kPlotH / 2, kTop + kPlotH / 2);
  for (const Candidate& c : advice.candidates) {
    if (c.error.empty() && !c.front) {
      svg += fmt::format(
          "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"#bbbbbb\"><title>{}: {}</title>"
          "</circle>\n",
          x_of(static_cast<double>(c.sick_calls)), y_of(static_cast<double>(c.hurt)), Params(c),
          Costs(c));
    }
  }
  std::string path;
  for (const std::size_t i : advice.front) {
    const Candidate& c = advice.candidates[i];
    path += fmt::format("{}{:.1f},{:.1f}", path.empty() ? "" : " ",
                        x_of(static_cast<double>(c.sick_calls)), y_of(static_cast<double>(c.hurt)));
  }
  svg += fmt::format(
      "<polyline points=\"{}\" fill=\"none\" stroke=\"#1565c0\" "
      "stroke-dasharray=\"4 3\"/>\n",
      path);
  for (const std::size_t i : advice.front) {
    const Candidate& c = advice.candidates[i];
    const double x = x_of(static_cast<double>(c.sick_calls));
    const double y = y_of(static_cast<double>(c.hurt));
    svg += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" fill=\"#1565c0\"><title>{}: {}</title>"
        "</circle>\n<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"9\" fill=\"#1565c0\">{} s</text>\n",
        x, y, Params(c), Costs(c), x + 7, y - 5, FormatSeconds(c.delay));
  }
  int row = 0;
  for (const auto& [why, index] : advice.picks) {
    const Candidate& c = advice.candidates[index];
    const double x = x_of(static_cast<double>(c.sick_calls));
    const double y = y_of(static_cast<double>(c.hurt));
    svg += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"8\" fill=\"none\" "
        "stroke=\"#2e7d32\" stroke-width=\"2\"/>\n",
        x, y);
    svg += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" fill=\"#2e7d32\">{}: {}</text>\n", kLeft,
        kTop + kPlotH + 52 + 13.0 * row++, why, Params(c));
  }
  const Candidate& b = advice.base;
  const double bx = x_of(static_cast<double>(b.sick_calls));
  const double by = y_of(static_cast<double>(b.hurt));
  svg += fmt::format(
      "<path d=\"M{:.1f},{:.1f} l6,6 m-6,-6 l-6,6 m6,-6 l6,-6 m-6,6 l-6,-6\" stroke=\"#c62828\" "
      "stroke-width=\"2\"><title>the configuration given: {}</title></path>\n<text x=\"{:.1f}\" "
      "y=\"{:.1f}\" font-size=\"10\" fill=\"#c62828\">given</text>\n",
      bx, by, Costs(b), bx + 8, by + 12);
  return svg + "</svg>\n";
}

}  // namespace fusebox::sim

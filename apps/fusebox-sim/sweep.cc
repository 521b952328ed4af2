#include "sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <map>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>

#include "common/duration.h"
#include "fusebox/thread_annotations.h"
#include "report.h"

namespace fusebox::sim {
namespace {

std::vector<std::string_view> Split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  while (true) {
    const std::size_t at = text.find(sep);
    parts.push_back(text.substr(0, at));
    if (at == std::string_view::npos) {
      return parts;
    }
    text.remove_prefix(at + 1);
  }
}

std::optional<double> ToDouble(std::string_view text) {
  double value = 0.0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() ||
      !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

std::optional<std::int64_t> ToInt(std::string_view text) {
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

// A duration as a --param value gives it, a TOML value unquoted: "<decimal><unit>"
// (common/duration.h) or a number of seconds, in [0, kMaxDuration]. Sets `*too_large` for a
// well-formed value above kMaxDuration.
std::optional<Micros> ToMicros(std::string_view text, bool* too_large = nullptr) {
  if (std::optional<Micros> micros = ParseDuration(text, too_large)) {
    return micros;
  }
  if (std::optional<double> seconds = ToDouble(text); seconds && *seconds >= 0.0) {
    Result<Micros, app::DurationError> micros = app::SecondsToDuration(*seconds);
    if (!micros) {
      if (too_large != nullptr) {
        *too_large = true;
      }
      return std::nullopt;
    }
    return *micros;
  }
  return std::nullopt;
}

std::string TooLargeDuration(std::string_view text) {
  return fmt::format("duration \"{}\" is too large: durations are at most {} s", text,
                     kMaxDuration / kMicrosPerSecond);
}

std::string CsvEscape(std::string_view text) {
  if (text.find_first_of(",\"\n") == std::string_view::npos) {
    return std::string(text);
  }
  std::string out = "\"";
  for (char c : text) {
    out += c;
    if (c == '"') {
      out += '"';
    }
  }
  return out + "\"";
}

// Shortest text of a double that survives the steps' rounding noise (0.1 * 3 -> "0.3").
std::string NumberText(double value) {
  const double tidy = std::stod(fmt::format("{:.12g}", value));
  std::string text = fmt::format("{}", tidy);
  return text;
}

ParamValue DurationValue(Micros micros) {
  ParamValue v;
  v.override_text = fmt::format("{}us", micros);
  v.csv = FormatSeconds(micros);
  v.json = v.csv;
  v.numeric = static_cast<double>(micros) / 1e6;
  return v;
}

ParamValue IntegerValue(std::int64_t value) {
  ParamValue v;
  v.override_text = fmt::format("{}", value);
  v.csv = v.override_text;
  v.json = v.override_text;
  v.numeric = static_cast<double>(value);
  return v;
}

ParamValue NumberValue(double value) {
  ParamValue v;
  v.override_text = NumberText(value);
  v.csv = v.override_text;
  v.json = v.override_text;
  v.numeric = std::stod(v.override_text);
  return v;
}

Result<ParamValue, std::string> ListValue(KeyKind kind, std::string_view text) {
  switch (kind) {
    case KeyKind::kDuration: {
      bool too_large = false;
      if (std::optional<Micros> micros = ToMicros(text, &too_large)) {
        return DurationValue(*micros);
      }
      if (too_large) {
        return TooLargeDuration(text);
      }
      return fmt::format("bad duration \"{}\" (e.g. 250ms, 1.5s, 2m)", text);
    }
    case KeyKind::kInteger:
      if (std::optional<std::int64_t> value = ToInt(text)) {
        return IntegerValue(*value);
      }
      return fmt::format("bad integer \"{}\"", text);
    case KeyKind::kNumber:
      if (std::optional<double> value = ToDouble(text)) {
        return NumberValue(*value);
      }
      return fmt::format("bad number \"{}\"", text);
    case KeyKind::kBool: {
      if (text != "true" && text != "false") {
        return fmt::format("bad value \"{}\": expected true or false", text);
      }
      ParamValue v;
      v.override_text = std::string(text);
      v.csv = v.override_text;
      v.json = v.override_text;
      v.numeric = text == "true" ? 1.0 : 0.0;
      return v;
    }
    case KeyKind::kString: {
      ParamValue v;
      v.override_text = std::string(text);
      v.csv = CsvEscape(text);
      v.json = JsonQuote(text);
      v.is_numeric = false;
      return v;
    }
    case KeyKind::kIntegerOrAuto:
      if (text == "auto") {
        return ListValue(KeyKind::kString, text);
      }
      if (std::optional<std::int64_t> value = ToInt(text)) {
        return IntegerValue(*value);
      }
      return fmt::format("bad value \"{}\": expected an integer or auto", text);
  }
  return std::string("unknown kind");
}

// FROM:TO:STEP -> the number of steps, or an error.
template <typename T>
Result<std::int64_t, std::string> Steps(T from, T to, T step, std::string_view text) {
  if (!(step > T{0})) {
    return fmt::format("{}: STEP must be > 0", text);
  }
  if (to < from) {
    return fmt::format("{}: TO must not be below FROM", text);
  }
  if constexpr (std::is_floating_point_v<T>) {
    const double n = (to - from) / step;
    const double rounded = std::round(n);
    if (std::abs(n - rounded) > 1e-9 * std::max(1.0, n)) {
      return fmt::format("{}: TO - FROM must be a whole number of STEPs", text);
    }
    return static_cast<std::int64_t>(rounded);
  } else {
    if ((to - from) % step != 0) {
      return fmt::format("{}: TO - FROM must be a whole number of STEPs", text);
    }
    return static_cast<std::int64_t>((to - from) / step);
  }
}

constexpr std::int64_t kMaxValuesPerParam = 10'000'000;

Result<std::vector<ParamValue>, std::string> RangeValues(KeyKind kind, std::string_view range) {
  const std::vector<std::string_view> parts = Split(range, ':');
  if (parts.size() != 3) {
    return fmt::format("\"{}\": expected FROM:TO:STEP", range);
  }
  // One range kind: parse FROM, TO and STEP with `parse`, then make each grid value with `make`.
  auto expand = [&](auto parse, auto make,
                    std::string_view expected) -> Result<std::vector<ParamValue>, std::string> {
    const auto from = parse(parts[0]);
    const auto to = parse(parts[1]);
    const auto step = parse(parts[2]);
    if (!from || !to || !step) {
      return fmt::format("\"{}\": FROM, TO and STEP must be {}", range, expected);
    }
    auto steps = Steps(*from, *to, *step, range);
    if (!steps) {
      return steps.error();
    }
    if (*steps >= kMaxValuesPerParam) {
      return fmt::format("\"{}\": more than {} values", range, kMaxValuesPerParam);
    }
    std::vector<ParamValue> values;
    for (std::int64_t i = 0; i <= *steps; ++i) {
      values.push_back(make(*from, i, *step));
    }
    return values;
  };
  switch (kind) {
    case KeyKind::kDuration:
      for (std::string_view part : parts) {
        if (bool too_large = false; !ToMicros(part, &too_large) && too_large) {
          return fmt::format("\"{}\": {}", range, TooLargeDuration(part));
        }
      }
      return expand(
          [](std::string_view t) { return ToMicros(t); },
          [](auto from, std::int64_t i, auto step) { return DurationValue(from + i * step); },
          "durations (e.g. 1s:30s:1s)");
    case KeyKind::kInteger:
    case KeyKind::kIntegerOrAuto:
      return expand(
          [](std::string_view t) { return ToInt(t); },
          [](auto from, std::int64_t i, auto step) { return IntegerValue(from + i * step); },
          "integers");
    case KeyKind::kNumber:
      return expand([](std::string_view t) { return ToDouble(t); },
                    [](double from, std::int64_t i, double step) {
                      return NumberValue(from + static_cast<double>(i) * step);
                    },
                    "numbers");
    case KeyKind::kBool:
    case KeyKind::kString:
      break;
  }
  return fmt::format("\"{}\": a range needs a numeric key; give a list instead (A,B,...)", range);
}

}  // namespace

Result<ParamSpec, std::string> ParseParam(std::string_view text) {
  const std::size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size()) {
    return fmt::format("--param {}: expected KEY=FROM:TO:STEP or KEY=V1,V2,...", text);
  }
  ParamSpec spec;
  spec.key = std::string(text.substr(0, eq));
  const std::string_view value = text.substr(eq + 1);
  const std::optional<KeyKind> kind = LookupKeyKind(spec.key);
  if (!kind) {
    return fmt::format(
        "--param {}: unknown key \"{}\" (keys are dotted scenario keys such as breaker.cooldown, "
        "traffic.rate, traffic.stream[0].rate, upstream.phase[0].to, seed, duration)",
        text, spec.key);
  }
  spec.kind = *kind;
  if (value.find(':') != std::string_view::npos) {
    auto values = RangeValues(*kind, value);
    if (!values) {
      return fmt::format("--param {}: {}", spec.key, values.error());
    }
    spec.values = std::move(*values);
  } else {
    for (std::string_view item : Split(value, ',')) {
      auto parsed = ListValue(*kind, item);
      if (!parsed) {
        return fmt::format("--param {}: {}", spec.key, parsed.error());
      }
      spec.values.push_back(std::move(*parsed));
    }
  }
  return spec;
}

std::size_t GridSize(const std::vector<ParamSpec>& params) {
  std::size_t size = 1;
  for (const ParamSpec& p : params) {
    if (p.values.empty() || size > std::numeric_limits<std::size_t>::max() / p.values.size()) {
      return p.values.empty() ? 0 : std::numeric_limits<std::size_t>::max();
    }
    size *= p.values.size();
  }
  return size;
}

void ProgressLine::Draw(std::size_t done, std::size_t total) {
  constexpr std::size_t kBar = 40;
  const std::size_t filled = total == 0 ? kBar : std::min(done, total) * kBar / total;
  const std::string line = fmt::format("[{}{}] {}/{} points", std::string(filled, '#'),
                                       std::string(kBar - filled, '.'), done, total);
  // Shorter than the last one (it never is, but cheap to be safe): blank the rest.
  const std::size_t pad = width_ > line.size() ? width_ - line.size() : 0;
  fmt::print(out_, "\r{}{}", line, std::string(pad, ' '));
  width_ = line.size() + pad;
  complete_ = done == total;
  std::fflush(out_);
}

void ProgressLine::Close() {
  if (width_ == 0) {
    return;
  }
  if (complete_) {
    fmt::print(out_, "\n");
  } else {
    fmt::print(out_, "\r{}\r", std::string(width_, ' '));
  }
  width_ = 0;
  std::fflush(out_);
}

namespace {

// What a point's outcome is, for comparing points: every counter and the number of transitions.
std::vector<std::string> Signature(const SweepPoint& point) {
  std::vector<std::string> values = CounterValues(
      point.counters,
      CounterColumns{.recovering = true, .refused = true, .overloaded = true, .throttled = true});
  values.push_back(fmt::format("{}", point.transitions));
  values.push_back(fmt::format("{}", point.counters.allowed_while_failing));
  return values;
}

// The trip policies under which a breaker key has no effect (by its name after "breaker.").
bool IgnoredUnder(std::string_view setting, TripPolicy policy) {
  if (policy == TripPolicy::kConsecutive) {
    return setting == "window_size" || setting == "minimum_calls" ||
           setting == "failure_rate_threshold" || setting == "slow_call_rate_threshold";
  }
  return setting == "failure_threshold";
}

}  // namespace

std::vector<std::string> NoEffectNotes(const SweepResult& sweep) {
  std::vector<std::string> notes;
  if (sweep.points.empty()) {
    return notes;
  }
  std::vector<std::vector<std::string>> signatures;
  signatures.reserve(sweep.points.size());
  for (const SweepPoint& point : sweep.points) {
    signatures.push_back(Signature(point));
  }
  for (std::size_t p = 0; p < sweep.params.size(); ++p) {
    const ParamSpec& param = sweep.params[p];
    if (param.values.size() < 2) {
      continue;
    }
    // The points with the same values of the other parameters, by their first point.
    std::map<std::vector<std::size_t>, std::size_t> first_of_group;
    bool same = true;
    for (std::size_t i = 0; i < sweep.points.size() && same; ++i) {
      std::vector<std::size_t> others = sweep.points[i].value_index;
      others[p] = 0;
      const auto [it, inserted] = first_of_group.emplace(std::move(others), i);
      same = inserted || signatures[it->second] == signatures[i];
    }
    if (!same) {
      continue;
    }
    const std::string_view which = sweep.params.size() == 1
                                       ? "every row is identical"
                                       : "the rows that differ only in it are identical";
    const std::string_view key = param.key;
    const TripPolicy policy = sweep.points.front().trip;
    const bool one_policy =
        std::all_of(sweep.points.begin(), sweep.points.end(),
                    [policy](const SweepPoint& point) { return point.trip == policy; });
    if (one_policy && key.starts_with("breaker.") && IgnoredUnder(key.substr(8), policy)) {
      notes.push_back(
          fmt::format("{} has no effect under trip = {}: {}", key, ToString(policy), which));
    } else {
      notes.push_back(fmt::format("{} changed nothing here: {}", key, which));
    }
  }
  return notes;
}

Result<SweepResult, std::string> RunSweep(const ScenarioFile& file, const BuildOptions& base,
                                          std::vector<ParamSpec> params,
                                          const SweepOptions& options) {
  SweepResult result;
  result.params = std::move(params);
  const std::size_t total = GridSize(result.params);
  if (total > options.max_points) {
    return fmt::format("the grid has {} points, more than the limit of {}", total,
                       options.max_points);
  }
  result.points.resize(total);
  for (std::size_t i = 0; i < total; ++i) {
    std::vector<std::size_t>& index = result.points[i].value_index;
    index.resize(result.params.size());
    std::size_t rest = i;
    for (std::size_t p = result.params.size(); p-- > 0;) {
      index[p] = rest % result.params[p].values.size();
      rest /= result.params[p].values.size();
    }
  }

  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> done{0};
  std::atomic<std::size_t> first_error{total};
  std::vector<std::optional<std::string>> errors(total);
  struct Workers {
    fusebox::Mutex mu;
    std::condition_variable_any finished;
    unsigned running FUSEBOX_GUARDED_BY(mu) = 0;
  } workers;

  auto worker = [&] {
    BuildOptions build = base;
    const std::size_t base_overrides = build.overrides.size();
    while (true) {
      const std::size_t i = next.fetch_add(1, std::memory_order_relaxed);
      // Points after a failed one are skipped: only the first error in grid order is reported.
      if (i >= total || i > first_error.load(std::memory_order_relaxed)) {
        break;
      }
      SweepPoint& point = result.points[i];
      build.overrides.resize(base_overrides);
      for (std::size_t p = 0; p < result.params.size(); ++p) {
        build.overrides.push_back(Override{
            result.params[p].key, result.params[p].values[point.value_index[p]].override_text});
      }
      std::optional<std::string> error;
      if (Result<Scenario, LoadError> scenario = BuildScenario(file, build); !scenario) {
        error = scenario.error().ToString();
      } else if (Result<RunResult, std::string> run = Simulate(*scenario); !run) {
        error = run.error();
      } else {
        point.counters = run->counters;
        point.transitions = run->transitions.size();
        point.trip = scenario->breaker.trip;
      }
      if (error) {
        errors[i] = std::move(error);
        std::size_t seen = first_error.load(std::memory_order_relaxed);
        while (i < seen && !first_error.compare_exchange_weak(seen, i)) {
        }
      }
      done.fetch_add(1, std::memory_order_relaxed);
    }
    fusebox::Locked lock(workers.mu);
    if (--workers.running == 0) {
      workers.finished.notify_all();
    }
  };

  const unsigned jobs = static_cast<unsigned>(
      std::clamp<std::size_t>(options.jobs, 1, std::max<std::size_t>(total, 1)));
  std::vector<std::thread> threads;
  threads.reserve(jobs);
  {
    fusebox::Locked lock(workers.mu);
    workers.running = jobs;
  }
  for (unsigned j = 0; j < jobs; ++j) {
    threads.emplace_back(worker);
  }
  {
    const auto all_finished = [&]() FUSEBOX_REQUIRES(workers.mu) { return workers.running == 0; };
    fusebox::Locked lock(workers.mu);
    while (workers.running > 0) {
      if (options.progress) {
        const std::size_t now_done = done.load(std::memory_order_relaxed);
        workers.mu.unlock();
        options.progress(now_done, total);
        workers.mu.lock();
      }
      workers.finished.wait_for(workers.mu, std::chrono::milliseconds(100), all_finished);
    }
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  if (options.progress) {
    options.progress(done.load(), total);
  }
  if (const std::size_t e = first_error.load(); e < total && errors[e]) {
    std::string where;
    for (std::size_t p = 0; p < result.params.size(); ++p) {
      where += fmt::format("{}{}={}", p == 0 ? "" : ", ", result.params[p].key,
                           result.params[p].values[result.points[e].value_index[p]].csv);
    }
    return fmt::format("at the point {}: {}", where, *errors[e]);
  }
  return result;
}

}  // namespace fusebox::sim

#include "replay_cli.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <thread>

#include "advise.h"
#include "common/duration.h"
#include "gateway_config.h"
#include "replay.h"
#include "replay_log.h"
#include "replay_report.h"
#include "sweep.h"

namespace fusebox::sim {
namespace {

constexpr int kExitBadInput = 1;
constexpr int kExitOutput = 3;
constexpr int kExitRun = 4;

bool WriteTo(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  if (!out) {
    fmt::print(stderr, "fusebox-sim: cannot write {}\n", path);
    return false;
  }
  return true;
}

// The log, its malformed lines named on stderr (the rest is read); nullopt when unreadable.
std::optional<Incident> ReadLog(const std::string& path, const std::string& breaker,
                                double& seconds) {
  const auto start = std::chrono::steady_clock::now();
  auto incident = ReadIncidentFile(path, ReadOptions{.breaker = breaker});
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!incident) {
    fmt::print(stderr, "fusebox-sim: {}\n", incident.error());
    return std::nullopt;
  }
  for (const LineError& e : incident->first_errors) {
    fmt::print(stderr, "{}:{}: {} (line skipped)\n", path, e.line, e.message);
  }
  if (incident->errors > incident->first_errors.size()) {
    fmt::print(stderr, "{}: {} more malformed lines skipped\n", path,
               incident->errors - incident->first_errors.size());
  }
  return std::move(*incident);
}

// --slow: nullopt when not given; false when it does not read (the message printed).
std::optional<std::optional<Duration>> ReadSlow(const std::string& text) {
  if (text.empty()) {
    return std::optional<Duration>();
  }
  auto parsed = app::ParseFlagDuration(text);
  if (!parsed || parsed->count() <= 0) {
    fmt::print(stderr, "fusebox-sim: --slow must be a duration such as 2s or 500ms, got \"{}\"\n",
               text);
    return std::nullopt;
  }
  return std::optional<Duration>(std::chrono::duration_cast<Duration>(*parsed));
}

std::optional<GatewaySettings> ReadConfig(const std::string& path) {
  if (path.empty()) {
    return DefaultGatewaySettings();
  }
  auto settings = LoadGatewayConfig(path);
  if (!settings) {
    fmt::print(stderr, "{}\n", settings.error().ToString());
    return std::nullopt;
  }
  return *settings;
}

}  // namespace

ReplayCommands::ReplayCommands(CLI::App& app) {
  replay_ = app.add_subcommand(
      "replay",
      "Replay a vin-gateway JSON log through a gateway config: the transitions and counters it "
      "would have given");
  replay_->add_option("--log", args_.log, "The gateway's log (--log-format json)")
      ->required()
      ->check(CLI::ExistingFile);
  replay_
      ->add_option("--config", args_.config,
                   "The candidate: a vin-gateway config file (TOML; default: the gateway's "
                   "defaults)")
      ->check(CLI::ExistingFile);
  replay_->add_option("--json", args_.json,
                      "Also write the result as one JSON object to this file");
  replay_->add_option("--plot", args_.plot, "Also write an SVG of the log and the replay");
  replay_->add_option("--breaker", args_.breaker, "Whose transition lines to read (default vpic)");
  replay_->add_option("--slow", args_.slow,
                      "What counts as a slow answer (users waited, vPIC failing), e.g. 2s "
                      "(default: the config's slow_call_duration)");

  advise_ = app.add_subcommand(
      "advise",
      "Replay a vin-gateway JSON log through a grid of breaker settings and recommend the "
      "trade-off front");
  advise_->add_option("--log", args_.log, "The gateway's log (--log-format json)")
      ->required()
      ->check(CLI::ExistingFile);
  advise_
      ->add_option("--config", args_.config,
                   "The gateway config the grid varies (TOML; default: the gateway's defaults)")
      ->check(CLI::ExistingFile);
  advise_->add_option("--param", args_.params,
                      "KEY=V1,V2,... a breaker key's values (repeatable; replaces the default "
                      "grid)");
  advise_
      ->add_option("--reading", args_.reading,
                   "both (default: the worse of the two), pessimistic or optimistic")
      ->check(CLI::IsMember({"both", "pessimistic", "optimistic"}));
  advise_->add_option("--picks", args_.picks, "Configurations recommended, at most (default 5)")
      ->check(CLI::Range(1U, 100U));
  advise_->add_option("--json", args_.json, "Also write every point as JSON to this file");
  advise_->add_option("--plot", args_.plot, "Also write an SVG of the front to this file");
  advise_->add_option("--jobs", args_.jobs, "Threads, >= 1 (default: the number of cores)")
      ->check(CLI::Range(1U, 1024U));
  advise_->add_option("--breaker", args_.breaker, "Whose transition lines to read (default vpic)");
  advise_->add_option("--slow", args_.slow,
                      "What counts as a slow answer for every candidate, e.g. 2s (default: the "
                      "config's slow_call_duration)");
}

bool ReplayCommands::parsed() const { return replay_->parsed() || advise_->parsed(); }

int ReplayCommands::Run() const { return replay_->parsed() ? Replay() : Advise(); }

int ReplayCommands::Replay() const {
  std::optional<GatewaySettings> settings = ReadConfig(args_.config);
  if (!settings) {
    return kExitBadInput;
  }
  const std::optional<std::optional<Duration>> slow = ReadSlow(args_.slow);
  if (!slow) {
    return kExitBadInput;
  }
  const Duration yardstick = slow->value_or(settings->breaker.effective_slow_call_duration());
  ReplayReport report;
  report.settings = *settings;
  report.config_name = args_.config;
  std::optional<Incident> incident = ReadLog(args_.log, args_.breaker, report.read_seconds);
  if (!incident) {
    return kExitBadInput;
  }
  report.incident = &*incident;
  const std::vector<Revival> revivals = FindRevivals(*incident, yardstick);
  ReplayOptions options;
  options.record_timeline = !args_.plot.empty();
  options.slow = yardstick;
  report.recorded = RecordedRun(*incident, revivals, yardstick, options);
  auto pessimistic = fusebox::sim::Replay(*incident, *settings, revivals, options);
  if (!pessimistic) {
    fmt::print(stderr, "fusebox-sim: {}\n", pessimistic.error());
    return kExitRun;
  }
  report.pessimistic = std::move(*pessimistic);
  report.optimistic = report.pessimistic;
  report.optimistic.reading = Reading::kOptimistic;
  if (report.pessimistic.read_gaps) {
    options.reading = Reading::kOptimistic;
    auto optimistic = fusebox::sim::Replay(*incident, *settings, revivals, options);
    if (!optimistic) {
      fmt::print(stderr, "fusebox-sim: {}\n", optimistic.error());
      return kExitRun;
    }
    report.optimistic = std::move(*optimistic);
  }
  fmt::print("{}", ReplayText(report));
  std::fflush(stdout);
  if (!args_.json.empty() && !WriteTo(args_.json, ReplayJson(report))) {
    return kExitOutput;
  }
  if (!args_.plot.empty() && !WriteTo(args_.plot, ReplaySvg(report))) {
    return kExitOutput;
  }
  return 0;
}

int ReplayCommands::Advise() const {
  std::optional<GatewaySettings> settings = ReadConfig(args_.config);
  if (!settings) {
    return kExitBadInput;
  }
  const std::optional<std::optional<Duration>> slow = ReadSlow(args_.slow);
  if (!slow) {
    return kExitBadInput;
  }
  AdviseOptions options;
  options.slow = *slow;
  for (const std::string& text : args_.params) {
    auto axis = ParseAxis(text);
    if (!axis) {
      fmt::print(stderr, "fusebox-sim: {}\n", axis.error());
      return kExitBadInput;
    }
    options.axes.push_back(std::move(*axis));
  }
  options.jobs = args_.jobs > 0 ? args_.jobs : std::max(1U, std::thread::hardware_concurrency());
  options.judge = args_.reading == "pessimistic"  ? Judge::kPessimistic
                  : args_.reading == "optimistic" ? Judge::kOptimistic
                                                  : Judge::kBoth;
  options.picks = args_.picks;
  double seconds = 0;
  std::optional<Incident> incident = ReadLog(args_.log, args_.breaker, seconds);
  if (!incident) {
    return kExitBadInput;
  }
  ProgressLine progress(stderr);
  std::function<void(std::size_t, std::size_t)> on_progress;
  std::mutex progress_mutex;  // the workers report
  if (isatty(STDERR_FILENO) != 0) {
    on_progress = [&progress, &progress_mutex](std::size_t done, std::size_t total) {
      const std::lock_guard<std::mutex> lock(progress_mutex);
      progress.Draw(done, total);
    };
  }
  auto advice = fusebox::sim::Advise(*incident, *settings, options, on_progress);
  progress.Close();
  if (!advice) {
    fmt::print(stderr, "fusebox-sim: {}\n", advice.error());
    return kExitBadInput;
  }
  fmt::print("{}", AdviceText(*advice, *incident));
  std::fflush(stdout);
  if (!args_.json.empty() && !WriteTo(args_.json, AdviceJson(*advice, *incident))) {
    return kExitOutput;
  }
  if (!args_.plot.empty() && !WriteTo(args_.plot, AdviceSvg(*advice, *incident))) {
    return kExitOutput;
  }
  return 0;
}

}  // namespace fusebox::sim

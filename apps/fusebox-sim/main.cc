// fusebox-sim: runs breaker scenarios in virtual time against the real fusebox breaker.
//
//   fusebox-sim run SCENARIO.toml [--format text|json|csv|markdown] [--plot FILE.svg] [--seed N]
//   fusebox-sim sweep SCENARIO.toml --param KEY=FROM:TO:STEP [--param ...] [--format csv|json|text]
//                     [--plot FILE.svg] [--jobs N]
//   fusebox-sim replay --log ACCESS_LOG [--config GATEWAY.toml] [--json OUT] [--plot OUT.svg]
//   fusebox-sim advise --log ACCESS_LOG [--config GATEWAY.toml] [--param KEY=V1,V2,...]
//   fusebox-sim format      (every scenario key, from the loader's tables)
//   fusebox-sim --version
//
// The scenario format and the outputs are docs/scenario-format.md; `--help` says it
// all in short.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdio>
#include <exception>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "format_keys.h"
#include "fusebox/version.h"
#include "plot.h"
#include "replay_cli.h"
#include "report.h"
#include "scenario.h"
#include "simulator.h"
#include "sweep.h"

namespace {

using fusebox::sim::BuildOptions;
using fusebox::sim::RunResult;
using fusebox::sim::Scenario;
using fusebox::sim::ScenarioFile;

constexpr int kExitBadScenario = 1;
constexpr int kExitUsage = 2;
constexpr int kExitOutput = 3;
constexpr int kExitBreaker = 4;

// The examples are one line each and start with "$ ", which help2man sets as commands in the man
// page (a wrapped one would be set as prose).
constexpr const char* kFooter = R"(
SCENARIO FILES (TOML; see docs/scenarios.md and docs/scenario-format.md)
  Durations are "<decimal><unit>" terms, units d, h, m, s, ms, us from the largest to the
  smallest ("250ms", "23.3s", "2m", "2m30s", "1h"), or a plain number of seconds (10, not "10");
  rounded to the microsecond. Simulated time starts at 0.

  name = "lesson5"            label of the run (default: the file's stem)
  seed = 1                    poisson arrivals and cooldown jitter (default 1)
  duration = "60s"            arrivals happen in [0, duration); the run ends when all calls end
  [breaker]                   every CircuitBreakerConfig field, same names and ranges:
    trip = "consecutive"        consecutive | count_window | time_window
    failure_threshold = 5       window_size = 100       minimum_calls = 10
    failure_rate_threshold = 0.5                        slow_call_rate_threshold = 1.0
    call_timeout = "7s"         slow_call_duration = call_timeout
    cooldown = "10s"            half_open_max_probes = 1
    half_open_successes = half_open_max_probes          batch_may_probe = false
    inflight_slow_accounting = false                    cooldown_multiplier = 1.0
    cooldown_max = max(5m, cooldown)                    cooldown_jitter = 0.0
  [traffic]                   one stream: rate (calls/s, 1e-9 to 1e6, required), start = "0s",
                              arrivals = "uniform" | "poisson", priority, name
  [[traffic.stream]]          or several: name, priority = "interactive" | "batch", rate,
                              start, arrivals. Uniform call k arrives at start + round(k/rate).
                              At most 1e9 calls per run (sum of rate x (duration - start)).
                              Durations are at most 1e9 s.
  [upstream]  latency = "20ms"          the healthy latency
  [[upstream.phase]]          from, to (covers [from, to), phases must not overlap), mode:
                              latency (default "0ms" in every mode, as the contract says):
                                ok       success after latency
                                error    failure after latency
                                slow     success after latency
                                hang     never answers
                                fragile  serves at most `capacity` calls in flight (answering
                                         after latency); one more call fails and collapses it:
                                         every call fails at once for `relapse`, then it
                                         serves again
                                warming  fragile whose capacity grows from `cold_capacity`
                                         to `capacity` over `warmup` (a service warming its
                                         caches), from the phase's start and again after
                                         each collapse
                                queue    `capacity` servers, `latency` a call; the calls
                                         beyond wait in line (FIFO) and leave it at
                                         call_timeout; a call timed out while served keeps
                                         its server until its service ends
                                refuse   serves at most `capacity` calls in flight (answering
                                         after latency); one more is refused at once (a
                                         failure, counted in `refused`)
  [limit]                     the pieces in front of the upstream but the breaker (optional;
                              needs max_in_flight or throttle_k), in fusebox::Admit's order:
    max_in_flight = 16          a fixed cap (a Bulkhead, 1 to 1000000), or "auto" (an
                                AdaptiveLimit). With "auto", every AdaptiveLimitConfig field,
                                same names and ranges: min_limit = 3, max_limit = 1000,
                                initial_limit = 16, sample_window = "1s", min_window_samples = 10,
                                tolerance = 1.25, smoothing = 0.2, backoff_ratio = 0.9,
                                no_load_reset = "1m". A call takes a slot first (refused:
                                OVERLOADED, counted in `overloaded`), then the breaker's permit;
                                timeouts and refusals for load are the limit's drops.
    throttle_k = 0              a Throttle after the breaker (0: none; else 1 to 100), and its
    throttle_window = "30s"     window (100ms to 1h); refused: THROTTLED, in `throttled`.
  [[variant]]                 name, plus any keys/tables above applied over the base;
                              `run` runs the base, then every variant

  A call answering at or after call_timeout is aborted then, as a timeout. At one instant,
  completions run first (in admission order), then arrivals (in stream order).
  recovery_delay_s: from the latest end of a non-ok phase to the next transition into CLOSED.

OUTPUT
  run   --format text: the transitions (t, from -> to, cause) and the counters, then with
        variants the runs side by side (one column a run); json: {"seed", "transitions",
        "counters", "name", "streams", "variants"}; csv: t,from,to of one run (the base, or
        --variant NAME; a note on stderr names the variants not printed); markdown: the runs
        side by side as a table.
  sweep --format csv: the swept keys, then the counters, one row per point (last --param
        varying fastest; no recovery -> empty cell); json: {"points": [{"params", "counters"}]};
        text: the same table aligned, each column's unit under its name (s, ms, %, calls).
        A swept key that changed nothing (e.g. failure_threshold under a window policy) gets a
        note: in the text output, on stderr with csv and json.
  Counters: calls allowed rejected_open rejected_probe_cap succeeded failed timeouts slow
  probes wasted_probes recovery_delay_s, and the extras late relapses max_in_flight
  (and rejected_recovering, CIRCUIT_RECOVERING, when a run has breaker.recovery_ramp;
  refused when a run has a refuse phase; overloaded and throttled when a run has a
  concurrency limit, a throttle).

PARAMETERS (sweep)
  KEY is a dotted scenario key: breaker.cooldown, traffic.rate, traffic.stream[1].rate,
  upstream.phase[0].to, limit.max_in_flight, seed, duration. KEY=FROM:TO:STEP (inclusive;
  durations step in the unit given: breaker.cooldown=1s:30s:1s) or KEY=V1,V2,...
  (breaker.trip=consecutive,count_window; limit.max_in_flight=auto,20,40).

EXIT STATUS
  0 success; 1 the scenario or a --param is invalid (the message names file, line and key);
  2 bad command line; 3 an output file cannot be written; 4 the run could not complete: the
  breaker broke its contract, or more than 2000000 calls were in flight at once (memory bound).

EXAMPLES
  $ fusebox-sim run scenarios/lesson5.toml
  $ fusebox-sim run scenarios/probe_cap.toml --format json --plot probe_cap.svg
  $ fusebox-sim sweep scenarios/cooldown_tradeoff.toml --param breaker.cooldown=1s:30s:1s
  $ fusebox-sim replay --log gateway.log --config vin-gateway.toml --plot replay.svg
  $ fusebox-sim advise --log gateway.log --config vin-gateway.toml --plot advice.svg
  $ fusebox-sim format

REPLAY AND ADVISE (see docs/replay.md)
  replay reads vin-gateway's JSON log (--log-format json) and replays its decode requests
  through a gateway config: transitions, users refused, served or served stale, calls sent to
  vPIC while it failed, recovery delay after each revival; the log's own beside a pessimistic
  and an optimistic reading of what vPIC did where it was not observed. Malformed lines are
  named (file:line) on stderr and skipped. advise replays a grid of breaker settings and prints
  the trade-off front and its picks as the breaker part of the gateway's config file. Exit
  status 1 there: a log or gateway config that cannot be read (malformed lines do not count).
)";

// --help-all: each subcommand under a heading of its own ("run: Run a scenario ...:"), its
// arguments and options below in one list, instead of CLI11's nested lists; help2man makes each
// heading a subsection of the man page and each option a tagged paragraph.
class HelpFormatter : public CLI::Formatter {
 public:
  // Wide enough for "--format TEXT:{text,json,csv}" and two spaces: help2man splits an option from
  // its description at two spaces.
  HelpFormatter() { column_width(34); }

  std::string make_expanded(const CLI::App* sub) const override {
    std::string out = fmt::format("\n{}: {}:\n", sub->get_name(), sub->get_description());
    for (const CLI::Option* option : sub->get_options()) {
      if (option != sub->get_help_ptr() && option != sub->get_help_all_ptr() &&
          !option->get_group().empty()) {
        out += make_option(option, option->get_positional());
      }
    }
    return out;
  }
};

bool WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  if (!out) {
    fmt::print(stderr, "fusebox-sim: cannot write {}\n", path);
    return false;
  }
  return true;
}

struct RunArgs {
  std::string scenario;
  std::string format = "text";
  std::string plot;
  std::optional<std::uint64_t> seed;
  std::string variant;
};

struct SweepArgs {
  std::string scenario;
  std::vector<std::string> params;
  std::string format = "csv";
  std::string plot;
  unsigned jobs = 0;
  std::optional<std::uint64_t> seed;
  std::string variant;
};

std::optional<ScenarioFile> Load(const std::string& path) {
  auto file = fusebox::sim::LoadScenarioFile(path);
  if (!file) {
    fmt::print(stderr, "{}\n", file.error().ToString());
    return std::nullopt;
  }
  return std::move(*file);
}

int Run(const RunArgs& args) {
  std::optional<ScenarioFile> file = Load(args.scenario);
  if (!file) {
    return kExitBadScenario;
  }
  // The runs: one chosen variant, or the base and then every variant.
  std::vector<Scenario> scenarios;
  std::vector<std::optional<std::string>> names;
  if (!args.variant.empty()) {
    names.emplace_back(args.variant);
  } else {
    names.emplace_back(std::nullopt);
    for (const Scenario& v : file->variants()) {
      names.emplace_back(v.name);
    }
  }
  for (const auto& name : names) {
    BuildOptions options;
    options.variant = name;
    options.seed = args.seed;
    auto scenario = fusebox::sim::BuildScenario(*file, options);
    if (!scenario) {
      fmt::print(stderr, "{}\n", scenario.error().ToString());
      return kExitBadScenario;
    }
    scenarios.push_back(std::move(*scenario));
  }
  fusebox::sim::SimOptions sim_options;
  sim_options.record_timeline = !args.plot.empty();
  std::vector<RunResult> runs;
  for (const Scenario& scenario : scenarios) {
    auto run = fusebox::sim::Simulate(scenario, sim_options);
    if (!run) {
      fmt::print(stderr, "fusebox-sim: {}: {}\n", scenario.name, run.error());
      return kExitBreaker;
    }
    runs.push_back(std::move(*run));
  }
  if (args.format == "json") {
    const std::vector<RunResult> variants(runs.begin() + 1, runs.end());
    fmt::print("{}", fusebox::sim::RunJson(runs.front(), variants));
  } else if (args.format == "markdown") {
    fmt::print("{}", fusebox::sim::RunsTable(runs, fusebox::sim::TableStyle::kMarkdown));
  } else if (args.format == "csv") {
    // The contract's CSV (t,from,to) has no column for the run: it holds one run.
    fmt::print("{}", fusebox::sim::RunCsv(runs.front()));
    if (runs.size() > 1) {
      std::string skipped;
      for (std::size_t i = 1; i < runs.size(); ++i) {
        skipped += fmt::format("{}\"{}\"", i == 1 ? "" : ", ", runs[i].name);
      }
      std::fflush(stdout);
      fmt::print(stderr,
                 "fusebox-sim: note: --format csv printed the base run \"{}\" only; not printed: "
                 "{} (use --variant NAME for one of them, or --format json for all)\n",
                 runs.front().name, skipped);
    }
  } else {
    fmt::print("{}", fusebox::sim::RunText(runs, /*with_headers=*/runs.size() > 1));
  }
  std::fflush(stdout);
  if (!args.plot.empty() && !WriteFile(args.plot, fusebox::sim::RunSvg(scenarios, runs))) {
    return kExitOutput;
  }
  return 0;
}

int Sweep(const SweepArgs& args) {
  std::optional<ScenarioFile> file = Load(args.scenario);
  if (!file) {
    return kExitBadScenario;
  }
  std::vector<fusebox::sim::ParamSpec> params;
  for (const std::string& text : args.params) {
    auto spec = fusebox::sim::ParseParam(text);
    if (!spec) {
      fmt::print(stderr, "{}: {}\n", args.scenario, spec.error());
      return kExitBadScenario;
    }
    params.push_back(std::move(*spec));
  }
  BuildOptions base;
  if (!args.variant.empty()) {
    base.variant = args.variant;
  }
  base.seed = args.seed;
  fusebox::sim::SweepOptions options;
  options.jobs = args.jobs > 0 ? args.jobs : std::max(1U, std::thread::hardware_concurrency());
  fusebox::sim::ProgressLine progress(stderr);
  if (isatty(STDERR_FILENO) != 0) {
    options.progress = [&progress](std::size_t done, std::size_t total) {
      progress.Draw(done, total);
    };
  }
  auto sweep = fusebox::sim::RunSweep(*file, base, std::move(params), options);
  progress.Close();
  if (!sweep) {
    fmt::print(stderr, "{}\n", sweep.error());
    return kExitBadScenario;
  }
  if (args.format == "json") {
    fmt::print("{}", fusebox::sim::SweepJson(*sweep));
  } else if (args.format == "text") {
    fmt::print("{}", fusebox::sim::SweepText(*sweep));  // with its notes
  } else {
    fmt::print("{}", fusebox::sim::SweepCsv(*sweep));
  }
  std::fflush(stdout);
  if (args.format != "text") {
    for (const std::string& note : fusebox::sim::NoEffectNotes(*sweep)) {
      fmt::print(stderr, "fusebox-sim: note: {}\n", note);
    }
  }
  if (!args.plot.empty()) {
    const std::string title =
        args.variant.empty() ? file->base().name : file->base().name + " / " + args.variant;
    if (!WriteFile(args.plot, fusebox::sim::SweepSvg(title, *sweep))) {
      return kExitOutput;
    }
  }
  return 0;
}

int Main(int argc, char** argv) {
  CLI::App app{
      "fusebox-sim: deterministic what-if simulator for fusebox circuit breakers.\n"
      "Runs a scenario in virtual time against the real breaker and prints the exact trace and "
      "counters, or sweeps parameters into a trade-off table; both can draw an SVG.",
      "fusebox-sim"};
  app.footer(kFooter);
  // The subcommands' options too, in one text: the man page (help2man) is made from it. A
  // subcommand takes its parent's formatter when it is added, so this comes first.
  app.set_help_all_flag("--help-all", "Print this help with every subcommand's options and exit");
  app.formatter(std::make_shared<HelpFormatter>());
  // Flags are handled before the subcommand is required, so `fusebox-sim --version` needs none.
  app.set_version_flag("--version", fmt::format("fusebox-sim {}", fusebox::kVersion),
                       "Print the version and exit");
  app.require_subcommand(1);

  RunArgs run_args;
  CLI::App* run = app.add_subcommand("run", "Run a scenario (the base, then every variant)");
  run->add_option("scenario", run_args.scenario, "Scenario file (TOML)")
      ->required()
      ->check(CLI::ExistingFile);
  run->add_option("--format", run_args.format,
                  "text (default), json, csv, or markdown (the runs side by side)")
      ->check(CLI::IsMember({"text", "json", "csv", "markdown"}))
      ->option_text("FORMAT");
  run->add_option("--plot", run_args.plot, "Also write an SVG picture of the run to this file");
  run->add_option("--seed", run_args.seed, "Replace the scenario's seed");
  run->add_option("--variant", run_args.variant, "Run only this [[variant]] (by name)");

  SweepArgs sweep_args;
  CLI::App* sweep = app.add_subcommand(
      "sweep", "Run a scenario once per point of a parameter grid, on all cores");
  sweep->add_option("scenario", sweep_args.scenario, "Scenario file (TOML)")
      ->required()
      ->check(CLI::ExistingFile);
  sweep
      ->add_option("--param", sweep_args.params,
                   "KEY=FROM:TO:STEP or KEY=V1,V2,... (repeatable; the last varies fastest)")
      ->required();
  sweep->add_option("--format", sweep_args.format, "csv (default), json, or text (with units)")
      ->check(CLI::IsMember({"csv", "json", "text"}));
  sweep->add_option("--plot", sweep_args.plot,
                    "Also write an SVG of each counter against the "
                    "first parameter");
  sweep->add_option("--jobs", sweep_args.jobs, "Threads, >= 1 (default: the number of cores)")
      ->check(CLI::Validator(
          [](const std::string& text) -> std::string {
            unsigned long long jobs = 0;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), jobs);
            if (ec != std::errc() || end != text.data() + text.size() || jobs < 1) {
              return fmt::format("must be a whole number of threads >= 1, got \"{}\"", text);
            }
            return "";
          },
          "N >= 1"));
  sweep->add_option("--seed", sweep_args.seed, "Replace the scenario's seed");
  sweep->add_option("--variant", sweep_args.variant, "Sweep this [[variant]] instead of the base");

  fusebox::sim::ReplayCommands replay_commands(app);

  CLI::App* format = app.add_subcommand(
      "format", "Print every key of a scenario file, from the tables the loader reads it with");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : kExitUsage;
  }
  if (run->parsed()) {
    return Run(run_args);
  }
  if (replay_commands.parsed()) {
    return replay_commands.Run();
  }
  if (format->parsed()) {
    fmt::print("{}", fusebox::sim::ScenarioKeysText());
    return 0;
  }
  return Sweep(sweep_args);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    // Errors are values on every path; what reaches here is the standard library's own
    // (std::bad_alloc): the run could not complete.
    fmt::print(stderr, "fusebox-sim: {}\n", e.what());
    return kExitBreaker;
  }
}

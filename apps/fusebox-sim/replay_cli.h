// apps/fusebox-sim/replay_cli.h
//
// The `replay` and `advise` subcommands of fusebox-sim (docs/replay.md): their flags, and
// running them. main.cc adds them to its CLI11 app and calls Run() when one was given.
//
// Thread safety: one per process.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

namespace fusebox::sim {

class ReplayCommands {
 public:
  explicit ReplayCommands(CLI::App& app);

  // Whether `replay` or `advise` was on the command line (after app.parse()).
  bool parsed() const;
  // Runs it; the exit status (main.cc's: 0, 1 bad input, 3 output, 4 the run failed).
  int Run() const;

 private:
  struct Args {
    std::string log;
    std::string config;
    std::string json;
    std::string plot;
    std::string breaker = "vpic";
    std::string slow;  // what counts as a slow answer ("" : the config's slow_call_duration)
    std::vector<std::string> params;  // advise: KEY=V1,V2,...
    unsigned jobs = 0;
    std::string reading = "both";  // advise: which reading judges
    unsigned picks = 5;            // advise: configurations printed
  };
  int Replay() const;
  int Advise() const;

  Args args_;
  CLI::App* replay_ = nullptr;
  CLI::App* advise_ = nullptr;
};

}  // namespace fusebox::sim

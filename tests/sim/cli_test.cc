// End-to-end tests of the fusebox-sim binary: what scripts rely on (exit statuses, where the
// output goes, the messages of bad scenarios), that --help documents the commands, --version and
// the `format` command.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "fusebox/version.h"
#include "support/child_process.h"

namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

struct Outcome {
  int status = -1;
  std::string output;
};

// Runs `command` through the shell and collects what it prints on stdout. The commands bound the
// binary with timeout(1) at 60 s; the shell itself is given longer.
Outcome Shell(const std::string& command) {
  const fusebox::testing::RunResult run =
      fusebox::testing::Run({"/bin/sh", "-c", command}, {}, std::chrono::seconds(120));
  return Outcome{run.exit_code, run.out};
}

// Runs the binary with `args`; `stderr_too` merges stderr into the output. Every run is bounded
// by `timeout` (status 124 when it had to stop the binary).
Outcome RunSim(const std::string& args, bool stderr_too = true) {
  return Shell(std::string("timeout 60 '") + FUSEBOX_SIM_BINARY + "' " + args +
               (stderr_too ? " 2>&1" : " 2>/dev/null"));
}

// Same, keeping only what the binary prints on stderr.
Outcome RunSimStderr(const std::string& args) {
  return Shell(std::string("timeout 60 '") + FUSEBOX_SIM_BINARY + "' " + args + " 2>&1 >/dev/null");
}

std::string WriteScenario(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

const std::string kLesson = std::string(FUSEBOX_SOURCE_DIR) + "/scenarios/lesson5.toml";

TEST(CliTest, RunPrintsTheLessonTraceAndSucceeds) {
  const Outcome out = RunSim("run '" + kLesson + "'", /*stderr_too=*/false);
  EXPECT_EQ(out.status, 0);
  EXPECT_THAT(out.output,
              StartsWith("--- transitions (t, from -> to, cause) ---\n"
                         "    t= 14.0s      CLOSED -> OPEN         5 consecutive failures\n"));
  EXPECT_THAT(out.output, HasSubstr("    t=64.02s   HALF_OPEN -> CLOSED       probe succeeded\n"));
}

TEST(CliTest, RunWritesJsonAndCsv) {
  EXPECT_THAT(RunSim("run '" + kLesson + "' --format json", false).output,
              HasSubstr("\"wasted_probes\": 4,"));
  EXPECT_THAT(RunSim("run '" + kLesson + "' --format csv", false).output,
              StartsWith("t,from,to\n14.0,CLOSED,OPEN\n"));
}

TEST(CliTest, SeedOptionReplacesTheScenariosSeed) {
  EXPECT_THAT(RunSim("run '" + kLesson + "' --format json --seed 7", false).output,
              StartsWith("{\n  \"seed\": 7,"));
}

TEST(CliTest, PlotWritesAnSvgFile) {
  const std::string svg = ::testing::TempDir() + "lesson5.svg";
  const Outcome out = RunSim("run '" + kLesson + "' --plot '" + svg + "'");
  EXPECT_EQ(out.status, 0);
  std::ifstream in(svg);
  std::string first;
  std::getline(in, first);
  EXPECT_THAT(first, StartsWith("<svg "));
}

TEST(CliTest, UnwritablePlotExitsWithThree) {
  const Outcome out = RunSim("run '" + kLesson + "' --plot /nonexistent/dir/x.svg");
  EXPECT_EQ(out.status, 3);
  EXPECT_THAT(out.output, HasSubstr("cannot write /nonexistent/dir/x.svg"));
}

TEST(CliTest, BadScenarioExitsWithOneAndNamesFileLineAndKey) {
  const std::string path = WriteScenario("overlap.toml", R"([traffic]
rate = 1
[[upstream.phase]]
from = "10s"
to = "30s"
mode = "error"
[[upstream.phase]]
from = "20s"
to = "40s"
mode = "hang"
)");
  const Outcome out = RunSim("run '" + path + "'");
  EXPECT_EQ(out.status, 1);
  EXPECT_THAT(out.output, HasSubstr(path + ":8:8: upstream.phase[1].from: phase [20.0 s, 40.0 s) "
                                           "overlaps upstream.phase[0] [10.0 s, 30.0 s)"));
}

TEST(CliTest, ExtremeRatesFailAtOnceWithFileLineAndKey) {
  // These used to loop forever (1e-14: the next arrival's rounding overflowed) or grow memory
  // without bound (1e12). Now the loader refuses them before anything runs.
  for (const char* rate : {"1e-14", "1e12"}) {
    const std::string path = WriteScenario(
        "rate.toml", std::string("[traffic]\nrate = ") + rate + "\narrivals = \"poisson\"\n");
    const auto start = std::chrono::steady_clock::now();
    const Outcome out = RunSim("run '" + path + "'");
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5)) << rate;
    EXPECT_EQ(out.status, 1) << rate;
    EXPECT_THAT(out.output,
                HasSubstr(path + ":2:8: traffic.rate: must be in [1e-09, 1e+06] calls per second"))
        << rate;
  }
  const auto start = std::chrono::steady_clock::now();
  const Outcome sweep =
      RunSim("sweep '" + kLesson + "' --param traffic.rate=1,1e12,1e-14 --jobs 2");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(sweep.status, 1);
  EXPECT_THAT(sweep.output, HasSubstr("at the point traffic.rate=1000000000000: " + kLesson +
                                      ": traffic.rate (override): must be in [1e-09, 1e+06]"));
}

TEST(CliTest, TrafficAboveTheCallLimitNamesTheNumberAndTheLimit) {
  const std::string path =
      WriteScenario("calls.toml", "duration = \"1000000s\"\n[traffic]\nrate = 1e6\n");
  const Outcome out = RunSim("run '" + path + "'");
  EXPECT_EQ(out.status, 1);
  EXPECT_THAT(out.output, HasSubstr(path + ":3:8: traffic.rate: the traffic asks for 1000000000000 "
                                           "calls (rate x (duration - start), duration 1000000.0 "
                                           "s), more than the limit of 1000000000 calls per run"));
}

TEST(CliTest, DurationAboveTheLimitNamesTheRange) {
  const std::string path = WriteScenario("long.toml", "duration = 1e15\n[traffic]\nrate = 1\n");
  const Outcome out = RunSim("run '" + path + "'");
  EXPECT_EQ(out.status, 1);
  EXPECT_THAT(out.output,
              HasSubstr(path + ":1:12: duration: bad duration 1e+15: a number of "
                               "seconds must be finite, >= 0 and at most 1000000000 s"));
}

TEST(CliTest, JobsBelowOneIsAClearUsageError) {
  for (const char* jobs : {"0", "-1", "two"}) {
    const Outcome out =
        RunSim("sweep '" + kLesson + "' --param breaker.cooldown=1s:2s:1s --jobs " + jobs);
    EXPECT_EQ(out.status, 2) << jobs;
    EXPECT_THAT(out.output, HasSubstr(std::string("--jobs: must be a whole number of threads "
                                                  ">= 1, got \"") +
                                      jobs + "\""));
    EXPECT_EQ(out.output.find("1.79"), std::string::npos) << out.output;
  }
}

TEST(CliTest, RunCsvOfAFileWithVariantsSaysWhichRunsWereNotPrinted) {
  // The contract's CSV (t,from,to) holds one run: the base; the others are named on stderr.
  const std::string probe_cap = std::string(FUSEBOX_SOURCE_DIR) + "/scenarios/probe_cap.toml";
  const Outcome csv = RunSim("run '" + probe_cap + "' --format csv", /*stderr_too=*/false);
  EXPECT_EQ(csv.status, 0);
  EXPECT_THAT(csv.output, StartsWith("t,from,to\n17.1,CLOSED,OPEN\n"));
  EXPECT_EQ(csv.output.find("note"), std::string::npos);
  const Outcome note = RunSimStderr("run '" + probe_cap + "' --format csv");
  EXPECT_EQ(note.output,
            "fusebox-sim: note: --format csv printed the base run \"1 probe\" only; not printed: "
            "\"10 probes\", \"unlimited probes\" (use --variant NAME for one of them, or "
            "--format json for all)\n");
  // One variant asked for: nothing left out, no note.
  const Outcome one = RunSimStderr("run '" + probe_cap + "' --format csv --variant '10 probes'");
  EXPECT_EQ(one.status, 0);
  EXPECT_EQ(one.output, "");
}

TEST(CliTest, RunMarkdownPrintsTheRunsSideBySide) {
  const std::string probe_cap = std::string(FUSEBOX_SOURCE_DIR) + "/scenarios/probe_cap.toml";
  const Outcome md = RunSim("run '" + probe_cap + "' --format markdown", /*stderr_too=*/false);
  EXPECT_EQ(md.status, 0);
  EXPECT_THAT(md.output, StartsWith("| run | 1 probe | 10 probes | unlimited probes |\n"
                                    "|---|---:|---:|---:|\n"));
  EXPECT_THAT(md.output, HasSubstr("\n| probes (wasted) | 3 (2) | 26 (20) | 264 (258) |\n"));
  EXPECT_THAT(md.output, HasSubstr("\n| recovery_delay (s) | 21.4 | 21.4 | 0.3 |\n"));
}

TEST(CliTest, SweepOfASettingWithNoEffectSaysSo) {
  const std::string file = std::string(FUSEBOX_SOURCE_DIR) + "/scenarios/sliding_window.toml";
  const std::string args =
      "sweep '" + file +
      "' --variant 'count window' --param breaker.failure_threshold=3,5 --jobs 1";
  // CSV on stdout stays a table; the note goes to stderr.
  const Outcome csv = RunSim(args, /*stderr_too=*/false);
  EXPECT_EQ(csv.status, 0);
  EXPECT_EQ(csv.output.find("note"), std::string::npos);
  EXPECT_EQ(RunSimStderr(args).output,
            "fusebox-sim: note: breaker.failure_threshold has no effect under trip = "
            "count_window: every row is identical\n");
  // The text output ends with it.
  EXPECT_THAT(RunSim(args + " --format text", false).output,
              ::testing::EndsWith("note: breaker.failure_threshold has no effect under trip = "
                                  "count_window: every row is identical\n"));
}

TEST(CliTest, SweepErrorOnATerminalStartsOnACleanLine) {
  // script(1) gives the binary a terminal, so that it draws its progress bar.
  if (std::system("command -v script >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "script(1) is not installed";
  }
  const std::string command = std::string("script -qec \"'") + FUSEBOX_SIM_BINARY + "' sweep '" +
                              kLesson +
                              "' --param breaker.half_open_max_probes=1,2,0,1 --jobs 1 "
                              ">/dev/null\" /dev/null";
  const std::string output = Shell(command).output;
  const std::size_t error = output.find("at the point breaker.half_open_max_probes=0");
  ASSERT_NE(error, std::string::npos) << output;
  ASSERT_GT(error, 0U);
  // The error starts a line (after a wiped bar: "\r   ...   \r"), not after "points".
  EXPECT_TRUE(output[error - 1] == '\r' || output[error - 1] == '\n') << output;
  EXPECT_EQ(output.find("pointsat"), std::string::npos) << output;
}

TEST(CliTest, BadCommandLineExitsWithTwo) {
  EXPECT_EQ(RunSim("run '" + kLesson + "' --format yaml").status, 2);
  EXPECT_EQ(RunSim("fly").status, 2);
  EXPECT_EQ(RunSim("").status, 2);
}

TEST(CliTest, SweepPrintsCsvInGridOrder) {
  const Outcome out =
      RunSim("sweep '" + kLesson + "' --param breaker.cooldown=5s:15s:5s --jobs 2", false);
  EXPECT_EQ(out.status, 0);
  EXPECT_THAT(out.output, StartsWith("breaker.cooldown,calls,allowed,"));
  EXPECT_THAT(out.output, HasSubstr("\n5.0,90,"));
  EXPECT_THAT(out.output, HasSubstr("\n10.0,90,45,45,0,36,9,0,0,5,4,4.02,"));
  EXPECT_THAT(out.output, HasSubstr("\n15.0,90,"));
}

TEST(CliTest, SweepWithoutATerminalDrawsNoProgressBar) {
  const Outcome out = RunSim("sweep '" + kLesson + "' --param breaker.cooldown=1s:3s:1s");
  EXPECT_EQ(out.status, 0);
  EXPECT_EQ(out.output.find("points"), std::string::npos);
}

TEST(CliTest, SweepWithABadParamExitsWithOne) {
  const Outcome out = RunSim("sweep '" + kLesson + "' --param breaker.colldown=1s:3s:1s");
  EXPECT_EQ(out.status, 1);
  EXPECT_THAT(out.output, HasSubstr("unknown key \"breaker.colldown\""));
}

TEST(CliTest, HelpDocumentsCommandsFormatAndExitStatus) {
  const Outcome out = RunSim("--help");
  EXPECT_EQ(out.status, 0);
  for (const char* text : {"run", "sweep", "[[upstream.phase]]", "fragile", "recovery_delay_s",
                           "KEY=FROM:TO:STEP", "EXIT STATUS", "[[variant]]"}) {
    EXPECT_THAT(out.output, HasSubstr(text));
  }
  EXPECT_THAT(out.output, HasSubstr("format"));
  EXPECT_THAT(out.output, HasSubstr("--version"));
  // --help-all (the man page's text): every subcommand with its options, one heading each.
  const Outcome all = RunSim("--help-all");
  EXPECT_EQ(all.status, 0);
  for (const char* text : {"\nrun: ", "\nsweep: ", "  --jobs ", "  --variant ", "EXIT STATUS"}) {
    EXPECT_THAT(all.output, HasSubstr(text));
  }
  const Outcome sweep = RunSim("sweep --help");
  EXPECT_EQ(sweep.status, 0);
  EXPECT_THAT(sweep.output, HasSubstr("--jobs"));
  EXPECT_THAT(sweep.output, HasSubstr("--param"));
}

// No subcommand is needed for --version (every other use needs one, and exits 2 without).
TEST(CliTest, VersionPrintsTheNameAndTheVersion) {
  const Outcome out = RunSim("--version", /*stderr_too=*/false);
  EXPECT_EQ(out.status, 0);
  EXPECT_EQ(out.output, "fusebox-sim " + std::string(fusebox::kVersion) + "\n");
}

TEST(CliTest, FormatPrintsTheKeysOfEveryTable) {
  const Outcome out = RunSim("format", /*stderr_too=*/false);
  EXPECT_EQ(out.status, 0);
  for (const char* text : {"Top-level keys:", "[breaker]:", "  failure_threshold = INTEGER",
                           "[[upstream.phase]]:", "  mode = \"ok\" | \"error\"",
                           "  max_in_flight = INTEGER | \"auto\"", "[[variant]]:"}) {
    EXPECT_THAT(out.output, HasSubstr(text));
  }
  EXPECT_EQ(RunSim("format extra").status, 2);
}

// replay: the table on stdout, the JSON the contract names, a malformed line named by its number
// on stderr while the rest is replayed, and a config that does not read refused with its line.
TEST(CliTest, ReplayPrintsTheTableWritesJsonAndNamesMalformedLines) {
  const std::string data = std::string(FUSEBOX_SOURCE_DIR) + "/tests/data/replay/";
  std::string log;
  {
    std::ifstream in(data + "errors.log");
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      log += (n == 5 ? std::string("not json at all") : line) + "\n";
    }
  }
  const std::string log_path = WriteScenario("replay.log", log);
  const std::string json_path = ::testing::TempDir() + "replay.json";
  const Outcome out = RunSim("replay --log '" + log_path + "' --config '" + data +
                                 "errors.toml' --json '" + json_path + "'",
                             /*stderr_too=*/false);
  EXPECT_EQ(out.status, 0);
  EXPECT_THAT(out.output, HasSubstr("recorded pessimistic  optimistic"));
  EXPECT_THAT(out.output, HasSubstr("CLOSED -> OPEN  (consecutive_failures)"));
  EXPECT_THAT(RunSimStderr("replay --log '" + log_path + "'").output,
              HasSubstr("replay.log:5: not JSON"));
  std::ifstream json_in(json_path);
  const std::string json((std::istreambuf_iterator<char>(json_in)), {});
  for (const char* key : {"\"transitions\": [{\"t\": ", "\"from\": \"CLOSED\"", "\"refused\": ",
                          "\"served\": ", "\"upstream_calls\": ", "\"readings\"", "\"recorded\""}) {
    EXPECT_THAT(json, HasSubstr(key));
  }
  const std::string bad =
      WriteScenario("bad-gateway.toml", "cache = \"memory\"\ncooldown = \"x\"\n");
  const Outcome refused = RunSim("replay --log '" + log_path + "' --config '" + bad + "'");
  EXPECT_EQ(refused.status, 1);
  EXPECT_THAT(refused.output, HasSubstr("bad-gateway.toml:2:12: cooldown: "));
  EXPECT_THAT(RunSim("--help").output, HasSubstr("replay"));
}

// advise: the front and its picks as config lines; a --param that names no breaker key is refused.
TEST(CliTest, AdvisePrintsTheFrontAndItsPicks) {
  const std::string data = std::string(FUSEBOX_SOURCE_DIR) + "/tests/data/replay/";
  const Outcome out =
      RunSim("advise --log '" + data + "errors.log' --config '" + data +
                 "errors.toml' --param failure_threshold=1,3,10 --param cooldown=1s,5s --jobs 2",
             /*stderr_too=*/false);
  EXPECT_EQ(out.status, 0);
  EXPECT_THAT(out.output, HasSubstr("6 configurations replayed"));
  EXPECT_THAT(out.output, HasSubstr("# balanced"));
  EXPECT_THAT(out.output, HasSubstr("probe_mode = \"passive\""));
  const Outcome bad = RunSim("advise --log '" + data + "errors.log' --param listen=a,b");
  EXPECT_EQ(bad.status, 1);
  EXPECT_THAT(bad.output, HasSubstr("--param listen: not a breaker setting"));
  EXPECT_THAT(RunSim("--help").output, HasSubstr("advise"));
}

}  // namespace

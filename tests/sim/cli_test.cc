// End-to-end tests of the fusebox-sim binary: what scripts rely on (exit statuses, where the
// output goes, the messages of bad scenarios) and that --help documents the commands.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>

namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

struct Outcome {
  int status = -1;
  std::string output;
};

// Runs the binary with `args` through the shell; `stderr_too` merges stderr into the output.
Outcome RunSim(const std::string& args, bool stderr_too = true) {
  const std::string command =
      std::string("'") + FUSEBOX_SIM_BINARY + "' " + args + (stderr_too ? " 2>&1" : " 2>/dev/null");
  Outcome outcome;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "popen failed for " << command;
    return outcome;
  }
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
    outcome.output.append(buffer.data(), n);
  }
  const int raw = pclose(pipe);
  outcome.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return outcome;
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
  EXPECT_THAT(out.output, StartsWith("--- transitions (t, from -> to) ---\n"
                                     "    t= 14.0s      CLOSED -> OPEN\n"));
  EXPECT_THAT(out.output, HasSubstr("    t=64.02s   HALF_OPEN -> CLOSED\n"));
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
  const Outcome sweep = RunSim("sweep --help");
  EXPECT_EQ(sweep.status, 0);
  EXPECT_THAT(sweep.output, HasSubstr("--jobs"));
  EXPECT_THAT(sweep.output, HasSubstr("--param"));
}

}  // namespace

// The vpic-sim binary itself: the first stdout line, signals, the open-file limit, --help,
// --version and flag errors. Children are started by tests/support/child_process.h: every wait
// has a deadline.

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "fusebox/version.h"
#include "support/child_process.h"
#include "vpic_sim/test_client.h"

namespace fusebox::vpic_sim {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// vpic-sim with `args`.
class Child : public fusebox::testing::ChildProcess {
 public:
  explicit Child(std::vector<std::string> args) : ChildProcess(WithBinary(std::move(args))) {}

 private:
  static std::vector<std::string> WithBinary(std::vector<std::string> args) {
    args.insert(args.begin(), VPIC_SIM_BINARY);
    return args;
  }
};

// The port of an exact "listening on http://127.0.0.1:PORT" line, else 0. (No std::regex: gcc 12
// warns about its internals at -O2.)
std::uint16_t PortFromListeningLine(const std::string& line) {
  const std::string prefix = "listening on http://127.0.0.1:";
  if (!line.starts_with(prefix) || line.size() == prefix.size() ||
      line.size() > prefix.size() + 5) {
    return 0;
  }
  unsigned port = 0;
  for (char c : line.substr(prefix.size())) {
    if (c < '0' || c > '9') {
      return 0;
    }
    port = port * 10 + static_cast<unsigned>(c - '0');
  }
  return port <= 65535 ? static_cast<std::uint16_t>(port) : 0;
}

TEST(VpicSimProcessTest, FirstLineSaysWhereItListensAndItServes) {
  Child child({"--listen", "127.0.0.1:0"});
  ASSERT_GT(child.pid(), 0);
  const auto line = child.ReadLine(10s);
  ASSERT_TRUE(line.has_value()) << child.err();
  const std::uint16_t port = PortFromListeningLine(*line);
  ASSERT_NE(port, 0) << *line;
  auto reply = test_client::Get(port, "/api/vehicles/DecodeVinValues/1G1JC1440PZ215164");
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->result_int(), 200U);
  kill(child.pid(), SIGINT);
  const auto status = child.WaitForExit(5s);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 0);
}

TEST(VpicSimProcessTest, SigtermExitsZeroWithinASecondWithHangingConnections) {
  Child child({"--listen", "127.0.0.1:0", "--mode", "hang"});
  const auto line = child.ReadLine(10s);
  ASSERT_TRUE(line.has_value()) << child.err();
  const std::uint16_t port = PortFromListeningLine(*line);
  ASSERT_NE(port, 0);
  std::vector<std::unique_ptr<test_client::TestConnection>> hanging;
  for (int i = 0; i < 3; ++i) {
    auto c = std::make_unique<test_client::TestConnection>();
    ASSERT_TRUE(c->Connect(port));
    ASSERT_TRUE(c->Send(test_client::HttpGet("/api/vehicles/DecodeVinValues/1G1JC1440PZ215164")));
    hanging.push_back(std::move(c));
  }
  ASSERT_EQ(test_client::WaitForStat(port, "in_flight", "", 3), 3);
  const auto start = Clock::now();
  kill(child.pid(), SIGTERM);
  const auto status = child.WaitForExit(1s);
  ASSERT_TRUE(status.has_value()) << "still running after 1 s";
  EXPECT_LT(Clock::now() - start, 1s);
  EXPECT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 0);
}

TEST(VpicSimProcessTest, RaisesTheOpenFileSoftLimitToTheHardLimit) {
  rlimit original{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &original), 0);
  if (original.rlim_max <= 256) {
    GTEST_SKIP() << "hard limit too low to observe a raise";
  }
  rlimit lowered = original;
  lowered.rlim_cur = 256;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lowered), 0);
  Child child({"--listen", "127.0.0.1:0"});  // inherits the lowered soft limit
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &original), 0);
  ASSERT_TRUE(child.ReadLine(10s).has_value()) << child.err();
  std::ifstream limits("/proc/" + std::to_string(child.pid()) + "/limits");
  std::string row;
  std::string found;
  while (std::getline(limits, row)) {
    if (row.starts_with("Max open files")) {
      found = row;
    }
  }
  std::istringstream fields(found.substr(std::string("Max open files").size()));
  std::string soft;
  std::string hard;
  fields >> soft >> hard;
  EXPECT_EQ(soft, hard) << found;
  EXPECT_EQ(soft,
            original.rlim_max == RLIM_INFINITY ? "unlimited" : std::to_string(original.rlim_max));
}

TEST(VpicSimProcessTest, HelpDocumentsEveryMode) {
  Child child({"--help"});
  const auto status = child.WaitForExit(10s);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(WEXITSTATUS(*status), 0);
  for (const char* word : {"ok",
                           "error",
                           "hang",
                           "slow",
                           "reset",
                           "garbage",
                           "truncated",
                           "drip",
                           "flap",
                           "capacity",
                           "fragile",
                           "lognormal",
                           "uniform",
                           "--listen",
                           "--tls-cert",
                           "--tls-key",
                           "--seed",
                           "--schedule",
                           "/__control/faults",
                           "/__control/reset",
                           "/__control/stats",
                           "Retry-After"}) {
    EXPECT_NE(child.out().find(word), std::string::npos) << word;
  }
}

// The man page's version (help2man) and packaging scripts read this line.
TEST(VpicSimProcessTest, VersionPrintsTheNameAndTheVersion) {
  Child child({"--version"});
  const auto status = child.WaitForExit(10s);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(WEXITSTATUS(*status), 0);
  EXPECT_EQ(child.out(), "vpic-sim " + std::string(fusebox::kVersion) + "\n");
}

TEST(VpicSimProcessTest, HelpNamesTheProgramNotItsPath) {
  Child child({"--help"});
  const auto status = child.WaitForExit(10s);
  ASSERT_TRUE(status.has_value());
  EXPECT_NE(child.out().find("Usage: vpic-sim [OPTIONS]"), std::string::npos) << child.out();
  EXPECT_NE(child.out().find("--version"), std::string::npos);
}

TEST(VpicSimProcessTest, BadFlagValueExitsWithTheFlagNamed) {
  Child child({"--listen", "127.0.0.1:0", "--mode", "error", "--status", "418"});
  const auto status = child.WaitForExit(10s);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(WEXITSTATUS(*status), 2);
  EXPECT_NE(child.err().find("--status"), std::string::npos) << child.err();
  EXPECT_EQ(child.out(), "");
}

TEST(VpicSimProcessTest, ScheduleThatIsADirectoryExitsTwo) {
  Child child({"--listen", "127.0.0.1:0", "--schedule", "/tmp"});
  const auto status = child.WaitForExit(10s);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 2);
  EXPECT_EQ(child.err(), "vpic-sim: /tmp: is a directory, not a schedule file (a TOML file)\n");
  EXPECT_EQ(child.out(), "");
}

TEST(VpicSimProcessTest, UnreadableScheduleExitsTwo) {
  Child child({"--listen", "127.0.0.1:0", "--schedule", "/proc/self/mem"});
  const auto status = child.WaitForExit(10s);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(WEXITSTATUS(*status), 2);
  EXPECT_NE(child.err().find("/proc/self/mem: cannot read the schedule file: "), std::string::npos)
      << child.err();
  EXPECT_EQ(child.out(), "");
}

TEST(VpicSimProcessTest, NegativeOrNonNumericSeedExitsTwo) {
  for (const char* seed : {"-1", "abc", "1.5", "18446744073709551616", ""}) {
    Child child({"--listen", "127.0.0.1:0", "--seed", seed});
    const auto status = child.WaitForExit(10s);
    ASSERT_TRUE(status.has_value()) << seed;
    EXPECT_EQ(WEXITSTATUS(*status), 2) << seed;
    EXPECT_NE(child.err().find("--seed must be a decimal integer"), std::string::npos)
        << seed << ": " << child.err();
    EXPECT_EQ(child.out(), "") << seed;
  }
}

TEST(VpicSimProcessTest, LargestSeedIsAccepted) {
  Child child({"--listen", "127.0.0.1:0", "--seed", "18446744073709551615"});
  const auto line = child.ReadLine(10s);
  ASSERT_TRUE(line.has_value()) << child.err();
  EXPECT_NE(PortFromListeningLine(*line), 0) << *line;
  kill(child.pid(), SIGTERM);
  const auto status = child.WaitForExit(5s);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(WEXITSTATUS(*status), 0);
}

TEST(VpicSimProcessTest, ScheduleErrorNamesTheLineOfTheValue) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("vpic-sim-bad-" + std::to_string(getpid()) + ".toml"))
                               .string();
  {
    std::ofstream out(path);
    out << "[[upstream.phase]]\nfrom = \"1s\"\nto = \"2s\"\nmode = \"bogus\"\n";
  }
  Child child({"--listen", "127.0.0.1:0", "--schedule", path});
  const auto status = child.WaitForExit(10s);
  std::filesystem::remove(path);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(WEXITSTATUS(*status), 2);
  EXPECT_NE(child.err().find(path + ":4:8: upstream.phase[0].mode: "), std::string::npos)
      << child.err();
}

TEST(VpicSimProcessTest, BadScheduleExitsWithTheFileAndKeyNamed) {
  Child child({"--listen", "127.0.0.1:0", "--schedule", "/nonexistent/schedule.toml"});
  const auto status = child.WaitForExit(10s);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(WEXITSTATUS(*status), 2);
  EXPECT_NE(child.err().find("/nonexistent/schedule.toml"), std::string::npos) << child.err();
}

}  // namespace
}  // namespace fusebox::vpic_sim

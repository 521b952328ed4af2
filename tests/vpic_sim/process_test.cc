// The vpic-sim binary itself: the first stdout line, signals, the open-file limit, --help and
// flag errors. Children are spawned with posix_spawn; every wait is a poll() on their output
// pipes with a deadline (a child that exits closes them).

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
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

#include "vpic_sim/test_client.h"

extern char** environ;  // NOLINT: POSIX

namespace fusebox::vpic_sim {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class Child {
 public:
  explicit Child(std::vector<std::string> args) {
    args.insert(args.begin(), VPIC_SIM_BINARY);
    int out[2] = {-1, -1};
    int err[2] = {-1, -1};
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
      return;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
    std::vector<char*> argv;
    for (std::string& a : args) {
      argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, VPIC_SIM_BINARY, &actions, nullptr, argv.data(), environ) != 0) {
      pid_ = -1;
    }
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    close(err[1]);
    out_ = out[0];
    err_ = err[0];
  }

  ~Child() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (out_ >= 0) {
      close(out_);
    }
    if (err_ >= 0) {
      close(err_);
    }
  }

  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }

  // The next stdout line (without '\n'), or nullopt on EOF or timeout.
  std::optional<std::string> ReadLine(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      const std::size_t nl = out_buffer_.find('\n');
      if (nl != std::string::npos) {
        std::string line = out_buffer_.substr(0, nl);
        out_buffer_.erase(0, nl + 1);
        return line;
      }
      if (!ReadSome(out_, out_buffer_, deadline)) {
        return std::nullopt;
      }
    }
  }

  // Waits for the child to close stdout and stderr (it exits), then reaps it. Returns the wait
  // status, or nullopt on timeout.
  std::optional<int> WaitForExit(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (ReadSome(out_, out_buffer_, deadline)) {
    }
    while (ReadSome(err_, err_buffer_, deadline)) {
    }
    if (Clock::now() >= deadline) {
      return std::nullopt;
    }
    int status = 0;
    if (waitpid(pid_, &status, 0) != pid_) {
      return std::nullopt;
    }
    reaped_ = true;
    return status;
  }

  const std::string& out() const { return out_buffer_; }
  const std::string& err() const { return err_buffer_; }

 private:
  // Reads what is available on `fd` into `into`; false on EOF, error or deadline.
  static bool ReadSome(int fd, std::string& into, Clock::time_point deadline) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left <= 0ms) {
      return false;
    }
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) {
      return false;
    }
    char chunk[4096];
    const ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n <= 0) {
      return false;
    }
    into.append(chunk, static_cast<std::size_t>(n));
    return true;
  }

  pid_t pid_ = -1;
  int out_ = -1;
  int err_ = -1;
  bool reaped_ = false;
  std::string out_buffer_;
  std::string err_buffer_;
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

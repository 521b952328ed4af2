// The gateway's --config file when it is not what an operator means by one: a directory, a FIFO,
// a file over the 1 MiB cap or an empty file (an editor's truncate-then-write). At start each is
// a start-up error (exit 2, the reason on stderr); on SIGHUP each is refused with the reason in
// the log while the settings in force stay, and the thread serving requests never waits for the
// file (it is read on a thread of its own).
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <gtest/gtest.h>

#include "reliability/reliability_support.h"

namespace reliability {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;

using SteadyClock = std::chrono::steady_clock;

constexpr char kKnownVin[] = "1FTMW1T88MFA00001";
constexpr char kSetting[] = "config failure_threshold 7, cooldown 45s";
// Larger than the cap of a config file (1 MiB), and all of it valid TOML (comments): before the
// cap it read as an empty file, and the gateway went back to its defaults.
constexpr std::size_t kOverCapBytes = 16U << 20U;

void WriteFile(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

// Exactly `bytes` bytes of comment lines.
void WriteComments(const fs::path& path, std::size_t bytes) {
  std::string text;
  text.reserve(bytes);
  while (text.size() < bytes) {
    text += std::string(std::min<std::size_t>(79, bytes - text.size()), '#');
    if (text.size() < bytes) {
      text += '\n';
    }
  }
  WriteFile(path, text);
}

class ConfigFileTest : public GatewayProcessTest {
 protected:
  void SetUp() override {
    GatewayProcessTest::SetUp();
    config_ = dir_ / "gateway.toml";
  }

  // The gateway with `--config PATH` and the suite's flags, except the breaker's (a flag is over
  // the file, at start and on every reload): its breaker is the file's.
  std::vector<std::string> Argv(const std::string& upstream) const {
    return {
        VIN_GATEWAY_BINARY, "--listen",      "127.0.0.1:0", "--upstream-url", upstream, "--cache",
        "memory",           "--client-rate", "0",           "--offline-db",   "none",   "--config",
        config_.string()};
  }

  // Starts a gateway on a file with failure_threshold 7 and cooldown 45s (passive probing, where
  // the cooldown is the wait before a probe), and checks /status.
  void StartOnTheFile() {
    WriteFile(config_, "failure_threshold = 7\ncooldown = \"45s\"\nprobe_mode = \"passive\"\n");
    StartSim();
    gateway_ = std::make_unique<ChildProcess>(Argv(sim_->url()), std::vector<std::string>{},
                                              (dir_ / "gateway.log").string());
    ASSERT_TRUE(gateway_->started()) << gateway_->Log();
    ASSERT_EQ(SettingsInForce(), "7 / 45s");
  }

  // The breaker's failure threshold and cooldown from /status: "7 / 45s".
  std::string SettingsInForce() const {
    const json::value breaker = Breaker();
    if (!breaker.is_object()) {
      return "no /status";
    }
    return fmt::format("{} / {}s", breaker.at("failure_threshold").to_number<std::int64_t>(),
                       breaker.at("cooldown_s").to_number<double>());
  }

  // Whether a reload has been applied: `/status` shows the settings in force, but its
  // cooldown_s is the current OPEN period's, which a reload changes only at the next opening.
  bool AnyReloadApplied() const {
    return gateway_->Log().find("SIGHUP: re-read") != std::string::npos;
  }

  // The log line of a reload refused for `reason`.
  std::string Refusal(const std::string& reason) const {
    return fmt::format("SIGHUP: {0} refused, the settings in force stay: --config: '{0}' {1}",
                       config_.string(), reason);
  }

  // Waits for the refusal's log line (a reload that applied the file, or hung on it, never
  // writes it).
  bool Refused(const std::string& reason) const {
    return WaitUntil([&] { return gateway_->Log().find(Refusal(reason)) != std::string::npos; },
                     5 * TimeScale());
  }
  bool RefusedOnSighup(const std::string& reason) const {
    ::kill(gateway_->pid(), SIGHUP);
    return Refused(reason);
  }

  // Asks /healthz and for a cache hit, each on a fresh connection, for `seconds`: the slowest
  // answer, or a negative value if one was missing or not 200 (a stalled thread).
  double SlowestAnswerFor(double seconds) const {
    double slowest = 0;
    const auto end = SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(
                                              std::chrono::duration<double>(seconds));
    while (SteadyClock::now() < end) {
      for (const std::string& target :
           {std::string("/healthz"), fmt::format("/api/v1/vin/{}", kKnownVin)}) {
        const HttpResult r = fusebox::gateway::testing::Http(gateway_->port(), "GET", target, "",
                                                             "", 2 * TimeScale());
        if (r.status != 200) {
          return -1;
        }
        slowest = std::max(slowest, r.seconds);
      }
    }
    return slowest;
  }

  // SIGHUP with what the test left at the config path: /healthz and a cache hit are asked for
  // from the signal on, while the reload runs, and the reload must be refused for `reason`.
  // Records the row.
  void CheckRefusedWhileServing(const std::string& fault, const std::string& reason) {
    ::kill(gateway_->pid(), SIGHUP);
    const double slowest = SlowestAnswerFor(1.0);
    const bool refused = Refused(reason);
    const std::string in_force = SettingsInForce();
    const bool applied = AnyReloadApplied();
    const double bound = 0.1 + SlackS();
    EXPECT_TRUE(refused) << gateway_->Log();
    EXPECT_GE(slowest, 0) << "/healthz or a cache hit went unanswered after SIGHUP";
    EXPECT_LT(slowest, bound);
    EXPECT_EQ(in_force, "7 / 45s");
    EXPECT_FALSE(applied) << gateway_->Log();
    AddMatrixRow(
        {"config file", fault, kSetting,
         "refused, the reason logged; breaker stays 7 / 45s; /healthz and a cache hit each < "
         "100 ms for 1 s after the signal",
         fmt::format("{}; breaker {}{}; {}", refused ? "refused, reason logged" : "NOT refused",
                     in_force, applied ? ", a reload APPLIED" : "",
                     slowest < 0 ? std::string("an answer MISSING")
                                 : fmt::format("slowest answer {:.0f} ms", slowest * 1000)),
         refused && slowest >= 0 && slowest < bound && in_force == "7 / 45s" && !applied});
  }

  fs::path config_;
};

// Each non-file at the --config path stops the gateway before it serves: exit 2, the reason on
// stderr. (Before: a directory or an empty file started it on the defaults, upstream
// https://vpic.nhtsa.dot.gov; a FIFO hung the start until something wrote to it.)
TEST_F(ConfigFileTest, ConfigPathThatIsNotAFileWithSettingsIsAStartUpError) {
  struct Case {
    std::string fault;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {"--config names a directory", "is a directory, not a regular file"},
      {"--config names a FIFO, no writer", "is a FIFO (named pipe), not a regular file"},
      {"--config names a 16 MiB file (comments)",
       fmt::format("is {} bytes, over the 1 MiB a config file may hold", kOverCapBytes)},
      {"--config names an empty file",
       "is empty (a file that sets nothing must hold at least a comment)"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    fs::remove_all(config_);
    if (i == 0) {
      fs::create_directory(config_);
    } else if (i == 1) {
      ASSERT_EQ(::mkfifo(config_.c_str(), 0600), 0);
    } else if (i == 2) {
      WriteComments(config_, kOverCapBytes);
      ASSERT_EQ(fs::file_size(config_), kOverCapBytes);
    } else {
      WriteFile(config_, "");
    }
    const auto start = SteadyClock::now();
    gateway_ = std::make_unique<ChildProcess>(
        Argv("http://127.0.0.1:9"), std::vector<std::string>{}, (dir_ / "gateway.log").string());
    const bool started = gateway_->started();
    const int exit_status = gateway_->Terminate(5);
    const double took_s = std::chrono::duration<double>(SteadyClock::now() - start).count();
    const std::string expected_line =
        fmt::format("vin-gateway: --config: '{}' {}", config_.string(), cases[i].reason);
    const bool logged = gateway_->Log().find(expected_line) != std::string::npos;
    EXPECT_FALSE(started) << cases[i].fault;
    EXPECT_EQ(exit_status, 2) << cases[i].fault;
    EXPECT_TRUE(logged) << cases[i].fault << "\n" << gateway_->Log();
    AddMatrixRow(
        {"config file", cases[i].fault, "at start",
         fmt::format("exit 2 before serving; stderr: --config: 'PATH' {}", cases[i].reason),
         fmt::format("{}exit {} after {:.2f} s; {}", started ? "SERVED, then " : "", exit_status,
                     took_s, logged ? "the reason on stderr" : "reason MISSING on stderr"),
         !started && exit_status == 2 && logged});
    if (HasFailure()) {
      return;
    }
  }
}

// The file replaced by a directory, then emptied (an editor between truncating and writing):
// SIGHUP refuses both, and the breaker keeps the file's 7 / 45s. (Before: both read as an empty
// file, and the breaker went back to 3 / 20s.) A good file afterwards still applies.
TEST_F(ConfigFileTest, SighupRefusesADirectoryOrAnEmptyFileAndKeepsTheSettingsInForce) {
  ASSERT_NO_FATAL_FAILURE(StartOnTheFile());
  struct Case {
    std::string fault;
    std::string reason;
    bool directory = false;  // else an empty file
  };
  for (const Case& c :
       {Case{"SIGHUP after the file was replaced by a directory",
             "is a directory, not a regular file", true},
        Case{"SIGHUP while the file is empty (truncated, not yet written)",
             "is empty (a file that sets nothing must hold at least a comment)", false}}) {
    fs::remove_all(config_);
    if (c.directory) {
      fs::create_directory(config_);
    } else {
      WriteFile(config_, "");
    }
    const bool refused = RefusedOnSighup(c.reason);
    const std::string in_force = SettingsInForce();
    const bool applied = AnyReloadApplied();
    EXPECT_TRUE(refused) << gateway_->Log();
    EXPECT_EQ(in_force, "7 / 45s");
    EXPECT_FALSE(applied) << gateway_->Log();
    AddMatrixRow(
        {"config file", c.fault, kSetting, "refused, the reason logged; breaker stays 7 / 45s",
         fmt::format("{}; breaker {}{}", refused ? "refused, reason logged" : "NOT refused",
                     in_force, applied ? ", a reload APPLIED" : ""),
         refused && in_force == "7 / 45s" && !applied});
  }
  // The reload path still works.
  fs::remove_all(config_);
  WriteFile(config_, "failure_threshold = 5\ncooldown = \"45s\"\nprobe_mode = \"passive\"\n");
  ::kill(gateway_->pid(), SIGHUP);
  EXPECT_TRUE(WaitUntil([&] { return SettingsInForce() == "5 / 45s"; }, 5 * TimeScale()))
      << gateway_->Log();
}

// A FIFO at the config path: opened to read, it would block until something writes to it. The
// reload refuses it without waiting; /healthz and cache hits answer meanwhile. (Before: the event
// loop blocked in open(2) and stopped answering.) This proves the FIFO is never waited on, not
// that the read is off the serving thread: the refusal comes before any read, on either thread.
// The reader thread itself is tested in reload_reader_test, with a read that blocks.
TEST_F(ConfigFileTest, SighupWithAFifoAtTheConfigPathNeverStallsServing) {
  ASSERT_NO_FATAL_FAILURE(StartOnTheFile());
  ASSERT_EQ(Decode(kKnownVin).status, 200);  // later decodes of it are cache hits
  fs::remove(config_);
  ASSERT_EQ(::mkfifo(config_.c_str(), 0600), 0);
  CheckRefusedWhileServing("SIGHUP with a FIFO (no writer) at the config path",
                           "is a FIFO (named pipe), not a regular file");
}

// A file far over the cap (all comments, so valid TOML): refused for its size before it is read,
// serving unaffected. (Before: parsed on the serving thread, and read as an empty file.) As
// above, the refusal comes before a read, so this does not show which thread reads.
TEST_F(ConfigFileTest, SighupWithAFileOverTheCapIsRefusedWithoutStallingServing) {
  ASSERT_NO_FATAL_FAILURE(StartOnTheFile());
  ASSERT_EQ(Decode(kKnownVin).status, 200);
  WriteComments(config_, kOverCapBytes);
  ASSERT_EQ(fs::file_size(config_), kOverCapBytes);
  CheckRefusedWhileServing(
      "SIGHUP with a 16 MiB file (comments) at the config path",
      fmt::format("is {} bytes, over the 1 MiB a config file may hold", kOverCapBytes));
}

}  // namespace
}  // namespace reliability

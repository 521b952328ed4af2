// fusebox-sim replay against the real thing: vpic-sim runs a scripted outage, vin-gateway (with
// --log-format json and a config file) sits in front of it under a steady load of decodes, and
// the gateway's own log is then replayed through the same config file. The replay must give the
// transitions the gateway logged (each of the same kind, within 1 s) and the same count of
// refused requests (within 2 %). Three outages: a hang (active probing), an error period (passive
// probing: users' requests are the probes) and a flapping upstream (a time window).
//
// FUSEBOX_REPLAY_LOG_DIR, when set, keeps each recorded log and config there (how
// tests/data/replay/ and the worked example of docs/replay.md were made).
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "gateway_config.h"
#include "replay.h"
#include "replay_log.h"
#include "vin_gateway/process_harness.h"

namespace {

using fusebox::gateway::testing::ChildProcess;
using fusebox::gateway::testing::Http;
using fusebox::sim::Micros;

struct Outage {
  std::string name;
  std::string schedule;  // vpic-sim's [[upstream.phase]] tables
  std::string config;    // the gateway's config file (its breaker part)
  double seconds = 0;    // how long the load runs
  double rate = 0;       // decodes a second
};

class ReplayIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           fmt::format("fusebox_replay_{}_{}", ::getpid(),
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }

  void TearDown() override {
    if (HasFailure() && gateway_) {
      std::cerr << "---- gateway log (tail) ----\n" << Tail(gateway_->Log());
    }
    gateway_.reset();
    sim_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  static std::string Tail(const std::string& text) {
    return text.size() > 20000 ? text.substr(text.size() - 20000) : text;
  }

  static void Write(const std::filesystem::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
  }

  // Runs the outage and returns the gateway's log file.
  std::filesystem::path Record(const Outage& outage) {
    Write(dir_ / "schedule.toml", outage.schedule);
    Write(dir_ / "gateway.toml", outage.config);
    sim_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{VPIC_SIM_BINARY, "--listen", "127.0.0.1:0", "--latency", "20ms",
                                 "--schedule", (dir_ / "schedule.toml").string()},
        std::vector<std::string>{}, (dir_ / "vpic-sim.log").string());
    EXPECT_TRUE(sim_->started()) << sim_->Log();
    gateway_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{VIN_GATEWAY_BINARY, "--config", (dir_ / "gateway.toml").string(),
                                 "--listen", "127.0.0.1:0", "--upstream-url", sim_->url(),
                                 "--cache", "memory", "--client-rate", "0", "--offline-db", "none",
                                 "--log-format", "json"},
        std::vector<std::string>{}, (dir_ / "gateway.log").string());
    EXPECT_TRUE(gateway_->started()) << gateway_->Log();
    // A steady load: one decode every 1/rate s, each on its own connection and thread (a hung
    // call must not hold the next back); one in five asks again for an earlier VIN (a cache hit,
    // or a join while its call runs).
    std::vector<std::thread> clients;
    const auto start = std::chrono::steady_clock::now();
    const int n = static_cast<int>(outage.seconds * outage.rate);
    for (int i = 0; i < n; ++i) {
      std::this_thread::sleep_until(start + std::chrono::duration<double>(i / outage.rate));
      const std::string vin = fmt::format("1FTMW1T88M{}{:06d}", 'R', i % 5 == 4 ? i - 2 : i);
      const int port = gateway_->port();
      clients.emplace_back([port, vin] { Http(port, "GET", "/api/v1/vin/" + vin, "", "", 10); });
    }
    for (std::thread& t : clients) {
      t.join();
    }
    EXPECT_EQ(gateway_->Terminate(), 0);
    if (const char* keep = std::getenv("FUSEBOX_REPLAY_LOG_DIR"); keep != nullptr) {
      std::filesystem::copy_file(dir_ / "gateway.log",
                                 std::filesystem::path(keep) / (outage.name + ".log"),
                                 std::filesystem::copy_options::overwrite_existing);
      std::filesystem::copy_file(dir_ / "gateway.toml",
                                 std::filesystem::path(keep) / (outage.name + ".toml"),
                                 std::filesystem::copy_options::overwrite_existing);
    }
    return dir_ / "gateway.log";
  }

  // Replays the log through the config it ran with and checks the replay against the log.
  void ExpectFaithful(const std::filesystem::path& log) {
    auto incident = fusebox::sim::ReadIncidentFile(log.string());
    ASSERT_TRUE(incident) << incident.error();
    EXPECT_EQ(incident->errors, 0U) << incident->first_errors.front().message;
    ASSERT_GT(incident->transitions.size(), 1U) << "the outage opened no breaker";
    auto settings = fusebox::sim::LoadGatewayConfig((dir_ / "gateway.toml").string());
    ASSERT_TRUE(settings) << settings.error().ToString();
    const auto revivals =
        fusebox::sim::FindRevivals(*incident, settings->breaker.effective_slow_call_duration());
    auto run = fusebox::sim::Replay(*incident, *settings, revivals, {});
    ASSERT_TRUE(run) << run.error();
    const auto& recorded = incident->transitions;
    const auto& replayed = run->transitions;
    ASSERT_EQ(replayed.size(), recorded.size()) << Describe(*incident, *run);
    for (std::size_t i = 0; i < recorded.size(); ++i) {
      EXPECT_EQ(replayed[i].from, recorded[i].from) << i << "\n" << Describe(*incident, *run);
      EXPECT_EQ(replayed[i].to, recorded[i].to) << i << "\n" << Describe(*incident, *run);
      EXPECT_LE(std::llabs(replayed[i].t - recorded[i].t), 1'000'000LL)
          << i << "\n"
          << Describe(*incident, *run);
    }
    const double refused = static_cast<double>(incident->recorded.refused);
    EXPECT_GT(refused, 0);
    EXPECT_LE(std::fabs(static_cast<double>(run->counts.refused) - refused),
              std::max(1.0, 0.02 * refused))
        << Describe(*incident, *run);
    const double served = static_cast<double>(incident->recorded.served);
    EXPECT_LE(std::fabs(static_cast<double>(run->counts.served) - served),
              std::max(1.0, 0.02 * served))
        << Describe(*incident, *run);
  }

  static std::string Describe(const fusebox::sim::Incident& incident,
                              const fusebox::sim::ReplayRun& run) {
    std::string out =
        fmt::format("refused {} (log {}), served {} (log {})\nlog:\n", run.counts.refused,
                    incident.recorded.refused, run.counts.served, incident.recorded.served);
    for (const auto& t : incident.transitions) {
      out += fmt::format("  {:.3f} {} -> {}\n", static_cast<double>(t.t) / 1e6,
                         fusebox::ToString(t.from), fusebox::ToString(t.to));
    }
    out += "replay:\n";
    for (const auto& t : run.transitions) {
      out += fmt::format("  {:.3f} {} -> {}\n", static_cast<double>(t.t) / 1e6,
                         fusebox::ToString(t.from), fusebox::ToString(t.to));
    }
    return out;
  }

  std::filesystem::path dir_;
  std::unique_ptr<ChildProcess> sim_;
  std::unique_ptr<ChildProcess> gateway_;
};

// vPIC hangs for 4 s: the defaults' shape (three slow calls in flight open the breaker, the
// gateway probes on its own), scaled to a 1 s budget.
TEST_F(ReplayIntegrationTest, AHangIsReplayedFaithfully) {
  const Outage outage{
      .name = "hang",
      .schedule = "[[upstream.phase]]\nfrom = \"3s\"\nto = \"7s\"\nmode = \"hang\"\n",
      .config =
          "call_timeout = \"1s\"\nslow_call_duration = \"600ms\"\n"
          "inflight_slow_accounting = true\nfailure_threshold = 3\nprobe_mode = \"active\"\n"
          "probe_interval = \"500ms\"\nprobe_budget = \"400ms\"\n",
      .seconds = 10,
      .rate = 20};
  ExpectFaithful(Record(outage));
}

// vPIC answers 503 for 4 s; passive probing: after each 1 s cooldown a user's request probes.
TEST_F(ReplayIntegrationTest, AnErrorPeriodIsReplayedFaithfully) {
  const Outage outage{.name = "errors",
                      .schedule =
                          "[[upstream.phase]]\nfrom = \"3s\"\nto = \"7s\"\nmode = \"error\"\n"
                          "status = 503\n",
                      .config =
                          "call_timeout = \"1s\"\nfailure_threshold = 3\nprobe_mode = \"passive\"\n"
                          "cooldown = \"1s\"\n",
                      .seconds = 10,
                      .rate = 20};
  ExpectFaithful(Record(outage));
}

// vPIC flaps: 600 ms of errors, 600 ms of answers, five times; a time window judges the rate.
TEST_F(ReplayIntegrationTest, AFlappingUpstreamIsReplayedFaithfully) {
  std::string schedule;
  for (int i = 0; i < 5; ++i) {
    schedule += fmt::format(
        "[[upstream.phase]]\nfrom = \"{}ms\"\nto = \"{}ms\"\nmode = \"error\"\nstatus = 500\n",
        2000 + i * 1200, 2600 + i * 1200);
  }
  const Outage outage{
      .name = "flapping",
      .schedule = schedule,
      .config =
          "call_timeout = \"1s\"\ntrip = \"time_window\"\nwindow_size = 2\n"
          "minimum_calls = 5\nfailure_rate_threshold = 0.5\nprobe_mode = \"active\"\n"
          "probe_interval = \"300ms\"\nprobe_budget = \"500ms\"\n",
      .seconds = 10,
      .rate = 20};
  ExpectFaithful(Record(outage));
}

}  // namespace

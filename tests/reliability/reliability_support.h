// What the reliability suite shares: a fixture that runs vpic-sim and vin-gateway as processes
// (through tests/vin_gateway/process_harness.h; vin_gateway_integration_test derives its fixture
// from it too), readings of a process from /proc (descriptors, resident memory), and the fault
// matrix every test adds its rows to.
//
// The matrix (fault x expected x observed) is written as Markdown when the run ends, if the
// environment variable RELIABILITY_MATRIX_OUT names a file: run the binary itself (ctest runs one
// test per process, and each would overwrite the file with its own rows). docs/reliability.md
// holds the output of one run.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/json/value.hpp>

#include "vin_gateway/process_harness.h"

namespace reliability {

using fusebox::gateway::testing::ChildProcess;
using fusebox::gateway::testing::Http;
using fusebox::gateway::testing::HttpResult;

// Open descriptors of `pid` (entries of /proc/PID/fd); -1 when unreadable.
int OpenDescriptors(pid_t pid);
// Resident set of `pid` in KiB (VmRSS of /proc/PID/status); -1 when unreadable.
long ResidentKib(pid_t pid);

// The harness's poll with a deadline (process_harness.h).
using fusebox::gateway::testing::WaitUntil;

// The body as JSON (null when it is not JSON).
boost::json::value Json(const HttpResult& r);
// A string field of a JSON object body ("" when missing).
std::string Field(const HttpResult& r, const char* name);

// A syntactically valid VIN (17 characters of 0-9 A-H J-N P R-Z) unique for each (series, n):
// vpic-sim decodes it synthetically, so it is a cache miss the first time.
std::string UniqueVin(char series, int n);

// One row of the matrix: the fault, the setting it ran under, what the contract expects and what
// this run observed.
struct MatrixRow {
  std::string area;  // "hostile upstream", "exhausted resources", "crash safety"
  std::string fault;
  std::string setting;
  std::string expected;
  std::string observed;
  bool passed = false;
};
void AddMatrixRow(MatrixRow row);

// vpic-sim and vin-gateway on loopback ephemeral ports, each test in its own directory; the logs
// are printed when a test fails.
class GatewayProcessTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  void StartSim(std::vector<std::string> args = {});
  // The gateway in front of the sim (or `upstream`) with the suite's defaults: memory cache, no
  // client rate limit, a 500 ms call budget, a 500 ms cooldown, the default breaker policy
  // (three consecutive failures open it) and no offline database (whatever the working
  // directory holds: the suite checks the upstream's outcomes, not the fallback). `args`
  // override them (later flags win). `wrapper` is a command put in front of the binary (e.g.
  // /usr/bin/prlimit --fsize=...); it must exec it, so that the pid is the gateway's.
  void StartGateway(std::vector<std::string> args = {}, std::vector<std::string> env = {},
                    std::string upstream = "", std::vector<std::string> wrapper = {});

  HttpResult Get(const std::string& target) const;
  HttpResult Decode(const std::string& vin) const;
  void Fault(const std::string& body) const;
  boost::json::value SimStats() const;
  long UpstreamCalls() const;
  boost::json::value Status() const;
  boost::json::value Breaker() const;
  std::string BreakerState() const;
  // The `vpic` breaker's recent transitions as "CLOSED>OPEN>HALF_OPEN>..." (the first state,
  // then each transition's target).
  std::string TransitionPath() const;
  // Waits until the breaker would let a probe through (its retry_after_s reads 0).
  bool AwaitCooldown(double timeout_s = 10) const;

  static constexpr double kBudgetS = 0.5;  // --call-timeout of the suite
  // Latency allowed above the budget: 100 ms, times FUSEBOX_TEST_TIME_SCALE when set (the
  // sanitizer presets set it: their builds check memory and threads, not speed).
  static double SlackS();
  // FUSEBOX_TEST_TIME_SCALE when set, else 1.
  static double TimeScale();
  // The resident-set bounds' factor: FUSEBOX_TEST_MEMORY_SCALE when set (the asan preset sets
  // it: the sanitizer's shadow memory is resident too), else 1.
  static double MemoryScale();

  std::filesystem::path dir_;
  std::unique_ptr<ChildProcess> sim_;
  std::unique_ptr<ChildProcess> gateway_;
};

}  // namespace reliability

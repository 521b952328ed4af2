// tests/support/child_process.h
//
// The one way a test starts a process: a binary (no shell) with its stdout in a pipe and its
// stderr in a pipe, in a file, or merged into stdout; every wait is a poll() with a deadline, so a
// child that hangs fails the test instead of hanging it. A child still running when its
// ChildProcess is destroyed is killed (SIGKILL) and reaped.
//
// Not thread-safe: one test thread owns a ChildProcess.
//
// Example:
//   ChildProcess sim({VPIC_SIM_BINARY, "--listen", "127.0.0.1:0"});
//   std::optional<std::string> line = sim.ReadLine(10s);     // "listening on http://..."
//   std::optional<int> status = sim.Stop(SIGTERM, 10s);      // the wait status
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace fusebox::testing {

enum class StderrTo {
  kPipe,    // read with err() after WaitForExit
  kStdout,  // merged into stdout, in the order written
  kFile,    // ChildOptions::stderr_path, truncated
};

struct ChildOptions {
  std::vector<std::string> env;        // "NAME=value", added to (or replacing) the parent's
  std::vector<std::string> unset_env;  // names not passed on from the parent's environment
  StderrTo stderr_to = StderrTo::kPipe;
  std::string stderr_path;  // for StderrTo::kFile
};

class ChildProcess {
 public:
  // Starts argv[0] (a path; PATH is not searched) with `argv`. started() says whether it ran.
  explicit ChildProcess(std::vector<std::string> argv, ChildOptions options = {});
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  bool started() const { return pid_ > 0; }
  // The child's pid, also after it was reaped (then nothing may be sent to it): -1 if it never
  // started.
  pid_t pid() const { return pid_; }
  bool running() const { return running_; }

  // The next stdout line without its '\n' (and '\r'), or nullopt on end of output or timeout.
  std::optional<std::string> ReadLine(std::chrono::milliseconds timeout);

  // Reads stdout and stderr until the child closes both (it exits), then reaps it: the wait
  // status, or nullopt on timeout (the child is left running).
  std::optional<int> WaitForExit(std::chrono::milliseconds timeout);

  // Sends `signal` and waits for the exit as WaitForExit does; past `timeout`, SIGKILL. The wait
  // status, or nullopt when it had to be killed.
  std::optional<int> Stop(int signal, std::chrono::milliseconds timeout);

  // SIGKILL and reap, at once.
  void Kill();

  // Everything read from stdout so far that ReadLine has not returned, and from stderr (kPipe).
  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }

 private:
  pid_t pid_ = -1;
  bool running_ = false;  // started and not reaped
  int out_fd_ = -1;
  int err_fd_ = -1;
  std::string out_;
  std::string err_;
};

// Runs argv to its end (bounded by `timeout`, then killed) and returns what it printed.
struct RunResult {
  int exit_code = -1;  // -1: killed by a signal, or past the timeout
  std::string out;
  std::string err;  // empty with StderrTo::kStdout
};
RunResult Run(std::vector<std::string> argv, ChildOptions options = {},
              std::chrono::milliseconds timeout = std::chrono::seconds(60));

// A loopback TCP port that was free a moment ago (bind port 0, read it, close): for servers that
// cannot bind port 0 themselves and report it (redis-server).
int FreeLoopbackPort();

}  // namespace fusebox::testing

// Child processes and a tiny blocking HTTP client for the gateway's integration tests: start
// vpic-sim and vin-gateway on loopback port 0, read their "listening on" line, talk HTTP/1.1 with
// Connection: close, and stop them with SIGTERM (then SIGKILL if they linger).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

#include "support/child_process.h"

namespace fusebox::gateway::testing {

struct HttpResult {
  int status = 0;                              // 0: no answer (connection failed or closed)
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  double seconds = 0;  // wall time of the exchange
};

// One request on a fresh connection. `raw_extra_headers` are "Name: value\r\n" lines.
HttpResult Http(int port, const std::string& method, const std::string& target,
                const std::string& body = "", const std::string& raw_extra_headers = "",
                double timeout_s = 20);

class ChildProcess {
 public:
  // Starts `argv[0]` with `argv` and extra environment `env` ("NAME=value"); its stderr goes to
  // `log_path`. Reads stdout until a line starting with "listening on " and keeps its URL.
  ChildProcess(std::vector<std::string> argv, std::vector<std::string> env,
               const std::string& log_path);
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  bool started() const { return port_ > 0; }
  int port() const { return port_; }
  const std::string& url() const { return url_; }
  pid_t pid() const { return process_.pid(); }
  // Sends SIGTERM and waits up to `timeout_s`; returns the exit status (or -1 if it had to be
  // killed).
  int Terminate(double timeout_s = 10);
  std::string Log() const;

 private:
  std::string log_path_;
  fusebox::testing::ChildProcess process_;
  int port_ = 0;
  std::string url_;
};

// Polls `condition` every 10 ms until it holds or `timeout_s` passes; the last answer. For tests
// of processes, whose state is only observable from outside (their logs, their HTTP answers).
bool WaitUntil(const std::function<bool()>& condition, double timeout_s = 10);

}  // namespace fusebox::gateway::testing

// A real redis-server for the fleet tests: on 127.0.0.1, on a port found free by binding port 0
// first, in its own temporary directory, with persistence off. Killed (SIGKILL) and restarted on
// the same port by the tests that need an outage; stopped when destroyed.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/child_process.h"

namespace fusebox::testing {

class RedisServer {
 public:
  RedisServer() {
    char dir_template[] = "/tmp/fusebox-redis-XXXXXX";
    dir_ = mkdtemp(dir_template);
    port_ = static_cast<std::uint16_t>(FreeLoopbackPort());
  }
  ~RedisServer() {
    Kill();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  static const char* Binary() { return FUSEBOX_REDIS_SERVER; }
  static bool Available() { return std::filesystem::exists(Binary()); }

  // Starts the server and waits (up to 5 s) until it accepts connections. `extra`: more
  // configuration directives as arguments, one word each ({"--requirepass", "pw"} or
  // {"--user", "fleet", "on", ">pw", "~*", "+@all"}), kept for a restart.
  bool Start(std::vector<std::string> extra = {}) {
    if (!extra.empty()) {
      extra_ = std::move(extra);
    }
    const std::string port = std::to_string(port_);
    std::vector<std::string> args{
        Binary(), "--port",     port,           "--bind",    "127.0.0.1",
        "--save", "",           "--appendonly", "no",        "--dir",
        dir_,     "--loglevel", "warning",      "--logfile", dir_ + "/redis.log"};
    args.insert(args.end(), extra_.begin(), extra_.end());
    process_.emplace(std::move(args));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (process_->running() && std::chrono::steady_clock::now() < deadline) {
      if (Accepts()) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  void Kill() { process_.reset(); }

  std::uint16_t port() const { return port_; }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

 private:
  bool Accepts() const {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port_);
    const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;  // NOLINT
    ::close(fd);
    return ok;
  }

  std::string dir_;
  std::uint16_t port_ = 0;
  std::vector<std::string> extra_;
  std::optional<ChildProcess> process_;  // destroyed: killed and reaped
};

}  // namespace fusebox::testing

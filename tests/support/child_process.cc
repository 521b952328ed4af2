#include "support/child_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstring>

extern char** environ;  // NOLINT: POSIX

namespace fusebox::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The parent's environment without `unset` names and without the names `set` gives, then `set`.
std::vector<std::string> Environment(const ChildOptions& options) {
  auto named = [](const char* entry, const std::string& name_or_assignment) {
    const std::string_view name =
        std::string_view(name_or_assignment).substr(0, name_or_assignment.find('='));
    return std::strncmp(entry, name.data(), name.size()) == 0 && entry[name.size()] == '=';
  };
  std::vector<std::string> environment;
  for (char** e = environ; *e != nullptr; ++e) {
    bool keep = true;
    for (const std::string& name : options.unset_env) {
      keep = keep && !named(*e, name);
    }
    for (const std::string& assignment : options.env) {
      keep = keep && !named(*e, assignment);
    }
    if (keep) {
      environment.emplace_back(*e);
    }
  }
  environment.insert(environment.end(), options.env.begin(), options.env.end());
  return environment;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  pointers.reserve(strings.size() + 1);
  for (std::string& s : strings) {
    pointers.push_back(s.data());
  }
  pointers.push_back(nullptr);
  return pointers;
}

int MillisLeft(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

// Reads what one poll() finds on the open ones of `fds` into `into`; closes (and sets to -1) a
// descriptor at its end. False once the deadline passed with a descriptor still open.
bool ReadSome(std::array<int*, 2> fds, std::array<std::string*, 2> into,
              Clock::time_point deadline) {
  std::array<pollfd, 2> polled{};
  nfds_t n = 0;
  std::array<std::size_t, 2> which{};
  for (std::size_t i = 0; i < fds.size(); ++i) {
    if (*fds[i] >= 0) {
      polled[n] = pollfd{*fds[i], POLLIN, 0};
      which[n++] = i;
    }
  }
  if (n == 0) {
    return true;
  }
  const int left = MillisLeft(deadline);
  if (left == 0 || ::poll(polled.data(), n, left) <= 0) {
    return false;
  }
  for (nfds_t k = 0; k < n; ++k) {
    if (polled[k].revents == 0) {
      continue;
    }
    std::array<char, 4096> chunk{};
    const ssize_t got = ::read(polled[k].fd, chunk.data(), chunk.size());
    const std::size_t i = which[k];
    if (got > 0) {
      into[i]->append(chunk.data(), static_cast<std::size_t>(got));
    } else {
      ::close(*fds[i]);
      *fds[i] = -1;
    }
  }
  return true;
}

}  // namespace

ChildProcess::ChildProcess(std::vector<std::string> argv, ChildOptions options) {
  std::array<int, 2> out{-1, -1};
  std::array<int, 2> err{-1, -1};
  if (argv.empty() || ::pipe2(out.data(), O_CLOEXEC) != 0) {
    return;
  }
  if (options.stderr_to == StderrTo::kPipe && ::pipe2(err.data(), O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    return;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  switch (options.stderr_to) {
    case StderrTo::kPipe:
      posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
      break;
    case StderrTo::kStdout:
      posix_spawn_file_actions_adddup2(&actions, out[1], STDERR_FILENO);
      break;
    case StderrTo::kFile:
      posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, options.stderr_path.c_str(),
                                       O_WRONLY | O_CREAT | O_TRUNC, 0644);
      break;
  }
  std::vector<std::string> environment = Environment(options);
  std::vector<char*> args = Pointers(argv);
  std::vector<char*> envp = Pointers(environment);
  running_ = posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), envp.data()) == 0;
  if (!running_) {
    pid_ = -1;
  }
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  out_fd_ = out[0];
  if (err[1] >= 0) {
    ::close(err[1]);
    err_fd_ = err[0];
  }
}

ChildProcess::~ChildProcess() {
  Kill();
  for (int fd : {out_fd_, err_fd_}) {
    if (fd >= 0) {
      ::close(fd);
    }
  }
}

std::optional<std::string> ChildProcess::ReadLine(milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  for (;;) {
    const std::size_t nl = out_.find('\n');
    if (nl != std::string::npos) {
      std::string line = out_.substr(0, nl);
      out_.erase(0, nl + 1);
      if (!line.empty() && line.back() == '\r') {
        line.pop_back();
      }
      return line;
    }
    // stderr is read too, so that a child writing much there never blocks on a full pipe.
    if (out_fd_ < 0 || !ReadSome({&out_fd_, &err_fd_}, {&out_, &err_}, deadline)) {
      return std::nullopt;
    }
  }
}

std::optional<int> ChildProcess::WaitForExit(milliseconds timeout) {
  if (!running_) {
    return std::nullopt;
  }
  const Clock::time_point deadline = Clock::now() + timeout;
  while (out_fd_ >= 0 || err_fd_ >= 0) {
    if (!ReadSome({&out_fd_, &err_fd_}, {&out_, &err_}, deadline)) {
      return std::nullopt;
    }
  }
  // Both ends closed: the child is exiting (or closed them itself; then wait for it, in steps,
  // up to the deadline).
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      running_ = false;
      return status;
    }
    if (done < 0 || MillisLeft(deadline) == 0) {
      return std::nullopt;
    }
    ::poll(nullptr, 0, 10);
  }
}

std::optional<int> ChildProcess::Stop(int signal, milliseconds timeout) {
  if (!running_) {
    return std::nullopt;
  }
  ::kill(pid_, signal);
  if (std::optional<int> status = WaitForExit(timeout)) {
    return status;
  }
  Kill();
  return std::nullopt;
}

void ChildProcess::Kill() {
  if (running_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    running_ = false;
  }
}

RunResult Run(std::vector<std::string> argv, ChildOptions options, milliseconds timeout) {
  RunResult result;
  ChildProcess child(std::move(argv), std::move(options));
  if (!child.started()) {
    return result;
  }
  const std::optional<int> status = child.WaitForExit(timeout);
  if (status && WIFEXITED(*status)) {
    result.exit_code = WEXITSTATUS(*status);
  }
  result.out = child.out();
  result.err = child.err();
  return result;
}

int FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return 0;
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&  // NOLINT
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {   // NOLINT
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

}  // namespace fusebox::testing

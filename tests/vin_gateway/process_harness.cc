#include "vin_gateway/process_harness.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

namespace fusebox::gateway::testing {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string Lower(std::string s) {
  for (char& c : s) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return s;
}

}  // namespace

HttpResult Http(int port, const std::string& method, const std::string& target,
                const std::string& body, const std::string& raw_extra_headers, double timeout_s) {
  HttpResult result;
  const double start = Now();
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) {
    return result;
  }
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout_s);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    result.seconds = Now() - start;
    return result;
  }
  std::string request = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  request += raw_extra_headers;
  if (!body.empty() || method == "POST") {
    request +=
        "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  request += "Connection: close\r\n\r\n" + body;
  std::size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      break;
    }
    sent += static_cast<std::size_t>(n);
  }
  std::string raw;
  char buffer[16384];
  for (;;) {
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) {
      break;
    }
    raw.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  result.seconds = Now() - start;
  const std::size_t header_end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.1 ", 0) != 0 || header_end == std::string::npos) {
    return result;
  }
  result.status = std::atoi(raw.c_str() + 9);
  std::istringstream headers(raw.substr(0, header_end));
  std::string line;
  std::getline(headers, line);
  while (std::getline(headers, line)) {
    if (!line.empty() && line.back() == '\r') {
      line.pop_back();
    }
    const std::size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') {
        value.erase(0, 1);
      }
      result.headers[Lower(line.substr(0, colon))] = value;
    }
  }
  result.body = raw.substr(header_end + 4);
  return result;
}

ChildProcess::ChildProcess(std::vector<std::string> argv, std::vector<std::string> env,
                           const std::string& log_path)
    : log_path_(log_path),
      process_(std::move(argv), fusebox::testing::ChildOptions{std::move(env),
                                                               {"FUSEBOX_ADMIN_TOKEN"},
                                                               fusebox::testing::StderrTo::kFile,
                                                               log_path}) {
  // The first line: "listening on http(s)://HOST:PORT".
  const std::optional<std::string> line = process_.ReadLine(std::chrono::seconds(20));
  const std::string prefix = "listening on ";
  if (line && line->rfind(prefix, 0) == 0) {
    url_ = line->substr(prefix.size());
    port_ = std::atoi(url_.c_str() + url_.rfind(':') + 1);
  }
}

ChildProcess::~ChildProcess() {
  if (process_.running()) {
    Terminate(5);
  }
}

int ChildProcess::Terminate(double timeout_s) {
  const std::optional<int> status =
      process_.Stop(SIGTERM, std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::duration<double>(timeout_s)));
  return status && WIFEXITED(*status) ? WEXITSTATUS(*status) : -1;
}

std::string ChildProcess::Log() const {
  std::ifstream in(log_path_);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bool WaitUntil(const std::function<bool()>& condition, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(timeout_s));
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}

}  // namespace fusebox::gateway::testing

// A blocking loopback TCP client that writes exact bytes and reads exact bytes, for tests that
// play a hostile or sloppy HTTP client (smuggling, pipelining, half-closed connections, clients
// that never read): the tiny HTTP client of process_harness.h always sends well-formed requests
// one at a time and reads each answer whole.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <string>

#include <gtest/gtest.h>

namespace fusebox::gateway::testing {

class RawClient {
 public:
  // Connects to 127.0.0.1:`port`; reads give up after `timeout`. `receive_buffer` > 0 shrinks
  // the socket's receive buffer before connecting (a client that reads slowly, or never, fills
  // the server's send path sooner).
  explicit RawClient(std::uint16_t port,
                     std::chrono::milliseconds timeout = std::chrono::seconds(5),
                     int receive_buffer = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if (receive_buffer > 0) {
      ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
    }
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~RawClient() { Close(); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return connected_; }

  void Send(const std::string& bytes) {
    ASSERT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }
  // Sends what the socket takes before its send timeout; the count sent (-1 on an error).
  ssize_t TrySend(const std::string& bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  }
  // Half-closes the connection: the server reads end of file after the bytes sent so far.
  void ShutdownWrite() { ::shutdown(fd_, SHUT_WR); }
  void Close() {
    if (fd_ >= 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }

  // Everything until the server closes the connection (closed() true) or the read times out.
  std::string ReadToEnd() {
    std::string out;
    while (ReadSome(out)) {
    }
    return out;
  }

  // Bytes until `out` ends with `suffix` (or the connection ends or the read times out).
  std::string ReadUntil(const std::string& suffix) {
    std::string out;
    while (!(out.size() >= suffix.size() &&
             out.compare(out.size() - suffix.size(), suffix.size(), suffix) == 0) &&
           ReadSome(out, 1)) {
    }
    return out;
  }

  // True when the server closed the connection (a read saw end of file or a reset).
  bool closed() const { return closed_; }

 private:
  bool ReadSome(std::string& out, std::size_t at_most = 4096) {
    char chunk[4096];
    const ssize_t n = ::recv(fd_, chunk, std::min(at_most, sizeof(chunk)), 0);
    if (n > 0) {
      out.append(chunk, static_cast<std::size_t>(n));
      return true;
    }
    closed_ = n == 0 || (n < 0 && errno == ECONNRESET);
    return false;
  }

  int fd_ = -1;
  bool connected_ = false;
  bool closed_ = false;
};

// Status lines ("HTTP/1.1 200"), not mentions of the version in a body.
inline std::size_t Answers(const std::string& text) {
  std::size_t n = 0;
  for (std::size_t at = text.find("HTTP/1."); at != std::string::npos;
       at = text.find("HTTP/1.", at + 1)) {
    if (at + 10 < text.size() && text[at + 8] == ' ' &&
        std::isdigit(static_cast<unsigned char>(text[at + 9])) != 0) {
      ++n;
    }
  }
  return n;
}

// Occurrences of `what` in `text`.
inline std::size_t Count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

inline bool StartsWith(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

}  // namespace fusebox::gateway::testing

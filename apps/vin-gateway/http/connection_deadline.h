// vin-gateway/http/connection_deadline.h
//
// The client and write timeouts of one connection: a timer that cancels the read or write in
// progress on the socket when its deadline passes. Not the stream's own expiry, which closes the
// socket (then no 408 could be written). The timer is not re-armed per request: a deadline that
// moved later since the timer was armed re-arms it only when it fires, so a busy connection costs
// no timer operation per request.
//
// Thread safety: none; used by the connection's coroutine on its io_context, whose one thread
// also runs the timer's handler. Time: an Asio steady timer (real time).
//
// Example:
//   ConnectionDeadline deadline(socket);
//   deadline.Start(10s);
//   auto [ec, n] = co_await http::async_read_header(stream, buffer, parser, kTuple);
//   if (deadline.Stop()) { /* the read was cut off by the deadline: answer 408 */ }
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "fusebox/clock.h"

namespace fusebox::gateway {

class ConnectionDeadline {
 public:
  // The socket outlives this object.
  explicit ConnectionDeadline(boost::asio::ip::tcp::socket& socket);
  ~ConnectionDeadline();
  ConnectionDeadline(const ConnectionDeadline&) = delete;
  ConnectionDeadline& operator=(const ConnectionDeadline&) = delete;

  // The read or write that follows must end within `timeout` from now, or it is cancelled.
  void Start(fusebox::Duration timeout);
  // Nothing is under the deadline any more. Returns whether it passed (and cancelled the socket's
  // operation) since Start().
  bool Stop() noexcept;

 private:
  // Shared with the timer's handler, which may run after this object is gone.
  struct State {
    bool live = true;     // the owner exists (the handler may touch it)
    bool active = false;  // a read or a write is under the deadline
    bool expired = false;
    bool armed = false;
    std::uint64_t generation = 0;  // of the wait the timer is armed for
    std::chrono::steady_clock::time_point at{};
    std::chrono::steady_clock::time_point armed_at{};
  };

  void Arm();

  const std::shared_ptr<State> state_ = std::make_shared<State>();
  boost::asio::ip::tcp::socket& socket_;
  boost::asio::steady_timer timer_;
};

}  // namespace fusebox::gateway

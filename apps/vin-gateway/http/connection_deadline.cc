#include "http/connection_deadline.h"

#include <boost/system/error_code.hpp>

namespace fusebox::gateway {

ConnectionDeadline::ConnectionDeadline(boost::asio::ip::tcp::socket& socket)
    : socket_(socket), timer_(socket.get_executor()) {}

// The timer's own destructor cancels its wait; the handler then sees `live` false.
ConnectionDeadline::~ConnectionDeadline() { state_->live = false; }

void ConnectionDeadline::Start(fusebox::Duration timeout) {
  State& s = *state_;
  s.active = true;
  s.expired = false;
  s.at = std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout);
  if (!s.armed || s.at < s.armed_at) {
    Arm();
  }
}

bool ConnectionDeadline::Stop() noexcept {
  state_->active = false;
  return state_->expired;
}

void ConnectionDeadline::Arm() {
  State& s = *state_;
  s.armed = true;
  s.armed_at = s.at;
  const std::uint64_t generation = ++s.generation;
  timer_.expires_at(s.at);
  // `this` is touched only while state->live: the handler runs on the owner's thread, which sets
  // live to false before this object goes.
  timer_.async_wait([this, state = state_, generation](const boost::system::error_code& ec) {
    if (!state->live || state->generation != generation || ec) {
      return;  // the owner is gone, or the timer was armed again since
    }
    state->armed = false;
    if (!state->active) {
      return;  // nothing under a deadline now; the next Start arms the timer
    }
    if (std::chrono::steady_clock::now() < state->at) {
      Arm();  // the deadline moved later since this wait was armed
      return;
    }
    state->expired = true;
    boost::system::error_code ignored;
    socket_.cancel(ignored);
  });
}

}  // namespace fusebox::gateway

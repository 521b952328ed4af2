// apps/fusebox-sim/server_queue.h
//
// The servers of a `queue` upstream (docs/scenario-format.md, rule 4): at most `capacity` calls
// in service at once, each for its service time; the calls beyond wait in FIFO order for a free
// server. A waiting call whose budget runs out leaves the queue (its client is gone); a call that
// times out while served keeps its server until its service ends (the server does not know its
// client gave up). The capacity is the caller's to give at each step, so a capacity that changes
// between phases changes how many serve from then on, and the waiting calls stay in line.
//
// The queue only keeps the line and counts busy servers; the simulator schedules the ends of
// service and the deadlines, and tells the queue about them.
//
// Thread safety: none (one simulation owns it).
//
// Example:
//   ServerQueue queue;
//   if (queue.Join({.slot = 7, .deadline = t + timeout, .service = latency}, capacity)) {
//     // served now: its service ends at t + latency
//   }
//   queue.Finish();  // a service ended: a server is free
//   while (auto next = queue.StartNext(now, capacity)) { /* its service starts now */ }
#pragma once

#include <cstdint>
#include <deque>
#include <optional>

#include "scenario.h"

namespace fusebox::sim {

class ServerQueue {
 public:
  struct Call {
    std::uint32_t slot = 0;  // the simulator's handle of the call
    Micros deadline = 0;     // when its client gives up
    Micros service = 0;      // how long a server works on it
  };

  // A call arrives: it takes a free server at once (true) when fewer than `capacity` serve and
  // nobody waits; else it waits at the back of the line (false).
  bool Join(const Call& call, std::uint32_t capacity);

  // A service ended: its server is free (StartNext gives it the next call).
  void Finish();

  // The first waiting call, taken off the line and given a server, when fewer than `capacity`
  // serve; nullopt when every server is busy or nobody waits. A call whose deadline is at or
  // before `now` leaves the line instead of being served (its wait alone reached its budget).
  std::optional<Call> StartNext(Micros now, std::uint32_t capacity);

  // A waiting call's deadline came: it leaves the line. False if it was not waiting (it was being
  // served, or had left).
  bool Leave(std::uint32_t slot);

  std::uint32_t busy() const noexcept { return busy_; }
  std::size_t waiting() const noexcept { return line_.size(); }

 private:
  std::deque<Call> line_;  // FIFO: the front waited longest
  std::uint32_t busy_ = 0;
};

}  // namespace fusebox::sim

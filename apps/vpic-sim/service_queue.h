// apps/vpic-sim/service_queue.h
//
// The books of the `queue` fault: a service with `servers` servers, where a request either has a
// server or waits in arrival order for one, up to a bound. It keeps only who is served and who
// waits; the server (server.cc) ends a request's wait when its ticket gets a server, and gives
// every ticket back when its request ends, answered or abandoned.
//
//   Enter: nobody waits and a server is free -> kServing
//          else fewer than the bound wait    -> kWaiting (in line behind the others)
//          else                              -> kFull (no ticket)
//   Leave(ticket): a waiting ticket leaves the line; a served one frees its server, which goes
//          to the oldest waiting tickets (returned, oldest first: each is served from now on)
//
// The number of servers is the one given to the latest Enter: a service that grew takes its
// waiting requests as its served ones leave, one that shrank serves no new one until it is
// below its size. A request waits only while another is served, so a waiting ticket always gets
// a server or leaves.
//
// Thread safety: none; the server uses it from its one I/O thread. Time: none (the server times
// the service).
//
// Example:
//   ServiceQueue queue;
//   auto a = queue.Enter(/*servers=*/1, /*queue_limit=*/std::nullopt);  // kServing
//   auto b = queue.Enter(1, std::nullopt);                              // kWaiting
//   std::vector<ServiceQueue::Ticket> started = queue.Leave(a.ticket);   // {b.ticket}
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <vector>

namespace fusebox::vpic_sim {

class ServiceQueue {
 public:
  // 1, 2, 3... in arrival order; 0 is no ticket.
  using Ticket = std::uint64_t;
  enum class Place : std::uint8_t { kServing, kWaiting, kFull };
  struct Entry {
    Ticket ticket = 0;
    Place place = Place::kFull;
  };

  // One request arrives at a service of `servers` (>= 1) servers where at most `queue_limit`
  // requests may wait (nullopt: no bound).
  Entry Enter(int servers, std::optional<int> queue_limit);
  // The request of `ticket` ends, served or waiting (an unknown ticket or 0: nothing). Returns
  // the waiting tickets that got a server through it, oldest first.
  std::vector<Ticket> Leave(Ticket ticket);

  std::int64_t serving() const { return static_cast<std::int64_t>(serving_.size()); }
  std::int64_t waiting() const { return static_cast<std::int64_t>(waiting_.size()); }

 private:
  std::int64_t servers_ = 1;
  Ticket last_ = 0;
  std::set<Ticket> serving_;
  std::set<Ticket> waiting_;  // tickets grow with arrival: the set's order is the line's
};

}  // namespace fusebox::vpic_sim

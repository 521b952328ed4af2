// The calls in flight in CLOSED, for in-flight slow-call accounting (`inflight_slow_accounting`):
// a call still running past slow_call_duration counts toward the slow-call rate before it ends.
//
// Calls are kept in admission order; the breaker adds them under its lock with a reading of its
// monotonic clock taken there, so their start times are in order too and the calls running for
// at least `slow_after` form a prefix. `frontier_` is the end of that prefix: Advance() only ever
// moves it forward, and each call is counted slow once, when the frontier passes it. `slow_` is the
// number of entries before the frontier not yet Done(): a call that finishes leaves the count,
// whether or not it was passed. Finished entries at the front are dropped, so the list holds no
// more than the calls running now plus the finished ones admitted after the oldest running call.
//
// A call is identified by its ticket, its position in the sequence of every call ever added.
// Clear() (on every transition) retires all tickets at once: a Done() for a ticket from before
// it is ignored, which is how a late outcome of an older generation leaves the count alone.
//
// Not thread-safe: the breaker holds its lock around every member.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>

#include "fusebox/clock.h"

namespace fusebox::internal {

class InflightTracker {
 public:
  // Records a call admitted at `start` (no earlier than any call added before); returns its
  // ticket.
  std::uint64_t Add(TimePoint start);

  // The call with `ticket` finished. Ignores a ticket cleared since.
  void Done(std::uint64_t ticket) noexcept;

  // Counts, once each, the calls that have now been running for at least `slow_after`.
  void Advance(TimePoint now, Duration slow_after) noexcept;

  // Calls counted by Advance() and still running.
  std::uint64_t slow() const noexcept { return slow_; }

  // Forgets every call (their tickets become stale).
  void Clear() noexcept;

 private:
  struct Entry {
    TimePoint start;
    bool done;
  };
  std::deque<Entry> entries_;
  std::uint64_t base_ = 0;  // ticket of entries_.front()
  std::size_t frontier_ = 0;
  std::uint64_t slow_ = 0;
};

}  // namespace fusebox::internal

// vin-gateway/service/transition_log.h
//
// The last few state changes of one breaker, with wall-clock times, for people: `/status` shows
// them as `recent_transitions` and the web page's status strip lists them ("12:01:03 CLOSED ->
// OPEN, consecutive_failures"). The breaker's own counters say how many transitions there were;
// this says which and when, so an operator (or a user wondering why decodes are paused) can see
// at a glance whether the breaker is flapping.
//
// Bounded: the oldest entry is dropped once `capacity` are held.
//
// Thread safety: all members may be called concurrently (breaker listeners run on whichever thread
// made the transition; `/status` reads from any I/O thread). Time: none of its own; the caller
// passes the wall-clock time of each transition.
//
// Example:
//   TransitionLog log(10);
//   breaker.AddListener([&](const fusebox::Event& e) {
//     if (auto* t = std::get_if<fusebox::TransitionEvent>(&e.detail)) {
//       log.Record(*t, wall_clock.Now());
//     }
//   });
//   for (const TransitionRecord& r : log.Recent()) { ... }   // oldest first
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "core/decode.h"
#include "fusebox/events.h"
#include "fusebox/thread_annotations.h"

namespace fusebox::gateway {

struct TransitionRecord {
  fusebox::State from = fusebox::State::kClosed;
  fusebox::State to = fusebox::State::kClosed;
  fusebox::TransitionCause cause = fusebox::TransitionCause::kOperator;
  WallTime at{};
};

class TransitionLog {
 public:
  // How many transitions `/status` shows by default.
  static constexpr std::size_t kDefaultCapacity = 10;

  // capacity: at least 1 (0 is taken as 1).
  explicit TransitionLog(std::size_t capacity = kDefaultCapacity);

  void Record(const fusebox::TransitionEvent& transition, WallTime at);

  // Oldest first, at most capacity() entries.
  std::vector<TransitionRecord> Recent() const;

  // Transitions recorded since construction (dropped ones included).
  std::uint64_t total() const;
  std::size_t capacity() const noexcept { return capacity_; }

 private:
  const std::size_t capacity_;
  mutable fusebox::Mutex mu_;
  std::deque<TransitionRecord> records_ FUSEBOX_GUARDED_BY(mu_);
  std::uint64_t total_ FUSEBOX_GUARDED_BY(mu_) = 0;
};

}  // namespace fusebox::gateway

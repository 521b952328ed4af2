// internal/event_dispatch.h (not installed: who hears of a breaker's events, and how)
//
// A breaker's events reach three kinds of subscriber, after its lock is released:
//   - transition observers (CircuitBreaker::AddTransitionObserver): every transition;
//   - the fleet coordinator (CircuitBreaker::SetCoordination): every transition;
//   - listeners (CircuitBreaker::AddListener): every event.
// In that order per batch, each in the order it subscribed. A subscriber that throws misses
// nothing else and breaks no call: its exception is dropped.
//
// Thread safety: Subscribers is a copy-on-write snapshot (the breaker copies the three pointers
// under its listeners lock, then delivers without any lock). Time: none.
//
// Example:
//   Subscribers to;
//   { std::lock_guard lock(listeners_mu); to = subscribers; }
//   Deliver(batch, to);
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "fusebox/circuit_breaker.h"
#include "fusebox/events.h"
#include "internal/event_batch.h"

namespace fusebox::internal {

struct Subscribers {
  using ListenerList = std::vector<std::pair<ListenerId, Listener>>;
  using ObserverList = std::vector<std::pair<ListenerId, CircuitBreaker::TransitionObserver>>;

  std::shared_ptr<const ListenerList> listeners;
  std::shared_ptr<const CircuitBreaker::Coordination> coordination;
  std::shared_ptr<const ObserverList> observers;
};

void Deliver(const EventBatch& batch, const Subscribers& to) noexcept;

}  // namespace fusebox::internal

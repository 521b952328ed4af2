// Events gathered under the breaker's lock and delivered after it is released.
//
// Listeners must never run under the lock (they may call back into the breaker, and they may be
// slow), so a locked operation pushes its events here and dispatches them once it has unlocked.
// A single operation produces at most a few (e.g. an overdue probe's timeout, the reopen, the
// cooldown elapsing, and the call's own rejection), so a fixed capacity on the stack suffices and
// no locked path allocates. Why the storage is raw: most operations produce no event (or nobody
// listens), and default-constructing eight Events on every locked call would cost more than the
// call; Event is trivially destructible, so nothing has to be destroyed either.
#pragma once

#include <array>
#include <cstddef>
#include <new>
#include <type_traits>

#include "fusebox/events.h"

namespace fusebox::internal {

struct EventBatch {
  static constexpr std::size_t kCapacity = 8;
  static_assert(std::is_trivially_destructible_v<Event>);

  alignas(Event) std::array<std::byte, kCapacity * sizeof(Event)> storage;
  std::size_t size = 0;

  // Appends `e`; beyond kCapacity events are dropped (no operation produces that many).
  void Push(const Event& e) noexcept {
    if (size < kCapacity) {
      new (storage.data() + size * sizeof(Event)) Event(e);
      ++size;
    }
  }
  // The i-th pushed event, i < size.
  const Event& operator[](std::size_t i) const noexcept {
    return *std::launder(reinterpret_cast<const Event*>(storage.data() + i * sizeof(Event)));
  }
};

}  // namespace fusebox::internal

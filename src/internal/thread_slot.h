// Per-thread exclusive slots for sharded counters.
//
// Every thread that touches a breaker's hot path gets a small integer slot, owned by that thread
// alone while it lives. A counter shard indexed by an exclusive slot has exactly one writer, so it
// is bumped with a relaxed load and store instead of a locked read-modify-write: the cost of a
// plain increment, and no cache line shared between threads. When more than kExclusiveSlots
// threads are alive, the extra ones share slot kSharedSlot and use fetch_add there.
//
// A slot is returned to the pool when its thread exits and may be handed to a new thread. The
// pool's mutex orders the old owner's last writes before the new owner's first ones.
#pragma once

#include <cstddef>

namespace fusebox::internal {

inline constexpr std::size_t kExclusiveSlots = 64;
inline constexpr std::size_t kSharedSlot = kExclusiveSlots;
inline constexpr std::size_t kSlotCount = kExclusiveSlots + 1;

// This thread's slot: [0, kExclusiveSlots) exclusively, or kSharedSlot. Assigned on first use.
std::size_t ThisThreadSlot() noexcept;

}  // namespace fusebox::internal

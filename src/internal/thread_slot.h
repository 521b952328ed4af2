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

inline constexpr std::size_t kUnassignedSlot = ~std::size_t{0};

// The calling thread's slot, kUnassignedSlot until its first use. `constinit` tells the compiler
// there is no dynamic initializer, so other translation units read it directly instead of
// through a TLS wrapper call; initial-exec keeps the read a single %fs-relative load.
extern thread_local constinit std::size_t tls_thread_slot
    __attribute__((tls_model("initial-exec")));

// Takes a slot from the pool for this thread (and arranges its return at thread exit).
std::size_t AssignThreadSlot() noexcept;

// This thread's slot: [0, kExclusiveSlots) exclusively, or kSharedSlot. Assigned on first use.
inline std::size_t ThisThreadSlot() noexcept {
  const std::size_t slot = tls_thread_slot;
  if (slot != kUnassignedSlot) [[likely]] {
    return slot;
  }
  return AssignThreadSlot();
}

}  // namespace fusebox::internal

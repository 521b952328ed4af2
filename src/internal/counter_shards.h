// Per-thread sharded counters: statistics bumped on every call without a locked instruction.
//
// A breaker's totals (allowed, rejected, succeeded, ...) are written on every call by every
// thread and read only by Snapshot(). Each thread bumps its own cache-line-aligned shard, picked
// by internal::ThisThreadSlot(), so two threads never write the same line. Why a plain load and
// store is enough: a slot below kExclusiveSlots belongs to one live thread at a time, so its
// shard has a single writer and no increment can be lost; threads beyond that share kSharedSlot
// and use fetch_add there. Readers sum all shards with relaxed loads: each value is a total some
// time between the start and the end of the read, and totals never go down.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "internal/thread_slot.h"

namespace fusebox::internal {

// kCount counters, indexed [0, kCount), each a sum over per-thread shards.
template <std::size_t kCount>
class ShardedCounters {
 public:
  // Adds one to counter `c` on the calling thread's shard.
  void Bump(std::size_t c) noexcept {
    const std::size_t slot = ThisThreadSlot();
    std::atomic<std::uint64_t>& v = shards_[slot].values[c];
    if (slot < kExclusiveSlots) [[likely]] {
      // Single writer (this thread owns the slot): no locked RMW needed.
      v.store(v.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    } else {
      v.fetch_add(1, std::memory_order_relaxed);
    }
  }

  // Counter `c` summed over every shard.
  std::uint64_t Sum(std::size_t c) const noexcept {
    std::uint64_t total = 0;
    for (const Shard& s : shards_) {
      total += s.values[c].load(std::memory_order_relaxed);
    }
    return total;
  }

 private:
  // One thread's counters; cache-line aligned so two threads never share a line.
  struct alignas(64) Shard {
    std::array<std::atomic<std::uint64_t>, kCount> values{};
  };
  std::array<Shard, kSlotCount> shards_{};
};

}  // namespace fusebox::internal

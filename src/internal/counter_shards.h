// Per-thread sharded counters: statistics bumped on every call without a locked instruction.
//
// A breaker's totals (allowed, rejected, succeeded, ...) are written on every call by every
// thread and read only by Snapshot(). Each thread bumps its own copy, picked by
// internal::ThisThreadSlot(), so two threads never write the same line. Why a plain load and
// store is enough: a slot below kExclusiveSlots belongs to one live thread at a time, so its copy
// has a single writer and no increment can be lost; threads beyond that share kSharedSlot and use
// fetch_add there. Readers sum all slots with relaxed loads: each value is a total some time
// between the start and the end of the read, and totals never go down.
//
// Where the copies live, and why: not in the owner. Giving every breaker one cache line per
// possible thread slot (65) cost 8 KB a breaker, most of it never touched. Instead each owner
// gets a small id, and each thread slot has a table of blocks indexed by id: a breaker costs
// kCount * 8 bytes in the table of each slot that used it, and a thread's blocks for different
// breakers are packed together (a thread touching one breaker touches one line of the table, as
// before). The tables are allocated a chunk of kChunkBlocks blocks at a time, by the thread that
// first bumps an id in that chunk: the one heap allocation a call can make, once per thread per
// kChunkBlocks breakers. An id is zeroed in every table when its owner is destroyed and is then
// reused. Past kCapacity live owners, the newest ones count in a block of their own with
// fetch_add.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "fusebox/thread_annotations.h"
#include "internal/thread_slot.h"

namespace fusebox::internal {

// kCount counters, indexed [0, kCount), each a sum over per-thread copies.
template <std::size_t kCount>
class ShardedCounters {
 public:
  ShardedCounters() : word_(Tag(Ids().Take())) {
    if (Id() >= kCapacity) {
      word_ = reinterpret_cast<std::uintptr_t>(new Block());
    }
  }
  ~ShardedCounters() {
    if (Overflowed()) {
      delete OverflowBlock();
    } else {
      Zero(Id());
      Ids().Give(Id());
    }
  }
  ShardedCounters(const ShardedCounters&) = delete;
  ShardedCounters& operator=(const ShardedCounters&) = delete;

  // Adds one to counter `c` on the calling thread's copy.
  // Always inline: the breaker's lock-free paths bump a counter each, and a call out costs them
  // a tenth of their time.
  [[gnu::always_inline]] void Bump(std::size_t c) noexcept {
    if (Overflowed()) [[unlikely]] {
      OverflowBlock()->values[c].fetch_add(1, std::memory_order_relaxed);
      return;
    }
    const std::size_t id = Id();
    const std::size_t slot = ThisThreadSlot();
    Chunk* chunk = ChunkOf(slot, id / kChunkBlocks);
    if (chunk == nullptr) [[unlikely]] {
      chunk = MakeChunk(slot, id / kChunkBlocks);
    }
    std::atomic<std::uint64_t>& v = chunk->blocks[id % kChunkBlocks].values[c];
    if (slot < kExclusiveSlots) [[likely]] {
      // Single writer (this thread owns the slot): no locked RMW needed.
      v.store(v.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    } else {
      v.fetch_add(1, std::memory_order_relaxed);
    }
  }

  // Counter `c` summed over every thread's copy.
  std::uint64_t Sum(std::size_t c) const noexcept {
    if (Overflowed()) [[unlikely]] {
      return OverflowBlock()->values[c].load(std::memory_order_relaxed);
    }
    std::uint64_t total = 0;
    for (std::size_t slot = 0; slot < kSlotCount; ++slot) {
      if (const Chunk* chunk = ChunkOf(slot, Id() / kChunkBlocks)) {
        total += chunk->blocks[Id() % kChunkBlocks].values[c].load(std::memory_order_relaxed);
      }
    }
    return total;
  }

  // Live owners counted in the tables; owners beyond it count in a block of their own.
  static constexpr std::size_t kChunkBlocks = 256;
  static constexpr std::size_t kChunks = 16384;
  static constexpr std::size_t kCapacity = kChunkBlocks * kChunks;  // 4,194,304

 private:
  struct Block {
    std::array<std::atomic<std::uint64_t>, kCount> values{};
  };
  struct Chunk {
    std::array<Block, kChunkBlocks> blocks{};
  };
  // One slot's table: a chunk pointer per kChunkBlocks ids (128 KB, allocated on the slot's
  // first bump).
  struct Directory {
    std::array<std::atomic<Chunk*>, kChunks> chunks{};
  };

  // The ids in use, and those free for reuse. Only creation and destruction touch it.
  class IdPool {
   public:
    std::uint32_t Take() {
      Locked lock(mu_);
      if (!free_.empty()) {
        const std::uint32_t id = free_.back();
        free_.pop_back();
        return id;
      }
      // Past kCapacity the id only says "overflow"; it is never given back.
      return next_ < kCapacity ? next_++ : static_cast<std::uint32_t>(kCapacity);
    }
    void Give(std::uint32_t id) {
      Locked lock(mu_);
      free_.push_back(id);
    }

   private:
    Mutex mu_;
    std::uint32_t next_ FUSEBOX_GUARDED_BY(mu_) = 0;
    std::vector<std::uint32_t> free_ FUSEBOX_GUARDED_BY(mu_);
  };

  static IdPool& Ids() {
    static auto* pool = new IdPool();  // never destroyed: owners may outlive static destruction
    return *pool;
  }

  static Chunk* ChunkOf(std::size_t slot, std::size_t chunk) noexcept {
    const Directory* dir = slot_directories[slot].load(std::memory_order_acquire);
    return dir == nullptr ? nullptr : dir->chunks[chunk].load(std::memory_order_acquire);
  }

  // Out of line: a thread's first bump of an id in this chunk. Compare-and-swap installs, because
  // the threads sharing kSharedSlot may race for them; the tables are never freed.
  [[gnu::noinline]] static Chunk* MakeChunk(std::size_t slot, std::size_t chunk) {
    Directory* dir = slot_directories[slot].load(std::memory_order_acquire);
    if (dir == nullptr) {
      auto fresh = std::make_unique<Directory>();
      if (slot_directories[slot].compare_exchange_strong(dir, fresh.get(),
                                                         std::memory_order_acq_rel)) {
        dir = fresh.release();
      }
    }
    Chunk* found = dir->chunks[chunk].load(std::memory_order_acquire);
    if (found == nullptr) {
      auto fresh = std::make_unique<Chunk>();
      if (dir->chunks[chunk].compare_exchange_strong(found, fresh.get(),
                                                     std::memory_order_acq_rel)) {
        found = fresh.release();
      }
    }
    return found;
  }

  // Clears an id's block in every table before the id is reused. Its owner is being destroyed,
  // so nobody bumps it any more (the owner's users are done with it before its destructor).
  static void Zero(std::uint32_t id) noexcept {
    for (std::size_t slot = 0; slot < kSlotCount; ++slot) {
      if (Chunk* chunk = ChunkOf(slot, id / kChunkBlocks)) {
        for (auto& v : chunk->blocks[id % kChunkBlocks].values) {
          v.store(0, std::memory_order_relaxed);
        }
      }
    }
  }

  // Constant-initialized and trivially destructible: usable before and after static
  // construction and destruction.
  static constinit inline std::array<std::atomic<Directory*>, kSlotCount> slot_directories{};

  // One word, so that it fits in its owner's hot line: the id tagged in the low bit (id << 1 | 1),
  // or, for an owner past kCapacity, the address of a block of its own (allocations are aligned,
  // so the bit is clear).
  static std::uintptr_t Tag(std::uint32_t id) noexcept {
    return (static_cast<std::uintptr_t>(id) << 1U) | 1U;
  }
  bool Overflowed() const noexcept { return (word_ & 1U) == 0; }
  std::uint32_t Id() const noexcept { return static_cast<std::uint32_t>(word_ >> 1U); }
  Block* OverflowBlock() const noexcept {
    return reinterpret_cast<Block*>(word_);  // NOLINT(performance-no-int-to-ptr): see word_
  }

  std::uintptr_t word_;
};

}  // namespace fusebox::internal

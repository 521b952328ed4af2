#include "internal/thread_slot.h"

#include <bitset>
#include <mutex>

namespace fusebox::internal {
namespace {

constexpr std::size_t kUnassigned = ~std::size_t{0};

struct SlotPool {
  std::mutex mu;
  std::bitset<kExclusiveSlots> taken;  // Guarded by mu.
};

SlotPool& Pool() noexcept {
  static auto* pool = new SlotPool();  // never destroyed: threads may exit after main returns
  return *pool;
}

std::size_t Take() noexcept {
  SlotPool& pool = Pool();
  std::lock_guard lock(pool.mu);
  for (std::size_t i = 0; i < kExclusiveSlots; ++i) {
    if (!pool.taken.test(i)) {
      pool.taken.set(i);
      return i;
    }
  }
  return kSharedSlot;
}

void Give(std::size_t slot) noexcept {
  if (slot >= kExclusiveSlots) {
    return;
  }
  SlotPool& pool = Pool();
  std::lock_guard lock(pool.mu);
  pool.taken.reset(slot);
}

// Constant-initialized, so reading it needs no TLS guard on the hot path.
thread_local std::size_t tls_slot = kUnassigned;

struct SlotOwner {
  ~SlotOwner() {
    Give(tls_slot);
    tls_slot = kSharedSlot;  // a destructor running after this one must not take a slot again
  }
};

std::size_t AssignSlot() noexcept {
  thread_local SlotOwner owner;  // releases the slot when the thread exits
  (void)owner;
  tls_slot = Take();
  return tls_slot;
}

}  // namespace

std::size_t ThisThreadSlot() noexcept {
  const std::size_t slot = tls_slot;
  if (slot != kUnassigned) [[likely]] {
    return slot;
  }
  return AssignSlot();
}

}  // namespace fusebox::internal

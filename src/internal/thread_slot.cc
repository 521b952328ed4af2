#include "internal/thread_slot.h"

#include <bitset>
#include <mutex>

#include "fusebox/thread_annotations.h"

namespace fusebox::internal {
namespace {

struct SlotPool {
  Mutex mu;
  std::bitset<kExclusiveSlots> taken FUSEBOX_GUARDED_BY(mu);
};

SlotPool& Pool() noexcept {
  static auto* pool = new SlotPool();  // never destroyed: threads may exit after main returns
  return *pool;
}

std::size_t Take() noexcept {
  SlotPool& pool = Pool();
  Locked lock(pool.mu);
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
  Locked lock(pool.mu);
  pool.taken.reset(slot);
}

struct SlotOwner {
  ~SlotOwner() {
    Give(tls_thread_slot);
    tls_thread_slot = kSharedSlot;  // a destructor running after this must not take a slot again
  }
};

}  // namespace

thread_local constinit std::size_t tls_thread_slot = kUnassignedSlot;

std::size_t AssignThreadSlot() noexcept {
  thread_local SlotOwner owner;  // returns the slot when the thread exits
  (void)owner;
  tls_thread_slot = Take();
  return tls_thread_slot;
}

}  // namespace fusebox::internal

// A test-and-test-and-set spin lock with a yield fallback, for critical sections that are a few
// dozen instructions long and never call out (the breaker's `mu`).
//
// Why not std::mutex: an uncontended lock/unlock here costs one atomic exchange (unlock is a
// plain release store), where a futex-based mutex adds its own read-modify-write on unlock.
// Why it is correct: the exchange(true, acquire) that returns false is the only way in, so one
// thread at a time holds the lock; the release store in unlock() orders everything the holder
// wrote before the next holder's acquiring exchange. Waiters spin on a relaxed load (no cache
// line ping-pong while the lock is held) and yield after 64 spins, so a holder preempted on an
// oversubscribed machine gets its CPU back.
#pragma once

#include <atomic>
#include <thread>

#include "fusebox/thread_annotations.h"

namespace fusebox::internal {

class FUSEBOX_CAPABILITY("mutex") SpinLock {
 public:
  void lock() noexcept FUSEBOX_ACQUIRE() {
    for (int spins = 0;; ++spins) {
      if (!locked_.exchange(true, std::memory_order_acquire)) {
        return;
      }
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins > 64) {
          std::this_thread::yield();
        }
      }
    }
  }
  void unlock() noexcept FUSEBOX_RELEASE() { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace fusebox::internal

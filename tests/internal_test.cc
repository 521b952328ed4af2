// The breaker's internal building blocks (src/internal/), each on its own. The breaker's tests
// cover them through the state machine; these pin down their own contracts.
#include <gtest/gtest.h>
#include <array>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "fusebox/events.h"
#include "internal/counter_shards.h"
#include "internal/event_batch.h"
#include "internal/inflight_tracker.h"
#include "internal/spin_lock.h"

namespace fusebox::internal {
namespace {

using std::chrono::milliseconds;

TimePoint At(int ms) { return TimePoint(milliseconds(ms)); }

TEST(InflightTrackerTest, CountsACallSlowOnceWhenItPassesTheThreshold) {
  InflightTracker tracker;
  (void)tracker.Add(At(0));
  tracker.Advance(At(99), milliseconds(100));
  EXPECT_EQ(tracker.slow(), 0U);
  tracker.Advance(At(100), milliseconds(100));
  EXPECT_EQ(tracker.slow(), 1U);
  tracker.Advance(At(500), milliseconds(100));
  EXPECT_EQ(tracker.slow(), 1U);  // counted once, not once per Advance
}

TEST(InflightTrackerTest, AFinishedCallLeavesTheSlowCount) {
  InflightTracker tracker;
  const std::uint64_t first = tracker.Add(At(0));
  const std::uint64_t second = tracker.Add(At(10));
  tracker.Advance(At(200), milliseconds(100));
  EXPECT_EQ(tracker.slow(), 2U);
  tracker.Done(second);  // not at the front: stays listed, leaves the count
  EXPECT_EQ(tracker.slow(), 1U);
  tracker.Done(first);
  EXPECT_EQ(tracker.slow(), 0U);
}

TEST(InflightTrackerTest, ACallThatFinishedInTimeIsNeverCounted) {
  InflightTracker tracker;
  const std::uint64_t fast = tracker.Add(At(0));
  (void)tracker.Add(At(0));
  tracker.Done(fast);
  tracker.Advance(At(100), milliseconds(100));
  EXPECT_EQ(tracker.slow(), 1U);  // only the one still running
}

TEST(InflightTrackerTest, ClearRetiresEveryTicket) {
  InflightTracker tracker;
  const std::uint64_t old_ticket = tracker.Add(At(0));
  tracker.Advance(At(100), milliseconds(100));
  tracker.Clear();
  EXPECT_EQ(tracker.slow(), 0U);
  const std::uint64_t fresh = tracker.Add(At(100));
  EXPECT_NE(fresh, old_ticket);
  tracker.Advance(At(200), milliseconds(100));
  tracker.Done(old_ticket);  // a late outcome of the cleared generation changes nothing
  EXPECT_EQ(tracker.slow(), 1U);
  tracker.Done(fresh);
  EXPECT_EQ(tracker.slow(), 0U);
}

TEST(EventBatchTest, KeepsEventsInOrderAndDropsThoseBeyondItsCapacity) {
  EventBatch batch;
  for (std::uint64_t i = 1; i <= EventBatch::kCapacity + 2; ++i) {
    batch.Push(Event{i, "b", {}});
  }
  ASSERT_EQ(batch.size, EventBatch::kCapacity);
  for (std::size_t i = 0; i < batch.size; ++i) {
    EXPECT_EQ(batch[i].sequence, i + 1);
  }
}

TEST(ShardedCountersTest, SumsEveryThreadsIncrements) {
  ShardedCounters<2> counters;
  constexpr int kThreads = 4;
  constexpr int kBumps = 1000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&counters] {
      for (int i = 0; i < kBumps; ++i) {
        counters.Bump(1);
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  counters.Bump(0);
  EXPECT_EQ(counters.Sum(0), 1U);
  EXPECT_EQ(counters.Sum(1), static_cast<std::uint64_t>(kThreads) * kBumps);
}

// Owners live in per-slot tables by id (counter_shards.h): a destroyed owner's id is reused, and
// the new owner must not inherit its counts.
TEST(ShardedCountersTest, AReusedIdStartsFromZero) {
  for (int round = 0; round < 3; ++round) {
    ShardedCounters<3> counters;
    EXPECT_EQ(counters.Sum(0), 0U);
    EXPECT_EQ(counters.Sum(2), 0U);
    counters.Bump(0);
    counters.Bump(2);
    counters.Bump(2);
    EXPECT_EQ(counters.Sum(0), 1U);
    EXPECT_EQ(counters.Sum(2), 2U);
  }
}

// Enough owners to span several chunks of a table, each bumped a different number of times.
TEST(ShardedCountersTest, KeepsManyOwnersApart) {
  constexpr std::size_t kOwners = 3 * ShardedCounters<2>::kChunkBlocks + 5;
  std::vector<std::unique_ptr<ShardedCounters<2>>> owners;
  for (std::size_t i = 0; i < kOwners; ++i) {
    owners.push_back(std::make_unique<ShardedCounters<2>>());
  }
  std::thread other([&owners] {
    for (std::size_t i = 0; i < owners.size(); ++i) {
      for (std::size_t n = 0; n < i % 5; ++n) {
        owners[i]->Bump(1);
      }
    }
  });
  for (std::size_t i = 0; i < owners.size(); ++i) {
    for (std::size_t n = 0; n < i % 7; ++n) {
      owners[i]->Bump(1);
    }
  }
  other.join();
  for (std::size_t i = 0; i < owners.size(); ++i) {
    EXPECT_EQ(owners[i]->Sum(0), 0U);
    EXPECT_EQ(owners[i]->Sum(1), i % 7 + i % 5) << i;
  }
}

// Past the tables' capacity an owner counts in a block of its own (its one word then holds the
// block's address instead of a tagged id): the last owners below are past it whatever other
// owners are alive, and must count like the others, from two threads.
TEST(ShardedCountersTest, OwnersPastTheCapacityCountApart) {
  using Counters = ShardedCounters<2>;
  constexpr std::size_t kOwners = Counters::kCapacity + 2;
  auto owners = std::make_unique<Counters[]>(kOwners);  // NOLINT(modernize-avoid-c-arrays)
  const std::array<std::size_t, 4> checked = {0, Counters::kCapacity / 2, kOwners - 2, kOwners - 1};
  std::thread other([&] {
    for (std::size_t i : checked) {
      owners[i].Bump(1);
    }
  });
  for (std::size_t i : checked) {
    for (std::size_t n = 0; n < i % 3 + 1; ++n) {
      owners[i].Bump(1);
    }
    owners[i].Bump(0);
  }
  other.join();
  for (std::size_t i : checked) {
    EXPECT_EQ(owners[i].Sum(0), 1U) << i;
    EXPECT_EQ(owners[i].Sum(1), i % 3 + 2) << i;
  }
}

TEST(SpinLockTest, ExcludesConcurrentHolders) {
  SpinLock lock;
  std::uint64_t guarded = 0;  // Guarded by lock; a plain increment would lose updates otherwise.
  constexpr int kThreads = 4;
  constexpr int kRounds = 2'000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kRounds; ++i) {
        lock.lock();
        ++guarded;
        lock.unlock();
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  EXPECT_EQ(guarded, static_cast<std::uint64_t>(kThreads) * kRounds);
}

}  // namespace
}  // namespace fusebox::internal

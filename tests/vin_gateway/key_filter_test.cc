// The SQLite cache's key filter: never a false negative under any sequence of adds and removes
// (checked against an exact multiset), few false positives at its capacity, and removal that
// really forgets.
#include "service/key_filter.h"

#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

using fusebox::gateway::KeyFilter;

std::string Key(std::uint64_t n) { return "VIN" + std::to_string(n); }

TEST(KeyFilterTest, AnEmptyFilterContainsNothing) {
  const KeyFilter filter(1000);
  for (std::uint64_t n = 0; n < 1000; ++n) {
    EXPECT_FALSE(filter.MayContain(Key(n)));
  }
}

// Random adds and removes of keys from a small pool (so keys repeat and cells are shared), with
// an exact multiset beside: every key the multiset holds must be "maybe present".
TEST(KeyFilterTest, NeverForgetsAKeyThatWasAddedAndNotRemoved) {
  KeyFilter filter(500);
  std::multiset<std::string> model;
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<std::uint64_t> pick(0, 2000);
  for (int step = 0; step < 200'000; ++step) {
    const std::string key = Key(pick(rng));
    if (rng() % 2 == 0 || model.find(key) == model.end()) {
      filter.Add(key);
      model.insert(key);
    } else {
      filter.Remove(key);
      model.erase(model.find(key));
    }
    if (step % 1000 == 0) {
      for (const std::string& held : model) {
        ASSERT_TRUE(filter.MayContain(held)) << held << " at step " << step;
      }
    }
  }
  for (const std::string& held : model) {
    EXPECT_TRUE(filter.MayContain(held)) << held;
  }
}

TEST(KeyFilterTest, FalsePositivesAreFewAtCapacity) {
  constexpr std::uint64_t kCapacity = 100'000;
  KeyFilter filter(kCapacity);
  for (std::uint64_t n = 0; n < kCapacity; ++n) {
    filter.Add(Key(n));
  }
  std::uint64_t false_positives = 0;
  constexpr std::uint64_t kProbes = 100'000;
  for (std::uint64_t n = kCapacity; n < kCapacity + kProbes; ++n) {
    false_positives += filter.MayContain(Key(n)) ? 1U : 0U;
  }
  // 8 cells and 3 hashes per key: about 3% in theory.
  EXPECT_LT(false_positives, kProbes * 5 / 100) << false_positives;
  EXPECT_GT(false_positives, 0U);  // a filter that answers "no" to everything would pass above
}

// Under churn (a cache that evicts) removal keeps the filter useful: after every key was added and
// removed again, nothing is "maybe present", as in a fresh filter.
TEST(KeyFilterTest, RemovingEveryKeyEmptiesTheFilter) {
  KeyFilter filter(1000);
  for (std::uint64_t n = 0; n < 5000; ++n) {
    filter.Add(Key(n));
    if (n >= 1000) {
      filter.Remove(Key(n - 1000));  // a window of 1,000 keys, like an LRU of that size
    }
  }
  for (std::uint64_t n = 4000; n < 5000; ++n) {
    filter.Remove(Key(n));
  }
  for (std::uint64_t n = 0; n < 5000; ++n) {
    EXPECT_FALSE(filter.MayContain(Key(n))) << n;
  }
}

// A counter that reached its ceiling no longer counts: it stays set, so the key stays "maybe
// present" even after as many removals (a false positive, never a false negative).
TEST(KeyFilterTest, ASaturatedCellStaysSet) {
  KeyFilter filter(10);
  for (int i = 0; i < 20; ++i) {
    filter.Add("same");
  }
  for (int i = 0; i < 19; ++i) {
    filter.Remove("same");
  }
  EXPECT_TRUE(filter.MayContain("same"));
  filter.Clear();
  EXPECT_FALSE(filter.MayContain("same"));
}

TEST(KeyFilterTest, SizeFollowsTheCapacityWithinItsBounds) {
  EXPECT_EQ(KeyFilter(0).cells(), KeyFilter::kCellsPerKey);
  EXPECT_EQ(KeyFilter(1'000'000).bytes(), 4'000'000U);
  EXPECT_EQ(KeyFilter(std::uint64_t{1} << 40).cells(),
            KeyFilter::kMaxCapacity * KeyFilter::kCellsPerKey);
}

}  // namespace

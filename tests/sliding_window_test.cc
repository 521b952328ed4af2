#include "internal/sliding_window.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace fusebox {
namespace {

TEST(CountWindowTest, KeepsTotalsOfTheLastSizeSamples) {
  CountWindow w(3);
  w.Add({.failure = true, .slow = false});
  w.Add({.failure = false, .slow = true});
  w.Add({.failure = true, .slow = true});
  EXPECT_EQ(w.totals(), (WindowTotals{3, 2, 2}));
  w.Add({});  // evicts the first (failure)
  EXPECT_EQ(w.totals(), (WindowTotals{3, 1, 2}));
  w.Add({});  // evicts the slow success
  EXPECT_EQ(w.totals(), (WindowTotals{3, 1, 1}));
}

TEST(CountWindowTest, ClearEmptiesIt) {
  CountWindow w(2);
  w.Add({.failure = true});
  w.Clear();
  EXPECT_EQ(w.totals(), WindowTotals{});
  w.Add({});
  w.Add({});
  w.Add({});
  EXPECT_EQ(w.totals(), (WindowTotals{2, 0, 0}));
}

TEST(CountWindowTest, SizeOneHoldsOnlyTheLatest) {
  CountWindow w(1);
  w.Add({.failure = true, .slow = true});
  w.Add({});
  EXPECT_EQ(w.totals(), (WindowTotals{1, 0, 0}));
}

TEST(CountWindowTest, TotalsWithIsWhatAddLeaves) {
  CountWindow w(5);
  std::uint32_t state = 12345;  // a fixed xorshift sequence of samples through fill and wrap
  for (int i = 0; i < 40; ++i) {
    state ^= state << 13U;
    state ^= state >> 17U;
    state ^= state << 5U;
    const Sample s{.failure = (state & 1U) != 0, .slow = (state & 2U) != 0};
    const WindowTotals predicted = w.TotalsWith(s);
    w.Add(s);
    ASSERT_EQ(w.totals(), predicted) << "sample " << i;
  }
}

// The totals share one word, 21 bits each: a full window of the largest size, every sample a
// slow failure, must not carry from one total into the next.
TEST(CountWindowTest, TheLargestWindowFullOfSlowFailuresKeepsEachTotalApart) {
  CountWindow w(CountWindow::kMaxSize);
  ASSERT_EQ(w.size(), CountWindow::kMaxSize);
  for (std::uint32_t i = 0; i < CountWindow::kMaxSize + 3; ++i) {
    w.Add({.failure = true, .slow = true});
  }
  EXPECT_EQ(w.totals(),
            (WindowTotals{CountWindow::kMaxSize, CountWindow::kMaxSize, CountWindow::kMaxSize}));
  w.Add({});
  EXPECT_EQ(w.totals(), (WindowTotals{CountWindow::kMaxSize, CountWindow::kMaxSize - 1,
                                      CountWindow::kMaxSize - 1}));
}

TEST(CountWindowTest, ASizeOutsideTheRangeIsClamped) {
  EXPECT_EQ(CountWindow(0).size(), 1U);
  EXPECT_EQ(CountWindow(CountWindow::kMaxSize + 1).size(), CountWindow::kMaxSize);
}

TEST(TimeWindowTest, AggregatesBySecondAndExpiresOldBuckets) {
  TimeWindow w(3);
  w.Add(0, {.failure = true});
  w.Add(0, {});
  w.Add(1, {.slow = true});
  EXPECT_EQ(w.TotalsAt(2), (WindowTotals{3, 1, 1}));
  EXPECT_EQ(w.TotalsAt(3), (WindowTotals{1, 0, 1}));  // second 0 left [1, 3]
  EXPECT_EQ(w.TotalsAt(4), (WindowTotals{0, 0, 0}));
}

TEST(TimeWindowTest, AJumpLongerThanTheWindowEmptiesIt) {
  TimeWindow w(5);
  for (int s = 0; s < 5; ++s) {
    w.Add(s, {.failure = true});
  }
  EXPECT_EQ(w.TotalsAt(4).calls, 5U);
  EXPECT_EQ(w.TotalsAt(1000).calls, 0U);
  w.Add(1000, {});
  EXPECT_EQ(w.TotalsAt(1000), (WindowTotals{1, 0, 0}));
}

TEST(TimeWindowTest, ReusesABucketForALaterSecond) {
  TimeWindow w(2);
  w.Add(0, {.failure = true});
  w.Add(2, {});  // same bucket index as second 0
  EXPECT_EQ(w.TotalsAt(2), (WindowTotals{1, 0, 0}));
}

TEST(TimeWindowTest, DropsSamplesOlderThanTheWindow) {
  TimeWindow w(2);
  w.Add(10, {});
  w.Add(5, {.failure = true});
  EXPECT_EQ(w.TotalsAt(10), (WindowTotals{1, 0, 0}));
}

}  // namespace
}  // namespace fusebox

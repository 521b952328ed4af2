#include "fusebox/sliding_window.h"

#include <gtest/gtest.h>

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

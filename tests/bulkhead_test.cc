#include "fusebox/bulkhead.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "fusebox/status.h"

namespace {

using fusebox::Bulkhead;
using fusebox::BulkheadConfig;
using fusebox::BulkheadPermit;
using fusebox::ReasonCode;

std::unique_ptr<Bulkhead> MakeBulkhead(std::uint32_t max_concurrent) {
  auto created = Bulkhead::Create("test", {.max_concurrent = max_concurrent});
  EXPECT_TRUE(created.has_value());
  return std::move(created).value();
}

TEST(BulkheadConfigTest, DefaultIsValid) {
  EXPECT_EQ(BulkheadConfig{}.Validate(), std::nullopt);
  EXPECT_EQ(BulkheadConfig{}.max_concurrent, 25U);
}

TEST(BulkheadConfigTest, ZeroMaxConcurrentNamesTheFieldAndRange) {
  auto error = BulkheadConfig{.max_concurrent = 0}.Validate();
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->field, "max_concurrent");
  EXPECT_EQ(error->message, "max_concurrent must be in [1, 1000000], got 0");
}

TEST(BulkheadConfigTest, AboveRangeIsRefused) {
  auto error = BulkheadConfig{.max_concurrent = 1'000'001}.Validate();
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->field, "max_concurrent");
}

TEST(BulkheadTest, CreateRefusesAnInvalidConfig) {
  auto created = Bulkhead::Create("bad", {.max_concurrent = 0});
  ASSERT_FALSE(created.has_value());
  EXPECT_EQ(created.error().field, "max_concurrent");
}

TEST(BulkheadTest, ReportsNameAndCap) {
  auto bulkhead = MakeBulkhead(3);
  EXPECT_EQ(bulkhead->name(), "test");
  EXPECT_EQ(bulkhead->max_concurrent(), 3U);
  EXPECT_EQ(bulkhead->in_flight(), 0U);
}

TEST(BulkheadTest, AdmitsUpToTheCap) {
  auto bulkhead = MakeBulkhead(3);
  std::vector<BulkheadPermit> permits;
  for (int i = 0; i < 3; ++i) {
    auto permit = bulkhead->TryAcquire();
    ASSERT_TRUE(permit.has_value()) << "call " << i;
    permits.push_back(std::move(permit).value());
  }
  EXPECT_EQ(bulkhead->in_flight(), 3U);
  EXPECT_EQ(bulkhead->admitted(), 3U);
  EXPECT_EQ(bulkhead->rejected(), 0U);
}

TEST(BulkheadTest, FullBulkheadRejectsAtOnceWithOverloaded) {
  auto bulkhead = MakeBulkhead(1);
  auto held = bulkhead->TryAcquire();
  ASSERT_TRUE(held.has_value());

  auto rejected = bulkhead->TryAcquire();
  ASSERT_FALSE(rejected.has_value());
  EXPECT_EQ(rejected.error().code, ReasonCode::kOverloaded);
  EXPECT_EQ(rejected.error().retry_after, Bulkhead::kRetryAfter);
  EXPECT_EQ(bulkhead->rejected(), 1U);
  EXPECT_EQ(bulkhead->admitted(), 1U);
  EXPECT_EQ(bulkhead->in_flight(), 1U);
}

TEST(BulkheadTest, DestroyingAPermitReleasesItsSlot) {
  auto bulkhead = MakeBulkhead(1);
  {
    auto permit = bulkhead->TryAcquire();
    ASSERT_TRUE(permit.has_value());
    EXPECT_EQ(bulkhead->in_flight(), 1U);
  }
  EXPECT_EQ(bulkhead->in_flight(), 0U);
  EXPECT_TRUE(bulkhead->TryAcquire().has_value());
}

TEST(BulkheadTest, MovingAPermitTransfersTheSlotWithoutReleasingIt) {
  auto bulkhead = MakeBulkhead(1);
  auto acquired = bulkhead->TryAcquire();
  ASSERT_TRUE(acquired.has_value());
  BulkheadPermit original = std::move(acquired).value();
  {
    BulkheadPermit moved(std::move(original));
    EXPECT_TRUE(moved.held());
    EXPECT_FALSE(original.held());  // NOLINT(bugprone-use-after-move): checking the moved-from
    EXPECT_EQ(bulkhead->in_flight(), 1U);
    EXPECT_FALSE(bulkhead->TryAcquire().has_value());
  }
  // Only the permit that held the slot released it, exactly once.
  EXPECT_EQ(bulkhead->in_flight(), 0U);
}

TEST(BulkheadTest, MoveAssignmentReleasesTheOverwrittenSlot) {
  auto bulkhead = MakeBulkhead(2);
  BulkheadPermit first = bulkhead->TryAcquire().value();
  BulkheadPermit second = bulkhead->TryAcquire().value();
  ASSERT_EQ(bulkhead->in_flight(), 2U);

  first = std::move(second);
  EXPECT_EQ(bulkhead->in_flight(), 1U);
  EXPECT_TRUE(first.held());
}

TEST(BulkheadTest, ReleaseIsIdempotent) {
  auto bulkhead = MakeBulkhead(2);
  BulkheadPermit permit = bulkhead->TryAcquire().value();
  BulkheadPermit other = bulkhead->TryAcquire().value();
  permit.Release();
  permit.Release();
  EXPECT_FALSE(permit.held());
  EXPECT_EQ(bulkhead->in_flight(), 1U);  // the other permit's slot is untouched
  EXPECT_TRUE(other.held());
}

TEST(BulkheadTest, ASlotFreedAfterARejectionIsAdmittedAgain) {
  auto bulkhead = MakeBulkhead(1);
  auto held = bulkhead->TryAcquire();
  ASSERT_FALSE(bulkhead->TryAcquire().has_value());
  held->Release();
  EXPECT_TRUE(bulkhead->TryAcquire().has_value());
  EXPECT_EQ(bulkhead->admitted(), 2U);
  EXPECT_EQ(bulkhead->rejected(), 1U);
}

}  // namespace

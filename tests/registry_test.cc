#include "fusebox/registry.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "fusebox/testing/manual_clock.h"

namespace fusebox {
namespace {

TEST(RegistryTest, CreatesFromDefaultsOnFirstUse) {
  fusebox::testing::ManualClock clock;
  Registry registry({.failure_threshold = 7}, {.clock = &clock});
  auto b = registry.Get("inventory");
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ((*b)->config().failure_threshold, 7U);
  EXPECT_EQ((*b)->name(), "inventory");
  EXPECT_EQ(registry.Get("inventory").value(), *b);  // same breaker every time
}

TEST(RegistryTest, PerDependencyConfigOverridesDefaults) {
  Registry registry({.failure_threshold = 5});
  ASSERT_FALSE(registry.Configure("vpic", {.failure_threshold = 3}).has_value());
  EXPECT_EQ(registry.Get("vpic").value()->config().failure_threshold, 3U);
  EXPECT_EQ(registry.Get("other").value()->config().failure_threshold, 5U);
}

TEST(RegistryTest, RefusesInvalidConfigWithTheField) {
  Registry registry;
  auto error = registry.Configure("vpic", {.cooldown = std::chrono::seconds(0)});
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->field, "cooldown");
}

TEST(RegistryTest, InvalidDefaultsFailGetWithTheField) {
  Registry registry({.failure_threshold = 0});
  auto b = registry.Get("x");
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.error().field, "failure_threshold");
}

TEST(RegistryTest, CreateRefusesInvalidDefaultsWithTheField) {
  auto refused = Registry::Create({.failure_rate_threshold = 1.5});
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().field, "failure_rate_threshold");
  auto created = Registry::Create({.failure_threshold = 4});
  ASSERT_TRUE(created.has_value());
  EXPECT_EQ((*created)->Get("vpic").value()->config().failure_threshold, 4U);
}

TEST(RegistryTest, ConfiguringALiveBreakerIsRefused) {
  Registry registry;
  ASSERT_TRUE(registry.Get("vpic").has_value());
  auto error = registry.Configure("vpic", {});
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->field, "name");
}

TEST(RegistryTest, FindNeverCreatesAndAllIsSortedByName) {
  Registry registry;
  EXPECT_EQ(registry.Find("b"), nullptr);
  (void)registry.Get("b");
  (void)registry.Get("a");
  ASSERT_NE(registry.Find("b"), nullptr);
  auto all = registry.All();
  ASSERT_EQ(all.size(), 2U);
  EXPECT_EQ(all[0]->name(), "a");
  EXPECT_EQ(all[1]->name(), "b");
}

TEST(RegistryTest, ConcurrentGetsShareOneBreaker) {
  Registry registry;
  std::vector<std::shared_ptr<CircuitBreaker>> seen(8);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < seen.size(); ++i) {
    threads.emplace_back([&, i] { seen[i] = registry.Get("shared").value(); });
  }
  for (auto& t : threads) {
    t.join();
  }
  for (const auto& b : seen) {
    EXPECT_EQ(b, seen[0]);
  }
}

}  // namespace
}  // namespace fusebox

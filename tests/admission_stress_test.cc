// 8 threads admit calls through one breaker, adaptive limit and throttle (fusebox::Admit) and
// record mixed outcomes: the limit's cap holds, every call is counted once by every piece it
// reached, and nothing is left held. Runs under ThreadSanitizer in CI. The work is set by
// stress_scale.h (a short run by default, a long one under `long`).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <latch>
#include <memory>
#include <thread>
#include <vector>

#include "fusebox/admission.h"
#include "fusebox/random.h"
#include "stress_scale.h"

namespace {

using fusebox::Outcome;
using fusebox::ReasonCode;

void Hammer() {
  constexpr int kThreads = 8;
  constexpr int kCallsPerThread = fusebox::testing::kStressCallsPerThread / 4;
  // A breaker that never trips on these outcomes, so the limit and the throttle carry the load.
  auto breaker =
      fusebox::CircuitBreaker::Create("stress", {.failure_threshold = 1'000'000}).value();
  auto limit = fusebox::AdaptiveLimit::Create("stress",
                                              {.min_limit = 2,
                                               .max_limit = 6,
                                               .initial_limit = 4,
                                               .sample_window = std::chrono::milliseconds(1),
                                               .min_window_samples = 1},
                                              {.clock = nullptr, .on_change = {}})
                   .value();
  fusebox::SplitMix64Random random(42);
  auto throttle = fusebox::Throttle::Create("stress", {.k = 2, .window = std::chrono::seconds(1)},
                                            {.clock = nullptr, .random = &random})
                      .value();
  const fusebox::Guards guards{.breaker = breaker.get(),
                               .bulkhead = nullptr,
                               .limit = limit.get(),
                               .throttle = throttle.get()};
  std::atomic<std::uint64_t> admitted{0};
  std::atomic<std::uint64_t> overloaded{0};
  std::atomic<std::uint64_t> throttled{0};
  std::atomic<std::uint32_t> max_in_flight{0};
  std::latch start(kThreads);

  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int i = 0; i < kCallsPerThread; ++i) {
        auto admission = fusebox::Admit(guards);
        if (!admission) {
          (admission.error().code == ReasonCode::kThrottled ? throttled : overloaded)
              .fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        admitted.fetch_add(1, std::memory_order_relaxed);
        const std::uint32_t in_flight = limit->in_flight();
        std::uint32_t seen = max_in_flight.load();
        while (in_flight > seen && !max_in_flight.compare_exchange_weak(seen, in_flight)) {
        }
        // Two calls in three fail: the throttle sheds a share.
        admission->Record((i + t) % 3 == 0 ? Outcome::kSuccess : Outcome::kFailure);
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }

  EXPECT_LE(max_in_flight.load(), 6U);
  EXPECT_EQ(limit->in_flight(), 0U);
  EXPECT_EQ(admitted + overloaded + throttled,
            static_cast<std::uint64_t>(kThreads) * kCallsPerThread);
  const fusebox::ThrottleStats stats = throttle->Stats();
  EXPECT_EQ(stats.admitted, admitted.load());
  EXPECT_EQ(stats.refused, throttled.load());
  EXPECT_GT(throttled.load(), 0U);
  EXPECT_EQ(limit->Stats().rejected, overloaded.load());
}

TEST(AdmissionStressTest, ConcurrentCallersKeepEveryCountWhole) {
  for (int round = 0; round < fusebox::testing::StressRounds(); ++round) {
    SCOPED_TRACE(::testing::Message() << "round " << round);
    Hammer();
    if (::testing::Test::HasFailure()) {
      return;
    }
  }
}

}  // namespace

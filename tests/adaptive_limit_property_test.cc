// Properties of AdaptiveLimit under random sequences of calls, outcomes, latencies and time,
// with random settings: the limit stays within its bounds, admission never passes the limit in
// force, every slot comes back, and the counts add up.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <utility>

#include "fusebox/adaptive_limit.h"
#include "fusebox/testing/manual_clock.h"

namespace {

using fusebox::AdaptiveLimit;
using fusebox::AdaptiveLimitConfig;
using fusebox::AdaptivePermit;
using fusebox::Outcome;
using fusebox::TimePoint;
using std::chrono::milliseconds;

RC_GTEST_PROP(AdaptiveLimitProperty, StaysInBoundsAndNeverAdmitsPastTheLimit, ()) {
  AdaptiveLimitConfig config;
  config.min_limit = *rc::gen::inRange<std::uint32_t>(1, 8);
  config.max_limit = config.min_limit + *rc::gen::inRange<std::uint32_t>(0, 60);
  config.initial_limit = *rc::gen::inRange(config.min_limit, config.max_limit + 1);
  config.sample_window = milliseconds(*rc::gen::inRange(1, 500));
  config.min_window_samples = *rc::gen::inRange<std::uint32_t>(1, 20);
  config.tolerance = *rc::gen::element(1.0, 1.25, 2.0);
  config.smoothing = *rc::gen::element(0.1, 0.2, 1.0);
  config.backoff_ratio = *rc::gen::element(0.5, 0.9, 0.99);
  config.no_load_reset = std::chrono::seconds(*rc::gen::inRange(1, 30));
  fusebox::testing::ManualClock clock{TimePoint(std::chrono::seconds(100))};
  auto limit = AdaptiveLimit::Create("prop", config, {.clock = &clock, .on_change = {}}).value();

  std::deque<AdaptivePermit> held;
  std::uint64_t tries = 0;
  const int steps = *rc::gen::inRange(1, 2000);
  for (int step = 0; step < steps; ++step) {
    const int action = *rc::gen::inRange(0, 10);
    if (action < 5) {
      const std::uint32_t limit_now = limit->limit();
      const std::uint32_t in_flight = limit->in_flight();
      ++tries;
      auto permit = limit->TryAcquire();
      RC_ASSERT(permit.has_value() == (in_flight < limit_now));
      if (permit) {
        held.push_back(std::move(permit).value());
      }
    } else if (action < 9 && !held.empty()) {
      const Outcome outcome =
          *rc::gen::element(Outcome::kSuccess, Outcome::kSuccess, Outcome::kFailure,
                            Outcome::kTimeout, Outcome::kIgnored);
      const bool front = *rc::gen::arbitrary<bool>();
      AdaptivePermit permit = std::move(front ? held.front() : held.back());
      if (front) {
        held.pop_front();
      } else {
        held.pop_back();
      }
      if (*rc::gen::inRange(0, 20) == 0) {
        permit.RecordDrop();
      } else {
        permit.Record(outcome);
      }
    } else {
      clock.Advance(milliseconds(*rc::gen::inRange(0, 300)));
    }
    RC_ASSERT(limit->limit() >= config.min_limit);
    RC_ASSERT(limit->limit() <= config.max_limit);
    RC_ASSERT(limit->in_flight() == held.size());
  }
  held.clear();
  const auto stats = limit->Stats();
  RC_ASSERT(stats.in_flight == 0U);
  RC_ASSERT(stats.admitted + stats.rejected == tries);
}

}  // namespace

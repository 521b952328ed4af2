// Reconfigure while calls run: 4 threads call one breaker with random outcomes while a fifth
// reconfigures it in a loop, through every trip policy, window size, probe cap and budget. Runs
// under ThreadSanitizer in CI (the hot paths read the reconfigurable settings without a lock).
// Checks what must hold whatever the interleaving: the totals add up, transitions chain in
// sequence order (a reconfiguration's new generation keeps CLOSED or METRICS_ONLY), nothing is
// admitted in an OPEN generation, the probe cap is never exceeded, and the last config applied
// is the one in force.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "fusebox/circuit_breaker.h"
#include "fusebox/testing/manual_clock.h"
#include "stress_scale.h"

namespace fusebox {
namespace {

using std::chrono::milliseconds;

constexpr int kCallers = 4;

std::vector<CircuitBreakerConfig> Configs() {
  const CircuitBreakerConfig base{.failure_threshold = 3,
                                  .window_size = 20,
                                  .minimum_calls = 5,
                                  .call_timeout = milliseconds(50),
                                  .cooldown = milliseconds(20),
                                  .half_open_max_probes = 2};
  std::vector<CircuitBreakerConfig> out;
  out.push_back(base);
  CircuitBreakerConfig c = base;
  c.trip = TripPolicy::kCountWindow;
  out.push_back(c);
  c.window_size = 10;
  c.half_open_max_probes = 3;
  c.inflight_slow_accounting = true;
  c.slow_call_duration = milliseconds(5);
  out.push_back(c);
  c = base;
  c.trip = TripPolicy::kTimeWindow;
  c.window_size = 2;
  c.cooldown = milliseconds(10);
  c.cooldown_multiplier = 2.0;
  c.cooldown_max = milliseconds(80);
  c.half_open_max_probes = 1;
  out.push_back(c);
  c = base;
  c.failure_threshold = 5;
  c.call_timeout = milliseconds(20);
  c.cooldown_jitter = 0.5;
  out.push_back(c);
  return out;
}

void HammerWhileReconfiguring(int round) {
  const std::vector<CircuitBreakerConfig> configs = Configs();
  std::uint32_t max_probes = 0;
  for (const auto& c : configs) {
    max_probes = std::max(max_probes, c.half_open_max_probes);
  }
  fusebox::testing::ManualClock clock;
  auto breaker = CircuitBreaker::Create("reconfigure", configs[0], {.clock = &clock}).value();

  std::mutex mu;
  std::vector<Event> events;                 // Guarded by mu.
  std::map<std::uint64_t, int> probes_held;  // Guarded by mu.
  breaker->AddListener([&](const Event& e) {
    if (std::holds_alternative<TransitionEvent>(e.detail)) {
      std::lock_guard lock(mu);
      events.push_back(e);
    }
  });
  std::atomic<bool> probe_cap_violated{false};
  std::atomic<std::uint64_t> calls{0};
  std::atomic<std::uint64_t> admitted{0};
  std::atomic<int> callers_done{0};
  std::vector<std::vector<std::uint64_t>> generations(kCallers);

  std::vector<std::thread> threads;
  for (int w = 0; w < kCallers; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937 rng(static_cast<unsigned>(round * kCallers + w) + 1);
      std::uniform_int_distribution<int> pick(0, 99);
      for (int i = 0; i < testing::kStressCallsPerThread; ++i) {
        if (i % 25 == 0) {
          clock.Advance(milliseconds(1));
        }
        calls.fetch_add(1);
        auto permit = breaker->TryAcquire();
        if (!permit) {
          continue;
        }
        admitted.fetch_add(1);
        generations[static_cast<std::size_t>(w)].push_back(permit->generation());
        if (permit->is_probe()) {
          std::lock_guard lock(mu);
          if (++probes_held[permit->generation()] > static_cast<int>(max_probes)) {
            probe_cap_violated = true;
          }
        }
        const int r = pick(rng);
        const Outcome outcome = permit->is_probe()
                                    ? (r < 80 ? Outcome::kSuccess : Outcome::kFailure)
                                : r < 40 ? Outcome::kSuccess
                                : r < 85 ? Outcome::kFailure
                                : r < 95 ? Outcome::kTimeout
                                         : Outcome::kIgnored;
        if (permit->is_probe()) {
          std::lock_guard lock(mu);
          --probes_held[permit->generation()];
        }
        permit->Record(outcome, milliseconds(r % 10));
      }
      callers_done.fetch_add(1);
    });
  }
  std::size_t applied = 0;
  threads.emplace_back([&] {
    std::mt19937 rng(static_cast<unsigned>(round) + 100);
    while (callers_done.load() < kCallers) {
      applied = rng() % configs.size();
      EXPECT_FALSE(breaker->Reconfigure(configs[applied]).has_value());
      if (applied == 1 && rng() % 4 == 0) {
        breaker->MetricsOnly();  // a reconfiguration in METRICS_ONLY keeps it
        EXPECT_FALSE(breaker->Reconfigure(configs[0]).has_value());
        breaker->Reset();
        applied = 0;
      }
      std::this_thread::yield();
    }
  });
  for (auto& t : threads) {
    t.join();
  }

  EXPECT_FALSE(probe_cap_violated.load());
  EXPECT_TRUE(DescribeChanges(breaker->config(), configs[applied]).empty());
  const MetricsSnapshot m = breaker->Snapshot();
  EXPECT_EQ(m.calls, calls.load());
  EXPECT_EQ(m.allowed, admitted.load());
  EXPECT_EQ(m.calls, m.allowed + m.rejected_open + m.rejected_half_open);
  EXPECT_EQ(m.succeeded + m.failed + m.ignored, m.allowed);
  EXPECT_GT(m.opened, 0U);

  std::sort(events.begin(), events.end(),
            [](const Event& a, const Event& b) { return a.sequence < b.sequence; });
  std::map<std::uint64_t, State> state_of_generation{{0, State::kClosed}};
  State state = State::kClosed;
  std::uint64_t generation = 0;
  std::uint64_t reconfigured = 0;
  for (const Event& e : events) {
    const auto& t = std::get<TransitionEvent>(e.detail);
    EXPECT_EQ(t.from, state);
    EXPECT_EQ(t.generation, generation + 1);
    if (t.cause == TransitionCause::kReconfigured) {
      EXPECT_EQ(t.from, t.to);
      EXPECT_TRUE(t.to == State::kClosed || t.to == State::kMetricsOnly);
      ++reconfigured;
    }
    if (t.to == State::kClosed && t.cause != TransitionCause::kReconfigured &&
        t.cause != TransitionCause::kOperator) {
      EXPECT_EQ(t.from, State::kHalfOpen);
    }
    state_of_generation[t.generation] = t.to;
    state = t.to;
    generation = t.generation;
  }
  EXPECT_EQ(state, m.state);
  EXPECT_EQ(generation, m.generation);
  for (const auto& thread_generations : generations) {
    for (const std::uint64_t g : thread_generations) {
      const auto it = state_of_generation.find(g);
      ASSERT_NE(it, state_of_generation.end()) << "generation " << g;
      EXPECT_NE(it->second, State::kOpen) << "generation " << g;
    }
  }
  EXPECT_GT(reconfigured, 0U);
}

TEST(ReconfigureStressTest, ReconfigureWhileFourThreadsCall) {
  for (int round = 0; round < testing::StressRounds(); ++round) {
    SCOPED_TRACE(::testing::Message() << "round " << round);
    HammerWhileReconfiguring(round);
    if (::testing::Test::HasFailure()) {
      return;
    }
  }
}

}  // namespace
}  // namespace fusebox

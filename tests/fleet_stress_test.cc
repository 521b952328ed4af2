// Fleet mode under threads: three instances of one breaker linked in process, hammered with
// mixed outcomes on a real clock with short cooldowns while one instance drops off the link and
// comes back. Nothing may deadlock or crash (run it under the tsan preset for races), messages
// flow, and an operator reset on one instance closes every instance.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fusebox/circuit_breaker.h"
#include "fusebox/fleet.h"
#include "stress_scale.h"

namespace fusebox {
namespace {

TEST(FleetStressTest, ThreadsOnThreeLinkedInstances) {
  for (int round = 0; round < testing::StressRounds(); ++round) {
    InMemoryFleetBus bus(DefaultClock());
    CircuitBreakerConfig config;
    config.failure_threshold = 3;
    config.cooldown = std::chrono::microseconds(200);
    config.call_timeout = std::chrono::milliseconds(50);
    std::vector<std::unique_ptr<InMemoryFleetBus::Link>> links;
    std::vector<std::unique_ptr<CircuitBreaker>> breakers;
    std::vector<std::unique_ptr<Fleet>> fleets;
    for (int i = 0; i < 3; ++i) {
      const std::string id(1, static_cast<char>('a' + i));
      links.push_back(bus.Connect(id));
      breakers.push_back(CircuitBreaker::Create("shared", config).value());
      fleets.push_back(std::make_unique<Fleet>(*links.back(), id));
      fleets.back()->Attach(*breakers.back());
    }
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t) {
      threads.emplace_back([&, t] {
        std::mt19937 rng(static_cast<unsigned>(round * 7 + t));
        for (int i = 0; i < testing::kStressCallsPerThread / 4; ++i) {
          CircuitBreaker& b = *breakers[rng() % 3];
          auto permit = b.TryAcquire();
          if (!permit) {
            if (i % 64 == 0) {
              bus.Poll();
            }
            continue;
          }
          permit->Record(rng() % 4 == 0 ? Outcome::kFailure : Outcome::kSuccess);
        }
      });
    }
    // One instance drops off the link and comes back a few times while the threads run.
    threads.emplace_back([&] {
      for (int i = 0; i < 5; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        links[2]->SetConnected(false);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        links[2]->SetConnected(true);
      }
    });
    for (auto& thread : threads) {
      thread.join();
    }
    breakers[0]->Reset();
    for (auto& b : breakers) {
      EXPECT_EQ(b->state(), State::kClosed);
    }
    EXPECT_GT(fleets[1]->Stats().messages_received, 0U);
  }
}

}  // namespace
}  // namespace fusebox

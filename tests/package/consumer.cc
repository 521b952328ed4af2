// tests/package/consumer.cc
//
// The smallest program a user of the installed package writes: create a breaker with the
// production clock, trip it, and check that the next call is rejected with CIRCUIT_OPEN and a
// Retry-After within the cooldown. Prints OK and returns 0 when everything holds.

#include <chrono>
#include <cstdio>
#include <string>

#include "fusebox/circuit_breaker.h"
#include "fusebox/status.h"

int main() {
  fusebox::CircuitBreakerConfig config;
  config.failure_threshold = 3;
  config.cooldown = std::chrono::seconds(30);
  auto created = fusebox::CircuitBreaker::Create("consumer", config);
  if (!created) {
    std::fprintf(stderr, "consumer: Create failed: %s\n", created.error().message.c_str());
    return 1;
  }
  fusebox::CircuitBreaker& breaker = **created;

  for (int i = 0; i < 3; ++i) {
    auto permit = breaker.TryAcquire();
    if (!permit) {
      std::fprintf(stderr, "consumer: call %d rejected while CLOSED\n", i);
      return 1;
    }
    permit->Record(fusebox::Outcome::kFailure);
  }
  if (breaker.state() != fusebox::State::kOpen) {
    std::fprintf(stderr, "consumer: 3 failures did not open the breaker\n");
    return 1;
  }

  auto rejected = breaker.TryAcquire();
  if (rejected) {
    std::fprintf(stderr, "consumer: OPEN breaker admitted a call\n");
    return 1;
  }
  const fusebox::Error& error = rejected.error();
  if (error.code != fusebox::ReasonCode::kCircuitOpen ||
      error.retry_after <= fusebox::Duration{0} || error.retry_after > config.cooldown) {
    std::fprintf(stderr, "consumer: wrong rejection %s\n",
                 std::string(fusebox::ToString(error.code)).c_str());
    return 1;
  }
  std::printf("OK\n");
  return 0;
}

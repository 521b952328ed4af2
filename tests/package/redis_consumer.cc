// tests/package/redis_consumer.cc
//
// A user of the installed package's fusebox::redis target: parses a redis:// URL, and attaches a
// breaker to a fleet whose Redis is unreachable (port 1 on loopback): the link must report
// disconnected and the breaker must go on with the local rules. Prints OK and returns 0 when
// that holds.
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdio>

#include "fusebox/circuit_breaker.h"
#include "fusebox/fleet.h"
#include "fusebox/redis_fleet.h"

int main() {
  auto endpoint = fusebox::ParseRedisUrl("redis://127.0.0.1:1/0");
  if (!endpoint || fusebox::ParseRedisUrl("redis:/nope").has_value()) {
    std::puts("FAILED: ParseRedisUrl");
    return 1;
  }
  boost::asio::io_context io;
  fusebox::RedisFleetLink link(io.get_executor(), {.endpoint = *endpoint, .instance = "consumer"});
  auto breaker = fusebox::CircuitBreaker::Create("redis-consumer", {}).value();
  {
    fusebox::Fleet fleet(link, "consumer");
    fleet.Attach(*breaker);
    link.Start();
    io.run_for(std::chrono::milliseconds(300));
    auto permit = breaker->TryAcquire();
    if (link.connected() || !permit) {
      std::puts("FAILED: expected a disconnected link and a working breaker");
      return 1;
    }
    permit->Record(fusebox::Outcome::kSuccess);
  }
  std::puts("OK");
  return 0;
}

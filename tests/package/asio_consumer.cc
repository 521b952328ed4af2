// tests/package/asio_consumer.cc
//
// A user of the installed package's fusebox::asio target: one awaitable guarded call that
// succeeds, and one that runs past its budget and comes back UPSTREAM_SLOW. Prints OK and returns
// 0 when both hold.

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <cstdio>

#include "fusebox/asio.h"
#include "fusebox/circuit_breaker.h"

namespace net = boost::asio;

net::awaitable<int> Sleep(std::chrono::milliseconds how_long) {
  net::steady_timer timer(co_await net::this_coro::executor, how_long);
  co_await timer.async_wait(net::use_awaitable);
  co_return 42;
}

int main() {
  fusebox::CircuitBreakerConfig config;
  config.call_timeout = std::chrono::milliseconds(200);
  auto breaker = fusebox::CircuitBreaker::Create("asio-consumer", config).value();

  net::io_context io;
  bool fast_ok = false;
  bool slow_ok = false;
  net::co_spawn(
      io,
      [&]() -> net::awaitable<void> {
        auto fast = co_await fusebox::asio::Run(
            *breaker,
            [](const fusebox::CallContext&) { return Sleep(std::chrono::milliseconds(1)); },
            [](const int& v) {
              return v == 42 ? fusebox::Outcome::kSuccess : fusebox::Outcome::kFailure;
            });
        fast_ok = fast.has_value() && *fast == 42;
        auto slow = co_await fusebox::asio::Run(
            *breaker, [](const fusebox::CallContext&) { return Sleep(std::chrono::seconds(30)); },
            [](const int&) { return fusebox::Outcome::kSuccess; });
        slow_ok = !slow.has_value() && slow.error().code == fusebox::ReasonCode::kUpstreamSlow;
      },
      net::detached);
  io.run();
  if (!fast_ok || !slow_ok) {
    std::fprintf(stderr, "asio consumer: fast_ok=%d slow_ok=%d\n", fast_ok, slow_ok);
    return 1;
  }
  std::puts("OK");
  return 0;
}

// fusebox::asio::Prober: the breaker's schedule, one probe in flight, stop, the breaker's end.
// The breaker runs on a ManualClock; the tests advance it and Poke() the prober, then run the
// io_context until it has nothing ready (poll), so no test waits on real time.
#include "fusebox/asio_prober.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "fusebox/circuit_breaker.h"
#include "fusebox/testing/manual_clock.h"

namespace fusebox::asio {
namespace {

namespace net = boost::asio;
using std::chrono::seconds;

class ProberTest : public ::testing::Test {
 protected:
  ProberTest() {
    auto created = CircuitBreaker::Create("vpic",
                                          {.failure_threshold = 1,
                                           .probe_mode = ProbeMode::kActive,
                                           .probe_interval = seconds(2),
                                           .probe_budget = seconds(1)},
                                          {.clock = &clock_});
    breaker_ = std::move(created).value();
  }

  void Trip() {
    auto permit = breaker_->TryAcquire();
    ASSERT_TRUE(permit.has_value());
    permit->Record(Outcome::kFailure);
    ASSERT_EQ(breaker_->state(), State::kOpen);
  }

  // A probe op that answers `next_` at once, counting its calls; or, with `hold_`, one that waits
  // until released (a timer the test cancels).
  Prober::ProbeOp Op() {
    return [this](const CallContext& ctx) -> net::awaitable<Outcome> {
      ++calls_;
      EXPECT_TRUE(ctx.probe);
      if (hold_) {
        net::steady_timer gate(io_, net::steady_timer::time_point::max());
        gate_ = &gate;
        boost::system::error_code ec;
        co_await gate.async_wait(net::redirect_error(net::use_awaitable, ec));
        gate_ = nullptr;
      }
      if (throw_) {
        throw std::runtime_error("probe op failed");
      }
      co_return next_;
    };
  }

  testing::ManualClock clock_;
  std::unique_ptr<CircuitBreaker> breaker_;
  net::io_context io_;
  Outcome next_ = Outcome::kSuccess;
  bool hold_ = false;
  bool throw_ = false;
  int calls_ = 0;
  net::steady_timer* gate_ = nullptr;
};

TEST_F(ProberTest, IdleWhileClosedThenProbesWhenTheIntervalHasPassed) {
  auto prober = Prober::Start(io_.get_executor(), *breaker_, Op());
  io_.poll();
  EXPECT_EQ(calls_, 0);
  EXPECT_FALSE(prober->stats().next_probe.has_value());  // idle: nothing to probe
  Trip();
  io_.poll();  // woken by the transition: the probe is 2 s away
  EXPECT_EQ(calls_, 0);
  ASSERT_TRUE(prober->stats().next_probe.has_value());
  EXPECT_EQ(*prober->stats().next_probe, clock_.Now() + seconds(2));
  clock_.Advance(seconds(2));
  prober->Poke();
  io_.poll();
  EXPECT_EQ(calls_, 1);
  EXPECT_EQ(breaker_->state(), State::kClosed);
  const ProberStats stats = prober->stats();
  EXPECT_EQ(stats.sent, 1U);
  EXPECT_EQ(stats.last_outcome, Outcome::kSuccess);
  EXPECT_EQ(stats.by_outcome[static_cast<std::size_t>(Outcome::kSuccess)], 1U);
  EXPECT_FALSE(stats.next_probe.has_value());
  EXPECT_FALSE(stats.running);
  prober->Stop();
  io_.poll();
  EXPECT_TRUE(io_.stopped());  // the loop ended: no work left
}

TEST_F(ProberTest, AFailedProbeReopensAndTheNextWaitsTheGrownInterval) {
  auto prober = Prober::Start(io_.get_executor(), *breaker_, Op());
  Trip();
  next_ = Outcome::kFailure;
  clock_.Advance(seconds(2));
  prober->Poke();
  io_.poll();
  EXPECT_EQ(calls_, 1);
  EXPECT_EQ(breaker_->state(), State::kOpen);
  ASSERT_TRUE(prober->stats().next_probe.has_value());
  EXPECT_EQ(*prober->stats().next_probe - clock_.Now(), breaker_->retry_after());
  prober->Poke();  // not due: asking again changes nothing
  io_.poll();
  EXPECT_EQ(calls_, 1);
  prober->Stop();
  io_.poll();
}

TEST_F(ProberTest, AThrowingProbeIsAFailure) {
  auto prober = Prober::Start(io_.get_executor(), *breaker_, Op());
  Trip();
  throw_ = true;
  clock_.Advance(seconds(2));
  prober->Poke();
  io_.poll();
  EXPECT_EQ(calls_, 1);
  EXPECT_EQ(breaker_->state(), State::kOpen);
  EXPECT_EQ(prober->stats().last_outcome, Outcome::kFailure);
  prober->Stop();
  io_.poll();
}

// A probe that teaches nothing (the application's own shortage) leaves the slot free; the prober
// waits a moment before asking again instead of spinning.
TEST_F(ProberTest, AnIgnoredProbeIsNotRetriedAtOnce) {
  auto prober = Prober::Start(io_.get_executor(), *breaker_, Op());
  Trip();
  io_.poll();  // the prober waits for the interval
  next_ = Outcome::kIgnored;
  clock_.Advance(seconds(2));
  prober->Poke();
  io_.poll();  // would never return if the prober asked again at once, forever
  EXPECT_EQ(calls_, 1);
  EXPECT_EQ(breaker_->state(), State::kHalfOpen);
  EXPECT_EQ(prober->stats().last_outcome, Outcome::kIgnored);
  next_ = Outcome::kSuccess;
  prober->Poke();  // a poke ends the wait
  io_.poll();
  EXPECT_EQ(calls_, 2);
  EXPECT_EQ(breaker_->state(), State::kClosed);
  prober->Stop();
  io_.poll();
}

TEST_F(ProberTest, AtMostOneProbeInFlightAndStopCancelsIt) {
  auto prober = Prober::Start(io_.get_executor(), *breaker_, Op());
  Trip();
  hold_ = true;
  clock_.Advance(seconds(2));
  prober->Poke();
  io_.poll();
  ASSERT_EQ(calls_, 1);
  for (int i = 0; i < 5; ++i) {
    prober->Poke();
    io_.poll();
  }
  EXPECT_EQ(calls_, 1);
  EXPECT_TRUE(prober->stats().running);
  EXPECT_EQ(breaker_->Snapshot().probes_in_flight, 1U);
  prober->Stop();
  io_.poll();
  EXPECT_FALSE(prober->stats().running);
  EXPECT_EQ(prober->stats().last_outcome, Outcome::kIgnored);
  EXPECT_EQ(breaker_->Snapshot().probes_in_flight, 0U);  // the slot is free again
  EXPECT_TRUE(io_.stopped());
}

TEST_F(ProberTest, AnIdleProberStopsWhenItsBreakerIsDestroyed) {
  auto prober = Prober::Start(io_.get_executor(), *breaker_, Op());
  io_.poll();
  breaker_.reset();
  io_.poll();
  EXPECT_TRUE(io_.stopped());  // the loop learned of the breaker's end and returned
  prober->Stop();              // and stopping later touches nothing
  prober.reset();
}

TEST_F(ProberTest, DestroyingTheProberStopsItsLoop) {
  auto prober = Prober::Start(io_.get_executor(), *breaker_, Op());
  Trip();
  io_.poll();
  prober.reset();
  io_.poll();
  EXPECT_TRUE(io_.stopped());
  clock_.Advance(seconds(2));
  EXPECT_EQ(calls_, 0);
  EXPECT_EQ(breaker_->state(), State::kOpen);  // nobody probes any more
}

}  // namespace
}  // namespace fusebox::asio

#include "fusebox/asio.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include "fusebox/circuit_breaker.h"
#include "fusebox/clock.h"
#include "fusebox/events.h"
#include "fusebox/outcome.h"
#include "fusebox/random.h"
#include "fusebox/retry.h"
#include "fusebox/status.h"
#include "fusebox/testing/manual_clock.h"

namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;
using fusebox::CallContext;
using fusebox::CallOptions;
using fusebox::CircuitBreaker;
using fusebox::CircuitBreakerConfig;
using fusebox::Outcome;
using fusebox::ReasonCode;
using fusebox::Result;
using fusebox::State;

// Asio timers run in real time. Calls that must complete get a budget no loaded machine (or
// sanitizer) gets near; calls that must time out get a short one. Results are asserted by
// outcome: a test never waits for anything but the io_context running out of work.
constexpr fusebox::Duration kBudget = 10s;
constexpr fusebox::Duration kShortBudget = 40ms;
// Only a broken implementation gets near this: it bounds a hung test.
constexpr auto kSafetyCap = 20s;

std::unique_ptr<CircuitBreaker> MakeBreaker(CircuitBreakerConfig config, fusebox::Clock& clock) {
  auto created = CircuitBreaker::Create("asio-test", std::move(config), {.clock = &clock});
  if (!created) {
    ADD_FAILURE() << created.error().message;
    return nullptr;
  }
  return std::move(created).value();
}

CircuitBreakerConfig Config() {
  CircuitBreakerConfig config;
  config.call_timeout = kBudget;
  config.failure_threshold = 100;
  return config;
}

// How a driven call ended: its Result, or the exception it threw.
template <typename T>
struct Completion {
  std::optional<Result<T>> result;
  std::exception_ptr error;
  bool done = false;
};

// Runs `call` as a coroutine on `io` (on this thread) until the io_context runs out of work.
// `slot` is the caller's cancellation slot.
template <typename T>
Completion<T> Drive(net::io_context& io, net::awaitable<Result<T>> call,
                    net::cancellation_slot slot = {}) {
  Completion<T> completion;
  net::co_spawn(
      io,
      [&completion, call = std::move(call)]() mutable -> net::awaitable<void> {
        completion.result.emplace(co_await std::move(call));
      },
      net::bind_cancellation_slot(slot, [&completion](std::exception_ptr error) {
        completion.error = error;
        completion.done = true;
      }));
  io.run_for(kSafetyCap);
  io.restart();
  return completion;
}

template <typename T>
net::awaitable<T> Value(T value) {
  co_return value;
}

// An upstream that never answers: waits an hour unless cancelled, and reports the cancellation.
net::awaitable<int> WaitAnHour(bool& observed_cancel) {
  net::steady_timer timer(co_await net::this_coro::executor, 1h);
  try {
    co_await timer.async_wait(net::use_awaitable);
  } catch (const boost::system::system_error& e) {
    observed_cancel = e.code() == net::error::operation_aborted;
    throw;
  }
  co_return 1;
}

net::awaitable<int> Throw() {
  throw std::runtime_error("connection reset");
  co_return 0;
}

Outcome FailOn503(const int& status) {
  return status == 503 ? Outcome::kFailure : Outcome::kSuccess;
}

// Trips `breaker` (failure_threshold = 1) with one failed call.
void Trip(net::io_context& io, CircuitBreaker& breaker) {
  auto tripped =
      Drive(io, fusebox::asio::Run(breaker, [](const CallContext&) { return Value(false); }));
  ASSERT_TRUE(tripped.result);
  ASSERT_FALSE(*tripped.result);
  ASSERT_EQ(breaker.state(), State::kOpen);
}

TEST(AsioRunTest, ReturnsValueAndRecordsSuccess) {
  fusebox::PreciseMonotonicClock clock;
  auto breaker = MakeBreaker(Config(), clock);
  net::io_context io;

  auto done = Drive(io, fusebox::asio::Run(
                            *breaker, [](const CallContext&) { return Value(200); }, FailOn503));

  ASSERT_TRUE(done.result);
  ASSERT_TRUE(*done.result);
  EXPECT_EQ(**done.result, 200);
  const auto m = breaker->Snapshot();
  EXPECT_EQ(m.succeeded, 1U);
  EXPECT_EQ(m.failed, 0U);
  EXPECT_EQ(m.timeouts, 0U);
}

TEST(AsioRunTest, PassesDeadlineAndProbeFlagToOp) {
  fusebox::testing::ManualClock clock(fusebox::TimePoint(5s));
  auto breaker = MakeBreaker(Config(), clock);
  net::io_context io;
  std::optional<CallContext> seen;

  auto done = Drive(io, fusebox::asio::Run(*breaker, [&seen](const CallContext& ctx) {
                      seen = ctx;
                      return Value(true);
                    }));

  ASSERT_TRUE(done.result);
  ASSERT_TRUE(seen);
  EXPECT_EQ(seen->deadline, fusebox::TimePoint(5s) + kBudget);
  EXPECT_FALSE(seen->probe);
}

TEST(AsioRunTest, CancelsOpAndRecordsTimeoutWhenBudgetRunsOut) {
  fusebox::PreciseMonotonicClock clock;
  auto config = Config();
  config.call_timeout = kShortBudget;
  auto breaker = MakeBreaker(config, clock);
  net::io_context io;
  bool observed_cancel = false;

  auto done =
      Drive(io, fusebox::asio::Run(
                    *breaker,
                    [&observed_cancel](const CallContext&) { return WaitAnHour(observed_cancel); },
                    FailOn503));

  ASSERT_TRUE(done.result);
  ASSERT_FALSE(*done.result);
  EXPECT_EQ(done.result->error().code, ReasonCode::kUpstreamSlow);
  EXPECT_TRUE(observed_cancel);
  EXPECT_EQ(done.error, nullptr);  // the op's operation_aborted is not the caller's business
  const auto m = breaker->Snapshot();
  EXPECT_EQ(m.timeouts, 1U);
  EXPECT_EQ(m.failed, 1U);
  EXPECT_EQ(m.ignored, 0U);
}

TEST(AsioRunTest, ValueReturnedAtTheDeadlineIsATimeout) {
  fusebox::testing::ManualClock clock;
  auto breaker = MakeBreaker(Config(), clock);
  net::io_context io;

  auto done = Drive(io, fusebox::asio::Run(
                            *breaker,
                            [&clock](const CallContext& ctx) {
                              clock.Set(ctx.deadline);  // the upstream took the whole budget
                              return Value(200);
                            },
                            FailOn503));

  ASSERT_TRUE(done.result);
  ASSERT_FALSE(*done.result);
  EXPECT_EQ(done.result->error().code, ReasonCode::kUpstreamSlow);
  EXPECT_EQ(breaker->Snapshot().timeouts, 1U);
}

TEST(AsioRunTest, ReturnsUpstreamErrorWhenClassifierSaysFailure) {
  fusebox::PreciseMonotonicClock clock;
  auto breaker = MakeBreaker(Config(), clock);
  net::io_context io;

  auto done = Drive(io, fusebox::asio::Run(
                            *breaker, [](const CallContext&) { return Value(503); }, FailOn503));

  ASSERT_TRUE(done.result);
  ASSERT_FALSE(*done.result);
  EXPECT_EQ(done.result->error().code, ReasonCode::kUpstreamError);
  const auto m = breaker->Snapshot();
  EXPECT_EQ(m.failed, 1U);
  EXPECT_EQ(m.timeouts, 0U);
  EXPECT_EQ(m.consecutive_failures, 1U);
}

TEST(AsioRunTest, BoolOverloadCountsFalseAsFailure) {
  fusebox::PreciseMonotonicClock clock;
  auto breaker = MakeBreaker(Config(), clock);
  net::io_context io;

  auto done =
      Drive(io, fusebox::asio::Run(*breaker, [](const CallContext&) { return Value(false); }));

  ASSERT_TRUE(done.result);
  ASSERT_FALSE(*done.result);
  EXPECT_EQ(done.result->error().code, ReasonCode::kUpstreamError);
  EXPECT_EQ(breaker->Snapshot().failed, 1U);
}

TEST(AsioRunTest, ClassifierIgnoredReturnsCancelled) {
  fusebox::PreciseMonotonicClock clock;
  auto breaker = MakeBreaker(Config(), clock);
  net::io_context io;

  auto done = Drive(io, fusebox::asio::Run(
                            *breaker, [](const CallContext&) { return Value(499); },
                            [](const int&) { return Outcome::kIgnored; }));

  ASSERT_TRUE(done.result);
  ASSERT_FALSE(*done.result);
  EXPECT_EQ(done.result->error().code, ReasonCode::kCancelled);
  const auto m = breaker->Snapshot();
  EXPECT_EQ(m.ignored, 1U);
  EXPECT_EQ(m.failed, 0U);
}

TEST(AsioRunTest, RejectsAtOnceWhenOpenWithoutRunningOp) {
  fusebox::PreciseMonotonicClock clock;
  auto config = Config();
  config.failure_threshold = 1;
  config.cooldown = 1min;
  auto breaker = MakeBreaker(config, clock);
  net::io_context io;
  Trip(io, *breaker);
  bool ran = false;

  auto done = Drive(io, fusebox::asio::Run(*breaker, [&ran](const CallContext&) {
                      ran = true;
                      return Value(true);
                    }));

  ASSERT_TRUE(done.result);
  ASSERT_FALSE(*done.result);
  EXPECT_EQ(done.result->error().code, ReasonCode::kCircuitOpen);
  EXPECT_GT(done.result->error().retry_after, fusebox::Duration::zero());
  EXPECT_FALSE(ran);
  const auto m = breaker->Snapshot();
  EXPECT_EQ(m.rejected_open, 1U);
  EXPECT_EQ(m.allowed, 1U);  // only the call that tripped it
}

TEST(AsioRunTest, CallerCancellationCancelsOpAndRecordsIgnored) {
  fusebox::PreciseMonotonicClock clock;
  auto config = Config();
  config.call_timeout = 1h;  // only the caller can end this call
  auto breaker = MakeBreaker(config, clock);
  net::io_context io;
  net::cancellation_signal caller;
  bool observed_cancel = false;

  auto done =
      Drive(io,
            fusebox::asio::Run(
                *breaker,
                [&](const CallContext&) {
                  // The caller gives up while the op is pending.
                  net::post(io, [&caller] { caller.emit(net::cancellation_type::terminal); });
                  return WaitAnHour(observed_cancel);
                },
                FailOn503),
            caller.slot());

  ASSERT_TRUE(done.result);
  ASSERT_FALSE(*done.result);
  EXPECT_EQ(done.result->error().code, ReasonCode::kCancelled);
  EXPECT_TRUE(observed_cancel);
  const auto m = breaker->Snapshot();
  EXPECT_EQ(m.ignored, 1U);
  EXPECT_EQ(m.failed, 0U);
  EXPECT_EQ(m.timeouts, 0U);
}

TEST(AsioRunTest, StopRequestFromAnotherThreadCancelsOpAndRecordsIgnored) {
  fusebox::PreciseMonotonicClock clock;
  auto config = Config();
  config.call_timeout = 1h;
  auto breaker = MakeBreaker(config, clock);
  net::io_context io;
  std::stop_source source;
  std::optional<std::jthread> stopper;
  bool observed_cancel = false;

  auto done = Drive(io, fusebox::asio::Run(
                            *breaker,
                            [&](const CallContext& ctx) {
                              EXPECT_TRUE(ctx.stop_token.stop_possible());
                              stopper.emplace([&source] { source.request_stop(); });
                              return WaitAnHour(observed_cancel);
                            },
                            FailOn503, CallOptions{.stop_token = source.get_token()}));
  stopper.reset();

  ASSERT_TRUE(done.result);
  ASSERT_FALSE(*done.result);
  EXPECT_EQ(done.result->error().code, ReasonCode::kCancelled);
  EXPECT_TRUE(observed_cancel);
  EXPECT_EQ(breaker->Snapshot().ignored, 1U);
}

TEST(AsioRunTest, AlreadyStoppedCallerIsNotAdmitted) {
  fusebox::PreciseMonotonicClock clock;
  auto breaker = MakeBreaker(Config(), clock);
  net::io_context io;
  std::stop_source source;
  source.request_stop();
  bool ran = false;

  auto done = Drive(io, fusebox::asio::Run(
                            *breaker,
                            [&ran](const CallContext&) {
                              ran = true;
                              return Value(true);
                            },
                            CallOptions{.stop_token = source.get_token()}));

  ASSERT_TRUE(done.result);
  ASSERT_FALSE(*done.result);
  EXPECT_EQ(done.result->error().code, ReasonCode::kCancelled);
  EXPECT_FALSE(ran);
  EXPECT_EQ(breaker->Snapshot().calls, 0U);
}

TEST(AsioRunAdmittedTest, RunsUnderTheHeldPermitAndRecordsItsOutcome) {
  fusebox::testing::ManualClock clock(fusebox::TimePoint(5s));
  auto breaker = MakeBreaker(Config(), clock);
  net::io_context io;
  auto permit = breaker->TryAcquire();
  ASSERT_TRUE(permit);
  clock.Advance(2s);  // the call is handed over later: its budget still ends at the permit's
  std::optional<CallContext> seen;

  auto done = Drive(io, fusebox::asio::RunAdmitted(
                            *breaker, std::move(*permit),
                            [&seen](const CallContext& ctx) {
                              seen = ctx;
                              return Value(503);
                            },
                            FailOn503));

  ASSERT_TRUE(done.result);
  ASSERT_FALSE(*done.result);
  EXPECT_EQ(done.result->error().code, ReasonCode::kUpstreamError);
  ASSERT_TRUE(seen);
  EXPECT_EQ(seen->deadline, fusebox::TimePoint(5s) + kBudget);
  const auto m = breaker->Snapshot();
  EXPECT_EQ(m.calls, 1U);  // one permit, one outcome: RunAdmitted asked for no second one
  EXPECT_EQ(m.failed, 1U);
  EXPECT_EQ(m.ignored, 0U);
}

TEST(AsioRunAdmittedTest, BudgetCountsFromThePermitNotFromTheHandOver) {
  fusebox::testing::ManualClock clock;
  auto breaker = MakeBreaker(Config(), clock);
  net::io_context io;
  auto permit = breaker->TryAcquire();
  ASSERT_TRUE(permit);
  clock.Advance(kBudget);  // spent waiting before the call started

  // Whether op gets to run before the zero budget fires is a race; either way it is a timeout.
  auto done = Drive(io, fusebox::asio::RunAdmitted(
                            *breaker, std::move(*permit),
                            [](const CallContext&) { return Value(200); }, FailOn503));

  ASSERT_TRUE(done.result);
  ASSERT_FALSE(*done.result);
  EXPECT_EQ(done.result->error().code, ReasonCode::kUpstreamSlow);
  EXPECT_EQ(breaker->Snapshot().timeouts, 1U);
}

TEST(AsioRunAdmittedTest, StoppedCallerReleasesTheProbeSlotItHeld) {
  fusebox::testing::ManualClock clock;
  auto config = Config();
  config.failure_threshold = 1;
  config.cooldown = 10s;
  config.half_open_max_probes = 1;
  auto breaker = MakeBreaker(config, clock);
  net::io_context io;
  Trip(io, *breaker);
  clock.Advance(10s);
  auto probe = breaker->TryAcquire();
  ASSERT_TRUE(probe);
  ASSERT_TRUE(probe->is_probe());
  std::stop_source source;
  source.request_stop();
  bool ran = false;

  auto done = Drive(io, fusebox::asio::RunAdmitted(
                            *breaker, std::move(*probe),
                            [&ran](const CallContext&) {
                              ran = true;
                              return Value(200);
                            },
                            FailOn503, CallOptions{.stop_token = source.get_token()}));

  ASSERT_TRUE(done.result);
  ASSERT_FALSE(*done.result);
  EXPECT_EQ(done.result->error().code, ReasonCode::kCancelled);
  EXPECT_FALSE(ran);
  EXPECT_EQ(breaker->Snapshot().probes_in_flight, 0U);
  EXPECT_EQ(breaker->state(), State::kHalfOpen);
}

TEST(AsioRunTest, ExceptionRecordsFailureAndIsRethrown) {
  fusebox::PreciseMonotonicClock clock;
  auto breaker = MakeBreaker(Config(), clock);
  net::io_context io;

  auto done = Drive(io, fusebox::asio::Run(
                            *breaker, [](const CallContext&) { return Throw(); }, FailOn503));

  EXPECT_TRUE(done.done);
  EXPECT_FALSE(done.result);
  ASSERT_NE(done.error, nullptr);
  EXPECT_THROW(std::rethrow_exception(done.error), std::runtime_error);
  const auto m = breaker->Snapshot();
  EXPECT_EQ(m.failed, 1U);
  EXPECT_EQ(m.ignored, 0U);
}

TEST(AsioRunTest, CancelledProbeReleasesItsSlot) {
  fusebox::testing::ManualClock clock;
  auto config = Config();
  config.failure_threshold = 1;
  config.cooldown = 10s;
  config.half_open_max_probes = 1;
  auto breaker = MakeBreaker(config, clock);
  net::io_context io;
  Trip(io, *breaker);
  clock.Advance(10s);
  net::cancellation_signal caller;
  bool observed_cancel = false;
  bool was_probe = false;

  auto probe =
      Drive(io,
            fusebox::asio::Run(
                *breaker,
                [&](const CallContext& ctx) {
                  was_probe = ctx.probe;
                  net::post(io, [&caller] { caller.emit(net::cancellation_type::terminal); });
                  return WaitAnHour(observed_cancel);
                },
                FailOn503),
            caller.slot());

  ASSERT_TRUE(probe.result);
  ASSERT_FALSE(*probe.result);
  EXPECT_EQ(probe.result->error().code, ReasonCode::kCancelled);
  EXPECT_TRUE(was_probe);
  EXPECT_TRUE(observed_cancel);
  EXPECT_EQ(breaker->Snapshot().probes_in_flight, 0U);
  // The slot is free: the next call is admitted as a probe and closes the breaker.
  auto next =
      Drive(io, fusebox::asio::Run(*breaker, [](const CallContext&) { return Value(true); }));
  ASSERT_TRUE(next.result);
  EXPECT_TRUE(*next.result);
  EXPECT_EQ(breaker->state(), State::kClosed);
}

TEST(AsioRunTest, TimedOutProbeReopensTheBreaker) {
  fusebox::testing::ManualClock clock;
  auto config = Config();
  config.call_timeout = kShortBudget;
  config.failure_threshold = 1;
  config.cooldown = 10s;
  auto breaker = MakeBreaker(config, clock);
  net::io_context io;
  Trip(io, *breaker);
  clock.Advance(10s);
  bool observed_cancel = false;

  auto probe =
      Drive(io, fusebox::asio::Run(
                    *breaker,
                    [&observed_cancel](const CallContext&) { return WaitAnHour(observed_cancel); },
                    FailOn503));

  ASSERT_TRUE(probe.result);
  ASSERT_FALSE(*probe.result);
  EXPECT_EQ(probe.result->error().code, ReasonCode::kUpstreamSlow);
  EXPECT_TRUE(observed_cancel);
  EXPECT_EQ(breaker->state(), State::kOpen);
  EXPECT_EQ(breaker->Snapshot().wasted_probes, 1U);
}

// Many calls on a two-thread io_context: each records exactly one outcome (run under TSan too).
TEST(AsioRunTest, ConcurrentCallsOnAThreadPoolRecordOneOutcomeEach) {
  // The answering half must complete and the hung half must time out, under one call_timeout.
  // The hung half's permits are taken first and the virtual clock moved on until kShortBudget is
  // left of their budget: they time out after kShortBudget of real time, while the answering
  // half, admitted by Run() on the pool, gets the whole of kBudget.
  fusebox::testing::ManualClock clock;
  auto breaker = MakeBreaker(Config(), clock);
  net::io_context io;
  constexpr int kCalls = 20;
  std::vector<fusebox::Permit> hung_permits;
  for (int i = 0; i < kCalls; i += 2) {
    auto permit = breaker->TryAcquire();
    ASSERT_TRUE(permit);
    hung_permits.push_back(std::move(*permit));
  }
  clock.Advance(kBudget - kShortBudget);
  std::atomic<int> cancelled_ops{0};
  std::atomic<int> completions{0};
  for (int i = 0; i < kCalls; ++i) {
    const bool hang = i % 2 == 0;
    auto op = [&, hang](const CallContext&) -> net::awaitable<int> {
      if (!hang) {
        co_return 200;
      }
      bool observed = false;
      try {
        co_return co_await WaitAnHour(observed);
      } catch (const boost::system::system_error&) {
        cancelled_ops.fetch_add(observed ? 1 : 0);
        throw;
      }
    };
    std::optional<fusebox::Permit> permit;
    if (hang) {
      permit.emplace(std::move(hung_permits[static_cast<std::size_t>(i / 2)]));
    }
    net::co_spawn(
        io,
        [&, hang, op, permit = std::move(permit)]() mutable -> net::awaitable<void> {
          if (hang) {
            auto result =
                co_await fusebox::asio::RunAdmitted(*breaker, std::move(*permit), op, FailOn503);
            EXPECT_FALSE(result);
          } else {
            auto result = co_await fusebox::asio::Run(*breaker, op, FailOn503);
            EXPECT_TRUE(result);
          }
        },
        [&completions](std::exception_ptr error) {
          EXPECT_EQ(error, nullptr);
          completions.fetch_add(1);
        });
  }

  std::jthread other([&io] { io.run_for(kSafetyCap); });
  io.run_for(kSafetyCap);
  other.join();

  EXPECT_EQ(completions.load(), kCalls);
  EXPECT_EQ(cancelled_ops.load(), kCalls / 2);
  const auto m = breaker->Snapshot();
  EXPECT_EQ(m.succeeded, static_cast<std::uint64_t>(kCalls / 2));
  EXPECT_EQ(m.timeouts, static_cast<std::uint64_t>(kCalls / 2));
  EXPECT_EQ(m.succeeded + m.failed + m.ignored, static_cast<std::uint64_t>(kCalls));
}

fusebox::RetryPolicy FastRetries(std::uint32_t attempts, fusebox::Duration backoff) {
  fusebox::RetryPolicy policy;
  policy.max_attempts = attempts;
  policy.initial_backoff = backoff;
  policy.max_backoff = backoff;
  policy.jitter = 0.0;
  return policy;
}

TEST(AsioRunWithRetryTest, RetriesFailuresUntilSuccess) {
  fusebox::PreciseMonotonicClock clock;
  auto breaker = MakeBreaker(Config(), clock);
  fusebox::SplitMix64Random random(7);
  net::io_context io;
  int attempts = 0;

  auto done = Drive(io, fusebox::asio::RunWithRetry(
                            *breaker, FastRetries(3, 1ms), random,
                            [&attempts](const CallContext&) { return Value(++attempts == 3); }));

  ASSERT_TRUE(done.result);
  EXPECT_TRUE(*done.result);
  EXPECT_EQ(attempts, 3);
  const auto m = breaker->Snapshot();
  EXPECT_EQ(m.failed, 2U);
  EXPECT_EQ(m.succeeded, 1U);
}

TEST(AsioRunWithRetryTest, ReturnsLastErrorWhenAttemptsRunOut) {
  fusebox::PreciseMonotonicClock clock;
  auto breaker = MakeBreaker(Config(), clock);
  fusebox::SplitMix64Random random(7);
  net::io_context io;
  int attempts = 0;

  auto done = Drive(io, fusebox::asio::RunWithRetry(
                            *breaker, FastRetries(2, 1ms), random,
                            [&attempts](const CallContext&) {
                              ++attempts;
                              return Value(503);
                            },
                            FailOn503));

  ASSERT_TRUE(done.result);
  ASSERT_FALSE(*done.result);
  EXPECT_EQ(done.result->error().code, ReasonCode::kUpstreamError);
  EXPECT_EQ(attempts, 2);
}

TEST(AsioRunWithRetryTest, BreakerRejectionEndsRetriesWithoutWaiting) {
  fusebox::PreciseMonotonicClock clock;
  auto config = Config();
  config.failure_threshold = 1;
  config.cooldown = 4min;
  auto breaker = MakeBreaker(config, clock);
  fusebox::SplitMix64Random random(7);
  net::io_context io;
  int attempts = 0;

  // The breaker's retry_after (4 min) exceeds the 1 min backoff, so the second attempt is made at
  // once and rejected; waiting out the backoff would hang the test.
  auto done = Drive(io, fusebox::asio::RunWithRetry(*breaker, FastRetries(3, 1min), random,
                                                    [&attempts](const CallContext&) {
                                                      ++attempts;
                                                      return Value(false);
                                                    }));

  ASSERT_TRUE(done.result);
  ASSERT_FALSE(*done.result);
  EXPECT_EQ(done.result->error().code, ReasonCode::kCircuitOpen);
  EXPECT_EQ(attempts, 1);
}

TEST(AsioRunWithRetryTest, CallerCancellationDuringBackoffEndsRetries) {
  fusebox::PreciseMonotonicClock clock;
  auto breaker = MakeBreaker(Config(), clock);
  fusebox::SplitMix64Random random(7);
  net::io_context io;
  net::cancellation_signal caller;
  // When the first attempt's failure is recorded, the caller gives up; the post runs once the
  // retry is waiting out its (one-hour) backoff.
  breaker->AddListener([&](const fusebox::Event& event) {
    if (std::holds_alternative<fusebox::OutcomeEvent>(event.detail)) {
      net::post(io, [&caller] { caller.emit(net::cancellation_type::terminal); });
    }
  });
  int attempts = 0;

  auto done = Drive(io,
                    fusebox::asio::RunWithRetry(*breaker, FastRetries(3, 1h), random,
                                                [&attempts](const CallContext&) {
                                                  ++attempts;
                                                  return Value(false);
                                                }),
                    caller.slot());

  ASSERT_TRUE(done.result);
  ASSERT_FALSE(*done.result);
  EXPECT_EQ(done.result->error().code, ReasonCode::kCancelled);
  EXPECT_EQ(attempts, 1);
  const auto m = breaker->Snapshot();
  EXPECT_EQ(m.failed, 1U);
  EXPECT_EQ(m.ignored, 0U);
}

}  // namespace

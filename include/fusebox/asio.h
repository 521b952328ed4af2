// fusebox/asio.h: the guarded call for Boost.Asio C++20 coroutines (target fusebox::asio).
//
// `co_await fusebox::asio::Run(breaker, op, classify, options)` is CircuitBreaker::Call for code
// that must never block a thread: op is an awaitable, and the breaker's budget is enforced by
// cancelling it, not by hoping it honours its deadline. RunAdmitted runs a permit the caller
// already took; RunWithRetry adds RetryPolicy's backoff. The race, and why the timeout is recorded
// before op winds down: docs/composition.md ("Asynchronous calls").
//
// Thread safety: Run never blocks a thread. op, the budget timer and the stop wait run on the
// awaiting coroutine's executor, so a multi-threaded io_context is fine; options.stop_token may be
// stopped from any thread. The breaker must outlive the call. The budget is measured on the
// breaker's Clock and waited on a steady_timer (real time).
//
// Example:
//   boost::asio::awaitable<fusebox::Result<Reply>> GetShipping(fusebox::CircuitBreaker& breaker,
//                                                               tcp::socket& socket) {
//     co_return co_await fusebox::asio::Run(
//         breaker,
//         [&](const fusebox::CallContext&) -> boost::asio::awaitable<Reply> {
//           co_await boost::asio::async_write(socket, request, boost::asio::use_awaitable);
//           co_return co_await ReadReply(socket);  // aborted when the budget runs out
//         },
//         [](const Reply& r) {
//           return r.status < 500 ? fusebox::Outcome::kSuccess : fusebox::Outcome::kFailure;
//         });
//   }
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <stop_token>
#include <type_traits>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>

#include "fusebox/circuit_breaker.h"
#include "fusebox/clock.h"
#include "fusebox/outcome.h"
#include "fusebox/random.h"
#include "fusebox/retry.h"
#include "fusebox/status.h"

namespace fusebox::asio {
namespace internal {

template <typename Awaitable>
struct AwaitableValue {};

template <typename T>
struct AwaitableValue<boost::asio::awaitable<T>> {
  using type = T;
};

// T of an op returning boost::asio::awaitable<T>.
template <typename Op>
using OpValueT = typename AwaitableValue<std::invoke_result_t<Op&, const CallContext&>>::type;

// `(const CallContext&) -> boost::asio::awaitable<T>` with T not void.
template <typename Op>
concept GuardedOp = std::is_invocable_v<Op&, const CallContext&> &&
                    requires { typename OpValueT<Op>; } && !std::is_void_v<OpValueT<Op>>;

// What op produced: a value, an exception, or nothing (it was cancelled before it started).
template <typename T>
struct OpOutput {
  std::optional<T> value;
  std::exception_ptr error;
};

// Runs op as its own thread of execution. Catches everything, so that the parallel group never
// needs a default-constructible T (co_spawn of awaitable<T> does).
template <typename T, typename Op>
boost::asio::awaitable<void> InvokeOp(Op& op, const CallContext& ctx, OpOutput<T>& out) {
  try {
    out.value.emplace(co_await std::invoke(op, ctx));
  } catch (...) {
    out.error = std::current_exception();
  }
}

// Waits for the budget. Records the timeout the moment it runs out (not when op has finished
// winding down), so the permit and any probe slot are released on time.
inline boost::asio::awaitable<void> ExpireAt(boost::asio::steady_timer& timer, Permit& permit,
                                             bool& timed_out) {
  auto [ec] = co_await timer.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
  if (!ec) {
    timed_out = true;
    permit.Record(Outcome::kTimeout);
  }
}

// A std::stop_token as an Asio wait. The stop request may come from any thread, so it goes
// through a concurrent (mutex-guarded) channel whose receive completes on the waiter's executor;
// the one-slot buffer keeps a request that arrives before the wait starts.
class StopWait {
 public:
  StopWait(const boost::asio::any_io_executor& executor, std::stop_token token)
      : channel_(executor, 1), callback_(std::move(token), Notify{&channel_}) {}
  StopWait(const StopWait&) = delete;
  StopWait& operator=(const StopWait&) = delete;
  ~StopWait() = default;

  // Completes when the token is stop-requested, or with an error when cancelled.
  auto Wait() { return channel_.async_receive(boost::asio::deferred); }

 private:
  using Channel = boost::asio::experimental::concurrent_channel<void(boost::system::error_code)>;
  struct Notify {
    Channel* channel;
    void operator()() const noexcept { channel->try_send(boost::system::error_code{}); }
  };

  Channel channel_;  // declared first: the callback, which uses it, is destroyed first
  std::stop_callback<Notify> callback_;
};

inline bool StopRequested(const CallOptions& options) noexcept {
  return options.stop_token.stop_requested();
}

inline bool Cancelled(const boost::asio::cancellation_state& state) noexcept {
  return state.cancelled() != boost::asio::cancellation_type::none;
}

struct BoolClassify {
  template <typename T>
  Outcome operator()(const T& result) const {
    return static_cast<bool>(result) ? Outcome::kSuccess : Outcome::kFailure;
  }
};

}  // namespace internal

// Run() with a permit the caller already holds (from breaker.TryAcquire): the same budget race
// and the same exactly-one outcome, recorded on `admitted`, whose deadline is the budget. For a
// caller that wants to learn cheaply, in its own frame, whether the call may run at all, and
// only then hand the call to another coroutine (vin-gateway turns a rejection away without
// spawning anything). A caller already cancelled when RunAdmitted starts gets kCancelled and the
// permit records kIgnored. `admitted` must come from `breaker`.
template <typename Op, typename Classify>
  requires internal::GuardedOp<Op> &&
           std::is_invocable_r_v<Outcome, Classify&, const internal::OpValueT<Op>&>
auto RunAdmitted(CircuitBreaker& breaker, Permit admitted, Op op, Classify classify,
                 CallOptions options = {})
    -> boost::asio::awaitable<Result<internal::OpValueT<Op>>> {
  using T = internal::OpValueT<Op>;
  namespace net = boost::asio;

  // Held in an optional so that the code below reads like Run's (permit->Record...).
  std::optional<Permit> permit(std::move(admitted));
  const net::cancellation_state cancel_state = co_await net::this_coro::cancellation_state;
  if (internal::Cancelled(cancel_state) || internal::StopRequested(options)) {
    permit->Record(Outcome::kIgnored);
    co_return Error{ReasonCode::kCancelled};
  }
  const CallContext ctx{permit->deadline(), options.stop_token, permit->is_probe(),
                        &breaker.clock()};
  const net::any_io_executor executor = co_await net::this_coro::executor;

  net::steady_timer timer(executor);
  timer.expires_after(std::max(Duration::zero(), ctx.deadline - breaker.clock().Now()));
  internal::StopWait stop(executor, options.stop_token);
  internal::OpOutput<T> out;
  bool timed_out = false;
  try {
    // wait_for_one: the first of the three to finish cancels the other two (terminal), and the
    // group completes once all three have finished, so op never outlives this frame.
    co_await net::experimental::make_parallel_group(
        net::co_spawn(executor, internal::InvokeOp<T>(op, ctx, out), net::deferred),
        net::co_spawn(executor, internal::ExpireAt(timer, *permit, timed_out), net::deferred),
        stop.Wait())
        .async_wait(net::experimental::wait_for_one(net::cancellation_type::terminal),
                    net::use_awaitable);
  } catch (const boost::system::system_error&) {
    // Only the awaitable's throw-if-cancelled check throws here: the caller was cancelled just
    // before the group started, so nothing ran.
    permit->Record(Outcome::kIgnored);
    co_return Error{ReasonCode::kCancelled};
  }

  if (timed_out) {
    co_return Error{ReasonCode::kUpstreamSlow};  // recorded by ExpireAt
  }
  if (internal::Cancelled(cancel_state) || internal::StopRequested(options)) {
    permit->Record(Outcome::kIgnored);
    co_return Error{ReasonCode::kCancelled};
  }
  if (out.error) {
    permit->Record(Outcome::kFailure);
    std::rethrow_exception(out.error);
  }
  if (!out.value) {
    // op was cancelled before it started, which only a stop or a caller cancellation does (both
    // handled above); kept so that every path records exactly one outcome.
    permit->Record(Outcome::kIgnored);
    co_return Error{ReasonCode::kCancelled};
  }
  if (breaker.clock().Now() >= ctx.deadline) {
    permit->Record(Outcome::kTimeout);
    co_return Error{ReasonCode::kUpstreamSlow};
  }
  const Outcome outcome = std::invoke(classify, std::as_const(*out.value));
  permit->Record(outcome);
  switch (outcome) {
    case Outcome::kSuccess:
      co_return std::move(*out.value);
    case Outcome::kFailure:
      co_return Error{ReasonCode::kUpstreamError};
    case Outcome::kTimeout:
      co_return Error{ReasonCode::kUpstreamSlow};
    case Outcome::kIgnored:
      break;
  }
  co_return Error{ReasonCode::kCancelled};
}

// The asynchronous guarded call. Acquires a permit with options.priority (a refusal returns its
// Error at once, no work), runs `op(ctx)` with ctx = {permit deadline, options.stop_token, is
// probe}, and records exactly one outcome, as CircuitBreaker::Call does:
//   - the budget ran out first (the timer fired, or op returned at or after its deadline by the
//     breaker's clock): op gets terminal cancellation, kTimeout is recorded at that instant,
//     returns kUpstreamSlow; op's value or exception is discarded;
//   - the caller cancelled (terminal cancellation through the awaiting coroutine's slot, or
//     options.stop_token stopped before op finished): kIgnored, returns kCancelled; a caller
//     already cancelled when Run starts gets kCancelled without asking the breaker;
//   - op threw: kFailure is recorded and the exception is rethrown;
//   - otherwise classify(result): kSuccess returns the value, kFailure kUpstreamError, kTimeout
//     kUpstreamSlow, kIgnored kCancelled. If classify throws, kIgnored, and it propagates.
// `op` is `(const fusebox::CallContext&) -> boost::asio::awaitable<T>`, T not void, run as its own
// Asio thread of execution: its pending `co_await` fails with operation_aborted when cancelled.
// Run returns only once op has finished (its CallContext stays valid until then). Otherwise never
// throws on the call path.
template <typename Op, typename Classify>
  requires internal::GuardedOp<Op> &&
           std::is_invocable_r_v<Outcome, Classify&, const internal::OpValueT<Op>&>
auto Run(CircuitBreaker& breaker, Op op, Classify classify, CallOptions options = {})
    -> boost::asio::awaitable<Result<internal::OpValueT<Op>>> {
  const boost::asio::cancellation_state cancel_state =
      co_await boost::asio::this_coro::cancellation_state;
  if (internal::Cancelled(cancel_state) || internal::StopRequested(options)) {
    co_return Error{ReasonCode::kCancelled};
  }
  auto permit = breaker.TryAcquire(options.priority);
  if (!permit) {
    co_return permit.error();
  }
  co_return co_await RunAdmitted(breaker, std::move(*permit), std::move(op), std::move(classify),
                                 std::move(options));
}

// Run() for ops whose result converts to bool: true is a success, false a failure.
template <typename Op>
  requires internal::GuardedOp<Op> && std::is_constructible_v<bool, const internal::OpValueT<Op>&>
auto Run(CircuitBreaker& breaker, Op op, CallOptions options = {})
    -> boost::asio::awaitable<Result<internal::OpValueT<Op>>> {
  return Run(breaker, std::move(op), internal::BoolClassify{}, std::move(options));
}

// Up to policy.max_attempts Run()s of op, the asynchronous twin of Retry::Call
// (fusebox/retry.h). Returns:
//   - the first success;
//   - at once, a breaker rejection (kCircuitOpen with retry_after, kCircuitHalfOpen or
//     kCircuitRecovering);
//   - at once, kCancelled (the caller cancelled or classify said kIgnored), also when the caller
//     cancels during a backoff (no further attempt is made);
//   - the last kUpstreamError / kUpstreamSlow when every attempt failed or timed out.
// Between attempts it waits policy.NextBackoff() on a steady_timer, except when the breaker will
// still be open when that wait ends (retry_after() > wait): then the next attempt is made at once,
// so the breaker's own rejection ends the retries without a useless wait. If op throws, that
// attempt is recorded as a failure and the exception propagates: exceptions are never retried.
// Keeps no RetryMetrics (those belong to a Retry object). `random` draws the jitter and must
// outlive the call. Precondition: policy.Validate() passed (Retry::Create checks it).
template <typename Op, typename Classify>
  requires internal::GuardedOp<Op> &&
           std::is_invocable_r_v<Outcome, Classify&, const internal::OpValueT<Op>&>
auto RunWithRetry(CircuitBreaker& breaker, RetryPolicy policy, Random& random, Op op,
                  Classify classify, CallOptions options = {})
    -> boost::asio::awaitable<Result<internal::OpValueT<Op>>> {
  namespace net = boost::asio;
  const net::cancellation_state cancel_state = co_await net::this_coro::cancellation_state;
  const net::any_io_executor executor = co_await net::this_coro::executor;
  for (std::uint32_t attempt = 1;; ++attempt) {
    // op and classify live in this frame; each attempt borrows them.
    auto result = co_await Run(breaker, std::ref(op), std::ref(classify), options);
    if (result) {
      co_return result;
    }
    std::optional<Duration> wait = policy.NextBackoff(attempt, result.error(), random);
    if (!wait) {
      co_return result;
    }
    if (breaker.retry_after() > *wait) {
      wait = Duration::zero();
    }
    if (internal::Cancelled(cancel_state) || internal::StopRequested(options)) {
      co_return Error{ReasonCode::kCancelled};
    }
    if (wait->count() > 0) {
      net::steady_timer timer(executor, *wait);
      internal::StopWait stop(executor, options.stop_token);
      try {
        co_await net::experimental::make_parallel_group(timer.async_wait(net::deferred),
                                                        stop.Wait())
            .async_wait(net::experimental::wait_for_one(net::cancellation_type::terminal),
                        net::use_awaitable);
      } catch (const boost::system::system_error&) {
        co_return Error{ReasonCode::kCancelled};  // throw-if-cancelled: the caller cancelled
      }
    }
    if (internal::Cancelled(cancel_state) || internal::StopRequested(options)) {
      co_return Error{ReasonCode::kCancelled};
    }
  }
}

// RunWithRetry() for ops whose result converts to bool: true is a success, false a failure.
template <typename Op>
  requires internal::GuardedOp<Op> && std::is_constructible_v<bool, const internal::OpValueT<Op>&>
auto RunWithRetry(CircuitBreaker& breaker, RetryPolicy policy, Random& random, Op op,
                  CallOptions options = {})
    -> boost::asio::awaitable<Result<internal::OpValueT<Op>>> {
  return RunWithRetry(breaker, policy, random, std::move(op), internal::BoolClassify{},
                      std::move(options));
}

}  // namespace fusebox::asio

// fusebox/asio_prober.h: a breaker's HALF_OPEN probes, run by the breaker's owner on Boost.Asio.
//
// With `probe_mode = active` no user's call is ever the probe: a Prober probes on the breaker's
// schedule (docs/breaker-rules.md, "Active probing"), one probe at a time, under the fleet's
// probe lease when the breaker is linked (fusebox/fleet.h), so a fleet sends one probe per
// interval in all. In passive mode it waits (a live Reconfigure may switch modes either way).
//
//   CLOSED:    idle (woken by the breaker's transitions, not by polling)
//   OPEN:      wait out CircuitBreaker::TryAcquireProbe's retry_after, then ask again
//   HALF_OPEN: run the probe op under the probe's budget (enforced by cancellation, as
//              fusebox::asio::RunAdmitted does); its Outcome is the probe's
//
// Thread safety: every member may be called from any thread; the loop runs on a strand of the
// executor given. Waits are the breaker's retry_after on its Clock, waited on a steady_timer: with
// a testing::ManualClock, advance the clock and call Poke(). Lifetime: Stop() (or the destructor)
// ends the loop and cancels a probe in flight (kIgnored). The breaker must outlive a probe in
// flight (stop the prober and let its io_context finish first); an idle prober may outlive its
// breaker, which tells it of its end (destroy the breaker on the prober's executor or after the
// io_context has stopped).
//
// Example:
//   auto prober = fusebox::asio::Prober::Start(io.get_executor(), breaker,
//       [&](const fusebox::CallContext&) -> boost::asio::awaitable<fusebox::Outcome> {
//         co_return (co_await client.Get("/health")).ok() ? fusebox::Outcome::kSuccess
//                                                         : fusebox::Outcome::kFailure;
//       });
//   ...
//   prober->Stop();
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "fusebox/asio.h"
#include "fusebox/circuit_breaker.h"
#include "fusebox/outcome.h"
#include "fusebox/status.h"
#include "fusebox/thread_annotations.h"

namespace fusebox::asio {

// What the prober has done, for /status and metrics.
struct ProberStats {
  std::uint64_t sent = 0;                     // probes started
  std::array<std::uint64_t, 4> by_outcome{};  // recorded outcomes, indexed by Outcome
  std::optional<Outcome> last_outcome;        // of the last finished probe
  Duration last_latency{};                    // its duration (to its outcome or its budget)
  TimePoint last_at{};                        // when it started (breaker clock)
  std::optional<TimePoint> next_probe;        // when the next is due (breaker clock); none: idle
  bool running = false;                       // a probe is in flight
};

class Prober {
 public:
  // The probe. Receives the probe's CallContext (deadline = start + probe_budget, is probe);
  // returns the outcome to record (a timeout is recorded by the budget, as in RunAdmitted). An
  // exception records kFailure.
  using ProbeOp = std::function<boost::asio::awaitable<Outcome>(const CallContext&)>;
  // Told of every finished probe (on the prober's strand): the outcome recorded and how long the
  // probe took. For logs and metrics; must not block.
  using ProbeDone = std::function<void(Outcome outcome, Duration latency)>;

  // Starts the loop on a strand of `executor`.
  static std::shared_ptr<Prober> Start(const boost::asio::any_io_executor& executor,
                                       CircuitBreaker& breaker, ProbeOp op,
                                       ProbeDone on_done = {}) {
    auto prober =
        std::shared_ptr<Prober>(new Prober(executor, breaker, std::move(op), std::move(on_done)));
    prober->Launch();
    return prober;
  }

  ~Prober() {
    try {
      Stop();
    } catch (...) {  // NOLINT(bugprone-empty-catch): out of memory posting the stop; the loop
                     // then ends with its io_context, and no destructor may throw
    }
  }
  Prober(const Prober&) = delete;
  Prober& operator=(const Prober&) = delete;

  // Ends the loop (idempotent): a waiting loop ends at once, a probe in flight is cancelled.
  void Stop() {
    {
      Locked lock(state_->mu);
      if (state_->stopped) {
        return;
      }
      state_->stopped = true;
    }
    boost::asio::post(state_->strand, [state = state_] {
      state->cancel.emit(boost::asio::cancellation_type::terminal);
      state->timer.cancel();
    });
    CircuitBreaker* breaker = nullptr;
    {
      Locked lock(state_->mu);
      breaker = state_->breaker;
    }
    // Outside the lock: removing the observer destroys it, and its Detach takes the lock.
    if (breaker != nullptr && state_->observer_id != 0) {
      breaker->RemoveTransitionObserver(state_->observer_id);
    }
  }

  // Makes the loop look at the breaker now rather than at the end of its wait.
  void Poke() { Wake(state_); }

  ProberStats stats() const {
    Locked lock(state_->mu);
    return state_->stats;
  }

 private:
  struct State {
    State(const boost::asio::any_io_executor& executor, CircuitBreaker& b, ProbeOp probe,
          ProbeDone done)
        : strand(boost::asio::make_strand(executor)),
          timer(strand),
          breaker(&b),
          op(std::move(probe)),
          on_done(std::move(done)) {}
    boost::asio::strand<boost::asio::any_io_executor> strand;
    boost::asio::steady_timer timer;          // on the strand
    boost::asio::cancellation_signal cancel;  // on the strand
    bool woken = false;                       // on the strand: a wake came while not waiting
    mutable Mutex mu;
    CircuitBreaker* breaker FUSEBOX_GUARDED_BY(mu);  // null once the breaker is destroyed
    bool stopped FUSEBOX_GUARDED_BY(mu) = false;
    ProberStats stats FUSEBOX_GUARDED_BY(mu);
    ListenerId observer_id = 0;
    ProbeOp op;
    ProbeDone on_done;
  };

  // Lives in the breaker's observer: when the breaker destroys its observers (its own end), the
  // prober forgets it.
  struct Detach {
    std::weak_ptr<State> state;
    explicit Detach(std::weak_ptr<State> s) : state(std::move(s)) {}
    Detach(const Detach&) = delete;
    Detach& operator=(const Detach&) = delete;
    ~Detach() {
      try {
        if (auto s = state.lock()) {
          {
            Locked lock(s->mu);
            s->breaker = nullptr;
          }
          Wake(s);
        }
      } catch (...) {  // NOLINT(bugprone-empty-catch): the wake could not be posted (out of
                       // memory); the loop sees the null breaker at its next step anyway
      }
    }
  };

  Prober(const boost::asio::any_io_executor& executor, CircuitBreaker& breaker, ProbeOp op,
         ProbeDone on_done)
      : state_(std::make_shared<State>(executor, breaker, std::move(op), std::move(on_done))) {}

  static void Wake(const std::shared_ptr<State>& state) {
    boost::asio::post(state->strand, [state] {
      state->woken = true;
      state->timer.cancel();
    });
  }

  void Launch() {
    auto detach = std::make_shared<Detach>(state_);
    std::weak_ptr<State> weak = state_;
    CircuitBreaker* breaker = nullptr;
    {
      Locked lock(state_->mu);
      breaker = state_->breaker;
    }
    state_->observer_id = breaker->AddTransitionObserver([weak, detach](const TransitionEvent&) {
      if (auto s = weak.lock()) {
        Wake(s);
      }
    });
    // The completion handler keeps the state (and the cancellation signal in it) alive until
    // co_spawn is done with both.
    boost::asio::co_spawn(
        state_->strand, Loop(state_),
        boost::asio::bind_cancellation_slot(state_->cancel.slot(),
                                            [state = state_](const std::exception_ptr&) {}));
  }

  // Waits `wait` (none: until woken); returns early when woken.
  static boost::asio::awaitable<void> Sleep(State& s, std::optional<Duration> wait) {
    if (s.woken) {
      s.woken = false;
      co_return;
    }
    if (wait) {
      s.timer.expires_after(std::max(Duration::zero(), *wait));
    } else {
      s.timer.expires_at(boost::asio::steady_timer::time_point::max());
    }
    boost::system::error_code ec;
    co_await s.timer.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
    s.woken = false;
  }

  static boost::asio::awaitable<void> Loop(std::shared_ptr<State> state) {
    State& s = *state;
    for (;;) {
      CircuitBreaker* breaker = nullptr;
      {
        Locked lock(s.mu);
        if (s.stopped || s.breaker == nullptr) {
          s.stats.next_probe.reset();
          co_return;
        }
        breaker = s.breaker;
      }
      if (breaker->config().probe_mode != ProbeMode::kActive) {
        // Passive mode: callers probe. Look again at the next transition, or within a second
        // while the breaker is not CLOSED (a reload may switch it to active while it is open).
        {
          Locked lock(s.mu);
          s.stats.next_probe.reset();
        }
        std::optional<Duration> wait;
        if (breaker->state() != fusebox::State::kClosed) {
          wait = CircuitBreaker::kProbeRetryHint;
        }
        co_await Sleep(s, wait);
        continue;
      }
      // About to look at the breaker: the wakes so far are answered (on the strand, like them).
      s.woken = false;
      // Not under the lock: the breaker calls its listeners and observers from here, and they may
      // read stats().
      Result<Permit> permit = breaker->TryAcquireProbe();
      {
        Locked lock(s.mu);
        if (!permit) {
          if (permit.error().code == ReasonCode::kCancelled) {
            s.stats.next_probe.reset();  // nothing to probe: idle until a transition
          } else {
            s.stats.next_probe = breaker->clock().Now() + permit.error().retry_after;
          }
        } else {
          s.stats.next_probe.reset();
          s.stats.running = true;
          s.stats.last_at = permit->start();
          ++s.stats.sent;
        }
      }
      if (!permit) {
        std::optional<Duration> wait;
        if (permit.error().code != ReasonCode::kCancelled) {
          wait = permit.error().retry_after;
        }
        co_await Sleep(s, wait);
        continue;
      }
      const TimePoint start = permit->start();
      std::optional<Outcome> recorded;
      auto op = [&s](const CallContext& ctx) -> boost::asio::awaitable<Outcome> {
        co_return co_await s.op(ctx);
      };
      auto classify = [&recorded](const Outcome& outcome) {
        recorded = outcome;
        return outcome;
      };
      Result<Outcome> result = Error{ReasonCode::kCancelled};
      try {
        result = co_await RunAdmitted(*breaker, std::move(*permit), op, classify);
      } catch (...) {
        recorded = Outcome::kFailure;  // RunAdmitted recorded kFailure before rethrowing
      }
      if (!result && result.error().code == ReasonCode::kUpstreamSlow && !recorded) {
        recorded = Outcome::kTimeout;
      }
      if (!recorded) {
        recorded = Outcome::kIgnored;
      }
      const Duration latency = breaker->clock().Now() - start;
      {
        Locked lock(s.mu);
        s.stats.running = false;
        s.stats.last_outcome = *recorded;
        ++s.stats.by_outcome[static_cast<std::size_t>(*recorded)];
        s.stats.last_latency = latency;
      }
      if (s.on_done) {
        try {
          s.on_done(*recorded, latency);
        } catch (...) {  // NOLINT(bugprone-empty-catch): a report must not end the prober
        }
      }
      if (*recorded == Outcome::kIgnored) {
        // The probe taught nothing and left its slot free (a local shortage, a cancellation):
        // asking again at once could spin. The wakes during the probe were its own (its
        // OPEN -> HALF_OPEN); a stop, a poke or a transition from now on ends the wait.
        s.woken = false;
        co_await Sleep(s, CircuitBreaker::kProbeRetryHint);
      }
    }
  }

  std::shared_ptr<State> state_;
};

}  // namespace fusebox::asio

// Property tests: random operation sequences against the breaker's invariants.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "fusebox/circuit_breaker.h"
#include "fusebox/testing/manual_clock.h"

namespace fusebox {
namespace {

using std::chrono::milliseconds;

struct Op {
  enum Kind { kAcquire, kRecord, kAdvance, kOperator, kProbe } kind;
  bool batch = false;
  std::size_t index = 0;  // which held permit to record
  int outcome = 0;        // 0 success, 1 failure, 2 timeout, 3 ignored
  int advance_ms = 0;
  int command = 0;  // 0 force-close, 1 reset, 2 force-open, 3 disable, 4 metrics-only
};

// `operator_weight`: how often an operator command comes, against 6 acquires, 6 records, 4
// clock advances and 2 prober asks (TryAcquireProbe).
rc::Gen<Op> GenOp(int operator_weight = 1) {
  return rc::gen::map(
      rc::gen::tuple(
          rc::gen::weightedElement<int>({{6, 0}, {6, 1}, {4, 2}, {operator_weight, 3}, {2, 4}}),
          rc::gen::arbitrary<bool>(), rc::gen::inRange<std::size_t>(0, 16), rc::gen::inRange(0, 4),
          rc::gen::inRange(0, 25000), rc::gen::inRange(0, 5)),
      [](const auto& t) {
        Op op;
        op.kind = static_cast<Op::Kind>(std::get<0>(t));
        op.batch = std::get<1>(t);
        op.index = std::get<2>(t);
        op.outcome = std::get<3>(t);
        op.advance_ms = std::get<4>(t);
        op.command = std::get<5>(t);
        return op;
      });
}

void Command(CircuitBreaker& breaker, int command) {
  switch (command) {
    case 0:
      breaker.ForceClose();
      break;
    case 1:
      breaker.Reset();
      break;
    case 2:
      breaker.ForceOpen();
      break;
    case 3:
      breaker.Disable();
      break;
    default:
      breaker.MetricsOnly();
      break;
  }
}

CircuitBreakerConfig GenConfig() {
  CircuitBreakerConfig c;
  c.trip = *rc::gen::element(TripPolicy::kConsecutive, TripPolicy::kCountWindow,
                             TripPolicy::kTimeWindow);
  c.failure_threshold = *rc::gen::inRange<std::uint32_t>(1, 6);
  c.window_size = *rc::gen::inRange<std::uint32_t>(1, 20);
  // A count window's gate is at most its size (Validate() refuses more).
  c.minimum_calls = *rc::gen::inRange<std::uint32_t>(
      1, (c.trip == TripPolicy::kCountWindow ? std::min<std::uint32_t>(c.window_size, 9) : 9) + 1);
  c.failure_rate_threshold = *rc::gen::element(0.25, 0.5, 1.0);
  c.call_timeout = milliseconds(*rc::gen::inRange(1000, 10000));
  c.slow_call_duration = milliseconds(*rc::gen::inRange(500, 10000));
  c.slow_call_rate_threshold = *rc::gen::element(0.5, 1.0);
  c.cooldown = milliseconds(*rc::gen::inRange(1000, 20000));
  c.half_open_max_probes = *rc::gen::inRange<std::uint32_t>(1, 4);
  c.half_open_successes = *rc::gen::inRange<std::uint32_t>(1, 4);
  c.batch_may_probe = *rc::gen::arbitrary<bool>();
  c.inflight_slow_accounting = *rc::gen::arbitrary<bool>();
  c.cooldown_multiplier = *rc::gen::element(1.0, 2.0);
  c.cooldown_max = c.cooldown * 4;
  c.recovery_ramp = *rc::gen::element(0, 1) == 0 ? Duration::zero()
                                                 : milliseconds(*rc::gen::inRange(1000, 30000));
  c.recovery_ramp_start = *rc::gen::element(0.1, 0.5, 1.0);
  c.probe_mode = *rc::gen::element(ProbeMode::kPassive, ProbeMode::kActive);
  if (*rc::gen::arbitrary<bool>()) {
    c.probe_interval = milliseconds(*rc::gen::inRange(200, 20000));
  }
  c.probe_interval_max = c.effective_probe_interval() * 4;
  c.probe_budget = milliseconds(*rc::gen::inRange(100, 10000));  // cut to call_timeout
  return c;
}

// Runs `ops` against a breaker built from `config` and checks the invariants after each, then
// replays the events against the state machine's rules.
void CheckInvariants(const CircuitBreakerConfig& config, const std::vector<Op>& ops) {
  fusebox::testing::ManualClock clock;
  auto breaker = CircuitBreaker::Create("prop", config, {.clock = &clock}).value();

  std::vector<Event> events;
  breaker->AddListener([&](const Event& e) { events.push_back(e); });

  std::vector<Permit> held;
  std::vector<std::uint64_t> admitted_generations;
  std::uint64_t calls = 0;
  std::uint64_t admitted = 0;
  std::uint64_t rejected = 0;
  for (const Op& op : ops) {
    switch (op.kind) {
      case Op::kAcquire: {
        const MetricsSnapshot before = breaker->Snapshot();
        ++calls;
        auto permit = breaker->TryAcquire(op.batch ? Priority::kBatch : Priority::kInteractive);
        if (permit) {
          ++admitted;
          // Nothing admitted while OPEN before the cooldown, or while FORCED_OPEN.
          RC_ASSERT(!(before.state == State::kOpen && before.retry_after > Duration::zero()));
          RC_ASSERT(before.state != State::kForcedOpen);
          // With active probing no caller is ever a probe, nor admitted while not CLOSED.
          if (config.probe_mode == ProbeMode::kActive) {
            RC_ASSERT(!permit->is_probe());
            RC_ASSERT(before.state != State::kOpen && before.state != State::kHalfOpen);
          }
          admitted_generations.push_back(permit->generation());
          held.push_back(std::move(permit).value());
        } else {
          ++rejected;
        }
        break;
      }
      case Op::kRecord:
        if (!held.empty()) {
          const std::size_t i = op.index % held.size();
          const Outcome outcome = static_cast<Outcome>(op.outcome);
          held[i].Record(outcome);
          held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
        }
        break;
      case Op::kAdvance:
        clock.Advance(milliseconds(op.advance_ms));
        break;
      case Op::kProbe: {
        const MetricsSnapshot before = breaker->Snapshot();
        auto probe = breaker->TryAcquireProbe();
        if (probe) {
          ++calls;  // an admitted call like any other
          ++admitted;
          RC_ASSERT(probe->is_probe());
          RC_ASSERT(probe->deadline() - probe->start() == config.effective_probe_budget());
          RC_ASSERT(before.state == State::kOpen || before.state == State::kHalfOpen);
          RC_ASSERT(!(before.state == State::kOpen && before.retry_after > Duration::zero()));
          admitted_generations.push_back(probe->generation());
          held.push_back(std::move(probe).value());
        } else if (before.state == State::kClosed || before.state == State::kMetricsOnly ||
                   before.state == State::kDisabled) {
          RC_ASSERT(probe.error().code == ReasonCode::kCancelled);  // nothing to probe
        } else {
          RC_ASSERT(probe.error().retry_after > Duration::zero());  // says when to ask again
        }
        break;
      }
      case Op::kOperator:
        Command(*breaker, op.command);
        break;
    }
    const MetricsSnapshot m = breaker->Snapshot();
    // Never more probes in flight than the cap: as the breaker counts them, and as we do (the
    // probe permits held that belong to the current generation).
    RC_ASSERT(m.probes_in_flight <= config.half_open_max_probes);
    const auto probes_held = std::count_if(held.begin(), held.end(), [&](const Permit& p) {
      return p.is_probe() && p.generation() == m.generation;
    });
    RC_ASSERT(static_cast<std::uint64_t>(probes_held) <= config.half_open_max_probes);
    // allowed + rejected = calls.
    RC_ASSERT(m.calls == calls);
    RC_ASSERT(m.allowed == admitted);
    RC_ASSERT(m.rejected_open + m.rejected_half_open + m.rejected_recovering == rejected);
    // A ramp runs only in CLOSED, only when configured, and shows its progress.
    if (m.recovering) {
      RC_ASSERT(m.state == State::kClosed);
      RC_ASSERT(config.recovery_ramp > Duration::zero());
      RC_ASSERT(m.recovery_progress >= 0.0 && m.recovery_progress < 1.0);
      RC_ASSERT(m.recovery_share > 0.0 && m.recovery_share <= 1.0);
      RC_ASSERT(breaker->recovery_progress() == m.recovery_progress);
    } else {
      RC_ASSERT(!breaker->recovery_progress().has_value());
    }
  }

  // Replay the events: every transition starts where the last ended; CLOSED is reached from
  // OPEN only through HALF_OPEN with enough good probes of that HALF_OPEN generation.
  // HALF_OPEN comes no earlier than the (base) cooldown after OPEN, and no call was admitted in
  // an OPEN or FORCED_OPEN generation (the lazy timeout of an overdue probe included: it reopens
  // the breaker in a new generation before the call that applies it is considered).
  std::optional<State> state = State::kClosed;
  std::map<std::uint64_t, State> state_of_generation{{0, State::kClosed}};
  TimePoint opened_at{};
  std::uint64_t half_open_generation = 0;
  std::uint32_t good = 0;
  std::uint64_t generation = 0;
  // The recovery ramp: it starts right after a close by good probes when configured, and only
  // then; while it runs (until its end), a bad outcome of the current generation reopens the
  // breaker at once (recovery_failed), only a ramp rejects with CIRCUIT_RECOVERING, and it
  // completes at its end exactly.
  std::optional<TimePoint> ramp_end;    // while a ramp runs
  bool expect_ramp_start = false;       // the previous event closed by good probes
  bool expect_recovery_failed = false;  // a bad outcome during the ramp came last
  std::optional<TimePoint> aborted_at;  // a transition ended the ramp: its abort comes next
  for (const Event& e : events) {
    const auto* r = std::get_if<RecoveryEvent>(&e.detail);
    RC_ASSERT(expect_ramp_start == (r != nullptr && r->phase == RecoveryPhase::kStarted));
    expect_ramp_start = false;
    RC_ASSERT(aborted_at.has_value() == (r != nullptr && r->phase == RecoveryPhase::kAborted));
    if (r != nullptr) {
      switch (r->phase) {
        case RecoveryPhase::kStarted:
          RC_ASSERT(r->ramp == config.recovery_ramp);
          RC_ASSERT(r->start_share > 0.0 && r->start_share <= 1.0);
          ramp_end = r->at + r->ramp;
          break;
        case RecoveryPhase::kCompleted:
          RC_ASSERT(ramp_end.has_value());
          RC_ASSERT(r->at == *ramp_end);
          ramp_end.reset();
          break;
        case RecoveryPhase::kAborted:
          RC_ASSERT(r->at == *aborted_at);
          aborted_at.reset();
          break;
      }
      continue;
    }
    if (const auto* j = std::get_if<RejectionEvent>(&e.detail)) {
      if (j->code == ReasonCode::kCircuitRecovering) {
        RC_ASSERT(ramp_end.has_value() && j->at < *ramp_end);
        RC_ASSERT(*state == State::kClosed);
      }
      continue;
    }
    if (const auto* t = std::get_if<TransitionEvent>(&e.detail)) {
      RC_ASSERT(expect_recovery_failed == (t->cause == TransitionCause::kRecoveryFailed));
      expect_recovery_failed = false;
      if (t->cause == TransitionCause::kRecoveryFailed) {
        RC_ASSERT(t->from == State::kClosed && t->to == State::kOpen);
      }
      if (ramp_end.has_value() && t->cause != TransitionCause::kReconfigured) {
        aborted_at = t->at;
        ramp_end.reset();
      }
      if (t->to == State::kClosed && t->cause == TransitionCause::kProbesSucceeded) {
        expect_ramp_start = config.recovery_ramp > Duration::zero();
      }
      RC_ASSERT(t->from == *state);
      state_of_generation[t->generation] = t->to;
      if (t->to == State::kOpen) {
        opened_at = t->at;
      }
      if (t->to == State::kHalfOpen) {
        RC_ASSERT(t->at - opened_at >= config.open_wait());  // the cooldown, or the interval
      }
      if (t->cause != TransitionCause::kOperator) {
        if (t->to == State::kClosed) {
          RC_ASSERT(t->from == State::kHalfOpen);
          RC_ASSERT(t->cause == TransitionCause::kProbesSucceeded);
          RC_ASSERT(good >= config.effective_half_open_successes());
        }
        if (t->to == State::kHalfOpen) {
          RC_ASSERT(t->from == State::kOpen);
        }
      }
      state = t->to;
      generation = t->generation;
      if (t->to == State::kHalfOpen) {
        half_open_generation = generation;
        good = 0;
      }
    } else if (const auto* o = std::get_if<OutcomeEvent>(&e.detail)) {
      if (o->probe && !o->late && o->outcome == Outcome::kSuccess && !o->slow &&
          generation == half_open_generation) {
        ++good;
      }
      const bool bad = o->outcome == Outcome::kFailure || o->outcome == Outcome::kTimeout ||
                       (o->slow && o->outcome != Outcome::kIgnored);
      if (ramp_end.has_value() && o->at < *ramp_end && !o->late && bad) {
        expect_recovery_failed = true;
      }
    }
  }
  RC_ASSERT(!expect_recovery_failed);
  for (const std::uint64_t g : admitted_generations) {
    const auto it = state_of_generation.find(g);
    RC_ASSERT(it != state_of_generation.end());
    RC_ASSERT(it->second != State::kOpen);
    RC_ASSERT(it->second != State::kForcedOpen);
  }
}

RC_GTEST_PROP(CircuitBreakerPropertyTest, InvariantsHoldOverRandomOperations, ()) {
  const CircuitBreakerConfig config = GenConfig();
  CheckInvariants(config, *rc::gen::container<std::vector<Op>>(GenOp()));
}

// The same with a config that recovers often (a trip on one or two failures, one good probe
// closes, a short cooldown), so that most runs go through recovery ramps, their rejections and
// their relapses.
RC_GTEST_PROP(CircuitBreakerPropertyTest, InvariantsHoldThroughRecoveryRamps, ()) {
  CircuitBreakerConfig config = GenConfig();
  config.failure_threshold = *rc::gen::inRange<std::uint32_t>(1, 3);
  config.minimum_calls = 1;
  config.half_open_successes = 1;
  config.cooldown = milliseconds(*rc::gen::inRange(500, 3000));
  config.cooldown_max = config.cooldown * 4;
  config.recovery_ramp = milliseconds(*rc::gen::inRange(1000, 60000));
  // Long runs without operator commands (which would cut the ramps short), so that most runs
  // see a ramp start, turn calls away and often relapse.
  const auto length = *rc::gen::inRange<std::size_t>(100, 400);
  CheckInvariants(config, *rc::gen::container<std::vector<Op>>(length, GenOp(0)));
}

// Nobody listening lets the breaker take its short paths (a lock-free success in CLOSED, a window
// sample added without the locked path's event batch); a listener sends every outcome through
// the full path. Both must leave the same breaker after every operation.
RC_GTEST_PROP(CircuitBreakerPropertyTest, ShortPathsLeaveWhatTheFullPathLeaves, ()) {
  const CircuitBreakerConfig config = GenConfig();
  const auto ops = *rc::gen::container<std::vector<Op>>(GenOp());
  fusebox::testing::ManualClock clock;
  auto full = CircuitBreaker::Create("full", config, {.clock = &clock}).value();
  auto quiet = CircuitBreaker::Create("quiet", config, {.clock = &clock}).value();
  std::uint64_t heard = 0;
  full->AddListener([&](const Event&) { ++heard; });

  std::vector<std::pair<Permit, Permit>> held;  // (full's, quiet's) of the same call
  // The two breakers' answers to the same request: alike, and held together when admitted.
  const auto HoldBoth = [&held](Result<Permit> a, Result<Permit> b) {
    RC_ASSERT(a.has_value() == b.has_value());
    if (a) {
      held.emplace_back(std::move(a).value(), std::move(b).value());
    } else {
      RC_ASSERT(a.error().code == b.error().code);
      RC_ASSERT(a.error().retry_after == b.error().retry_after);
    }
  };
  for (const Op& op : ops) {
    switch (op.kind) {
      case Op::kAcquire: {
        const Priority priority = op.batch ? Priority::kBatch : Priority::kInteractive;
        HoldBoth(full->TryAcquire(priority), quiet->TryAcquire(priority));
        break;
      }
      case Op::kRecord:
        if (!held.empty()) {
          const std::size_t i = op.index % held.size();
          const Outcome outcome = static_cast<Outcome>(op.outcome);
          held[i].first.Record(outcome);
          held[i].second.Record(outcome);
          held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
        }
        break;
      case Op::kAdvance:
        clock.Advance(milliseconds(op.advance_ms));
        break;
      case Op::kOperator:
        Command(*full, op.command);
        Command(*quiet, op.command);
        break;
      case Op::kProbe: {
        HoldBoth(full->TryAcquireProbe(), quiet->TryAcquireProbe());
        break;
      }
    }
    const MetricsSnapshot f = full->Snapshot();
    const MetricsSnapshot q = quiet->Snapshot();
    RC_ASSERT(f.state == q.state);
    RC_ASSERT(f.generation == q.generation);
    RC_ASSERT(f.calls == q.calls);
    RC_ASSERT(f.allowed == q.allowed);
    RC_ASSERT(f.rejected_open == q.rejected_open);
    RC_ASSERT(f.rejected_half_open == q.rejected_half_open);
    RC_ASSERT(f.rejected_recovering == q.rejected_recovering);
    RC_ASSERT(f.recovering == q.recovering);
    RC_ASSERT(f.recovery_share == q.recovery_share);
    RC_ASSERT(f.succeeded == q.succeeded);
    RC_ASSERT(f.failed == q.failed);
    RC_ASSERT(f.timeouts == q.timeouts);
    RC_ASSERT(f.slow == q.slow);
    RC_ASSERT(f.ignored == q.ignored);
    RC_ASSERT(f.late == q.late);
    RC_ASSERT(f.probes == q.probes);
    RC_ASSERT(f.wasted_probes == q.wasted_probes);
    RC_ASSERT(f.transitions == q.transitions);
    RC_ASSERT(f.consecutive_failures == q.consecutive_failures);
    RC_ASSERT(f.window_calls == q.window_calls);
    RC_ASSERT(f.window_failures == q.window_failures);
    RC_ASSERT(f.window_slow == q.window_slow);
    RC_ASSERT(f.inflight_slow == q.inflight_slow);
    RC_ASSERT(f.probes_in_flight == q.probes_in_flight);
    RC_ASSERT(f.good_probes == q.good_probes);
    RC_ASSERT(f.retry_after == q.retry_after);
  }
  // The listener heard at least every admission and rejection of the full breaker.
  RC_ASSERT(heard >= full->Snapshot().rejected_open + full->Snapshot().rejected_half_open +
                         full->Snapshot().rejected_recovering);
}

}  // namespace
}  // namespace fusebox

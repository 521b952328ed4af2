#include "simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>
#include <variant>

#include "fusebox/admission.h"
#include "fusebox/circuit_breaker.h"
#include "fusebox/random.h"
#include "fusebox/testing/manual_clock.h"
#include "server_queue.h"
#include "upstream_guards.h"
#include "upstream_model.h"

namespace fusebox::sim {
namespace {

TimePoint ToTimePoint(Micros micros) { return TimePoint(std::chrono::microseconds(micros)); }

Micros ToMicros(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

Micros ToMicros(Duration d) {
  return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}

// SplitMix64 without the atomic of fusebox::SplitMix64Random: each stream owns one.
struct StreamRng {
  std::uint64_t state;

  double Uniform01() noexcept {
    state += 0x9e3779b97f4a7c15ULL;
    std::uint64_t z = state;
    z = (z ^ (z >> 30U)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27U)) * 0x94d049bb133111ebULL;
    z ^= z >> 31U;
    return static_cast<double>(z >> 11U) * 0x1.0p-53;
  }
};

// `base + round(offset)`, or kNever when that is not a representable instant (offset too large,
// not finite, or the sum overflows). The loader's limits keep real arrivals far from it; this
// keeps the arithmetic defined whatever the scenario.
constexpr Micros kNever = std::numeric_limits<Micros>::max();

Micros AddRounded(Micros base, double offset) {
  // llround() is defined below 2^63; the sum is checked against the top separately.
  if (!(offset >= 0.0 && offset < 0x1.0p62)) {
    return kNever;
  }
  const Micros rounded = static_cast<Micros>(std::llround(offset));
  return rounded > kNever - base ? kNever : base + rounded;
}

// A readable bin width (1-2-5 steps of microseconds) giving at most `max_bins` bins.
Micros BinWidth(Micros duration, std::size_t max_bins) {
  const Micros wanted = (duration + static_cast<Micros>(max_bins) - 1) /
                        static_cast<Micros>(std::max<std::size_t>(max_bins, 1));
  for (Micros decade = 1;; decade *= 10) {
    for (Micros step : {1, 2, 5}) {
      if (step * decade >= wanted) {
        return step * decade;
      }
    }
  }
}

enum class EventKind : std::uint8_t {
  kEnd,         // a call answers (or times out): its outcome is recorded
  kDeadline,    // a queue upstream's call reaches its budget: it times out unless it ended
  kServiceEnd,  // a queue server finishes a call (which ends then unless it timed out) and takes
                // the next one in line
  kQueuePhase,  // a queue phase starts: its servers (perhaps more) take calls from the line
};

// An event of the simulation waiting in the heap: a plain value, so the heap never allocates per
// event.
struct Scheduled {
  Micros t;
  std::uint64_t order;  // admission order: ties at the same instant run in this order
  std::uint32_t slot;   // index into the in-flight pool (kQueuePhase: unused)
  EventKind kind;       // last tie-break: a deadline before the service end of the same call
};

struct ComesLater {
  bool operator()(const Scheduled& a, const Scheduled& b) const noexcept {
    if (a.t != b.t) {
      return a.t > b.t;
    }
    return a.order != b.order ? a.order > b.order : a.kind > b.kind;
  }
};

struct InFlight {
  std::optional<Admission> admission;   // a call's: every piece that admitted it
  std::optional<Permit> permit;         // the active prober's probe: the breaker's permit
  Outcome outcome = Outcome::kSuccess;  // the outcome if it answers
  Micros start = 0;                     // admitted at
  Micros deadline = 0;                  // a queue upstream's call: when it times out
  std::uint64_t order = 0;              // admission order
  std::uint32_t arrival_bin = 0;        // timeline bin of the arrival (when recording)
  std::uint8_t events = 0;              // events in the heap that name this slot
  bool ended = false;                   // its outcome is recorded
  bool probe = false;
  bool active_probe = false;  // the simulated prober's probe (probe_mode = active), not a call
  bool refused = false;       // refused by the upstream for load (refuse mode)
};

class Simulation {
 public:
  Simulation(const Scenario& scenario, const SimOptions& options)
      : scenario_(scenario), options_(options), jitter_rng_(scenario.seed), upstream_(scenario) {}

  Result<RunResult, std::string> Run() {
    auto created = CircuitBreaker::Create(scenario_.name, scenario_.breaker,
                                          CircuitBreakerDeps{&clock_, &jitter_rng_});
    if (!created) {
      return fmt::format("the breaker refused the config: {}", created.error().message);
    }
    breaker_ = std::move(*created);
    breaker_->AddListener([this](const Event& event) { OnEvent(event); });
    call_timeout_ = ToMicros(breaker_->config().call_timeout);
    active_ = breaker_->config().probe_mode == ProbeMode::kActive;
    probe_budget_ = ToMicros(breaker_->config().effective_probe_budget());

    result_.name = scenario_.name;
    result_.seed = scenario_.seed;
    result_.counters.recovery_ramp = scenario_.breaker.recovery_ramp > Duration::zero();
    result_.counters.refuse_mode =
        std::any_of(scenario_.phases.begin(), scenario_.phases.end(),
                    [](const Phase& p) { return p.mode == Mode::kRefuse; });
    result_.transitions.reserve(64);
    if (std::optional<std::string> error = InitGuards()) {
      return *error;
    }
    InitStreams();
    InitQueuePhases();
    if (options_.record_timeline) {
      result_.timeline.bin_width = BinWidth(scenario_.duration, options_.max_bins);
      result_.timeline.bins.resize(static_cast<std::size_t>(
          (scenario_.duration + result_.timeline.bin_width - 1) / result_.timeline.bin_width));
    }

    while (true) {
      const std::size_t s = NextStream();
      const bool arrival = s < streams_.size();
      if (probe_at_ && *probe_at_ >= scenario_.duration) {
        probe_at_.reset();  // the prober stops with the scenario
      }
      // At one instant: completions, then the prober, then arrivals.
      if (!heap_.empty() && (!arrival || heap_.front().t <= streams_[s].next) &&
          (!probe_at_ || heap_.front().t <= *probe_at_)) {
        std::pop_heap(heap_.begin(), heap_.end(), ComesLater{});
        const Scheduled event = heap_.back();
        heap_.pop_back();
        Handle(event);
      } else if (probe_at_ && (!arrival || *probe_at_ <= streams_[s].next)) {
        Probe(*probe_at_);
      } else if (arrival) {
        Arrive(s);
      } else {
        break;
      }
      if (unexpected_) {
        return *unexpected_;
      }
    }
    result_.collapses = upstream_.collapses();
    result_.counters.relapses = result_.collapses.size();
    result_.counters.recovery_delay = RecoveryDelay(scenario_, result_.transitions);
    return std::move(result_);
  }

 private:
  struct StreamState {
    Micros next = 0;
    std::uint64_t k = 0;  // arrivals so far
    bool done = false;
    StreamRng rng{0};
  };

  void InitStreams() {
    streams_.resize(scenario_.streams.size());
    result_.streams.resize(scenario_.streams.size());
    for (std::size_t i = 0; i < streams_.size(); ++i) {
      const Stream& stream = scenario_.streams[i];
      result_.streams[i].name = stream.name;
      result_.streams[i].priority = stream.priority;
      // Each stream its own sequence, so adding a stream does not change the others.
      streams_[i].rng.state = scenario_.seed ^ (0xd1b54a32d192ed03ULL * (i + 1));
      streams_[i].next = stream.start;
      if (stream.arrivals == Arrivals::kPoisson) {
        streams_[i].next = AddRounded(stream.start, ExponentialGap(streams_[i], stream.rate));
      }
      streams_[i].done = streams_[i].next >= scenario_.duration;
    }
    heap_.reserve(1024);
    pool_.reserve(1024);
    free_.reserve(1024);
  }

  // The pieces in front of the upstream: the [limit], if any, on the simulation's clock (its
  // changes kept for the plot), then the breaker.
  std::optional<std::string> InitGuards() {
    result_.counters.limited = scenario_.limit && scenario_.limit->has_concurrency_limit();
    result_.counters.throttling = scenario_.limit && scenario_.limit->has_throttle();
    UpstreamGuards::OnLimitChange on_change;
    if (options_.record_timeline) {
      on_change = [this](std::uint32_t limit) {
        result_.limit_changes.emplace_back(ToMicros(clock_.Now()), limit);
      };
    }
    auto created = UpstreamGuards::Create(scenario_, *breaker_, clock_, std::move(on_change));
    if (!created) {
      return created.error();
    }
    guards_.emplace(std::move(*created));
    breaker_only_ = guards_->breaker_only();
    if (options_.record_timeline) {
      if (std::optional<std::uint32_t> limit = guards_->limit()) {
        result_.limit_changes.emplace_back(0, *limit);
      }
    }
    return std::nullopt;
  }

  // A queue phase's start is an event: its servers (more of them, perhaps) take waiting calls.
  void InitQueuePhases() {
    for (const Phase& phase : scenario_.phases) {
      if (phase.mode == Mode::kQueue) {
        Push(Scheduled{phase.from, 0, 0, EventKind::kQueuePhase});
      }
    }
  }

  // In microseconds, not rounded (AddRounded() rounds the sum's offset).
  static double ExponentialGap(StreamState& state, double rate) {
    const double u = state.rng.Uniform01();
    return -std::log1p(-u) * 1e6 / rate;
  }

  // The stream whose next arrival comes first (the lowest index on ties); size() if none.
  std::size_t NextStream() const {
    std::size_t best = streams_.size();
    Micros best_t = std::numeric_limits<Micros>::max();
    for (std::size_t i = 0; i < streams_.size(); ++i) {
      if (!streams_[i].done && streams_[i].next < best_t) {
        best = i;
        best_t = streams_[i].next;
      }
    }
    return best;
  }

  void AdvanceStream(std::size_t i) {
    StreamState& state = streams_[i];
    const Stream& stream = scenario_.streams[i];
    ++state.k;
    if (stream.arrivals == Arrivals::kUniform) {
      state.next = AddRounded(stream.start, static_cast<double>(state.k) * 1e6 / stream.rate);
    } else {
      state.next = AddRounded(state.next, ExponentialGap(state, stream.rate));
    }
    state.done = state.next >= scenario_.duration;
  }

  // What the upstream does with a call admitted at `t` under `budget` (docs/scenario-format.md,
  // "Exact rules"): an answer at or after the budget is a timeout at the budget. A queued call's
  // latency is its service time; when it ends is the queue's to say.
  UpstreamFate DecideFate(Micros t, Micros budget) {
    UpstreamFate fate = upstream_.Decide(t, in_flight_);
    if (fate.kind == FateKind::kAnswers &&
        (fate.outcome == Outcome::kTimeout || fate.latency >= budget)) {
      fate = {Outcome::kTimeout, budget, FateKind::kAnswers};
    }
    return fate;
  }

  void Push(const Scheduled& event) {
    heap_.push_back(event);
    std::push_heap(heap_.begin(), heap_.end(), ComesLater{});
  }

  // An event about the call in `slot`; the slot is reused once its last event has run.
  void PushCallEvent(std::uint32_t slot, Micros t, EventKind kind) {
    InFlight& call = pool_[slot];
    ++call.events;
    Push(Scheduled{t, call.order, slot, kind});
  }

  // A call in flight from `t` until its fate says: a slot of the pool (reused), its end in the
  // heap, or its place at a queue upstream's servers.
  InFlight& StartCall(const UpstreamFate& fate, Micros t, Micros budget, bool probe, bool active) {
    std::uint32_t slot = 0;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else {
      slot = static_cast<std::uint32_t>(pool_.size());
      pool_.emplace_back();
    }
    InFlight& call = pool_[slot];
    call.outcome = fate.outcome;
    call.start = t;
    call.deadline = t + budget;
    call.order = next_order_++;
    call.events = 0;
    call.ended = false;
    call.probe = probe;
    call.active_probe = active;
    call.refused = fate.kind == FateKind::kRefused;
    if (fate.kind == FateKind::kQueued) {
      JoinQueue(slot, t, fate.latency);
    } else {
      PushCallEvent(slot, t + fate.latency, EventKind::kEnd);
    }
    return call;
  }

  // A call at the queue upstream: served at once if a server is free and nobody waits, else in
  // line. Its deadline is an event whenever it may come before its answer.
  void JoinQueue(std::uint32_t slot, Micros t, Micros service) {
    const Micros deadline = pool_[slot].deadline;
    if (queue_.Join({slot, deadline, service}, upstream_.QueueCapacity(t))) {
      PushCallEvent(slot, t + service, EventKind::kServiceEnd);
      if (t + service >= deadline) {
        PushCallEvent(slot, deadline, EventKind::kDeadline);
      }
    } else {
      PushCallEvent(slot, deadline, EventKind::kDeadline);
    }
  }

  // Free servers take the calls in line, in order.
  void ServeWaiting(Micros t) {
    while (std::optional<ServerQueue::Call> next =
               queue_.StartNext(t, upstream_.QueueCapacity(t))) {
      PushCallEvent(next->slot, t + next->service, EventKind::kServiceEnd);
    }
  }

  void Handle(const Scheduled& event) {
    clock_.Set(ToTimePoint(event.t));
    if (event.kind == EventKind::kQueuePhase) {
      ServeWaiting(event.t);
      return;
    }
    InFlight& call = pool_[event.slot];
    --call.events;
    switch (event.kind) {
      case EventKind::kEnd:
        End(event.slot, event.t, call.outcome);
        break;
      case EventKind::kDeadline:
        if (!call.ended) {
          queue_.Leave(event.slot);
          End(event.slot, event.t, Outcome::kTimeout);
        }
        break;
      case EventKind::kServiceEnd:
        queue_.Finish();
        if (!call.ended) {
          End(event.slot, event.t, call.outcome);  // before its deadline (an event at or before
                                                   // it would have ended it)
        }
        ServeWaiting(event.t);
        break;
      case EventKind::kQueuePhase:
        break;
    }
    if (call.events == 0) {
      free_.push_back(event.slot);
    }
  }

  // The simulated prober (probe_mode = active), as fusebox::asio::Prober behaves: asks the breaker
  // for a probe at `t`; runs it against the upstream in force under the probe budget, or asks
  // again when the breaker says (nothing to probe: idle until a transition).
  void Probe(Micros t) {
    clock_.Set(ToTimePoint(t));
    probe_at_.reset();
    Result<Permit> permit = breaker_->TryAcquireProbe();
    if (!permit) {
      if (permit.error().code != ReasonCode::kCancelled) {
        probe_at_ = t + std::max<Micros>(1, ToMicros(permit.error().retry_after));
      }
      return;
    }
    probe_at_.reset();  // the transition to HALF_OPEN scheduled one: this is it
    probe_in_flight_ = true;
    Counters& c = result_.counters;
    ++c.probes;
    const UpstreamFate fate = DecideFate(t, probe_budget_);
    ++in_flight_;
    c.max_in_flight = std::max<std::uint64_t>(c.max_in_flight, in_flight_);
    InFlight& call = StartCall(fate, t, probe_budget_, /*probe=*/true, /*active=*/true);
    call.permit.emplace(std::move(*permit));
    if (options_.record_timeline && t < scenario_.duration) {
      Timeline::Bin& bin =
          result_.timeline.bins[static_cast<std::size_t>(t / result_.timeline.bin_width)];
      call.arrival_bin = static_cast<std::uint32_t>(&bin - result_.timeline.bins.data());
      ++bin.probes;
      NoteInFlight(t, in_flight_ - 1);
    }
  }

  // An arrival refused by one of the pieces, counted by the refusal's reason; any other reason
  // is outside the pieces' contract and ends the run.
  void CountRefusal(Micros t, ReasonCode code, StreamCounters& sc, Timeline::Bin* bin) {
    Counters& c = result_.counters;
    switch (code) {
      case ReasonCode::kOverloaded:
        ++c.overloaded;
        if (bin != nullptr) {
          ++bin->overloaded;
        }
        return;
      case ReasonCode::kCircuitOpen:
        ++c.rejected_open;
        ++sc.rejected_open;
        if (bin != nullptr) {
          ++bin->rejected_open;
        }
        return;
      case ReasonCode::kCircuitHalfOpen:
        ++c.rejected_probe_cap;
        ++sc.rejected_probe_cap;
        if (bin != nullptr) {
          ++bin->rejected_probe_cap;
        }
        return;
      case ReasonCode::kCircuitRecovering:
        ++c.rejected_recovering;
        if (bin != nullptr) {
          ++bin->rejected_recovering;
        }
        return;
      case ReasonCode::kThrottled:
        ++c.throttled;
        if (bin != nullptr) {
          ++bin->throttled;
        }
        return;
      default:
        unexpected_ = fmt::format(
            "Admit at t={} s returned {}, expected an admission, OVERLOADED or THROTTLED (with a "
            "[limit]), CIRCUIT_OPEN, CIRCUIT_HALF_OPEN or CIRCUIT_RECOVERING",
            FormatSeconds(t), ToString(code));
        return;
    }
  }

  void Arrive(std::size_t s) {
    const Micros t = streams_[s].next;
    AdvanceStream(s);
    clock_.Set(ToTimePoint(t));
    Counters& c = result_.counters;
    StreamCounters& sc = result_.streams[s];
    Timeline::Bin* bin = nullptr;
    if (options_.record_timeline) {
      bin = &result_.timeline.bins[static_cast<std::size_t>(t / result_.timeline.bin_width)];
    }
    ++c.calls;
    ++sc.calls;
    // The library's order (fusebox::Admit): the limit's slot first, so that a call that cannot
    // run never takes the breaker's probe slot; then the breaker's permit; then the throttle. A
    // breaker alone is asked directly: the same answer, without an admission to carry.
    const Priority priority = scenario_.streams[s].priority;
    if (breaker_only_) {
      Result<Permit> permit = breaker_->TryAcquire(priority);
      if (!permit) {
        CountRefusal(t, permit.error().code, sc, bin);
        return;
      }
      Admitted(t, sc, bin, std::move(*permit));
    } else {
      Result<Admission> admission = guards_->Admit(priority);
      if (!admission) {
        CountRefusal(t, admission.error().code, sc, bin);
        return;
      }
      Admitted(t, sc, bin, std::move(*admission));
    }
  }

  // Whether a phase whose mode is not ok is in force at `t` (instants never go back).
  bool InFailingPhase(Micros t) {
    const std::vector<Phase>& phases = scenario_.phases;
    while (failing_cursor_ < phases.size() && phases[failing_cursor_].to <= t) {
      ++failing_cursor_;
    }
    return failing_cursor_ < phases.size() && phases[failing_cursor_].from <= t &&
           phases[failing_cursor_].mode != Mode::kOk;
  }

  // An admitted arrival: its fate, its place in flight. `Held` is what admitted it: the
  // breaker's Permit, or an Admission of every piece.
  template <typename Held>
  void Admitted(Micros t, StreamCounters& sc, Timeline::Bin* bin, Held held) {
    Counters& c = result_.counters;
    ++c.allowed;
    ++sc.allowed;
    if (InFailingPhase(t)) {
      ++c.allowed_while_failing;
    }
    const bool probe = held.is_probe();
    if (probe) {
      ++c.probes;
      ++sc.probes;
    }
    const UpstreamFate fate = DecideFate(t, call_timeout_);
    ++in_flight_;
    c.max_in_flight = std::max<std::uint64_t>(c.max_in_flight, in_flight_);
    if (static_cast<double>(in_flight_) > options_.max_calls_in_flight) {
      // Every call in flight holds memory until it ends; a hung upstream at a high rate would
      // otherwise take it all (rate x call_timeout calls).
      unexpected_ = fmt::format(
          "more than {:.0f} calls in flight at t={} s (the upstream holds about rate x "
          "min(call_timeout, its latency) of them): lower the rate or breaker.call_timeout",
          options_.max_calls_in_flight, FormatSeconds(t));
      held.Record(Outcome::kIgnored);
      return;
    }

    InFlight& call = StartCall(fate, t, call_timeout_, probe, /*active=*/false);
    if constexpr (std::is_same_v<Held, Permit>) {
      call.permit.emplace(std::move(held));
    } else {
      call.admission.emplace(std::move(held));
    }

    if (bin != nullptr) {
      call.arrival_bin = static_cast<std::uint32_t>(bin - result_.timeline.bins.data());
      bin->probes += probe ? 1U : 0U;
      NoteInFlight(t, in_flight_ - 1);
    }
  }

  // Keeps each bin's peak of calls in flight: bins without a change hold the level they started
  // with. Called after in_flight_ changed at `t` from `before`.
  void NoteInFlight(Micros t, std::uint32_t before) {
    std::vector<Timeline::Bin>& bins = result_.timeline.bins;
    const bool inside = t < scenario_.duration;
    const std::size_t bin =
        inside ? static_cast<std::size_t>(t / result_.timeline.bin_width) : bins.size() - 1;
    for (std::size_t b = flight_bin_ + 1; b <= bin; ++b) {
      bins[b].max_in_flight = std::max(bins[b].max_in_flight, before);
    }
    flight_bin_ = bin;
    if (inside) {
      bins[bin].max_in_flight = std::max(bins[bin].max_in_flight, in_flight_);
    }
  }

  // The call in `slot` ends at `t` with `outcome`: the breaker hears it, and it is counted.
  void End(std::uint32_t slot, Micros t, Outcome outcome) {
    InFlight& call = pool_[slot];
    call.ended = true;
    --in_flight_;
    outcome_seen_ = false;
    if (call.active_probe) {
      probe_in_flight_ = false;  // before the outcome: the transition it causes schedules the next
    }
    // Every call in flight holds its admission (a probe its permit) until here.
    if (call.admission) {
      if (call.refused) {
        call.admission->RecordRefusedForLoad();
      } else {
        call.admission->Record(outcome);
      }
      call.admission.reset();
    } else if (call.permit) {
      call.permit->Record(outcome);  // a refusal for load is a failure to the breaker alone too
      call.permit.reset();
    }

    Counters& c = result_.counters;
    const bool slow = outcome_seen_ && last_slow_;
    if (call.active_probe) {
      // A probe that moved nothing (a good one short of half_open_successes, an ignored one):
      // the prober asks again now, as fusebox::asio::Prober does.
      if (!probe_at_ && breaker_->state() != State::kClosed) {
        probe_at_ = t;
      }
      // The prober's probe is no user's call: only probes, wasted probes and the in-flight peak
      // count it.
      if (outcome != Outcome::kSuccess || slow) {
        ++c.wasted_probes;
      }
      result_.end = t;
      if (options_.record_timeline) {
        NoteInFlight(t, in_flight_ + 1);
      }
      return;
    }
    switch (outcome) {
      case Outcome::kSuccess:
        ++c.succeeded;
        break;
      case Outcome::kTimeout:
        ++c.timeouts;
        ++c.failed;
        break;
      case Outcome::kFailure:
      case Outcome::kIgnored:
        ++c.failed;
        break;
    }
    c.refused += call.refused ? 1U : 0U;
    if (options_.record_calls) {
      result_.calls.push_back(CallRecord{call.start, t, outcome, call.refused});
    }
    c.slow += slow ? 1U : 0U;
    c.late += (outcome_seen_ && last_late_) ? 1U : 0U;
    if (call.probe && (outcome != Outcome::kSuccess || slow)) {
      ++c.wasted_probes;
    }
    result_.end = t;
    if (options_.record_timeline) {
      Timeline::Bin& bin = result_.timeline.bins[call.arrival_bin];
      bin.refused += call.refused ? 1U : 0U;
      switch (outcome) {
        case Outcome::kSuccess:
          ++(slow ? bin.slow_succeeded : bin.succeeded);
          break;
        case Outcome::kTimeout:
          ++bin.timeouts;
          break;
        case Outcome::kFailure:
        case Outcome::kIgnored:
          ++bin.failed;
          break;
      }
      NoteInFlight(t, in_flight_ + 1);
    }
  }

  // The transition with the figures behind its cause (Transition), from the breaker's own
  // report: a listener may call back into the breaker, and the window that tripped it is cleared
  // only when it closes.
  Transition CauseFigures(const TransitionEvent& event) const {
    Transition t{ToMicros(event.at), event.from, event.to, event.cause};
    const CircuitBreakerConfig& config = breaker_->config();
    switch (event.cause) {
      case TransitionCause::kConsecutiveFailures:
        t.judged = config.failure_threshold;
        t.bad = t.judged;
        t.slow_counts = config.effective_slow_call_duration() < config.call_timeout;
        break;
      case TransitionCause::kFailureRate: {
        const MetricsSnapshot m = breaker_->Snapshot();
        t.judged = m.window_calls;
        t.bad = m.window_failures;
        t.threshold = config.failure_rate_threshold;
        break;
      }
      case TransitionCause::kSlowCallRate: {
        const MetricsSnapshot m = breaker_->Snapshot();
        t.judged = m.window_calls;
        t.bad = m.window_slow;
        t.threshold = config.slow_call_rate_threshold;
        break;
      }
      case TransitionCause::kCooldownElapsed:
        t.waited = ToMicros(breaker_->Snapshot().current_cooldown);
        break;
      case TransitionCause::kProbesSucceeded:
        t.judged = config.effective_half_open_successes();
        t.bad = t.judged;
        break;
      default:
        break;
    }
    return t;
  }

  // Listeners run synchronously on this thread, inside TryAcquire / Record.
  void OnEvent(const Event& event) {
    if (const auto* transition = std::get_if<TransitionEvent>(&event.detail)) {
      result_.transitions.push_back(CauseFigures(*transition));
      // The prober wakes on a transition: it asks for a probe now (the breaker says when).
      if (active_ && !probe_in_flight_) {
        if (transition->to == State::kOpen || transition->to == State::kHalfOpen) {
          probe_at_ = ToMicros(clock_.Now());
        } else {
          probe_at_.reset();
        }
      }
    } else if (const auto* outcome = std::get_if<OutcomeEvent>(&event.detail)) {
      outcome_seen_ = true;
      last_slow_ = outcome->slow;
      last_late_ = outcome->late;
    }
  }

  const Scenario& scenario_;
  const SimOptions& options_;
  testing::ManualClock clock_;
  SplitMix64Random jitter_rng_;  // cooldown jitter, seeded from the scenario
  std::unique_ptr<CircuitBreaker> breaker_;
  Micros call_timeout_ = 0;
  std::size_t failing_cursor_ = 0;  // InFailingPhase(): the first phase not over yet
  bool active_ = false;             // probe_mode = active: the simulated prober probes
  Micros probe_budget_ = 0;
  std::optional<Micros> probe_at_;  // the prober's next look at the breaker
  bool probe_in_flight_ = false;

  std::vector<StreamState> streams_;
  std::vector<Scheduled> heap_;  // min-heap by (t, order, kind)
  std::vector<InFlight> pool_;
  std::vector<std::uint32_t> free_;
  std::uint64_t next_order_ = 0;
  std::uint32_t in_flight_ = 0;

  std::size_t flight_bin_ = 0;  // the last timeline bin whose in-flight peak is up to date

  UpstreamModel upstream_;
  ServerQueue queue_;                     // the queue upstream's servers and line
  std::optional<UpstreamGuards> guards_;  // the [limit] and the breaker, in the library's order
  bool breaker_only_ = true;              // no [limit]: arrivals ask the breaker directly

  bool outcome_seen_ = false;
  bool last_slow_ = false;
  bool last_late_ = false;
  std::optional<std::string> unexpected_;

  RunResult result_;
};

}  // namespace

std::optional<Micros> RecoveryDelay(const Scenario& scenario,
                                    const std::vector<Transition>& transitions) {
  std::optional<Micros> last_end;
  for (const Phase& phase : scenario.phases) {
    if (phase.mode != Mode::kOk) {
      last_end = std::max(last_end.value_or(phase.to), phase.to);
    }
  }
  if (!last_end) {
    return std::nullopt;
  }
  for (const Transition& transition : transitions) {
    if (transition.to == State::kClosed && transition.t >= *last_end) {
      return transition.t - *last_end;
    }
  }
  return std::nullopt;
}

Result<RunResult, std::string> Simulate(const Scenario& scenario, const SimOptions& options) {
  Simulation simulation(scenario, options);
  return simulation.Run();
}

}  // namespace fusebox::sim

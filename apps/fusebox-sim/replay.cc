#include "replay.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <memory>
#include <unordered_map>
#include <utility>

#include "fusebox/admission.h"
#include "fusebox/circuit_breaker.h"
#include "fusebox/random.h"
#include "fusebox/testing/manual_clock.h"
#include "upstream_guards.h"

namespace fusebox::sim {
namespace {

TimePoint ToTimePoint(Micros micros) { return TimePoint(std::chrono::microseconds(micros)); }

Micros ToMicros(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

Micros ToMicros(Duration d) {
  return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}

// A readable bin width (1-2-5 steps of microseconds) giving at most `max_bins` bins.
Micros BinWidth(Micros duration, std::size_t max_bins) {
  const auto bins = static_cast<Micros>(std::max<std::size_t>(max_bins, 1));
  const Micros wanted = std::max<Micros>(1, (duration + bins - 1) / bins);
  for (Micros decade = 1;; decade *= 10) {
    for (const Micros step : {1, 2, 5}) {
      if (step * decade >= wanted) {
        return step * decade;
      }
    }
  }
}

void InitTimeline(Timeline& timeline, Micros end, std::size_t max_bins) {
  timeline.bin_width = BinWidth(std::max<Micros>(end, 1), max_bins);
  timeline.bins.resize(static_cast<std::size_t>(end / timeline.bin_width + 1));
}

Timeline::Bin& BinAt(Timeline& timeline, Micros t) {
  const auto i = static_cast<std::size_t>(std::max<Micros>(t, 0) / timeline.bin_width);
  return timeline.bins[std::min(i, timeline.bins.size() - 1)];
}

// How bad an answer is: a fast success, a slow one, a failure, a timeout.
int Badness(Outcome outcome, Micros latency, Micros slow) {
  switch (outcome) {
    case Outcome::kSuccess:
    case Outcome::kIgnored:
      return latency >= slow ? 1U : 0U;
    case Outcome::kFailure:
      return 2;
    case Outcome::kTimeout:
      return 3;
  }
  return 0;
}

// When each revival's breaker closed, after `transitions`.
void MeasureRevivals(std::vector<Revival>& revivals, const std::vector<Transition>& transitions,
                     Reading reading, Micros end, Micros& total) {
  total = 0;
  for (Revival& revival : revivals) {
    const Micros r = reading == Reading::kOptimistic ? revival.earliest : revival.latest;
    std::optional<State> state;
    std::size_t i = 0;
    for (; i < transitions.size() && transitions[i].t <= r; ++i) {
      state = transitions[i].to;
    }
    revival.delay.reset();
    if (!state || *state == State::kClosed) {
      revival.delay = 0;
      continue;
    }
    for (; i < transitions.size(); ++i) {
      if (transitions[i].to == State::kClosed) {
        revival.delay = transitions[i].t - r;
        break;
      }
    }
    total += revival.delay.value_or(std::max<Micros>(0, end - r));
  }
}

struct Fate {
  Micros latency = 0;
  Outcome outcome = Outcome::kSuccess;
};

struct Scheduled {
  Micros t;
  std::uint64_t order;
  std::uint32_t slot;
};

struct ComesLater {
  bool operator()(const Scheduled& a, const Scheduled& b) const noexcept {
    return a.t != b.t ? a.t > b.t : a.order > b.order;
  }
};

struct InFlight {
  std::optional<Admission> admission;  // a user's call
  std::optional<Permit> permit;        // the prober's probe
  Outcome outcome = Outcome::kSuccess;
  std::uint64_t vin = 0;  // its single-flight key (0: a probe)
  bool active_probe = false;
};

// What one joined or own call gave its user.
struct UserFate {
  bool served = false;
  bool waited = false;
};

class Engine {
 public:
  Engine(const Incident& incident, const GatewaySettings& settings,
         const std::vector<Revival>& revivals, const ReplayOptions& options)
      : incident_(incident),
        settings_(settings),
        options_(options),
        rng_(1),
        phase_(incident.clock_phase),
        clock_(ToTimePoint(incident.clock_phase)) {
    run_.revivals = revivals;
    for (const Observation& o : incident.observations) {
      if (o.probe) {
        probe_starts_.push_back(o.start);
      }
    }
  }

  Result<ReplayRun, std::string> Run() {
    auto created =
        CircuitBreaker::Create("vpic", settings_.breaker, CircuitBreakerDeps{&clock_, &rng_});
    if (!created) {
      return fmt::format("the breaker refused the config: {}", created.error().message);
    }
    breaker_ = std::move(*created);
    breaker_->AddListener([this](const Event& event) { OnEvent(event); });
    call_timeout_ = ToMicros(breaker_->config().call_timeout);
    probe_budget_ = ToMicros(breaker_->config().effective_probe_budget());
    slow_ = ToMicros(options_.slow.value_or(breaker_->config().effective_slow_call_duration()));
    active_ = breaker_->config().probe_mode == ProbeMode::kActive;
    guard_scenario_.seed = 1;
    guard_scenario_.limit = settings_.AsLimit();
    auto guards = UpstreamGuards::Create(guard_scenario_, *breaker_, clock_, nullptr);
    if (!guards) {
      return guards.error();
    }
    guards_.emplace(std::move(*guards));
    run_.name = "replay";
    run_.reading = options_.reading;
    if (options_.record_timeline) {
      InitTimeline(run_.timeline, incident_.end, options_.max_bins);
    }
    ReplayCounts& c = run_.counts;
    c.requests = incident_.recorded.requests;
    c.served = incident_.other_served;
    c.stale_served = incident_.other_stale_served;
    heap_.reserve(1024);
    pool_.reserve(1024);

    const std::vector<LoggedArrival>& arrivals = incident_.arrivals;
    std::size_t next = 0;
    while (true) {
      const bool arrival = next < arrivals.size();
      const Micros arrival_t = arrival ? arrivals[next].t : 0;
      // At one instant: completions, then the prober, then arrivals.
      if (!heap_.empty() && (!arrival || heap_.front().t <= arrival_t) &&
          (!probe_at_ || heap_.front().t <= *probe_at_)) {
        std::pop_heap(heap_.begin(), heap_.end(), ComesLater{});
        const Scheduled event = heap_.back();
        heap_.pop_back();
        End(event);
      } else if (probe_at_ && (!arrival || *probe_at_ <= arrival_t)) {
        if (*probe_at_ > incident_.end) {
          probe_at_.reset();  // the prober stops with the log
          continue;
        }
        Probe(*probe_at_);
      } else if (arrival) {
        Arrive(arrivals[next++]);
      } else {
        break;
      }
      if (unexpected_) {
        return *unexpected_;
      }
    }
    MeasureRevivals(run_.revivals, run_.transitions, options_.reading, incident_.end,
                    run_.total_recovery_delay);
    return std::move(run_);
  }

 private:
  // An observation under a budget: an answer at or after it is a timeout then; a censored
  // timeout within a longer budget is read as the reading says.
  Fate Cut(const Observation& o, Micros budget) {
    if (o.outcome == Outcome::kTimeout) {
      if (budget <= o.latency) {
        return {budget, Outcome::kTimeout};
      }
      run_.read_gaps = true;
      if (options_.reading == Reading::kPessimistic) {
        return {budget, Outcome::kTimeout};
      }
      return {o.latency, Outcome::kSuccess};
    }
    if (o.latency >= budget) {
      return {budget, Outcome::kTimeout};
    }
    return {o.latency, o.outcome};
  }

  // What vPIC did to a call sent at `t` under `budget`, from the observations around it.
  Fate Read(Micros t, Micros budget) {
    const std::vector<Observation>& obs = incident_.observations;
    if (obs.empty()) {
      return {0, Outcome::kSuccess};
    }
    const auto it = std::upper_bound(obs.begin(), obs.end(), t,
                                     [](Micros at, const Observation& o) { return at < o.start; });
    const Observation* after = it == obs.end() ? nullptr : &*it;
    const Observation* before = it == obs.begin() ? nullptr : &*(it - 1);
    const Micros to_before = before != nullptr ? t - before->start : kFar;
    const Micros to_after = after != nullptr ? after->start - t : kFar;
    if (std::min(to_before, to_after) <= kObservationMatch) {
      return Cut(to_before <= to_after ? *before : *after, budget);
    }
    if (before == nullptr || after == nullptr) {
      return Cut(before != nullptr ? *before : *after, budget);
    }
    const Fate a = Cut(*before, budget);
    const Fate b = Cut(*after, budget);
    const int bad_a = Badness(a.outcome, a.latency, slow_);
    const int bad_b = Badness(b.outcome, b.latency, slow_);
    if (bad_a == bad_b) {
      return a;
    }
    run_.read_gaps = true;
    const bool a_better = bad_a < bad_b;
    return (options_.reading == Reading::kOptimistic) == a_better ? a : b;
  }

  std::uint32_t TakeSlot() {
    if (!free_.empty()) {
      const std::uint32_t slot = free_.back();
      free_.pop_back();
      return slot;
    }
    pool_.emplace_back();
    return static_cast<std::uint32_t>(pool_.size() - 1);
  }

  void Schedule(std::uint32_t slot, Micros t) {
    heap_.push_back(Scheduled{t, next_order_++, slot});
    std::push_heap(heap_.begin(), heap_.end(), ComesLater{});
  }

  void NoteFlight(Micros t) {
    ++in_flight_;
    if (options_.record_timeline) {
      Timeline::Bin& bin = BinAt(run_.timeline, t);
      bin.max_in_flight = std::max(bin.max_in_flight, in_flight_);
    }
  }

  // A user's answer from a call's fate (its own or the one it joined).
  void CountUser(const Fate& fate, bool fallback, Timeline::Bin* bin) {
    ReplayCounts& c = run_.counts;
    const bool waited = fate.outcome == Outcome::kTimeout || fate.latency >= slow_;
    c.waited += waited ? 1U : 0U;
    if (fate.outcome == Outcome::kSuccess) {
      ++c.served;
      c.slow_served += waited ? 1U : 0U;
    } else {
      ++c.failed;
      c.stale_served += fallback ? 1U : 0U;
    }
    if (bin != nullptr) {
      switch (fate.outcome) {
        case Outcome::kSuccess:
          ++(waited ? bin->slow_succeeded : bin->succeeded);
          break;
        case Outcome::kTimeout:
          ++bin->timeouts;
          break;
        case Outcome::kFailure:
        case Outcome::kIgnored:
          ++bin->failed;
          break;
      }
    }
  }

  void CountCall(const Fate& fate) {
    ReplayCounts& c = run_.counts;
    ++c.upstream_calls;
    if (Badness(fate.outcome, fate.latency, slow_) > 0) {
      ++c.calls_while_failing;
    }
  }

  void Arrive(const LoggedArrival& a) {
    clock_.Set(ToTimePoint(a.t + phase_));
    Timeline::Bin* bin = options_.record_timeline ? &BinAt(run_.timeline, a.t) : nullptr;
    // Single-flight: a VIN whose call is in flight joins it (a batch never does).
    if (auto it = a.batch ? flights_.end() : flights_.find(a.vin); it != flights_.end()) {
      CountUser(it->second, a.fallback, bin);
      return;
    }
    const Priority priority = a.batch ? Priority::kBatch : Priority::kInteractive;
    Result<Admission> admission = guards_->Admit(priority);
    if (!admission && !active_ && a.kind == ArrivalKind::kCall &&
        admission.error().code == ReasonCode::kCircuitOpen &&
        admission.error().retry_after <= kClockSlack) {
      // The log says this request made its call: it came as the cooldown ended, within what the
      // log's times (milliseconds) and the gateway's coarse clock can tell apart.
      clock_.Set(clock_.Now() + admission.error().retry_after);
      admission = guards_->Admit(priority);
    }
    if (!admission) {
      Refused(admission.error().code, a.fallback, bin);
      return;
    }
    const bool probe = admission->is_probe();
    // Its own call's fate, or (refused in the log, or its call's end never logged) vPIC's then.
    const Fate fate =
        a.observation >= 0
            ? Cut(incident_.observations[static_cast<std::size_t>(a.observation)], call_timeout_)
            : Read(a.t, call_timeout_);
    CountCall(fate);
    if (probe) {
      ++run_.counts.probes;
      if (bin != nullptr) {
        ++bin->probes;
      }
    }
    CountUser(fate, a.fallback, bin);
    const std::uint32_t slot = TakeSlot();
    InFlight& call = pool_[slot];
    call.admission.emplace(std::move(*admission));
    call.permit.reset();
    call.outcome = fate.outcome;
    call.vin = a.vin;
    call.active_probe = false;
    if (!a.batch) {
      flights_[a.vin] = fate;
    }
    NoteFlight(a.t);
    Schedule(slot, a.t + fate.latency);
  }

  void Refused(ReasonCode code, bool fallback, Timeline::Bin* bin) {
    ReplayCounts& c = run_.counts;
    std::uint32_t* counter = nullptr;
    switch (code) {
      case ReasonCode::kCircuitOpen:
        ++c.refused_open;
        counter = bin != nullptr ? &bin->rejected_open : nullptr;
        break;
      case ReasonCode::kCircuitHalfOpen:
        ++c.refused_half_open;
        counter = bin != nullptr ? &bin->rejected_probe_cap : nullptr;
        break;
      case ReasonCode::kCircuitRecovering:
        ++c.refused_recovering;
        counter = bin != nullptr ? &bin->rejected_recovering : nullptr;
        break;
      case ReasonCode::kOverloaded:
        ++c.overloaded;
        counter = bin != nullptr ? &bin->overloaded : nullptr;
        break;
      case ReasonCode::kThrottled:
        ++c.throttled;
        counter = bin != nullptr ? &bin->throttled : nullptr;
        break;
      default:
        unexpected_ =
            fmt::format("Admit returned {}, outside the pieces' contract", ToString(code));
        return;
    }
    if (counter != nullptr) {
      ++*counter;
    }
    ++c.refused;
    c.stale_served += fallback ? 1U : 0U;
  }

  // The gateway's prober (probe_mode = active), as fusebox-sim's run simulates it.
  void Probe(Micros t) {
    // The gateway's prober runs on its event loop, a little late when the loop is busy: a
    // probe the log shows starting up to kProbeLateness after this one is due is that probe.
    if (!probe_aligned_) {
      const auto next = std::lower_bound(probe_starts_.begin(), probe_starts_.end(), t);
      if (next != probe_starts_.end() && *next > t && *next - t <= kProbeLateness) {
        probe_at_ = *next;
        probe_aligned_ = true;
        return;
      }
    }
    probe_aligned_ = false;
    clock_.Set(ToTimePoint(t + phase_));
    probe_at_.reset();
    Result<Permit> permit = breaker_->TryAcquireProbe();
    if (!permit) {
      if (permit.error().code != ReasonCode::kCancelled) {
        probe_at_ = t + std::max<Micros>(1, ToMicros(permit.error().retry_after));
      }
      return;
    }
    probe_in_flight_ = true;
    const Fate fate = Read(t, probe_budget_);
    ++run_.counts.probes;
    CountCall(fate);
    if (options_.record_timeline) {
      ++BinAt(run_.timeline, t).probes;
    }
    const std::uint32_t slot = TakeSlot();
    InFlight& call = pool_[slot];
    call.admission.reset();
    call.permit.emplace(std::move(*permit));
    call.outcome = fate.outcome;
    call.vin = 0;
    call.active_probe = true;
    NoteFlight(t);
    Schedule(slot, t + fate.latency);
  }

  void End(const Scheduled& event) {
    clock_.Set(ToTimePoint(event.t + phase_));
    InFlight& call = pool_[event.slot];
    --in_flight_;
    if (call.active_probe) {
      probe_in_flight_ = false;  // before the outcome: the transition it causes schedules the next
      call.permit->Record(call.outcome);
      call.permit.reset();
      // A probe that moved nothing: the prober asks again now.
      if (!probe_at_ && breaker_->state() != State::kClosed) {
        probe_at_ = event.t;
      }
    } else {
      flights_.erase(call.vin);
      call.admission->Record(call.outcome);
      call.admission.reset();
    }
    free_.push_back(event.slot);
  }

  void OnEvent(const Event& event) {
    if (const auto* transition = std::get_if<TransitionEvent>(&event.detail)) {
      run_.transitions.push_back(Transition{ToMicros(transition->at) - phase_, transition->from,
                                            transition->to, transition->cause});
      if (active_ && !probe_in_flight_) {
        probe_aligned_ = false;
        if (transition->to == State::kOpen || transition->to == State::kHalfOpen) {
          probe_at_ = ToMicros(clock_.Now()) - phase_;
        } else {
          probe_at_.reset();
        }
      }
    }
  }

  static constexpr Micros kFar = std::numeric_limits<Micros>::max() / 4;
  // Instants this close cannot be told apart in a log (milliseconds; the gateway's breaker reads
  // a coarse clock of a few milliseconds' tick).
  static constexpr Duration kClockSlack = std::chrono::milliseconds(5);
  // How late the gateway's prober may run behind its schedule on a busy event loop.
  static constexpr Micros kProbeLateness = 100'000;

  const Incident& incident_;
  const GatewaySettings& settings_;
  const ReplayOptions& options_;
  SplitMix64Random rng_;
  // The gateway's breaker clock less the incident's time (Incident::clock_phase): the breaker
  // here reads incident time plus this, so that its time window's seconds fall where the
  // gateway's did.
  Micros phase_ = 0;
  testing::ManualClock clock_;
  std::unique_ptr<CircuitBreaker> breaker_;
  Scenario guard_scenario_;
  std::optional<UpstreamGuards> guards_;
  Micros call_timeout_ = 0;
  Micros probe_budget_ = 0;
  Micros slow_ = 0;
  bool active_ = false;
  std::optional<Micros> probe_at_;
  bool probe_in_flight_ = false;
  bool probe_aligned_ = false;        // probe_at_ was moved to a logged probe's start
  std::vector<Micros> probe_starts_;  // the logged probes' starts, in order
  std::vector<Scheduled> heap_;
  std::vector<InFlight> pool_;
  std::vector<std::uint32_t> free_;
  std::uint64_t next_order_ = 0;
  std::uint32_t in_flight_ = 0;
  std::unordered_map<std::uint64_t, Fate> flights_;  // VIN -> the fate of its call in flight
  std::optional<std::string> unexpected_;
  ReplayRun run_;
};

}  // namespace

std::string_view ToString(Reading reading) noexcept {
  return reading == Reading::kOptimistic ? "optimistic" : "pessimistic";
}

std::vector<Revival> FindRevivals(const Incident& incident, Duration slow) {
  const Micros slow_us = ToMicros(slow);
  std::vector<Revival> revivals;
  // A flag and a value rather than an optional: GCC 12 at -O2 with sanitizers warns that the
  // optional's value may be read uninitialized (-Wmaybe-uninitialized), which it never is.
  bool seen_bad = false;
  Micros last_bad{};
  for (const Observation& o : incident.observations) {
    const bool bad = Badness(o.outcome, o.latency, slow_us) > 0;
    if (bad) {
      seen_bad = true;
      last_bad = o.start;
    } else if (seen_bad) {
      revivals.push_back(Revival{last_bad + 1, o.start, std::nullopt});
      seen_bad = false;
    }
  }
  return revivals;
}

Result<ReplayRun, std::string> Replay(const Incident& incident, const GatewaySettings& settings,
                                      const std::vector<Revival>& revivals,
                                      const ReplayOptions& options) {
  Engine engine(incident, settings, revivals, options);
  return engine.Run();
}

ReplayRun RecordedRun(const Incident& incident, const std::vector<Revival>& revivals, Duration slow,
                      const ReplayOptions& options) {
  ReplayRun run;
  run.name = "recorded";
  run.reading = options.reading;
  for (const LoggedTransition& t : incident.transitions) {
    TransitionCause cause = TransitionCause::kOperator;
    for (int i = 0; i <= static_cast<int>(TransitionCause::kFleet); ++i) {
      if (ToString(static_cast<TransitionCause>(i)) == t.cause) {
        cause = static_cast<TransitionCause>(i);
      }
    }
    run.transitions.push_back(Transition{t.t, t.from, t.to, cause});
  }
  const RecordedCounts& r = incident.recorded;
  ReplayCounts& c = run.counts;
  c.requests = r.requests;
  c.refused = r.refused;
  c.refused_open = r.refused_open;
  c.refused_half_open = r.refused_half_open;
  c.refused_recovering = r.refused_recovering;
  c.overloaded = r.overloaded;
  c.throttled = r.throttled;
  c.served = r.served;
  c.stale_served = r.stale_served;
  c.failed = r.failed;
  c.upstream_calls = r.upstream_calls;
  // The gateway's own probes; passive, each user's request that took the breaker to HALF_OPEN.
  c.probes = r.probes > 0
                 ? r.probes
                 : static_cast<std::uint64_t>(std::count_if(
                       incident.transitions.begin(), incident.transitions.end(),
                       [](const LoggedTransition& t) { return t.to == State::kHalfOpen; }));
  const Micros slow_us = ToMicros(slow);
  for (const Observation& o : incident.observations) {
    const int bad = Badness(o.outcome, o.latency, slow_us);
    c.calls_while_failing += bad > 0 ? 1U : 0U;
    // A user's call of slow_call_duration or more, or a timeout (the joined users not counted).
    c.waited += !o.probe && (bad == 1 || bad == 3) ? 1U : 0U;
    c.slow_served += !o.probe && bad == 1 ? 1U : 0U;
  }
  if (options.record_timeline) {
    InitTimeline(run.timeline, incident.end, options.max_bins);
    for (const Observation& o : incident.observations) {
      if (o.probe) {
        ++BinAt(run.timeline, o.start).probes;
      }
    }
    for (const LoggedArrival& a : incident.arrivals) {
      Timeline::Bin& bin = BinAt(run.timeline, a.t);
      switch (a.refusal) {
        case Refusal::kOpen:
          ++bin.rejected_open;
          continue;
        case Refusal::kHalfOpen:
          ++bin.rejected_probe_cap;
          continue;
        case Refusal::kRecovering:
          ++bin.rejected_recovering;
          continue;
        case Refusal::kOverloaded:
          ++bin.overloaded;
          continue;
        case Refusal::kThrottled:
          ++bin.throttled;
          continue;
        case Refusal::kNone:
          break;
      }
      if (a.observation < 0) {
        continue;
      }
      const Observation& o = incident.observations[static_cast<std::size_t>(a.observation)];
      switch (o.outcome) {
        case Outcome::kSuccess:
        case Outcome::kIgnored:
          ++(o.latency >= slow_us ? bin.slow_succeeded : bin.succeeded);
          break;
        case Outcome::kTimeout:
          ++bin.timeouts;
          break;
        case Outcome::kFailure:
          ++bin.failed;
          break;
      }
    }
  }
  run.revivals = revivals;
  MeasureRevivals(run.revivals, run.transitions, options.reading, incident.end,
                  run.total_recovery_delay);
  return run;
}

}  // namespace fusebox::sim

// The breaker's hot paths against the in-run floor (one uncontended atomic fetch_add).
//
//   build/release/bin/fusebox-bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
//
// Every benchmark uses the clock production uses by default (CoarseMonotonicClock), so the
// numbers include the two clock reads an admitted call pays for. Targets (docs/benchmarks.md):
// ClosedAcquireRecord <= 2x AtomicFetchAdd (and <= 20 ns per thread with two threads),
// OpenReject <= 1.5x AtomicFetchAdd, CountWindowRecordFailure <= 25 ns.
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>

#include "fusebox/circuit_breaker.h"
#include "fusebox/fleet.h"

namespace fusebox {
namespace {

std::unique_ptr<CircuitBreaker> MakeBreaker(CircuitBreakerConfig config) {
  return CircuitBreaker::Create("bench", config).value();
}

// The floor: one uncontended atomic read-modify-write.
void BM_AtomicFetchAdd(benchmark::State& state) {
  static std::atomic<std::uint64_t> counter{0};
  for (auto _ : state) {
    benchmark::DoNotOptimize(counter.fetch_add(1, std::memory_order_relaxed));
  }
}
BENCHMARK(BM_AtomicFetchAdd);

// Admit + record a fast success in CLOSED (consecutive policy): the path every healthy call takes.
void BM_ClosedAcquireRecord(benchmark::State& state) {
  static std::unique_ptr<CircuitBreaker> breaker;
  if (state.thread_index() == 0) {
    breaker = MakeBreaker({});
  }
  // google-benchmark starts the timed loop of all threads together, after thread 0's setup.
  for (auto _ : state) {
    auto permit = breaker->TryAcquire();
    benchmark::DoNotOptimize(permit);
    permit->Record(Outcome::kSuccess);
  }
  if (state.thread_index() == 0) {
    state.counters["state_closed"] = breaker->state() == State::kClosed ? 1 : 0;
  }
}
BENCHMARK(BM_ClosedAcquireRecord)->Threads(1)->Threads(2)->UseRealTime();

// BM_ClosedAcquireRecord with `recovery_ramp` configured but no ramp running: Arg(0) a breaker that
// never recovered, Arg(1) one whose ramp ran and completed. Both must cost what
// BM_ClosedAcquireRecord costs (the ramp is a bit in the state word, clear once the ramp is over).
void BM_ClosedAcquireRecordRampConfigured(benchmark::State& state) {
  using std::chrono::milliseconds;
  static std::unique_ptr<CircuitBreaker> breaker;
  if (state.thread_index() == 0) {
    if (state.range(0) == 0) {
      breaker = MakeBreaker({.recovery_ramp = std::chrono::seconds(60)});
    } else {
      // Trip, close by a probe (the ramp starts), outlive the 1 ms ramp and complete it. The
      // sleeps outlast the coarse clock's tick.
      breaker = MakeBreaker(
          {.failure_threshold = 1, .cooldown = milliseconds(1), .recovery_ramp = milliseconds(1)});
      breaker->TryAcquire()->Record(Outcome::kFailure);
      std::this_thread::sleep_for(milliseconds(20));
      breaker->TryAcquire()->Record(Outcome::kSuccess);
      std::this_thread::sleep_for(milliseconds(20));
      breaker->TryAcquire()->Record(Outcome::kSuccess);
    }
  }
  for (auto _ : state) {
    auto permit = breaker->TryAcquire();
    benchmark::DoNotOptimize(permit);
    permit->Record(Outcome::kSuccess);
  }
  if (state.thread_index() == 0) {
    const MetricsSnapshot m = breaker->Snapshot();
    state.counters["state_closed"] = m.state == State::kClosed ? 1 : 0;
    state.counters["recovering"] = m.recovering ? 1 : 0;
    state.counters["generation"] = static_cast<double>(m.generation);
  }
}
BENCHMARK(BM_ClosedAcquireRecordRampConfigured)
    ->Arg(0)
    ->Arg(1)
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime();

// During a (day-long) recovery ramp admitting half the calls: the ramp's lock-free admission, an
// admitted call recording a success or a CIRCUIT_RECOVERING rejection, alternately.
void BM_RecoveringAcquire(benchmark::State& state) {
  using std::chrono::milliseconds;
  auto breaker = MakeBreaker({.failure_threshold = 1,
                              .cooldown = milliseconds(1),
                              .recovery_ramp = std::chrono::hours(24)});
  breaker->TryAcquire()->Record(Outcome::kFailure);
  std::this_thread::sleep_for(milliseconds(20));
  auto probe = breaker->TryAcquire();
  (void)breaker->TryAcquire();  // HALF_OPEN admits 1 call of 2: the ramp starts at half
  probe->Record(Outcome::kSuccess);
  for (auto _ : state) {
    auto permit = breaker->TryAcquire();
    benchmark::DoNotOptimize(permit);
    if (permit) {
      permit->Record(Outcome::kSuccess);
    }
  }
  const MetricsSnapshot m = breaker->Snapshot();
  state.counters["recovering"] = m.recovering ? 1 : 0;
  state.counters["admitted_share"] =
      static_cast<double>(m.allowed) / static_cast<double>(m.allowed + m.rejected_recovering);
}
BENCHMARK(BM_RecoveringAcquire);

// The same path with the breaker attached to a fleet (an in-memory link to one peer): it must
// cost the same, since no message is sent on that path (docs/breaker-rules.md, "Fleet").
void BM_ClosedAcquireRecordInFleet(benchmark::State& state) {
  static std::unique_ptr<InMemoryFleetBus> bus;
  static std::unique_ptr<InMemoryFleetBus::Link> link;
  static std::unique_ptr<InMemoryFleetBus::Link> peer_link;
  static std::unique_ptr<CircuitBreaker> breaker;
  static std::unique_ptr<CircuitBreaker> peer;
  static std::unique_ptr<Fleet> fleet;
  static std::unique_ptr<Fleet> peer_fleet;
  if (state.thread_index() == 0) {
    // Tear the previous run's fleet down in order: fleets, links, then the bus.
    fleet.reset();
    peer_fleet.reset();
    link.reset();
    peer_link.reset();
    bus = std::make_unique<InMemoryFleetBus>(DefaultClock());
    link = bus->Connect("a");
    peer_link = bus->Connect("b");
    breaker = MakeBreaker({});
    peer = MakeBreaker({});
    fleet = std::make_unique<Fleet>(*link, "a");
    peer_fleet = std::make_unique<Fleet>(*peer_link, "b");
    fleet->Attach(*breaker);
    peer_fleet->Attach(*peer);
  }
  for (auto _ : state) {
    auto permit = breaker->TryAcquire();
    benchmark::DoNotOptimize(permit);
    permit->Record(Outcome::kSuccess);
  }
  if (state.thread_index() == 0) {
    state.counters["state_closed"] = breaker->state() == State::kClosed ? 1 : 0;
    state.counters["messages_sent"] = static_cast<double>(fleet->Stats().messages_sent);
  }
}
BENCHMARK(BM_ClosedAcquireRecordInFleet)->Threads(1)->Threads(2)->UseRealTime();

// Reject in OPEN before the cooldown ends.
void BM_OpenReject(benchmark::State& state) {
  auto breaker = MakeBreaker({.failure_threshold = 1, .cooldown = std::chrono::hours(1)});
  breaker->TryAcquire()->Record(Outcome::kFailure);
  for (auto _ : state) {
    auto r = breaker->TryAcquire();
    benchmark::DoNotOptimize(r);
  }
  state.counters["state_open"] = breaker->state() == State::kOpen ? 1 : 0;
}
BENCHMARK(BM_OpenReject);

// Acquire + record a failure into a 100-call count window. With threshold 1.0 only an all-failure
// window trips; one success in every 100 calls keeps it CLOSED, so 99% of iterations measure the
// failure path (lock, window update, rate evaluation).
void BM_CountWindowRecordFailure(benchmark::State& state) {
  auto breaker = MakeBreaker({.trip = TripPolicy::kCountWindow,
                              .window_size = 100,
                              .minimum_calls = 100,
                              .failure_rate_threshold = 1.0});
  std::uint64_t i = 0;
  for (auto _ : state) {
    auto permit = breaker->TryAcquire();
    benchmark::DoNotOptimize(permit);
    permit->Record(++i % 100 == 0 ? Outcome::kSuccess : Outcome::kFailure);
  }
  state.counters["state_closed"] = breaker->state() == State::kClosed ? 1 : 0;
}
BENCHMARK(BM_CountWindowRecordFailure);

// For reference: the precise clock read (CLOCK_MONOTONIC) and the default coarse one.
void BM_ClockRead(benchmark::State& state) {
  PreciseMonotonicClock precise;
  Clock& clock = state.range(0) == 0 ? DefaultClock() : precise;
  for (auto _ : state) {
    benchmark::DoNotOptimize(clock.Now());
  }
  state.SetLabel(state.range(0) == 0 ? "coarse" : "precise");
}
BENCHMARK(BM_ClockRead)->Arg(0)->Arg(1);

}  // namespace
}  // namespace fusebox

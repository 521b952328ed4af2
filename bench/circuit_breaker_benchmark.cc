// The breaker's hot paths against the in-run floor (one uncontended atomic fetch_add).
//
//   build/release/bin/fusebox-bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
//
// The benchmarks without "CachedClock" in their name use the clock production uses by default
// (CoarseMonotonicClock), so their numbers include the two clock reads an admitted call pays for;
// the CachedClock ones use a CachedClock refreshed every millisecond by a ClockTicker. Targets
// (docs/benchmarks.md): ClosedAcquireRecord <= 2x AtomicFetchAdd (and <= 20 ns per thread with two
// threads), OpenReject <= 1.5x AtomicFetchAdd, CountWindowRecordFailure <= 25 ns.
// BM_HotPathRatios prints both ratios with both clocks side by side, measured in one loop.
//
// Scale and memory: BM_RegistryGet and BM_RegistryCall at 1, 1,000 and 100,000 breakers;
// BM_BreakerMemory the bytes one breaker holds (sizeof and owned heap) per trip policy.
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <time.h>  // NOLINT(modernize-deprecated-headers): clock_gettime is POSIX

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fusebox/adaptive_limit.h"
#include "fusebox/bulkhead.h"
#include "fusebox/circuit_breaker.h"
#include "fusebox/fleet.h"
#include "fusebox/registry.h"

namespace fusebox {
namespace {

std::unique_ptr<CircuitBreaker> MakeBreaker(CircuitBreakerConfig config,
                                            CircuitBreakerDeps deps = {}) {
  return CircuitBreaker::Create("bench", config, deps).value();
}

// A CachedClock refreshed every millisecond for the whole run (as a program would keep one).
CachedClock& TickingClock() {
  static CachedClock clock;
  static ClockTicker ticker(clock);
  return clock;
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

// The bulkhead's admission and release, and the adaptive limit's beside it: admission alone (the
// permit dropped, which teaches the limit nothing), and admission with a recorded latency (two
// clock reads and the sample window's lock). The limit is far above what the threads hold, so
// nothing is refused; its windows close once a second, as in production.
void BM_BulkheadAcquireRelease(benchmark::State& state) {
  static std::unique_ptr<Bulkhead> bulkhead;
  if (state.thread_index() == 0) {
    bulkhead = Bulkhead::Create("bench", {.max_concurrent = 1000}).value();
  }
  for (auto _ : state) {
    auto permit = bulkhead->TryAcquire();
    benchmark::DoNotOptimize(permit);
  }
}
BENCHMARK(BM_BulkheadAcquireRelease)->Threads(1)->Threads(2)->UseRealTime();

std::unique_ptr<AdaptiveLimit> MakeAdaptiveLimit() {
  return AdaptiveLimit::Create("bench", {.max_limit = 1000, .initial_limit = 1000}).value();
}

// Admission, then either a recorded latency or a release that teaches nothing.
void RunAdaptiveLimit(benchmark::State& state, bool record) {
  static std::unique_ptr<AdaptiveLimit> limit;
  if (state.thread_index() == 0) {
    limit = MakeAdaptiveLimit();
  }
  for (auto _ : state) {
    auto permit = limit->TryAcquire();
    benchmark::DoNotOptimize(permit);
    if (record) {
      permit->Record(Outcome::kSuccess);
    }
  }
}

void BM_AdaptiveLimitAcquire(benchmark::State& state) { RunAdaptiveLimit(state, false); }
BENCHMARK(BM_AdaptiveLimitAcquire)->Threads(1)->Threads(2)->UseRealTime();

void BM_AdaptiveLimitAcquireRecord(benchmark::State& state) { RunAdaptiveLimit(state, true); }
BENCHMARK(BM_AdaptiveLimitAcquireRecord)->Threads(1)->Threads(2)->UseRealTime();

// BM_ClosedAcquireRecord with a CachedClock: each clock read is one load.
void BM_ClosedAcquireRecordCachedClock(benchmark::State& state) {
  static std::unique_ptr<CircuitBreaker> breaker;
  if (state.thread_index() == 0) {
    breaker = MakeBreaker({}, {.clock = &TickingClock()});
  }
  for (auto _ : state) {
    auto permit = breaker->TryAcquire();
    benchmark::DoNotOptimize(permit);
    permit->Record(Outcome::kSuccess);
  }
  if (state.thread_index() == 0) {
    state.counters["state_closed"] = breaker->state() == State::kClosed ? 1 : 0;
  }
}
BENCHMARK(BM_ClosedAcquireRecordCachedClock)->Threads(1)->Threads(2)->UseRealTime();

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

// BM_OpenReject with a CachedClock.
void BM_OpenRejectCachedClock(benchmark::State& state) {
  auto breaker = MakeBreaker({.failure_threshold = 1, .cooldown = std::chrono::hours(1)},
                             {.clock = &TickingClock()});
  breaker->TryAcquire()->Record(Outcome::kFailure);
  for (auto _ : state) {
    auto r = breaker->TryAcquire();
    benchmark::DoNotOptimize(r);
  }
  state.counters["state_open"] = breaker->state() == State::kOpen ? 1 : 0;
}
BENCHMARK(BM_OpenRejectCachedClock);

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

// For reference: one read of the default coarse clock (0), the precise clock (1) and a
// CachedClock (2), each through the virtual Now() as any component but the breaker reads them.
void BM_ClockRead(benchmark::State& state) {
  PreciseMonotonicClock precise;
  Clock* clocks[] = {&DefaultClock(), &precise, &TickingClock()};
  const char* labels[] = {"coarse", "precise", "cached"};
  Clock& clock = *clocks[state.range(0)];
  for (auto _ : state) {
    benchmark::DoNotOptimize(clock.Now());
  }
  state.SetLabel(labels[state.range(0)]);
}
BENCHMARK(BM_ClockRead)->Arg(0)->Arg(1)->Arg(2);

// ---- both ratios, both clocks, one measurement ----

// Thread CPU time, so that time the thread spends preempted (this machine is shared) is not
// charged to whichever path happened to be running.
std::int64_t ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

template <typename Body>
double NsPerCall(std::int64_t calls, Body&& body) {
  const std::int64_t start = ThreadCpuNs();
  for (std::int64_t i = 0; i < calls; ++i) {
    body();
  }
  return static_cast<double>(ThreadCpuNs() - start) / static_cast<double>(calls);
}

// Each iteration times the floor, then the CLOSED path and the OPEN rejection with the coarse
// clock and with a CachedClock, in turn (so that a slow spell of the host hits them all), and the
// counters are the ratios of the sums: closed_* = TryAcquire + Record(kSuccess) in CLOSED,
// open_* = a rejection in OPEN, each over one atomic fetch_add.
void BM_HotPathRatios(benchmark::State& state) {
  constexpr std::int64_t kCalls = 2'000'000;
  static std::atomic<std::uint64_t> counter{0};
  auto closed_coarse = MakeBreaker({});
  auto closed_cached = MakeBreaker({}, {.clock = &TickingClock()});
  const CircuitBreakerConfig open_config{.failure_threshold = 1, .cooldown = std::chrono::hours(1)};
  auto open_coarse = MakeBreaker(open_config);
  auto open_cached = MakeBreaker(open_config, {.clock = &TickingClock()});
  open_coarse->TryAcquire()->Record(Outcome::kFailure);
  open_cached->TryAcquire()->Record(Outcome::kFailure);
  auto closed = [](CircuitBreaker& b) {
    return [&b] {
      auto permit = b.TryAcquire();
      benchmark::DoNotOptimize(permit);
      permit->Record(Outcome::kSuccess);
    };
  };
  auto open = [](CircuitBreaker& b) {
    return [&b] {
      auto r = b.TryAcquire();
      benchmark::DoNotOptimize(r);
    };
  };
  double floor = 0;
  double cc = 0;
  double ck = 0;
  double oc = 0;
  double ok = 0;
  for (auto _ : state) {
    floor += NsPerCall(
        kCalls, [] { benchmark::DoNotOptimize(counter.fetch_add(1, std::memory_order_relaxed)); });
    cc += NsPerCall(kCalls, closed(*closed_coarse));
    ck += NsPerCall(kCalls, closed(*closed_cached));
    oc += NsPerCall(kCalls, open(*open_coarse));
    ok += NsPerCall(kCalls, open(*open_cached));
  }
  const auto n = static_cast<double>(state.iterations());
  state.counters["fetch_add_ns"] = floor / n;
  state.counters["closed_coarse_x"] = cc / floor;
  state.counters["closed_cached_x"] = ck / floor;
  state.counters["open_coarse_x"] = oc / floor;
  state.counters["open_cached_x"] = ok / floor;
  state.counters["closed_cached_ns"] = ck / n;
  state.counters["open_cached_ns"] = ok / n;
}
BENCHMARK(BM_HotPathRatios)->Iterations(5);

// ---- many breakers ----

std::vector<std::string> BreakerNames(std::size_t n) {
  std::vector<std::string> names;
  names.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    names.push_back("dep-" + std::to_string(i));  // short enough to be stored inline
  }
  return names;
}

// A fixed pseudo-random visiting order, so that consecutive lookups or calls touch unrelated
// breakers (as requests to many dependencies would) instead of walking memory in order.
std::vector<std::uint32_t> VisitOrder(std::size_t n) {
  std::vector<std::uint32_t> order(std::max<std::size_t>(n, 4096));
  for (std::size_t i = 0; i < order.size(); ++i) {
    order[i] = static_cast<std::uint32_t>(i % n);
  }
  std::shuffle(order.begin(), order.end(), std::mt19937(42));
  return order;
}

// Registry::Get of an existing breaker, among range(0) breakers: the lookup a program would
// make per call if it did not keep the shared_ptr.
void BM_RegistryGet(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  auto registry = Registry::Create({}, {.clock = &TickingClock()}).value();
  const std::vector<std::string> names = BreakerNames(n);
  for (const std::string& name : names) {
    (void)registry->Get(name).value();
  }
  const std::vector<std::uint32_t> order = VisitOrder(n);
  std::size_t i = 0;
  for (auto _ : state) {
    auto breaker = registry->Get(names[order[i]]);
    benchmark::DoNotOptimize(breaker);
    i = i + 1 == order.size() ? 0 : i + 1;
  }
  state.counters["breakers"] = static_cast<double>(n);
}
BENCHMARK(BM_RegistryGet)->Arg(1)->Arg(1000)->Arg(100'000);

// TryAcquire + Record(kSuccess) on one of range(0) breakers (held shared_ptrs, CachedClock),
// visited in a pseudo-random order: the CLOSED path when the breaker is not in the cache.
void BM_RegistryCall(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  auto registry = Registry::Create({}, {.clock = &TickingClock()}).value();
  std::vector<std::shared_ptr<CircuitBreaker>> breakers;
  breakers.reserve(n);
  for (const std::string& name : BreakerNames(n)) {
    breakers.push_back(registry->Get(name).value());
  }
  const std::vector<std::uint32_t> order = VisitOrder(n);
  std::size_t i = 0;
  for (auto _ : state) {
    auto permit = breakers[order[i]]->TryAcquire();
    benchmark::DoNotOptimize(permit);
    permit->Record(Outcome::kSuccess);
    i = i + 1 == order.size() ? 0 : i + 1;
  }
  state.counters["breakers"] = static_cast<double>(n);
}
BENCHMARK(BM_RegistryCall)->Arg(1)->Arg(1000)->Arg(100'000);

// ---- memory ----

// Bytes the allocator hands out, now.
double HeapInUse() { return static_cast<double>(mallinfo2().uordblks); }

// The memory one breaker holds: 100,000 breakers are created (each with its own name, as a
// registry would hold them) and called once from this thread, and the heap's growth is divided
// by their number, so the counter includes everything a breaker allocates (its state, window,
// probe slots, its share of a config) and the allocator's own overhead per block. Not included:
// the breaker's counters, 80 B in a table of each thread that calls it (counter_shards.h). Those
// tables grow in chunks and keep them when breakers die, so whether they grew during a
// measurement would depend on what ran before in this process: a warm-up makes and calls as many
// breakers first, so that they never do. A name longer than 15 characters adds a heap block of its
// own. range(0): 0 the consecutive policy (target 256 B), 1 a 100-call count window (target 1 KB).
// registry_bytes adds what a Registry entry costs on top.
void BM_BreakerMemory(benchmark::State& state) {
  constexpr std::size_t kBreakers = 100'000;
  const CircuitBreakerConfig config =
      state.range(0) == 0
          ? CircuitBreakerConfig{}
          : CircuitBreakerConfig{.trip = TripPolicy::kCountWindow, .window_size = 100};
  const std::vector<std::string> names = BreakerNames(kBreakers);
  double bytes = 0;
  double registry_bytes = 0;
  {
    // The warm-up (see above): the counter tables get their chunks for these breakers' ids.
    std::vector<std::unique_ptr<CircuitBreaker>> breakers;
    breakers.reserve(kBreakers);
    for (const std::string& name : names) {
      breakers.push_back(CircuitBreaker::Create(name, config).value());
      breakers.back()->TryAcquire()->Record(Outcome::kSuccess);
    }
  }
  for (auto _ : state) {
    {
      std::vector<std::unique_ptr<CircuitBreaker>> breakers;
      breakers.reserve(kBreakers);
      const double before = HeapInUse();
      for (const std::string& name : names) {
        breakers.push_back(CircuitBreaker::Create(name, config).value());
        breakers.back()->TryAcquire()->Record(Outcome::kSuccess);
      }
      bytes = (HeapInUse() - before) / static_cast<double>(kBreakers);
    }
    {
      const double before = HeapInUse();
      auto registry = Registry::Create(config).value();
      for (const std::string& name : names) {
        registry->Get(name).value()->TryAcquire()->Record(Outcome::kSuccess);
      }
      registry_bytes = (HeapInUse() - before) / static_cast<double>(kBreakers);
    }
  }
  state.counters["bytes_per_breaker"] = bytes;
  state.counters["registry_bytes_per_breaker"] = registry_bytes;
  state.counters["sizeof_breaker"] = static_cast<double>(sizeof(CircuitBreaker));
  state.SetLabel(state.range(0) == 0 ? "consecutive" : "count_window_100");
}
BENCHMARK(BM_BreakerMemory)->Arg(0)->Arg(1)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fusebox

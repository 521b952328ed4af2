// The circuit breaker's state machine. The rules are in docs/breaker-rules.md; comments here
// say why the code is shaped as it is.
//
// What stays here is the machine itself: admission (TryAcquire, TryAcquireProbe), outcomes
// (OnOutcome), transitions, observation and commands, and the layout that keeps the lock-free
// paths on one cache line. Its rules live in parts with tests of their own
// (tests/breaker_parts_test.cc, tests/internal_test.cc):
//   internal/trip_rule.h         when CLOSED trips: the consecutive run, a window's rates
//   internal/recovery_ramp.h     the share of calls admitted after a close
//   internal/probe_slots.h       HALF_OPEN's probe slots and their deadlines
//   internal/event_dispatch.h    who hears of an event, in what order
//   internal/inflight_tracker.h  the calls running past slow_call_duration
//   internal/counter_shards.h    the per-thread counters; spin_lock.h, event_batch.h
//
// Concurrency design
// ------------------
// Two paths take no lock, because they run on every call of every service that uses us:
//   1. CLOSED with the consecutive policy: admitting, and recording a fast success while the run
//      of failures is zero. Neither changes the state machine, so it is enough to read the state
//      word (state + generation) and the run counter; the only writes are counter increments on
//      the calling thread's own shard (internal/counter_shards.h).
//   2. OPEN before the cooldown ends: a rejection. It reads the state word and `open_until_ns`,
//      which is stored before the state word is published (release), so a reader that sees OPEN
//      sees at least that OPEN period's deadline. Reading a newer deadline is fine: the breaker
//      was then OPEN with it, and the rejection is ordered after that transition.
// A lock-free reader may act on a state that changes a moment later; its call is then ordered
// before that change (an admitted call becomes a late outcome of the older generation, which is
// exactly how generations treat calls in flight during a transition).
// A window policy's outcome in CLOSED takes the lock but, when nobody listens and it does not
// trip the breaker, not the full locked path: it only adds its sample to the window
// (RecordWindowSampleUnlessItTrips).
// Everything else (trips, windows, probes, transitions, operator commands) takes `mu`, a short
// spin lock (internal/spin_lock.h): critical sections are a few dozen instructions and never call
// out (listeners are invoked after unlocking, from an internal::EventBatch), so a futex-based
// mutex would only add its own RMW on unlock.
//
// Live reconfiguration (Reconfigure) writes the config under `mu`. The few settings the lock-free
// paths read (call_timeout, the slow-call threshold, the FORCED_OPEN hint and which paths are
// lock-free) are mirrored in relaxed atomics, which on x86-64 and AArch64 load as plain loads, so
// the hot paths cost what they cost with an immutable config. A lock-free reader may see a
// setting from just before or just after a Reconfigure; its call is then ordered before or
// after that Reconfigure, and a change that could not be applied that way (trip policy, window)
// starts a new generation, which makes every call admitted before it late.
//
// Config validation and DescribeChanges are in breaker_settings.cc, driven by its table.
#include "fusebox/circuit_breaker.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "fusebox/thread_annotations.h"
#include "internal/counter_shards.h"
#include "internal/event_batch.h"
#include "internal/event_dispatch.h"
#include "internal/inflight_tracker.h"
#include "internal/probe_slots.h"
#include "internal/recovery_ramp.h"
#include "internal/sliding_window.h"
#include "internal/spin_lock.h"
#include "internal/trip_rule.h"

namespace fusebox {
namespace {

using internal::EventBatch;
using internal::InflightTracker;
using internal::ProbeSlot;
using internal::RecoveryRamp;
using internal::SpinLock;
using internal::WindowRule;

// The state word: generation << 4 | ramp bit << 3 | state. The ramp bit (CLOSED with a recovery
// ramp under way) makes the word's low bits match no State, so the lock-free CLOSED admission
// test, `AdmissionStateOf(word) == kClosed`, fails during a ramp without an extra test.
constexpr std::uint64_t kStateBits = 4;
constexpr std::uint64_t kRampBit = 8;

constexpr std::uint64_t Pack(State s, std::uint64_t generation, bool ramping = false) noexcept {
  return (generation << kStateBits) | (ramping ? kRampBit : 0U) | static_cast<std::uint64_t>(s);
}
constexpr State StateOf(std::uint64_t word) noexcept {
  return static_cast<State>(word & (kRampBit - 1));
}
// The state with the ramp bit: no enumerator during a ramp.
constexpr State AdmissionStateOf(std::uint64_t word) noexcept {
  return static_cast<State>(word & ((1U << kStateBits) - 1));
}
constexpr bool RampingIn(std::uint64_t word) noexcept { return (word & kRampBit) != 0; }

constexpr std::uint64_t GenerationOf(std::uint64_t word) noexcept { return word >> kStateBits; }

// The breaker's totals, one internal::ShardedCounters index each.
enum Counter : std::size_t {
  kAllowed,
  kRejectedOpen,
  kRejectedHalfOpen,
  kRejectedRecovering,
  kSucceeded,
  kFailed,
  kTimeouts,
  kSlow,
  kIgnored,
  kLate,
  kCounterCount,
};

// One immutable copy of a config for all the breakers configured alike: a registry's breakers,
// created from one default, then hold a pointer each instead of a 120-byte copy each (the largest
// part of a small breaker). The table holds weak references, so a config lives only while some
// breaker uses it, and it is small: with more distinct configs alive than it holds, the newest
// ones are simply not shared.
std::shared_ptr<const CircuitBreakerConfig> SharedConfig(const CircuitBreakerConfig& config) {
  constexpr std::size_t kTableSize = 16;
  struct Table {
    Mutex mu;
    std::array<std::weak_ptr<const CircuitBreakerConfig>, kTableSize> entries
        FUSEBOX_GUARDED_BY(mu);
    std::size_t next FUSEBOX_GUARDED_BY(mu) = 0;
  };
  static auto* table = new Table();  // never destroyed: breakers may outlive static destruction
  Locked lock(table->mu);
  for (const auto& entry : table->entries) {
    if (auto shared = entry.lock(); shared && *shared == config) {
      return shared;
    }
  }
  auto made = std::make_shared<const CircuitBreakerConfig>(config);
  // An expired entry if there is one, else the oldest (round robin).
  auto* free_entry = std::find_if(table->entries.begin(), table->entries.end(),
                                  [](const auto& entry) { return entry.expired(); });
  if (free_entry == table->entries.end()) {
    free_entry = table->entries.begin() + static_cast<std::ptrdiff_t>(table->next);
    table->next = (table->next + 1) % kTableSize;
  }
  *free_entry = made;
  return made;
}

// Where Impl starts in the breaker's allocation (CircuitBreaker::operator new): right after the
// CircuitBreaker object, whose last fields are the clock the hot paths read.
constexpr std::size_t kImplOffset = sizeof(CircuitBreaker);

std::uint64_t HashName(const std::string& name) noexcept {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace

// ---- state ----

// In the breaker's own allocation, right after the CircuitBreaker object (operator new).
struct CircuitBreaker::Impl {
  using ListenerList = internal::Subscribers::ListenerList;
  using ObserverList = internal::Subscribers::ObserverList;
  struct ColdState;

  // Made by CircuitBreaker's constructor once its own fields (clock, name) are set.
  Impl(const Config& cfg, CircuitBreakerDeps deps)
      : config(SharedConfig(cfg)),
        current_cooldown(cfg.open_wait()),
        base_cooldown(cfg.open_wait()),
        window(WindowRule::For(cfg)),
        successes_to_close(static_cast<std::uint16_t>(cfg.effective_half_open_successes())) {
    if (cfg.recovery_ramp > Duration::zero() || cfg.cooldown_jitter > 0.0 ||
        deps.random != nullptr || cfg.inflight_slow_accounting || cfg.half_open_max_probes > 1) {
      // The ramp's state, the jitter's generator, the in-flight list, more than one probe slot.
      ColdState& x = EnsureCold(deps.random);
      try {
        if (cfg.inflight_slow_accounting) {
          x.inflight = std::make_unique<InflightTracker>();
        }
        InstallProbeRoomLocked(MakeProbeRoom(cfg.half_open_max_probes));
      } catch (...) {
        delete cold_block.load(std::memory_order_relaxed);  // ~Impl will not run
        throw;
      }
    }
    AssignProbeSlotsLocked(cfg.half_open_max_probes);
    PublishHotSettingsLocked();
    closed_since = clock().Now();
  }
  ~Impl() { delete cold_block.load(std::memory_order_acquire); }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // The breaker this state belongs to: the object at the start of the allocation (operator new),
  // which keeps the clock and the name (Impl does not repeat them).
  const CircuitBreaker& owner() const noexcept {
    return *std::launder(reinterpret_cast<const CircuitBreaker*>(
        reinterpret_cast<const std::byte*>(this) - kImplOffset));
  }
  Clock& clock() const noexcept { return *owner().clock_; }

  // ---- What the lock-free paths read, first: 64 bytes right after the owner's clock fields, so
  // that a call on a breaker that fell out of the cache fetches two lines of it, or three (plus
  // its counter block). ----
  // Published for the lock-free paths; written only under mu.
  std::atomic<std::uint64_t> state_word{Pack(State::kClosed, 0)};
  std::atomic<std::int64_t> open_until_ns{0};
  // Mirrors of the settings the lock-free paths read (see the top of this file). Written under
  // mu, read relaxed.
  std::atomic<Duration::rep> call_timeout_ns{0};
  std::atomic<Duration::rep> slow_after_ns{0};    // effective_slow_call_duration()
  std::atomic<Duration::rep> cooldown_ns{0};      // the FORCED_OPEN retry hint
  std::atomic<std::uint32_t> consecutive_run{0};  // Written only under mu.
  std::atomic<bool> lock_free_closed{false};      // consecutive policy: a fast success in CLOSED
                                                  // takes no lock
  std::atomic<bool> lock_free_admit{false};       // no in-flight list: admission in CLOSED takes
                                                  // no lock
  // Window policy without an in-flight list: an outcome in CLOSED that does not trip the breaker
  // only adds its sample to the window (RecordWindowSampleUnlessItTrips).
  std::atomic<bool> window_short_path{false};
  std::atomic<bool> has_listeners{false};
  std::atomic<bool> active_probing{false};  // probe_mode kActive: OPEN refuses every caller
  internal::ShardedCounters<kCounterCount> counters;

  // The settings in force: replaced only by Reconfigure.
  // Guarded by mu (the pointer; the config itself is immutable and shared by the breakers
  // configured alike, see SharedConfig).
  std::shared_ptr<const Config> config FUSEBOX_GUARDED_BY(mu);

  // Fields written only at transitions and probes, between the lock-free group and the lock: the
  // lock and the small fields written with it on every locked call (below) then lie a cache line
  // past the lock-free group (static_asserted in CircuitBreaker's constructor).
  TimePoint closed_since FUSEBOX_GUARDED_BY(mu){};
  Duration current_cooldown FUSEBOX_GUARDED_BY(mu);  // This OPEN period's wait before a probe.
  Duration base_cooldown FUSEBOX_GUARDED_BY(mu);     // Before jitter; grows per bad probe.
  std::uint64_t probes FUSEBOX_GUARDED_BY(mu) = 0;
  std::uint64_t wasted_probes FUSEBOX_GUARDED_BY(mu) = 0;
  std::uint64_t opened FUSEBOX_GUARDED_BY(mu) = 0;
  // Only under a window policy (internal/trip_rule.h).
  std::unique_ptr<WindowRule> window FUSEBOX_GUARDED_BY(mu);

  mutable SpinLock mu;
  // The small fields together. The probe counts are at most half_open_max_probes and
  // half_open_successes, which Validate bounds by 10,000: 16 bits.
  State state FUSEBOX_GUARDED_BY(mu) = State::kClosed;
  bool ramping FUSEBOX_GUARDED_BY(mu) = false;  // CLOSED with a recovery ramp (kRampBit).
  // Whether a coordinator (SetCoordination) or a transition observer is set.
  std::atomic<bool> watched{false};
  std::uint16_t successes_to_close FUSEBOX_GUARDED_BY(mu);  // Set on entering HALF_OPEN.
  std::uint16_t probes_in_flight FUSEBOX_GUARDED_BY(mu) = 0;
  std::uint16_t good_probes FUSEBOX_GUARDED_BY(mu) = 0;
  // The slots of this HALF_OPEN (see probe_slots()).
  std::uint16_t probe_count FUSEBOX_GUARDED_BY(mu) = 0;
  // Calls seen and probes admitted in this HALF_OPEN, for the ramp's start share (over its
  // first 65,535 calls, see CountHalfOpenCallLocked).
  std::uint16_t half_open_calls FUSEBOX_GUARDED_BY(mu) = 0;
  std::uint16_t half_open_admitted FUSEBOX_GUARDED_BY(mu) = 0;
  // The slot of the default cap (see probe_slots()).
  ProbeSlot inline_probe FUSEBOX_GUARDED_BY(mu);

  // What most breakers never use, in a block allocated on first use and kept until the breaker
  // dies, so that a plain breaker does not carry it: listeners, a fleet coordinator, the lock of
  // live reconfiguration, the recovery ramp's state, the jitter's generator, the in-flight list,
  // the probe slots of a cap above one.
  struct ColdState {
    ColdState(std::uint64_t seed, Random* injected) : injected_random(injected), own_random(seed) {}

    std::mutex reconfigure_mu;  // serializes Reconfigure calls (config is also written under mu)

    SpinLock listeners_mu;  // held for a copy of three pointers, or of a list to change it
    // Listeners and transition observers (copy-on-write), guarded by listeners_mu; the
    // coordinator (SetCoordination), written under both listeners_mu and mu: Dispatch reads it
    // under listeners_mu, the probe gate under mu.
    internal::Subscribers subscribers;
    ListenerId next_listener_id FUSEBOX_GUARDED_BY(listeners_mu) = 1;
    std::optional<Duration> adopted_cooldown;  // Guarded by mu. Set by Adopt for its transition.
    // Guarded by mu. The dependency's own wait (Permit::Record with MinOpen): no probe before it.
    TimePoint hold_until{};
    // Events are numbered only where somebody receives them (a listener or a coordinator).
    std::atomic<std::uint64_t> sequence{0};
    // The cooldown jitter's generator: the injected one (CircuitBreakerDeps::random, which makes
    // the block at creation), else the breaker's own, seeded by its name.
    Random* const injected_random;
    SplitMix64Random own_random;

    // The ramp under way, for its lock-free admission: started under mu before a word with
    // kRampBit is published (release), read after reading such a word (acquire).
    RecoveryRamp ramp;

    // Only with inflight_slow_accounting (a std::deque allocates even when empty). Guarded by mu
    // (the pointer: set at creation or by Reconfigure, then kept until the breaker dies, since
    // permits may still carry its tickets).
    std::unique_ptr<InflightTracker> inflight;
    // The probe slots once the cap has exceeded one: grown by InstallProbeRoomLocked, never
    // shrunk.
    std::unique_ptr<ProbeSlot[]> probe_heap;  // NOLINT(modernize-avoid-c-arrays): 8 bytes, not 24
    std::uint32_t probe_capacity = 1;         // Guarded by mu. The slots probe_heap holds, or 1.
  };
  // Made by the constructor when the config has a recovery ramp, a cooldown jitter, the in-flight
  // list or a probe cap above one, or the deps an injected generator; else by the first
  // AddListener, SetCoordination, Adopt or Reconfigure (which may install any of those). So the
  // block exists whenever `ramping` is set, a word carries kRampBit, a cooldown is drawn with
  // jitter, the in-flight list is in use, or the probe slots are more than one. Installed by
  // compare-and-swap.
  std::atomic<ColdState*> cold_block{nullptr};

  // The block, made if it is not yet (`injected_random` only matters then: the constructor
  // passes the injected generator, when there is one, and makes the block at once).
  ColdState& EnsureCold(Random* injected_random = nullptr) {
    ColdState* made = cold_block.load(std::memory_order_acquire);
    if (made == nullptr) {
      auto fresh = std::make_unique<ColdState>(HashName(owner().name_), injected_random);
      if (cold_block.compare_exchange_strong(made, fresh.get(), std::memory_order_acq_rel)) {
        made = fresh.release();
      }
    }
    return *made;
  }
  // The block, or null when nothing needed it yet.
  // Both overloads, so that const members get a const block (the check would make this one const).
  // NOLINTNEXTLINE(readability-make-member-function-const)
  ColdState* cold_or_null() noexcept { return cold_block.load(std::memory_order_acquire); }
  const ColdState* cold_or_null() const noexcept {
    return cold_block.load(std::memory_order_acquire);
  }
  // The dependency's own wait (MinOpen): the epoch when none was given.
  TimePoint HoldUntilLocked() const noexcept FUSEBOX_REQUIRES(mu) {
    const ColdState* x = cold_or_null();
    return x != nullptr ? x->hold_until : TimePoint{};
  }
  void ClearHoldLocked() noexcept FUSEBOX_REQUIRES(mu) {
    if (ColdState* x = cold_or_null()) {
      x->hold_until = TimePoint{};
    }
  }
  // Whether the fleet coordinator, if any, lets one more probe start (the probe gate).
  bool CoordinatorAllowsProbeLocked() const FUSEBOX_REQUIRES(mu) {
    const ColdState* x = cold_or_null();
    if (x == nullptr) {
      return true;
    }
    const std::shared_ptr<const Coordination>& coordination = x->subscribers.coordination;
    return !coordination || !coordination->may_probe ||
           coordination->may_probe(generation(), probes_in_flight);
  }
  // The block where it is known to exist: while ramping, or drawing a jittered cooldown (see
  // cold_block).
  // NOLINTNEXTLINE(readability-make-member-function-const): as cold_or_null
  ColdState& cold() noexcept { return *cold_block.load(std::memory_order_acquire); }
  const ColdState& cold() const noexcept { return *cold_block.load(std::memory_order_acquire); }

  // The generation in force. Only transitions, under mu, change it, and they publish it in the
  // state word; so under mu the word is current, and no field repeats it.
  std::uint64_t generation() const noexcept {
    return GenerationOf(state_word.load(std::memory_order_relaxed));
  }

  // The in-flight list, or null without inflight_slow_accounting.
  InflightTracker* inflight() noexcept {
    ColdState* x = cold_or_null();
    return x != nullptr ? x->inflight.get() : nullptr;
  }
  const InflightTracker* inflight() const noexcept {
    const ColdState* x = cold_or_null();
    return x != nullptr ? x->inflight.get() : nullptr;
  }

  // ---- probe slots (under mu) ----

  // The slots of this HALF_OPEN (free in other states): the default cap's one inline, a larger
  // cap's in the cold block.
  std::span<ProbeSlot> probe_slots() noexcept FUSEBOX_REQUIRES(mu) {
    ColdState* x = cold_or_null();
    return {x != nullptr && x->probe_heap ? x->probe_heap.get() : &inline_probe, probe_count};
  }
  // Room for n slots (at most 10,000), so that AssignProbeSlotsLocked never allocates: made
  // before taking mu (MakeProbeRoom), installed under it keeping the slots in use.
  struct ProbeRoom {
    std::unique_ptr<ProbeSlot[]> slots;  // NOLINT(modernize-avoid-c-arrays): see probe_heap
    std::uint32_t capacity = 0;
  };
  // Empty when the room suffices. Only the constructor and Reconfigure (which holds
  // reconfigure_mu, and made the block) change the room, so they read it without mu.
  ProbeRoom MakeProbeRoom(std::uint32_t n) const {
    const ColdState* x = cold_or_null();
    if (n <= 1 || (x != nullptr && n <= x->probe_capacity)) {
      return {};
    }
    return {std::make_unique<ProbeSlot[]>(n), n};  // NOLINT(modernize-avoid-c-arrays)
  }
  void InstallProbeRoomLocked(ProbeRoom room) noexcept FUSEBOX_REQUIRES(mu) {
    if (!room.slots) {
      return;
    }
    const std::span<ProbeSlot> in_use = probe_slots();
    std::copy(in_use.begin(), in_use.end(), room.slots.get());
    ColdState& x = cold();  // a room above one is made only where the block exists
    x.probe_heap = std::move(room.slots);
    x.probe_capacity = room.capacity;
  }
  // n free slots (n within the reserved room).
  void AssignProbeSlotsLocked(std::uint32_t n) noexcept FUSEBOX_REQUIRES(mu) {
    probe_count = static_cast<std::uint16_t>(n);
    std::ranges::fill(probe_slots(), ProbeSlot{});
  }
  // A call seen in HALF_OPEN, and whether it became a probe. The share is taken over the
  // HALF_OPEN's first 65,535 calls: past them the counts stay (by then the share is at most the
  // probe cap in 65,535, which starts a ramp from nearly nothing either way).
  void CountHalfOpenCallLocked(bool admitted) noexcept FUSEBOX_REQUIRES(mu) {
    if (half_open_calls == std::numeric_limits<std::uint16_t>::max()) {
      return;
    }
    ++half_open_calls;
    if (admitted) {
      ++half_open_admitted;
    }
  }

  TimePoint open_until() const noexcept {
    return TimePoint(Duration(open_until_ns.load(std::memory_order_relaxed)));
  }

  Duration call_timeout() const noexcept {
    return Duration(call_timeout_ns.load(std::memory_order_relaxed));
  }
  Duration slow_after() const noexcept {
    return Duration(slow_after_ns.load(std::memory_order_relaxed));
  }

  // The config, read by its only writer (Reconfigure, which holds reconfigure_mu) without mu:
  // the analysis cannot see that the other lock excludes every other writer.
  std::shared_ptr<const Config> ConfigAsItsWriter() const FUSEBOX_NO_THREAD_SAFETY_ANALYSIS {
    return config;
  }

  // Copies what the lock-free paths read from `config` into their atomics.
  void PublishHotSettingsLocked() noexcept FUSEBOX_REQUIRES(mu) {
    constexpr auto kRelaxed = std::memory_order_relaxed;
    call_timeout_ns.store(config->call_timeout.count(), kRelaxed);
    slow_after_ns.store(config->effective_slow_call_duration().count(), kRelaxed);
    cooldown_ns.store(config->cooldown.count(), kRelaxed);
    // A tracked call (in-flight slow accounting) must leave the in-flight list: no lock-free
    // outcome then.
    lock_free_closed.store(
        config->trip == TripPolicy::kConsecutive && !config->inflight_slow_accounting, kRelaxed);
    active_probing.store(config->probe_mode == ProbeMode::kActive, kRelaxed);
    lock_free_admit.store(!config->inflight_slow_accounting, kRelaxed);
    window_short_path.store(
        config->trip != TripPolicy::kConsecutive && !config->inflight_slow_accounting, kRelaxed);
  }

  // ---- recovery ramp ----

  // The ramp's state, where it is known to exist (see cold_block).
  RecoveryRamp& ramp() noexcept { return cold().ramp; }
  const RecoveryRamp& ramp() const noexcept { return cold().ramp; }

  void StartRampLocked(TimePoint at, EventBatch& events) noexcept FUSEBOX_REQUIRES(mu) {
    const double s0 =
        RecoveryRamp::StartShare(half_open_calls, half_open_admitted, config->recovery_ramp_start);
    ramp().Start(at, config->recovery_ramp, s0);  // a config with a ramp made the block
    ramping = true;
    if (listening()) {
      events.Push(MakeEvent(RecoveryEvent{RecoveryPhase::kStarted, s0, config->recovery_ramp, at}));
    }
  }

  // Ends the ramp when `now` is past its end (lazily, like every time-driven change): the word
  // loses its ramp bit, the generation stays.
  void CompleteRampIfDueLocked(TimePoint now, EventBatch& events) noexcept FUSEBOX_REQUIRES(mu) {
    if (!ramping || now < ramp().end()) {
      return;
    }
    ramping = false;
    state_word.store(Pack(state, generation()), std::memory_order_release);
    if (listening()) {
      const RecoveryRamp& r = ramp();
      events.Push(MakeEvent(
          RecoveryEvent{RecoveryPhase::kCompleted, r.start_share(), r.end() - r.start(), r.end()}));
    }
  }

  // ---- counters ----

  [[gnu::always_inline]] void Bump(Counter c) noexcept { counters.Bump(c); }
  std::uint64_t Sum(Counter c) const noexcept { return counters.Sum(c); }

  // ---- events ----

  bool listening() const noexcept { return has_listeners.load(std::memory_order_relaxed); }

  Event MakeEvent(decltype(Event::detail) detail) noexcept {
    // Only called where somebody receives events, so the block exists; 0 if it ever did not.
    ColdState* x = cold_or_null();
    const std::uint64_t number =
        x == nullptr ? 0 : x->sequence.fetch_add(1, std::memory_order_relaxed) + 1;
    return Event{number, owner().name_, detail};
  }

  void Dispatch(const EventBatch& batch) noexcept {
    if (batch.size == 0) {
      return;
    }
    ColdState* x = cold_or_null();
    if (x == nullptr) {
      return;  // nobody listens, nobody coordinates
    }
    internal::Subscribers to;
    {
      Locked lock(x->listeners_mu);
      to = x->subscribers;
    }
    internal::Deliver(batch, to);
  }

  // Delivers one event at once (lock-free paths). Out of line: its batch is a large frame.
  [[gnu::noinline]] void Emit(decltype(Event::detail) detail) noexcept {
    EventBatch batch;
    batch.Push(MakeEvent(detail));
    Dispatch(batch);
  }

  // Emit() of a rejection from scalars: the lock-free paths then build no event on their own
  // stack, so their frame stays small (the event is built in this out-of-line frame).
  [[gnu::noinline]] void EmitRejection(ReasonCode code, Priority priority, Duration retry,
                                       TimePoint now) noexcept {
    Emit(RejectionEvent{code, priority, retry, now});
  }

  // A refusal on the locked path: counted under `counter`, its event queued for after the lock,
  // and the error the caller gets.
  Error RefuseLocked(ReasonCode code, Counter counter, Priority priority, Duration retry,
                     TimePoint now, EventBatch& events) noexcept FUSEBOX_REQUIRES(mu) {
    Bump(counter);
    if (listening()) {
      events.Push(MakeEvent(RejectionEvent{code, priority, retry, now}));
    }
    return Error{code, retry};
  }

  // ---- transitions (all Locked: mu held) ----

  // Not const: it draws from the (shared, stateful) random generator.
  // NOLINTNEXTLINE(readability-make-member-function-const)
  Duration DrawCooldownLocked(Duration base) noexcept FUSEBOX_REQUIRES(mu) {
    if (config->cooldown_jitter <= 0.0) {
      return base;
    }
    ColdState& x = cold();
    Random& random = x.injected_random != nullptr ? *x.injected_random : x.own_random;
    const double u = random.Uniform01();
    const double factor = 1.0 - config->cooldown_jitter + 2.0 * config->cooldown_jitter * u;
    return std::max(Duration(1), Duration(static_cast<Duration::rep>(
                                     std::llround(static_cast<double>(base.count()) * factor))));
  }

  void TransitionLocked(State to, TimePoint at, TransitionCause cause, EventBatch& events) noexcept
      FUSEBOX_REQUIRES(mu) {
    const State from = state;
    const bool was_ramping = ramping;
    ramping = false;
    state = to;
    // Every transition starts the next generation (so the count of transitions is the generation).
    const std::uint64_t next_generation = generation() + 1;
    // A transition always starts afresh: calls of the old generation are late from now on.
    consecutive_run.store(0, std::memory_order_relaxed);
    if (InflightTracker* list = inflight()) {
      list->Clear();
    }
    // The probe settings apply from the next HALF_OPEN (Reconfigure reserved the capacity, so
    // this does not allocate).
    AssignProbeSlotsLocked(config->half_open_max_probes);
    probes_in_flight = 0;
    good_probes = 0;
    switch (to) {
      case State::kClosed:
      case State::kMetricsOnly:
        if (window) {
          window->Clear();
        }
        closed_since = at;
        ClearHoldLocked();  // the dependency is back: its old wait no longer applies
        break;
      case State::kOpen: {
        ++opened;
        if (from == State::kHalfOpen || cause == TransitionCause::kRecoveryFailed) {
          // A failed probe, or a relapse during the recovery ramp (which is judged as strictly):
          // the next cooldown grows (multiplier 1 keeps it fixed).
          // In active mode the wait is the probe interval, grown and capped alike.
          const double grown =
              static_cast<double>(base_cooldown.count()) * config->cooldown_multiplier;
          const double cap = static_cast<double>(config->open_wait_max().count());
          base_cooldown = Duration(static_cast<Duration::rep>(std::min(grown, cap)));
        } else if (at - closed_since >= config->open_wait_max()) {
          base_cooldown = config->open_wait();  // stayed healthy long enough: growth resets
        }
        if (ColdState* x = cold_or_null(); x != nullptr && x->adopted_cooldown.has_value()) {
          current_cooldown = *x->adopted_cooldown;  // a peer's remaining cooldown (fleet.h)
          x->adopted_cooldown.reset();
        } else {
          current_cooldown = DrawCooldownLocked(base_cooldown);
        }
        // Never before the dependency's own wait ends (MinOpen).
        open_until_ns.store(
            std::max(at + current_cooldown, HoldUntilLocked()).time_since_epoch().count(),
            std::memory_order_relaxed);
        break;
      }
      case State::kHalfOpen:
        successes_to_close = static_cast<std::uint16_t>(config->effective_half_open_successes());
        half_open_calls = 0;
        half_open_admitted = 0;
        break;
      case State::kDisabled:
      case State::kForcedOpen:
        break;
    }
    // A reconfiguration's new generation keeps the ramp under way (its fields are untouched).
    const bool keeps_ramp = was_ramping && cause == TransitionCause::kReconfigured;
    if (listening() || watched.load(std::memory_order_relaxed)) {
      events.Push(MakeEvent(TransitionEvent{from, to, cause, next_generation, at}));
      if (was_ramping && !keeps_ramp) {
        const RecoveryRamp& r = ramp();
        events.Push(MakeEvent(
            RecoveryEvent{RecoveryPhase::kAborted, r.start_share(), r.end() - r.start(), at}));
      }
    }
    if (keeps_ramp) {
      ramping = true;
    } else if (to == State::kClosed && cause == TransitionCause::kProbesSucceeded &&
               config->recovery_ramp > Duration::zero()) {
      StartRampLocked(at, events);
    }
    // Publish last: lock-free readers that see the new word see everything above.
    state_word.store(Pack(to, next_generation, ramping), std::memory_order_release);
  }

  // A probe that has not reported by start + call_timeout timed out at that instant. Applies the
  // earliest such timeout among the probes other than `except_slot` that is due at or before
  // `limit`. Returns whether it reopened the breaker.
  bool ApplyOverdueProbeLocked(TimePoint limit, std::size_t except_slot,
                               EventBatch& events) noexcept FUSEBOX_REQUIRES(mu) {
    if (state != State::kHalfOpen || probes_in_flight == 0) {
      return false;
    }
    const std::optional<TimePoint> earliest =
        internal::EarliestBusyDeadline(probe_slots(), except_slot);
    if (!earliest || *earliest > limit) {
      return false;
    }
    TransitionLocked(State::kOpen, *earliest, TransitionCause::kProbeTimedOut, events);
    return true;
  }

  // The calls still running past slow_call_duration (in-flight slow accounting; 0 without).
  std::uint64_t RunningSlowLocked(TimePoint now) noexcept FUSEBOX_REQUIRES(mu) {
    InflightTracker* list = config->inflight_slow_accounting ? inflight() : nullptr;
    if (list == nullptr) {
      return 0;
    }
    list->Advance(now, config->effective_slow_call_duration());
    return list->slow();
  }

  // The trip rule's record of an outcome in CLOSED (or METRICS_ONLY): the run of bad calls, or
  // the window's sample.
  void RecordForTripRuleLocked(Sample sample, TimePoint now) noexcept FUSEBOX_REQUIRES(mu) {
    if (window) {
      window->Add(sample, now);
    } else if (sample.failure || sample.slow) {
      consecutive_run.store(consecutive_run.load(std::memory_order_relaxed) + 1,
                            std::memory_order_relaxed);
    } else {
      consecutive_run.store(0, std::memory_order_relaxed);
    }
  }

  // Whether the trip rule (internal/trip_rule.h), with the calls still running past
  // slow_call_duration, says to trip now; trips if so.
  void TripIfRulesSayLocked(TimePoint now, EventBatch& events) noexcept FUSEBOX_REQUIRES(mu) {
    const std::uint64_t running_slow = RunningSlowLocked(now);
    const std::optional<TransitionCause> cause =
        window ? window->TripCause(*config, window->TotalsAt(now), running_slow)
               : internal::ConsecutiveTripCause(consecutive_run.load(std::memory_order_relaxed),
                                                running_slow, config->failure_threshold);
    if (cause) {
      TransitionLocked(State::kOpen, now, *cause, events);
    }
  }

  // The short path of a window policy: adds the sample of a non-probe call of generation `gen`
  // to the window when the breaker is CLOSED (or METRICS_ONLY) in that generation and the
  // sample does not trip it. Nothing else of the locked path applies then (no probe slot, no
  // in-flight list, no transition), so it needs no event batch. Returns false, having changed
  // nothing, when the full locked path must handle the outcome.
  bool RecordWindowSampleUnlessItTrips(std::uint64_t gen, Sample sample, TimePoint now) noexcept {
    Locked lock(mu);
    if (gen != generation() || (state != State::kClosed && state != State::kMetricsOnly) ||
        (ramping && (sample.failure || sample.slow))) {
      return false;  // the full path (a bad outcome during the ramp is judged strictly there)
    }
    return window->AddUnlessItTrips(*config, sample, now, /*may_trip=*/state == State::kClosed);
  }

  Duration RetryAfterLocked(TimePoint now) const noexcept FUSEBOX_REQUIRES(mu) {
    if (state == State::kForcedOpen) {
      return config->cooldown;
    }
    if (state != State::kOpen) {
      return Duration::zero();
    }
    return std::max(Duration::zero(), open_until() - now);
  }
};

namespace {

// A short hint for callers turned away while probes run: try again in a second.
constexpr Duration kHalfOpenRetryHint = std::chrono::seconds(1);

}  // namespace

CircuitBreaker::Impl& CircuitBreaker::impl() const noexcept {
  // The layout operator new made; Impl is the only object at that address.
  return *std::launder(reinterpret_cast<Impl*>(
      reinterpret_cast<std::byte*>(const_cast<CircuitBreaker*>(this)) + kImplOffset));
}

// ---- creation ----

CircuitBreaker::CircuitBreaker(std::string name, Config config, CircuitBreakerDeps deps)
    : name_(std::move(name)),
      clock_(deps.clock != nullptr ? deps.clock : &DefaultClock()),
      cached_clock_(dynamic_cast<const CachedClock*>(clock_)),
      coarse_clock_(dynamic_cast<CoarseMonotonicClock*>(clock_) != nullptr) {
  // Impl reads the fields above (its owner's clock and name), so it is made after them.
  new (reinterpret_cast<std::byte*>(this) + kImplOffset) Impl(config, deps);
  // The lock-free paths' group fits 64 bytes (offsetof on a type that is not
  // standard-layout is conditionally supported; gcc and clang support it).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
  constexpr std::size_t kLockFreeEnd = offsetof(Impl, counters) + sizeof(Impl::counters);
  static_assert(kLockFreeEnd <= 64);
  // The lock a line past the lock-free group: the lock-free paths never miss on its writes.
  static_assert(offsetof(Impl, mu) >= kLockFreeEnd + 64);
#pragma GCC diagnostic pop
}

CircuitBreaker::~CircuitBreaker() { impl().~Impl(); }

void* CircuitBreaker::operator new(std::size_t size) {
  // `size` is sizeof(CircuitBreaker): its constructor is private, so nothing derives from it.
  static_assert(kImplOffset % alignof(Impl) == 0);
  // At most 232 bytes, which glibc serves with a 240-byte chunk (its 8-byte header, 16-byte
  // rounding). Not over-aligned on purpose: glibc serves a 64-byte-aligned request of this size
  // with 272 bytes.
  static_assert(kImplOffset + sizeof(Impl) <= 232);
  (void)size;
  return ::operator new(kImplOffset + sizeof(Impl));
}

void CircuitBreaker::operator delete(void* block) noexcept { ::operator delete(block); }

Result<std::unique_ptr<CircuitBreaker>, ConfigError> CircuitBreaker::Create(
    std::string name, Config config, CircuitBreakerDeps deps) {
  if (name.empty()) {
    return ConfigError{"name",
                       "name must not be empty: it labels the breaker's metrics, events and logs"};
  }
  if (auto error = config.Validate()) {
    return *error;
  }
  return std::unique_ptr<CircuitBreaker>(new CircuitBreaker(std::move(name), config, deps));
}

const std::string& CircuitBreaker::name() const noexcept { return name_; }
CircuitBreakerConfig CircuitBreaker::config() const {
  Impl& s = impl();
  Locked lock(s.mu);
  return *s.config;
}

State CircuitBreaker::state() const noexcept {
  return StateOf(impl().state_word.load(std::memory_order_acquire));
}

Duration CircuitBreaker::retry_after() const noexcept {
  Impl& s = impl();
  const TimePoint now = s.clock().Now();
  Locked lock(s.mu);
  return s.RetryAfterLocked(now);
}

// ---- admission ----

// Hot (as OnOutcome): gcc places both in .text.hot, together, so their speed does not depend on
// where the rest of this file's code happens to put them.
[[gnu::hot]] Result<Permit> CircuitBreaker::TryAcquire(Priority priority) noexcept {
  Impl& s = impl();
  const std::uint32_t priority_flag = priority == Priority::kBatch ? Permit::kBatch : 0U;
  const std::uint64_t word = s.state_word.load(std::memory_order_acquire);
  const State observed = AdmissionStateOf(word);  // no State during a recovery ramp

  // Lock-free paths (see the top of this file).
  if (((observed == State::kClosed || observed == State::kMetricsOnly) &&
       s.lock_free_admit.load(std::memory_order_relaxed)) ||
      observed == State::kDisabled) {
    const TimePoint now = Now();
    s.Bump(kAllowed);
    return Permit(this, GenerationOf(word), now, now + s.call_timeout(), priority_flag, 0);
  }
  if (observed == State::kOpen || observed == State::kForcedOpen) {
    const TimePoint now = Now();
    const TimePoint until(Duration(s.open_until_ns.load(std::memory_order_relaxed)));
    // In active mode no caller probes: OPEN refuses them past its wait too (the prober's turn).
    const bool active = s.active_probing.load(std::memory_order_relaxed);
    if (observed == State::kForcedOpen || now < until || active) {
      const Duration retry = observed == State::kForcedOpen
                                 ? Duration(s.cooldown_ns.load(std::memory_order_relaxed))
                             : now < until ? until - now
                                           : kProbeRetryHint;
      s.Bump(kRejectedOpen);
      if (s.listening()) {
        s.EmitRejection(ReasonCode::kCircuitOpen, priority, retry, now);
      }
      return Error{ReasonCode::kCircuitOpen, retry};
    }
  }
  return TryAcquireLocked(priority);
}

// gcc 12, once it may inline the library's own functions (-fno-semantic-interposition), warns that
// each `result = Error{...}` below may destroy a Permit with uninitialized fields. `result` holds
// its initial Error at each of them (a branch assigns once, as its last step); gcc does not
// track that.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// The recovery ramp's admission, lazy transitions, probes, in-flight tracking. Kept out of line
// so that the lock-free paths above carry no stack frame for the event batch.
Result<Permit> CircuitBreaker::TryAcquireLocked(Priority priority) noexcept {
  Impl& s = impl();
  const std::uint32_t priority_flag = priority == Priority::kBatch ? Permit::kBatch : 0U;
  {
    // During a recovery ramp admission stays lock-free (without an in-flight list): the ramp's
    // fields were stored before the word that carries the ramp bit. Past the ramp's end, the
    // locked path below completes it.
    const std::uint64_t word = s.state_word.load(std::memory_order_acquire);
    if (RampingIn(word) && s.lock_free_admit.load(std::memory_order_relaxed)) {
      const TimePoint now = Now();
      if (now < s.ramp().end()) {
        if (s.ramp().Admits(now)) {
          s.Bump(kAllowed);
          return Permit(this, GenerationOf(word), now, now + s.call_timeout(), priority_flag, 0);
        }
        const Duration retry = s.ramp().RetryAfter(now);
        s.Bump(kRejectedRecovering);
        if (s.listening()) {
          s.EmitRejection(ReasonCode::kCircuitRecovering, priority, retry, now);
        }
        return Error{ReasonCode::kCircuitRecovering, retry};
      }
    }
  }
  EventBatch events;
  Result<Permit> result = Error{ReasonCode::kCircuitOpen};
  {
    Locked lock(s.mu);
    const TimePoint now = s.clock().Now();
    s.ApplyOverdueProbeLocked(now, s.probe_count, events);
    s.CompleteRampIfDueLocked(now, events);
    const bool active = s.config->probe_mode == ProbeMode::kActive;
    if (s.state == State::kOpen && now >= s.open_until() && !active) {
      s.TransitionLocked(State::kHalfOpen, now, TransitionCause::kCooldownElapsed, events);
    }
    const Duration deadline_in = s.config->call_timeout;
    switch (s.state) {
      case State::kClosed:
      case State::kMetricsOnly: {
        std::uint32_t flags = priority_flag;
        std::uint64_t ticket = 0;
        if (s.config->inflight_slow_accounting) {
          if (s.state == State::kClosed) {
            s.TripIfRulesSayLocked(now, events);
          }
          if (s.state == State::kOpen) {
            result = s.RefuseLocked(ReasonCode::kCircuitOpen, kRejectedOpen, priority,
                                    s.RetryAfterLocked(now), now, events);
            break;
          }
        }
        if (s.ramping && !s.ramp().Admits(now)) {
          result = s.RefuseLocked(ReasonCode::kCircuitRecovering, kRejectedRecovering, priority,
                                  s.ramp().RetryAfter(now), now, events);
          break;
        }
        if (s.config->inflight_slow_accounting) {
          ticket = s.inflight()->Add(now);
          flags |= Permit::kTracked;
        }
        s.Bump(kAllowed);
        result = Permit(this, s.generation(), now, now + deadline_in, flags, ticket);
        break;
      }
      case State::kDisabled:
        s.Bump(kAllowed);
        result = Permit(this, s.generation(), now, now + deadline_in, priority_flag, 0);
        break;
      case State::kHalfOpen: {
        const bool may_probe = priority == Priority::kInteractive || s.config->batch_may_probe;
        const std::span<ProbeSlot> slots = s.probe_slots();
        ProbeSlot* const free_slot = internal::FreeSlot(slots);
        // In active mode only the prober probes (TryAcquireProbe); in either mode no probe runs
        // while the dependency's own wait lasts.
        if (active || !may_probe || free_slot == nullptr || now < s.HoldUntilLocked() ||
            !s.CoordinatorAllowsProbeLocked()) {
          s.CountHalfOpenCallLocked(/*admitted=*/false);
          result = s.RefuseLocked(ReasonCode::kCircuitHalfOpen, kRejectedHalfOpen, priority,
                                  kHalfOpenRetryHint, now, events);
          break;
        }
        *free_slot = ProbeSlot{now + deadline_in, true};
        s.CountHalfOpenCallLocked(/*admitted=*/true);
        ++s.probes_in_flight;
        ++s.probes;
        s.Bump(kAllowed);
        result =
            Permit(this, s.generation(), now, now + deadline_in, priority_flag | Permit::kProbe,
                   static_cast<std::uint64_t>(free_slot - slots.data()));
        break;
      }
      case State::kOpen:
      case State::kForcedOpen: {
        Duration retry = s.RetryAfterLocked(now);
        if (active && s.state == State::kOpen && now >= s.open_until()) {
          retry = kProbeRetryHint;  // due: the prober's turn, not this call's
        }
        result =
            s.RefuseLocked(ReasonCode::kCircuitOpen, kRejectedOpen, priority, retry, now, events);
        break;
      }
    }
  }
  s.Dispatch(events);
  return result;
}

Result<Permit> CircuitBreaker::TryAcquireProbe() noexcept {
  Impl& s = impl();
  EventBatch events;
  Result<Permit> result = Error{ReasonCode::kCancelled};
  {
    Locked lock(s.mu);
    const TimePoint now = s.clock().Now();
    s.ApplyOverdueProbeLocked(now, s.probe_count, events);
    s.CompleteRampIfDueLocked(now, events);
    if (s.state == State::kOpen && now >= s.open_until()) {
      s.TransitionLocked(State::kHalfOpen, now, TransitionCause::kCooldownElapsed, events);
    }
    switch (s.state) {
      case State::kOpen:
      case State::kForcedOpen:
        result = Error{ReasonCode::kCircuitOpen, s.RetryAfterLocked(now)};
        break;
      case State::kHalfOpen: {
        const std::span<ProbeSlot> slots = s.probe_slots();
        ProbeSlot* const free_slot = internal::FreeSlot(slots);
        if (const TimePoint hold = s.HoldUntilLocked(); now < hold) {
          result = Error{ReasonCode::kCircuitHalfOpen, hold - now};
          break;
        }
        if (free_slot == nullptr) {
          // Ask again when the earliest probe in flight is due (it reports or times out by then).
          const TimePoint earliest =
              internal::EarliestBusyDeadline(slots, internal::kNoSlot).value_or(TimePoint::max());
          result = Error{ReasonCode::kCircuitHalfOpen, std::max(earliest - now, Duration(1))};
          break;
        }
        if (!s.CoordinatorAllowsProbeLocked()) {
          result = Error{ReasonCode::kCircuitHalfOpen, kProbeRetryHint};  // a peer probes
          break;
        }
        const TimePoint deadline = now + s.config->effective_probe_budget();
        *free_slot = ProbeSlot{deadline, true};
        s.CountHalfOpenCallLocked(/*admitted=*/true);
        ++s.probes_in_flight;
        ++s.probes;
        s.Bump(kAllowed);
        result = Permit(this, s.generation(), now, deadline, Permit::kProbe,
                        static_cast<std::uint64_t>(free_slot - slots.data()));
        break;
      }
      case State::kClosed:
      case State::kMetricsOnly:
      case State::kDisabled:
        break;  // nothing to probe: kCancelled
    }
  }
  s.Dispatch(events);
  return result;
}

void CircuitBreaker::HoldOpen(Duration duration) noexcept {
  if (duration <= Duration::zero()) {
    return;
  }
  Impl& s = impl();
  const TimePoint until = s.clock().Now() + duration;
  Impl::ColdState* x = nullptr;
  try {
    x = &s.EnsureCold();  // made on first use: a breaker never held open does not carry the field
  } catch (...) {  // NOLINT(bugprone-empty-catch): out of memory: only an OPEN period is extended
  }
  Locked lock(s.mu);
  if (x != nullptr) {
    x->hold_until = std::max(x->hold_until, until);
  }
  if (s.state == State::kOpen && s.open_until() < until) {
    // Later than the lock-free readers may have seen: they then take the locked path, which
    // reads this deadline.
    s.open_until_ns.store(until.time_since_epoch().count(), std::memory_order_relaxed);
  }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

// ---- outcomes ----

Permit& Permit::operator=(Permit&& other) noexcept {
  if (this != &other) {
    if (breaker_ != nullptr) {
      Record(Outcome::kIgnored);
    }
    breaker_ = std::exchange(other.breaker_, nullptr);
    generation_ = other.generation_;
    start_ = other.start_;
    deadline_ = other.deadline_;
    flags_ = other.flags_;
    ticket_ = other.ticket_;
  }
  return *this;
}

void Permit::Record(Outcome outcome, MinOpen hold) noexcept {
  if (breaker_ == nullptr) {
    return;
  }
  if (hold.duration > Duration::zero()) {
    // Before the outcome: an outcome that opens the breaker then opens it for the hold at least.
    breaker_->HoldOpen(hold.duration);
  }
  Record(outcome);
}

void Permit::Record(Outcome outcome, Duration elapsed) noexcept {
  if (breaker_ == nullptr) {
    return;
  }
  CircuitBreaker* breaker = std::exchange(breaker_, nullptr);
  breaker->OnOutcome(*this, outcome, breaker->Now(), std::max(elapsed, Duration::zero()));
}

[[gnu::hot]] void CircuitBreaker::OnOutcome(const Permit& permit, Outcome outcome, TimePoint now,
                                            Duration elapsed) noexcept {
  Impl& s = impl();
  // The path of every healthy call: a fast success in CLOSED of the current generation, with no
  // run to reset and nobody listening, changes nothing but this thread's success counter.
  if (outcome == Outcome::kSuccess && s.lock_free_closed.load(std::memory_order_relaxed) &&
      !permit.is_probe() && elapsed < s.slow_after()) [[likely]] {
    const std::uint64_t word = s.state_word.load(std::memory_order_acquire);
    if (GenerationOf(word) == permit.generation() &&
        s.consecutive_run.load(std::memory_order_relaxed) == 0 && !s.listening()) {
      s.Bump(kSucceeded);
      return;
    }
  }
  OnOutcomeSlow(permit, outcome, now, elapsed);
}

void CircuitBreaker::OnOutcomeSlow(const Permit& permit, Outcome outcome, TimePoint now,
                                   Duration elapsed) noexcept {
  Impl& s = impl();
  const bool ignored = outcome == Outcome::kIgnored;
  const bool failed = outcome == Outcome::kFailure || outcome == Outcome::kTimeout;
  const bool slow = outcome == Outcome::kTimeout || (!ignored && elapsed >= s.slow_after());
  const bool probe = permit.is_probe();

  switch (outcome) {
    case Outcome::kSuccess:
      s.Bump(kSucceeded);
      break;
    case Outcome::kTimeout:
      s.Bump(kTimeouts);
      s.Bump(kFailed);
      break;
    case Outcome::kFailure:
      s.Bump(kFailed);
      break;
    case Outcome::kIgnored:
      s.Bump(kIgnored);
      break;
  }
  if (slow) {
    s.Bump(kSlow);
  }

  // Lock-free path: a fast success (or an ignored call) in CLOSED with no run to reset changes
  // nothing in the state machine.
  if (s.lock_free_closed.load(std::memory_order_relaxed) && !probe &&
      (outcome == Outcome::kSuccess || ignored) && !slow) {
    const std::uint64_t word = s.state_word.load(std::memory_order_acquire);
    const bool late = GenerationOf(word) != permit.generation();
    if (late || ignored || s.consecutive_run.load(std::memory_order_relaxed) == 0) {
      if (late) {
        s.Bump(kLate);
      }
      if (s.listening()) {
        s.Emit(OutcomeEvent{outcome, elapsed, slow, probe, late, permit.priority(), now});
      }
      return;
    }
  }
  if (s.window_short_path.load(std::memory_order_relaxed) && !probe && !ignored && !s.listening() &&
      s.RecordWindowSampleUnlessItTrips(permit.generation(), Sample{failed, slow}, now)) {
    return;
  }
  OnOutcomeLocked(permit, outcome, now, elapsed, slow);
}

void CircuitBreaker::OnOutcomeLocked(const Permit& permit, Outcome outcome, TimePoint now,
                                     Duration elapsed, bool slow) noexcept {
  Impl& s = impl();
  const bool ignored = outcome == Outcome::kIgnored;
  const bool failed = outcome == Outcome::kFailure || outcome == Outcome::kTimeout;
  const bool probe = permit.is_probe();
  EventBatch events;
  {
    Locked lock(s.mu);
    // A probe is judged against the budget it was admitted with (its deadline), whatever a
    // Reconfigure did since.
    const bool overdue_self = probe && elapsed >= permit.deadline() - permit.start();
    // The instant this outcome takes effect: a probe can never hold its slot past its budget.
    // Never later than now: `elapsed` is the caller's figure, and a state change in the future
    // would reopen the breaker for longer than its cooldown.
    const TimePoint effective = overdue_self ? std::min(permit.deadline(), now) : now;
    const std::size_t own_slot = probe && permit.generation() == s.generation()
                                     ? static_cast<std::size_t>(permit.ticket_)
                                     : s.probe_count;
    // Another probe that went overdue strictly before this outcome reopened the breaker first.
    const TimePoint others_limit = effective - Duration(1);
    s.ApplyOverdueProbeLocked(others_limit, own_slot, events);

    const bool late = permit.generation() != s.generation();
    // A probe that reports at or after its budget had not reported by start + call_timeout: it is
    // a timeout at that instant whatever it says now (an ignored or successful report included).
    if (probe && (overdue_self || (!ignored && (failed || slow)))) {
      ++s.wasted_probes;
    }
    if (s.listening()) {
      // Numbered before any transition it causes, so sequence order is causal order.
      events.Push(
          s.MakeEvent(OutcomeEvent{outcome, elapsed, slow, probe, late, permit.priority(), now}));
    }
    if (late) {
      s.Bump(kLate);
    } else {
      if ((permit.flags_ & Permit::kTracked) != 0) {
        s.inflight()->Done(permit.ticket_);
      }
      switch (s.state) {
        case State::kClosed:
        case State::kMetricsOnly: {
          if (ignored) {
            break;
          }
          s.CompleteRampIfDueLocked(now, events);
          if (s.ramping && (failed || slow)) {
            // Judged strictly: a service that relapses under the ramp is not back.
            s.TransitionLocked(State::kOpen, now, TransitionCause::kRecoveryFailed, events);
            break;
          }
          s.RecordForTripRuleLocked(Sample{failed, slow}, now);
          if (s.state == State::kClosed) {  // METRICS_ONLY records but never trips
            s.TripIfRulesSayLocked(now, events);
          }
          break;
        }
        case State::kHalfOpen: {
          if (own_slot < s.probe_count) {
            s.probe_slots()[own_slot] = ProbeSlot{};
            --s.probes_in_flight;
          }
          if (ignored && !overdue_self) {
            break;  // the slot is free again; nothing was learned
          }
          if (!failed && !slow && !overdue_self) {
            if (++s.good_probes >= s.successes_to_close) {
              s.TransitionLocked(State::kClosed, now, TransitionCause::kProbesSucceeded, events);
            }
          } else {
            s.TransitionLocked(
                State::kOpen, effective,
                overdue_self ? TransitionCause::kProbeTimedOut : TransitionCause::kProbeFailed,
                events);
          }
          break;
        }
        case State::kOpen:
        case State::kForcedOpen:
        case State::kDisabled:
          break;  // nothing admitted in these states moves the machine
      }
    }
  }
  s.Dispatch(events);
}

// ---- observation ----

MetricsSnapshot CircuitBreaker::Snapshot() const {
  Impl& s = impl();
  MetricsSnapshot m;
  m.name = name_;
  const TimePoint now = s.clock().Now();
  Locked lock(s.mu);
  m.taken_at = now;
  m.state = s.state;
  m.generation = s.generation();
  m.rejected_open = s.Sum(kRejectedOpen);
  m.rejected_half_open = s.Sum(kRejectedHalfOpen);
  m.rejected_recovering = s.Sum(kRejectedRecovering);
  m.allowed = s.Sum(kAllowed);
  m.calls = m.allowed + m.rejected_open + m.rejected_half_open + m.rejected_recovering;
  m.succeeded = s.Sum(kSucceeded);
  m.failed = s.Sum(kFailed);
  m.timeouts = s.Sum(kTimeouts);
  m.slow = s.Sum(kSlow);
  m.ignored = s.Sum(kIgnored);
  m.late = s.Sum(kLate);
  m.probes = s.probes;
  m.wasted_probes = s.wasted_probes;
  m.transitions = s.generation();  // every transition starts one
  m.opened = s.opened;
  m.consecutive_failures = s.consecutive_run.load(std::memory_order_relaxed);
  const WindowTotals t = s.window ? s.window->TotalsSeenAt(now) : WindowTotals{};
  m.window_calls = t.calls;
  m.window_failures = t.failures;
  m.window_slow = t.slow;
  m.inflight_slow = s.inflight() != nullptr ? s.inflight()->slow() : 0;
  if (t.calls > 0) {
    m.failure_rate = static_cast<double>(t.failures) / static_cast<double>(t.calls);
    m.slow_call_rate = static_cast<double>(t.slow) / static_cast<double>(t.calls);
  }
  m.probes_in_flight = s.probes_in_flight;
  m.good_probes = s.good_probes;
  m.retry_after = s.RetryAfterLocked(now);
  m.current_cooldown = s.current_cooldown;
  if (s.ramping && now < s.ramp().end()) {
    m.recovering = true;
    m.recovery_progress = s.ramp().ProgressAt(now);
    m.recovery_share = s.ramp().ShareAt(now);
  }
  return m;
}

std::optional<double> CircuitBreaker::recovery_progress() const noexcept {
  Impl& s = impl();
  const TimePoint now = s.clock().Now();
  Locked lock(s.mu);
  if (!s.ramping || now >= s.ramp().end()) {
    return std::nullopt;
  }
  return s.ramp().ProgressAt(now);
}

// ---- operator commands ----

void CircuitBreaker::Command(State to, bool reset_growth) {
  Impl& s = impl();
  EventBatch events;
  {
    Locked lock(s.mu);
    if (reset_growth) {
      s.base_cooldown = s.config->open_wait();
      s.current_cooldown = s.config->open_wait();
      s.ClearHoldLocked();
    }
    s.TransitionLocked(to, s.clock().Now(), TransitionCause::kOperator, events);
  }
  s.Dispatch(events);
}

// ---- coordination with peers ----

void CircuitBreaker::SetCoordination(Coordination coordination) {
  Impl& s = impl();
  std::shared_ptr<const Coordination> installed;
  if (coordination.on_transition || coordination.may_probe) {
    installed = std::make_shared<const Coordination>(std::move(coordination));
  }
  Impl::ColdState& x = s.EnsureCold();
  Locked listeners_lock(x.listeners_mu);
  Locked lock(s.mu);
  x.subscribers.coordination = installed;
  s.watched.store(installed != nullptr || x.subscribers.observers != nullptr,
                  std::memory_order_relaxed);
}

bool CircuitBreaker::Adopt(State to, Duration remaining_cooldown) {
  if (to == State::kHalfOpen) {
    return false;
  }
  Impl& s = impl();
  Impl::ColdState& x = s.EnsureCold();
  EventBatch events;
  {
    Locked lock(s.mu);
    if (to == State::kOpen) {
      // A peer's cooldown is at most this breaker's own longest OPEN wait: a buggy or forged one
      // (years, or near Duration::max, which would overflow the deadline) cannot hold it open
      // longer than its own settings would.
      x.adopted_cooldown = std::clamp(remaining_cooldown, Duration(1), s.config->open_wait_max());
    }
    s.TransitionLocked(to, s.clock().Now(), TransitionCause::kFleet, events);
  }
  s.Dispatch(events);
  return true;
}

void CircuitBreaker::ForceOpen() { Command(State::kForcedOpen, false); }
void CircuitBreaker::Disable() { Command(State::kDisabled, false); }
void CircuitBreaker::MetricsOnly() { Command(State::kMetricsOnly, false); }
void CircuitBreaker::ForceClose() { Command(State::kClosed, false); }
void CircuitBreaker::Reset() { Command(State::kClosed, true); }

// ---- live reconfiguration ----

// When each field applies is the contract's (docs/breaker-rules.md, "Reconfiguration"):
//   - at once: thresholds, rates, minimum_calls (judged at the next outcome against the run or
//     window kept), call_timeout and slow_call_duration (for calls admitted or reporting from
//     now on; a probe keeps the deadline it was admitted with), batch_may_probe, the FORCED_OPEN
//     retry hint;
//   - at the next OPEN: cooldown, cooldown_multiplier, cooldown_max, cooldown_jitter (the current
//     OPEN period keeps its deadline; a grown cooldown is kept, clamped to the new range);
//   - at the next HALF_OPEN: half_open_max_probes, half_open_successes (a HALF_OPEN in progress
//     finishes under the probe settings it started with);
//   - with a new generation: trip, window_size (window policies), inflight_slow_accounting. The
//     window's samples cannot be reinterpreted under another policy or size, nor the in-flight
//     list under another accounting, so the window starts empty and, in CLOSED or METRICS_ONLY
//     (the states that feed it), the breaker starts a new generation in the same state as a
//     transition would: run and in-flight list cleared, calls admitted before it late.
std::optional<ConfigError> CircuitBreaker::Reconfigure(const Config& config) {
  if (auto error = config.Validate()) {
    return error;
  }
  Impl& s = impl();
  // The block also holds the ramp's state, which the new config may need.
  std::lock_guard serialize(s.EnsureCold().reconfigure_mu);
  const std::shared_ptr<const Config> old_config = s.ConfigAsItsWriter();  // kept alive
  const Config& old = *old_config;
  const bool new_window =
      old.trip != config.trip ||
      (config.trip != TripPolicy::kConsecutive && old.window_size != config.window_size) ||
      old.inflight_slow_accounting != config.inflight_slow_accounting;
  // What allocates is built before taking the spin lock.
  std::unique_ptr<WindowRule> window;
  // Only this function sets the block's in-flight list after creation, under reconfigure_mu:
  // reading the pointer is safe.
  std::unique_ptr<InflightTracker> inflight;
  if (config.inflight_slow_accounting && s.inflight() == nullptr) {
    inflight = std::make_unique<InflightTracker>();
  }
  if (new_window) {
    window = WindowRule::For(config);
  }
  Impl::ProbeRoom probe_room = s.MakeProbeRoom(config.half_open_max_probes);
  std::shared_ptr<const Config> shared = SharedConfig(config);
  EventBatch events;
  {
    Locked lock(s.mu);
    const TimePoint now = s.clock().Now();
    // The wait before a probe: the cooldown, or the probe interval in active mode.
    if (s.base_cooldown == old.open_wait()) {
      s.base_cooldown = config.open_wait();  // no growth under way: the new wait is the base
    } else {
      s.base_cooldown = std::clamp(s.base_cooldown, config.open_wait(), config.open_wait_max());
    }
    s.InstallProbeRoomLocked(std::move(probe_room));  // made above when the cap grows past it
    if (inflight) {
      s.EnsureCold().inflight = std::move(inflight);  // before the config that needs it
    }
    s.config = std::move(shared);
    if (s.window) {
      s.window->ForgetBoundaries();  // thresholds may change
    }
    if (s.state != State::kHalfOpen) {
      // No probe is in flight outside HALF_OPEN (every transition frees the slots).
      s.AssignProbeSlotsLocked(config.half_open_max_probes);
      s.successes_to_close = static_cast<std::uint16_t>(config.effective_half_open_successes());
    }
    // Before any new state word is published below, so that a lock-free reader that sees the
    // new generation sees the new settings.
    s.PublishHotSettingsLocked();
    if (new_window) {
      std::swap(s.window, window);  // the old one is freed after the lock
      if (s.state == State::kClosed || s.state == State::kMetricsOnly) {
        // A reconfiguration is not a recovery: the healthy time after which cooldown growth
        // resets keeps counting from the last real close.
        const TimePoint closed_since = s.closed_since;
        s.TransitionLocked(s.state, now, TransitionCause::kReconfigured, events);
        s.closed_since = closed_since;
      }
    }
  }
  s.Dispatch(events);
  return std::nullopt;
}

// ---- listeners ----

ListenerId CircuitBreaker::AddListener(Listener listener) {
  Impl& s = impl();
  Impl::ColdState& x = s.EnsureCold();
  Locked lock(x.listeners_mu);
  auto list = x.subscribers.listeners
                  ? std::make_shared<Impl::ListenerList>(*x.subscribers.listeners)
                  : std::make_shared<Impl::ListenerList>();
  const ListenerId id = x.next_listener_id++;
  list->emplace_back(id, std::move(listener));
  x.subscribers.listeners = std::move(list);
  s.has_listeners.store(true, std::memory_order_relaxed);
  return id;
}

ListenerId CircuitBreaker::AddTransitionObserver(TransitionObserver observer) {
  Impl& s = impl();
  Impl::ColdState& x = s.EnsureCold();
  Locked listeners_lock(x.listeners_mu);
  auto list = x.subscribers.observers
                  ? std::make_shared<Impl::ObserverList>(*x.subscribers.observers)
                  : std::make_shared<Impl::ObserverList>();
  const ListenerId id = x.next_listener_id++;
  list->emplace_back(id, std::move(observer));
  Locked lock(s.mu);  // `watched` is read under mu by transitions
  x.subscribers.observers = std::move(list);
  s.watched.store(true, std::memory_order_relaxed);
  return id;
}

void CircuitBreaker::RemoveTransitionObserver(ListenerId id) {
  Impl& s = impl();
  Impl::ColdState* x = s.cold_or_null();
  if (x == nullptr) {
    return;
  }
  std::shared_ptr<const Impl::ObserverList> dropped;  // destroyed after the locks
  Locked listeners_lock(x->listeners_mu);
  if (!x->subscribers.observers) {
    return;
  }
  auto list = std::make_shared<Impl::ObserverList>(*x->subscribers.observers);
  std::erase_if(*list, [id](const auto& entry) { return entry.first == id; });
  Locked lock(s.mu);
  dropped = std::move(x->subscribers.observers);
  if (!list->empty()) {
    x->subscribers.observers = std::move(list);
  }
  s.watched.store(x->subscribers.observers != nullptr || x->subscribers.coordination != nullptr,
                  std::memory_order_relaxed);
}

void CircuitBreaker::RemoveListener(ListenerId id) {
  Impl& s = impl();
  Impl::ColdState* x = s.cold_or_null();
  if (x == nullptr) {
    return;  // no listener was ever added
  }
  Locked lock(x->listeners_mu);
  if (!x->subscribers.listeners) {
    return;
  }
  auto list = std::make_shared<Impl::ListenerList>(*x->subscribers.listeners);
  std::erase_if(*list, [id](const auto& entry) { return entry.first == id; });
  s.has_listeners.store(!list->empty(), std::memory_order_relaxed);
  x->subscribers.listeners = list->empty() ? nullptr : std::move(list);
}

}  // namespace fusebox

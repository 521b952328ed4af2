// fusebox/bulkhead.h
//
// A Bulkhead caps how many calls to one dependency run at once, so that a slow dependency can tie
// up at most `max_concurrent` threads, sockets or coroutines, never all of them. A full bulkhead
// rejects at once with ReasonCode::kOverloaded: there is no queue, because a queue in front of a
// slow dependency only turns its latency into ours.
//
//   TryAcquire: in_flight < max_concurrent ? ++in_flight, BulkheadPermit : kOverloaded
//   ~BulkheadPermit (or Release): --in_flight
//
// Place it outside the breaker (bulkhead, then breaker.TryAcquire): a call that finds the
// bulkhead full must not take a half-open probe slot it cannot use (docs/composition.md).
//
// Thread safety: all members may be called concurrently. Lock-free: the admission decision is one
// compare-and-swap loop on one atomic (in_flight_), which never rises above max_concurrent (it is
// incremented only from a value below the cap), so the cap holds at every instant, not only on
// average. The admitted/rejected counters are statistics updated after the decision.
// Time: reads no clock.
//
// Lifetime: the Bulkhead must outlive its permits.
//
// Example:
//   auto created = fusebox::Bulkhead::Create("vpic", {.max_concurrent = 64});
//   if (!created) die(created.error().message);
//   fusebox::Bulkhead& bulkhead = **created;
//
//   fusebox::Result<fusebox::BulkheadPermit> slot = bulkhead.TryAcquire();
//   if (!slot) return Reject(slot.error());  // kOverloaded, retry_after = 1 s
//   auto reply = breaker.Call(op, classify);  // the slot is released when `slot` goes away
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "fusebox/status.h"

namespace fusebox {

struct BulkheadConfig {
  // Calls allowed in flight at once. Default 25, range [1, 1000000].
  std::uint32_t max_concurrent = 25;

  // The first field outside its valid range, or nullopt when the config is valid.
  std::optional<ConfigError> Validate() const;
};

class Bulkhead;

// One slot of a Bulkhead, released when the permit is destroyed, assigned over, or Release()d.
// Move-only; a moved-from permit holds nothing.
class [[nodiscard]] BulkheadPermit {
 public:
  BulkheadPermit(BulkheadPermit&& other) noexcept : bulkhead_(other.bulkhead_) {
    other.bulkhead_ = nullptr;
  }
  BulkheadPermit& operator=(BulkheadPermit&& other) noexcept;
  BulkheadPermit(const BulkheadPermit&) = delete;
  BulkheadPermit& operator=(const BulkheadPermit&) = delete;
  ~BulkheadPermit() { Release(); }

  // Gives the slot back now (idempotent).
  void Release() noexcept;
  // Whether this permit still holds a slot.
  bool held() const noexcept { return bulkhead_ != nullptr; }

 private:
  friend class Bulkhead;
  explicit BulkheadPermit(Bulkhead* bulkhead) noexcept : bulkhead_(bulkhead) {}

  Bulkhead* bulkhead_;  // null once released or moved from
};

class Bulkhead {
 public:
  using Config = BulkheadConfig;

  // The retry_after hint of a kOverloaded rejection.
  static constexpr Duration kRetryAfter = std::chrono::seconds(1);

  // Refuses an invalid config with the ConfigError of Validate().
  static Result<std::unique_ptr<Bulkhead>, ConfigError> Create(std::string name, Config config);

  Bulkhead(const Bulkhead&) = delete;
  Bulkhead& operator=(const Bulkhead&) = delete;
  ~Bulkhead() = default;

  // A slot now, or Error{kOverloaded, kRetryAfter} when max_concurrent calls are in flight.
  // Never blocks, never queues.
  Result<BulkheadPermit> TryAcquire() noexcept;

  // Calls holding a slot now.
  std::uint32_t in_flight() const noexcept { return in_flight_.load(std::memory_order_relaxed); }
  std::uint32_t max_concurrent() const noexcept { return max_concurrent_; }
  // Totals since creation.
  std::uint64_t admitted() const noexcept { return admitted_.load(std::memory_order_relaxed); }
  std::uint64_t rejected() const noexcept { return rejected_.load(std::memory_order_relaxed); }

  const std::string& name() const noexcept { return name_; }

 private:
  friend class BulkheadPermit;
  Bulkhead(std::string name, std::uint32_t max_concurrent)
      : name_(std::move(name)), max_concurrent_(max_concurrent) {}
  void ReleaseSlot() noexcept;

  const std::string name_;
  const std::uint32_t max_concurrent_;
  // The only state a decision reads. The cap needs no ordering at all: every read-modify-write of
  // one atomic sees the latest value in its modification order, so the CAS in TryAcquire can never
  // admit past the cap. Release (fetch_sub) / acquire (successful CAS) is used anyway, as a
  // counting semaphore does, so that whatever a call did before giving its slot back
  // happens-before the call that takes the slot next.
  std::atomic<std::uint32_t> in_flight_{0};
  // Statistics (relaxed); no decision reads them.
  std::atomic<std::uint64_t> admitted_{0};
  std::atomic<std::uint64_t> rejected_{0};
};

}  // namespace fusebox

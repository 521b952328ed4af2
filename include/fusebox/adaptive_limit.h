// fusebox/adaptive_limit.h: a concurrency limit that finds itself from the latency it observes.
//
// A Bulkhead caps calls in flight at a number the operator guesses. An AdaptiveLimit moves that
// cap: while calls come back as fast as the dependency's no-load latency it raises the cap, as
// latency grows past it (calls queue there) it lowers it, and on a drop (a timeout, or a refusal
// for load) it cuts it by a factor. The algorithm is the gradient limit of Netflix's
// concurrency-limits and Envoy's adaptive concurrency filter, with AIMD on drops; it is stated in
// full, with its settings, in docs/composition.md ("Adaptive concurrency"). A full limit refuses at
// once with ReasonCode::kOverloaded, as a full bulkhead does: there is no queue.
//
//   TryAcquire: in_flight < limit ? ++in_flight, AdaptivePermit : kOverloaded
//   permit.Record(outcome): --in_flight; its latency (start to Record, on the injected Clock)
//   joins the sample window; a window that closed moves the limit
//
// Thread safety: every member may be called concurrently. Admission is lock-free (one
// compare-and-swap loop on in_flight against the published limit, as the Bulkhead's); a record
// takes a short lock to add its sample, and the one that closes a window computes the new limit.
// Time: the injected Clock (default: the coarse monotonic clock) measures every call and the
// windows, so tests run in virtual time. Lifetime: the AdaptiveLimit must outlive its permits.
//
// Example:
//   auto limit = fusebox::AdaptiveLimit::Create("vpic", {.initial_limit = 16}).value();
//   fusebox::Result<fusebox::AdaptivePermit> slot = limit->TryAcquire();
//   if (!slot) return Reject(slot.error());  // kOverloaded, retry_after = 1 s
//   Reply reply = CallShipping();
//   slot->Record(reply.ok() ? fusebox::Outcome::kSuccess : fusebox::Outcome::kFailure);
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "fusebox/clock.h"
#include "fusebox/outcome.h"
#include "fusebox/status.h"

namespace fusebox {

struct AdaptiveLimitConfig {
  // Bounds of the limit, and where it starts. min_limit in [1, 100000]; max_limit in
  // [min_limit, 100000]; initial_limit in [min_limit, max_limit]. The limit is pinned to
  // min_limit while the no-load latency is measured afresh (no_load_reset).
  std::uint32_t min_limit = 3;
  std::uint32_t max_limit = 1000;
  std::uint32_t initial_limit = 16;
  // A sample window opens at its first record and is closed by the first record that finds it
  // this old with at least min_window_samples calls; a window with fewer stays open, and the
  // limit where it is. sample_window in [1 ms, 1 h]; min_window_samples in [1, 100000].
  Duration sample_window = std::chrono::seconds(1);
  std::uint32_t min_window_samples = 10;
  // How much slower than the no-load latency a window's mean latency may be before the limit
  // comes down: the gradient is tolerance * no_load / sample, clamped to [0.5, 1]. In [1, 10].
  double tolerance = 1.25;
  // The share of a window's new limit taken into the limit (exponential smoothing). In (0, 1].
  double smoothing = 0.2;
  // On a window with a drop (a timeout or a refusal for load): limit = limit * backoff_ratio.
  // In [0.5, 1).
  double backoff_ratio = 0.9;
  // The no-load latency is the smallest window mean since it was last measured. This long after
  // that, the limit is pinned to min_limit for one window, whose mean (of the calls admitted
  // within the pin) is the no-load latency afresh; then the limit is restored. So a dependency
  // that became slower for good is not held to its old best, and steady load, under which every
  // window has queued, does not ratchet the estimate up. In [1 s, 1 day].
  Duration no_load_reset = std::chrono::minutes(1);

  // The first field outside its valid range, or nullopt when the config is valid.
  std::optional<ConfigError> Validate() const;
};

// One limit change, for logs and metrics.
struct LimitChange {
  std::uint32_t old_limit = 0;
  std::uint32_t new_limit = 0;
  Duration no_load_latency{0};  // the estimate the change was made against
  Duration sample_latency{0};   // the closed window's mean latency
  bool drop = false;            // the window held a drop (the AIMD cut)
};

struct AdaptiveLimitDeps {
  Clock* clock = nullptr;  // null: the process's CoarseMonotonicClock
  // Called after each window that changed the limit, outside the lock, on the recording thread.
  // Must be quick and must not throw.
  std::function<void(const LimitChange&)> on_change;
};

class AdaptiveLimit;

// One admitted call. Move-only. Record gives the slot back and feeds the call's latency to the
// limit; destroying a permit without Record gives the slot back and teaches the limit nothing
// (as Outcome::kIgnored).
class [[nodiscard]] AdaptivePermit {
 public:
  AdaptivePermit(AdaptivePermit&& other) noexcept
      : limit_(other.limit_), start_(other.start_), peak_(other.peak_) {
    other.limit_ = nullptr;
  }
  AdaptivePermit& operator=(AdaptivePermit&& other) noexcept;
  AdaptivePermit(const AdaptivePermit&) = delete;
  AdaptivePermit& operator=(const AdaptivePermit&) = delete;
  ~AdaptivePermit() { Record(Outcome::kIgnored); }

  // kSuccess and kFailure: a latency sample (a failure that came back is no sign of load).
  // kTimeout: a drop. kIgnored: nothing. Later calls, and RecordDrop after Record, do nothing.
  void Record(Outcome outcome) noexcept;
  // The dependency refused the call for load (an HTTP 429 or 503, say): a drop.
  void RecordDrop() noexcept;
  bool held() const noexcept { return limit_ != nullptr; }
  TimePoint start() const noexcept { return start_; }

 private:
  friend class AdaptiveLimit;
  AdaptivePermit(AdaptiveLimit* limit, TimePoint start, std::uint32_t peak) noexcept
      : limit_(limit), start_(start), peak_(peak) {}

  AdaptiveLimit* limit_;  // null once recorded or moved from
  TimePoint start_;
  std::uint32_t peak_;  // calls in flight once this one was admitted
};

struct AdaptiveLimitStats {
  std::uint32_t limit = 0;
  std::uint32_t in_flight = 0;
  Duration no_load_latency{0};  // 0 until the first window closed
  std::uint64_t admitted = 0;
  std::uint64_t rejected = 0;
  std::uint64_t windows = 0;  // sample windows closed
};

class AdaptiveLimit {
 public:
  using Config = AdaptiveLimitConfig;

  // The retry_after hint of a kOverloaded refusal.
  static constexpr Duration kRetryAfter = std::chrono::seconds(1);

  // Refuses an invalid config with the ConfigError of Validate().
  static Result<std::unique_ptr<AdaptiveLimit>, ConfigError> Create(std::string name, Config config,
                                                                    AdaptiveLimitDeps deps = {});
  AdaptiveLimit(const AdaptiveLimit&) = delete;
  AdaptiveLimit& operator=(const AdaptiveLimit&) = delete;
  ~AdaptiveLimit();

  // A slot now, or Error{kOverloaded, kRetryAfter} when `limit()` calls are in flight. Never
  // blocks, never queues.
  Result<AdaptivePermit> TryAcquire() noexcept;

  std::uint32_t limit() const noexcept { return limit_.load(std::memory_order_relaxed); }
  std::uint32_t in_flight() const noexcept { return in_flight_.load(std::memory_order_relaxed); }
  AdaptiveLimitStats Stats() const;
  const Config& config() const noexcept { return config_; }
  const std::string& name() const noexcept { return name_; }

 private:
  friend class AdaptivePermit;
  struct Window;
  AdaptiveLimit(std::string name, Config config, AdaptiveLimitDeps deps);
  enum class Sample : std::uint8_t { kNothing, kLatency, kDrop };
  void OnRecord(TimePoint start, std::uint32_t peak, Sample sample) noexcept;

  const std::string name_;
  const Config config_;
  Clock& clock_;
  const std::function<void(const LimitChange&)> on_change_;
  // What admission reads: the published limit and the calls in flight (the Bulkhead's protocol;
  // the limit may drop below in_flight, which then only refuses until calls come back).
  std::atomic<std::uint32_t> limit_;
  std::atomic<std::uint32_t> in_flight_{0};
  std::atomic<std::uint64_t> admitted_{0};
  std::atomic<std::uint64_t> rejected_{0};
  // The sample window and the estimates, behind their own lock (src/adaptive_limit.cc).
  std::unique_ptr<Window> window_;
};

}  // namespace fusebox

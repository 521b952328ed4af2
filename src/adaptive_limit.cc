#include "fusebox/adaptive_limit.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "fusebox/thread_annotations.h"
#include "internal/spin_lock.h"

namespace fusebox {
namespace {

std::optional<ConfigError> OutOfRange(const char* field, const std::string& range,
                                      const std::string& got) {
  return ConfigError{field, std::string(field) + " must be in " + range + ", got " + got};
}

std::string Millis(Duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
}

}  // namespace

std::optional<ConfigError> AdaptiveLimitConfig::Validate() const {
  constexpr std::uint32_t kMaxLimit = 100'000;
  if (min_limit < 1 || min_limit > kMaxLimit) {
    return OutOfRange("min_limit", "[1, 100000]", std::to_string(min_limit));
  }
  if (max_limit < min_limit || max_limit > kMaxLimit) {
    return OutOfRange("max_limit", "[min_limit, 100000]", std::to_string(max_limit));
  }
  if (initial_limit < min_limit || initial_limit > max_limit) {
    return OutOfRange("initial_limit", "[min_limit, max_limit]", std::to_string(initial_limit));
  }
  if (sample_window < std::chrono::milliseconds(1) || sample_window > std::chrono::hours(1)) {
    return OutOfRange("sample_window", "[1 ms, 1 h]", Millis(sample_window));
  }
  if (min_window_samples < 1 || min_window_samples > 100'000) {
    return OutOfRange("min_window_samples", "[1, 100000]", std::to_string(min_window_samples));
  }
  if (!(tolerance >= 1.0 && tolerance <= 10.0)) {
    return OutOfRange("tolerance", "[1, 10]", std::to_string(tolerance));
  }
  if (!(smoothing > 0.0 && smoothing <= 1.0)) {
    return OutOfRange("smoothing", "(0, 1]", std::to_string(smoothing));
  }
  if (!(backoff_ratio >= 0.5 && backoff_ratio < 1.0)) {
    return OutOfRange("backoff_ratio", "[0.5, 1)", std::to_string(backoff_ratio));
  }
  if (no_load_reset < std::chrono::seconds(1) || no_load_reset > std::chrono::hours(24)) {
    return OutOfRange("no_load_reset", "[1 s, 1 day]", Millis(no_load_reset));
  }
  return std::nullopt;
}

// The open sample window and the estimates it moves, all under `mu`.
struct AdaptiveLimit::Window {
  explicit Window(double initial) : estimate(initial) {}

  internal::SpinLock mu;
  // The limit as a real number, so that small steps add up (the published limit is its floor).
  double estimate FUSEBOX_GUARDED_BY(mu);
  Duration no_load FUSEBOX_GUARDED_BY(mu){0};        // 0: none yet
  TimePoint no_load_since FUSEBOX_GUARDED_BY(mu){};  // when the estimate last started afresh
  // The open window: when its first record came, its calls, their latencies, the most calls in
  // flight it saw admitted, whether it held a drop.
  TimePoint opened_at FUSEBOX_GUARDED_BY(mu){};
  std::uint32_t samples FUSEBOX_GUARDED_BY(mu) = 0;  // calls recorded, drops included
  std::uint32_t timed FUSEBOX_GUARDED_BY(mu) = 0;    // calls whose latency counts
  Duration latency_sum FUSEBOX_GUARDED_BY(mu){0};
  std::uint32_t peak FUSEBOX_GUARDED_BY(mu) = 0;
  bool drop FUSEBOX_GUARDED_BY(mu) = false;
  std::uint64_t windows FUSEBOX_GUARDED_BY(mu) = 0;
  // Measuring the no-load latency afresh: the limit is pinned to min_limit, and only calls
  // admitted within the pin count (at most min_limit in flight when admitted).
  bool measuring FUSEBOX_GUARDED_BY(mu) = false;

  // Closes the open window at `now`: moves the estimate and starts the next window. Fills in
  // everything of `change` but the limits.
  void CloseLocked(const AdaptiveLimitConfig& config, TimePoint now, LimitChange& change)
      FUSEBOX_REQUIRES(mu);
  // The gradient step (or the AIMD cut) from this window's samples.
  double NextEstimateLocked(const AdaptiveLimitConfig& config, Duration sample_latency) const
      FUSEBOX_REQUIRES(mu);
};

AdaptiveLimit::AdaptiveLimit(std::string name, Config config, AdaptiveLimitDeps deps)
    : name_(std::move(name)),
      config_(config),
      clock_(deps.clock != nullptr ? *deps.clock : DefaultClock()),
      on_change_(std::move(deps.on_change)),
      limit_(config.initial_limit),
      window_(std::make_unique<Window>(static_cast<double>(config.initial_limit))) {}

AdaptiveLimit::~AdaptiveLimit() = default;

Result<std::unique_ptr<AdaptiveLimit>, ConfigError> AdaptiveLimit::Create(std::string name,
                                                                          Config config,
                                                                          AdaptiveLimitDeps deps) {
  if (auto error = config.Validate()) {
    return *std::move(error);
  }
  return std::unique_ptr<AdaptiveLimit>(
      new AdaptiveLimit(std::move(name), config, std::move(deps)));
}

Result<AdaptivePermit> AdaptiveLimit::TryAcquire() noexcept {
  // The Bulkhead's protocol: increment only from a value below the limit, so in_flight never
  // passes the limit read at that instant.
  std::uint32_t current = in_flight_.load(std::memory_order_relaxed);
  do {
    if (current >= limit_.load(std::memory_order_relaxed)) {
      rejected_.fetch_add(1, std::memory_order_relaxed);
      return Error{ReasonCode::kOverloaded, kRetryAfter};
    }
  } while (!in_flight_.compare_exchange_weak(current, current + 1, std::memory_order_acquire,
                                             std::memory_order_relaxed));
  admitted_.fetch_add(1, std::memory_order_relaxed);
  return AdaptivePermit(this, clock_.Now(), current + 1);
}

void AdaptiveLimit::OnRecord(TimePoint start, std::uint32_t peak, Sample sample) noexcept {
  in_flight_.fetch_sub(1, std::memory_order_release);
  if (sample == Sample::kNothing) {
    return;  // nothing learnt: no clock read, no lock
  }
  const TimePoint now = clock_.Now();
  std::optional<LimitChange> change;
  {
    Window& w = *window_;
    Locked lock(w.mu);
    // A window opens at its first record and takes every record until one finds it due (old
    // enough and full enough): that one closes it, then opens the next.
    if (w.samples >= config_.min_window_samples && now - w.opened_at >= config_.sample_window) {
      LimitChange closed{.old_limit = limit_.load(std::memory_order_relaxed)};
      w.CloseLocked(config_, now, closed);
      // Time to measure the no-load latency afresh: pin the limit for the next window.
      closed.new_limit =
          w.measuring ? config_.min_limit : static_cast<std::uint32_t>(std::floor(w.estimate));
      limit_.store(closed.new_limit, std::memory_order_relaxed);
      if (closed.new_limit != closed.old_limit) {
        change = closed;
      }
    }
    // While measuring, a call admitted before the pin came back through a queue it helped make.
    if (!(w.measuring && peak > config_.min_limit)) {
      if (w.samples == 0) {
        w.opened_at = now;
      }
      ++w.samples;
      w.peak = std::max(w.peak, peak);
      if (sample == Sample::kDrop) {
        w.drop = true;
      } else {
        ++w.timed;
        w.latency_sum += std::max(Duration(0), now - start);
      }
    }
  }
  if (change && on_change_) {
    on_change_(*change);
  }
}

void AdaptiveLimit::Window::CloseLocked(const AdaptiveLimitConfig& config, TimePoint now,
                                        LimitChange& change) {
  change.drop = drop;
  if (timed > 0) {
    change.sample_latency = latency_sum / timed;
  }
  if (measuring || no_load == Duration(0)) {
    // A pinned window (or the first one): its mean is the no-load latency, and the estimate stays
    // unless the window held a drop, which cuts it here too (a dead dependency gives no latency).
    if (timed > 0) {
      no_load = change.sample_latency;
      no_load_since = now;
    }
    if (drop) {
      estimate = NextEstimateLocked(config, change.sample_latency);
    }
    measuring = false;
  } else {
    if (timed > 0) {
      no_load = std::min(no_load, change.sample_latency);
    }
    estimate = NextEstimateLocked(config, change.sample_latency);
    // The smallest mean since the last measurement only ever falls, and under steady load every
    // window has queued; so it is measured afresh, pinned, every no_load_reset.
    measuring = now - no_load_since >= config.no_load_reset;
  }
  change.no_load_latency = no_load;
  ++windows;
  samples = 0;
  timed = 0;
  latency_sum = Duration(0);
  peak = 0;
  drop = false;
}

double AdaptiveLimit::Window::NextEstimateLocked(const AdaptiveLimitConfig& config,
                                                 Duration sample_latency) const {
  double next = estimate;
  if (drop) {
    next = estimate * config.backoff_ratio;  // multiplicative decrease
  } else if (timed > 0 && static_cast<double>(peak) >= estimate / 2) {
    // The gradient: 1 while the window is no slower than tolerance x the no-load latency, down
    // to 0.5 as it gets slower (calls queue at the dependency); plus a headroom of sqrt(limit)
    // so that the limit keeps probing upward. A window that never used half the limit says
    // nothing about it (the callers, not the limit, held the load down) and moves nothing.
    const auto nanos = [](Duration d) {
      return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
    };
    const double gradient = std::clamp(
        config.tolerance * nanos(no_load) / std::max(1.0, nanos(sample_latency)), 0.5, 1.0);
    const double target = estimate * gradient + std::sqrt(estimate);
    next = estimate * (1.0 - config.smoothing) + target * config.smoothing;
  }
  return std::clamp(next, static_cast<double>(config.min_limit),
                    static_cast<double>(config.max_limit));
}

AdaptiveLimitStats AdaptiveLimit::Stats() const {
  AdaptiveLimitStats stats{.limit = limit(),
                           .in_flight = in_flight(),
                           .admitted = admitted_.load(std::memory_order_relaxed),
                           .rejected = rejected_.load(std::memory_order_relaxed)};
  Window& w = *window_;
  Locked lock(w.mu);
  stats.no_load_latency = w.no_load;
  stats.windows = w.windows;
  return stats;
}

AdaptivePermit& AdaptivePermit::operator=(AdaptivePermit&& other) noexcept {
  if (this != &other) {
    Record(Outcome::kIgnored);
    limit_ = std::exchange(other.limit_, nullptr);
    start_ = other.start_;
    peak_ = other.peak_;
  }
  return *this;
}

void AdaptivePermit::Record(Outcome outcome) noexcept {
  if (AdaptiveLimit* limit = std::exchange(limit_, nullptr)) {
    using Sample = AdaptiveLimit::Sample;
    Sample sample = Sample::kLatency;
    if (outcome == Outcome::kTimeout) {
      sample = Sample::kDrop;
    } else if (outcome == Outcome::kIgnored) {
      sample = Sample::kNothing;
    }
    limit->OnRecord(start_, peak_, sample);
  }
}

void AdaptivePermit::RecordDrop() noexcept {
  if (AdaptiveLimit* limit = std::exchange(limit_, nullptr)) {
    limit->OnRecord(start_, peak_, AdaptiveLimit::Sample::kDrop);
  }
}

}  // namespace fusebox

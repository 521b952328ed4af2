// internal/recovery_ramp.h (not installed: the breaker's recovery ramp)
//
// After probes close the breaker, the share of calls admitted grows linearly from a start share
// to 1 over the ramp's length (docs/breaker-rules.md, "Recovery ramp"). Admission is lock-free
// and deterministic: every call adds the share admitted now to a fixed-point credit, and the call
// that carries its integer part past the next whole number is admitted, so over any run of calls
// the admitted count follows the sum of the shares within one call, and one thread in virtual
// time always gets the same answers.
//
// Thread safety: Start under the breaker's lock, before the breaker publishes a state word with
// its ramp bit (release); the readers load such a word (acquire) first, then read relaxed.
// Time: told, never read.
//
// Example:
//   RecoveryRamp ramp;
//   ramp.Start(now, 10s, RecoveryRamp::StartShare(3, 1, 0.1));  // 0.1
//   if (ramp.Admits(now)) { /* admit */ } else { retry_after = ramp.RetryAfter(now); }
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>

#include "fusebox/clock.h"

namespace fusebox::internal {

class RecoveryRamp {
 public:
  // The share to start from: what HALF_OPEN admitted (`admitted` probes among the `seen` calls;
  // 1 when it saw none), at most `configured`. A probe answered before any other call came has a
  // share of 1, which would let the whole flood in at once.
  static double StartShare(std::uint32_t seen, std::uint32_t admitted, double configured) noexcept {
    const double share =
        seen == 0 ? 1.0 : std::min(1.0, static_cast<double>(admitted) / static_cast<double>(seen));
    return std::min(share, configured);
  }

  // Starts a ramp at `at` over `length` from `start_share`; its first call is admitted.
  void Start(TimePoint at, Duration length, double start_share) noexcept {
    constexpr auto kRelaxed = std::memory_order_relaxed;
    start_ns_.store(at.time_since_epoch().count(), kRelaxed);
    end_ns_.store((at + length).time_since_epoch().count(), kRelaxed);
    start_share_.store(start_share, kRelaxed);
    credit_.store(kCreditOne - 1, kRelaxed);
  }

  TimePoint start() const noexcept {
    return TimePoint(Duration(start_ns_.load(std::memory_order_relaxed)));
  }
  TimePoint end() const noexcept {
    return TimePoint(Duration(end_ns_.load(std::memory_order_relaxed)));
  }
  double start_share() const noexcept { return start_share_.load(std::memory_order_relaxed); }

  // The share of calls admitted at `now`: linear from the start share to 1.
  double ShareAt(TimePoint now) const noexcept {
    const auto start = start_ns_.load(std::memory_order_relaxed);
    const auto end = end_ns_.load(std::memory_order_relaxed);
    const double s0 = start_share_.load(std::memory_order_relaxed);
    if (end <= start) {
      return 1.0;
    }
    const double elapsed = static_cast<double>(now.time_since_epoch().count() - start) /
                           static_cast<double>(end - start);
    return std::clamp(s0 + (1.0 - s0) * elapsed, s0, 1.0);
  }

  // The share of the ramp's length elapsed at `now`, 0 to 1.
  double ProgressAt(TimePoint now) const noexcept {
    const auto start = start_ns_.load(std::memory_order_relaxed);
    const auto end = end_ns_.load(std::memory_order_relaxed);
    if (end <= start) {
      return 1.0;
    }
    return std::clamp(static_cast<double>(now.time_since_epoch().count() - start) /
                          static_cast<double>(end - start),
                      0.0, 1.0);
  }

  // Whether the ramp admits this call (see the top of this file).
  bool Admits(TimePoint now) noexcept {
    const auto step = static_cast<std::uint64_t>(ShareAt(now) * static_cast<double>(kCreditOne));
    const std::uint64_t before = credit_.fetch_add(step, std::memory_order_relaxed);
    return ((before + step) >> kCreditBits) != (before >> kCreditBits);
  }

  // What a call turned away should wait: a short hint, never past the ramp's end.
  Duration RetryAfter(TimePoint now) const noexcept {
    return std::clamp(end() - now, Duration(1), Duration(std::chrono::seconds(1)));
  }

 private:
  // The credit is fixed-point with this many fractional bits.
  static constexpr unsigned kCreditBits = 24;
  static constexpr std::uint64_t kCreditOne = std::uint64_t{1} << kCreditBits;

  std::atomic<Duration::rep> start_ns_{0};
  std::atomic<Duration::rep> end_ns_{0};
  std::atomic<double> start_share_{1.0};
  std::atomic<std::uint64_t> credit_{0};
};

}  // namespace fusebox::internal

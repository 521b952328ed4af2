// fusebox/sliding_window.h
//
// The two windows a breaker computes failure and slow-call rates over:
//   - CountWindow: the last `size` outcomes (a ring buffer).
//   - TimeWindow: outcomes aggregated in one-second buckets by completion time (bucket = whole
//     seconds since the clock's epoch); the window is the current bucket and the `size - 1` before
//     it, so old buckets fall out as time passes even when nothing is recorded.
// Both keep running totals, so recording and reading are O(1) (amortized O(1) for TimeWindow when
// time jumps), and both allocate only in their constructor.
//
// Thread safety: none; the breaker guards its window with its lock. Time: the TimeWindow is told
// the second of each record and read, it reads no clock.
//
// Example:
//   fusebox::CountWindow w(100);
//   w.Add({.failure = true, .slow = false});
//   fusebox::WindowTotals t = w.totals();   // t.calls == 1, t.failures == 1
#pragma once

#include <cstdint>
#include <vector>

namespace fusebox {

struct Sample {
  bool failure = false;  // a failure or a timeout
  bool slow = false;     // duration >= slow_call_duration (timeouts included)
};

struct WindowTotals {
  std::uint64_t calls = 0;
  std::uint64_t failures = 0;
  std::uint64_t slow = 0;

  friend bool operator==(const WindowTotals&, const WindowTotals&) = default;
};

class CountWindow {
 public:
  // size >= 1.
  explicit CountWindow(std::uint32_t size);
  // Inline: the breaker calls it under its lock on every recorded outcome.
  void Add(Sample sample) noexcept {
    const auto size = static_cast<std::uint32_t>(ring_.size());
    std::uint8_t& slot = ring_[next_];
    if (filled_ == size) {
      // Evict the oldest sample, which lives where the new one goes.
      totals_.calls -= 1;
      totals_.failures -= slot & 1U;
      totals_.slow -= (slot >> 1U) & 1U;
    } else {
      ++filled_;
    }
    const auto failure = static_cast<std::uint8_t>(sample.failure ? 1U : 0U);
    const auto slow = static_cast<std::uint8_t>(sample.slow ? 1U : 0U);
    slot = static_cast<std::uint8_t>(failure | (slow << 1U));
    totals_.calls += 1;
    totals_.failures += failure;
    totals_.slow += slow;
    next_ = next_ + 1 == size ? 0 : next_ + 1;
  }
  WindowTotals totals() const noexcept { return totals_; }
  std::uint32_t size() const noexcept { return static_cast<std::uint32_t>(ring_.size()); }
  void Clear() noexcept;

 private:
  std::vector<std::uint8_t> ring_;  // one sample per byte: bit 0 failure, bit 1 slow
  std::uint32_t next_ = 0;          // where the next sample goes
  std::uint32_t filled_ = 0;        // samples held, <= size
  WindowTotals totals_;
};

class TimeWindow {
 public:
  // seconds >= 1.
  explicit TimeWindow(std::uint32_t seconds);
  // Records a sample completed in whole second `second` (>= 0). A second older than the window
  // is dropped; time never goes back in practice (the breaker records under its lock from a
  // monotonic clock), but an older second is harmless.
  void Add(std::int64_t second, Sample sample) noexcept;
  // Totals of the window that ends with `second` (drops the buckets that fell out).
  WindowTotals TotalsAt(std::int64_t second) noexcept;
  std::uint32_t seconds() const noexcept { return static_cast<std::uint32_t>(buckets_.size()); }
  void Clear() noexcept;

 private:
  struct Bucket {
    std::int64_t second = -1;
    WindowTotals totals;
  };
  void AdvanceTo(std::int64_t second) noexcept;
  Bucket& BucketFor(std::int64_t second) noexcept;

  std::vector<Bucket> buckets_;
  std::int64_t head_ = -1;  // the newest second the window has advanced to; -1 before any
  WindowTotals totals_;
};

}  // namespace fusebox

// internal/sliding_window.h (not installed: the breaker's window policies use it)
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
  static constexpr std::uint32_t kMaxSize = (1U << 21U) - 1;

  // size in [1, kMaxSize]; a size outside is clamped to it.
  explicit CountWindow(std::uint32_t size);
  // Inline: the breaker calls it under its lock on every recorded outcome.
  void Add(Sample sample) noexcept {
    std::uint8_t& slot = ring_[next_];
    packed_ = PackedWith(slot, sample);
    slot = Code(sample);
    next_ = next_ + 1 == ring_.size() ? 0 : next_ + 1;
  }
  WindowTotals totals() const noexcept { return Unpack(packed_); }
  // The totals Add(sample) would leave, without adding it.
  WindowTotals TotalsWith(Sample sample) const noexcept {
    return Unpack(PackedWith(ring_[next_], sample));
  }
  std::uint32_t size() const noexcept { return static_cast<std::uint32_t>(ring_.size()); }
  void Clear() noexcept;

 private:
  // The three totals live in one word, 21 bits each (calls, failures, slow), so a record is one
  // subtract and one add on a register. (Three separate counters updated field by field and
  // then read whole, as the compiler vectorizes the read, stall on store forwarding every call.)
  // No field ever borrows or carries: each total counts samples held, at most kMaxSize, and the
  // evicted sample is one of them.
  static constexpr unsigned kFieldBits = 21;
  static constexpr std::uint64_t kFieldMask = (std::uint64_t{1} << kFieldBits) - 1;

  // A ring slot: bit 0 failure, bit 1 slow, bit 2 present (0: an empty slot, nothing to evict).
  static std::uint8_t Code(Sample s) noexcept {
    return static_cast<std::uint8_t>(4U | (s.failure ? 1U : 0U) | (s.slow ? 2U : 0U));
  }
  static std::uint64_t Packed(unsigned code) noexcept {
    return std::uint64_t{(code >> 2U) & 1U} | (std::uint64_t{code & 1U} << kFieldBits) |
           (std::uint64_t{(code >> 1U) & 1U} << (2 * kFieldBits));
  }
  std::uint64_t PackedWith(unsigned evicted_code, Sample sample) const noexcept {
    return packed_ - Packed(evicted_code) + Packed(Code(sample));
  }
  static WindowTotals Unpack(std::uint64_t p) noexcept {
    return {p & kFieldMask, (p >> kFieldBits) & kFieldMask, (p >> (2 * kFieldBits)) & kFieldMask};
  }

  std::vector<std::uint8_t> ring_;  // one sample per byte (Code), the oldest at next_ once full
  std::uint32_t next_ = 0;          // where the next sample goes
  std::uint64_t packed_ = 0;        // calls | failures << 21 | slow << 42
};

class TimeWindow {
 public:
  // seconds >= 1.
  explicit TimeWindow(std::uint32_t seconds);
  // Records a sample completed in whole second `second` (>= 0). A second older than the window
  // is dropped. Seconds may arrive slightly out of order (the breaker reads its clock before it
  // takes its lock); an older second still inside the window goes to its own bucket.
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

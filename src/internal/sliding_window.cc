#include "internal/sliding_window.h"

#include <algorithm>

namespace fusebox {
namespace {

void AddTo(WindowTotals& t, Sample s) noexcept {
  t.calls += 1;
  t.failures += s.failure ? 1U : 0U;
  t.slow += s.slow ? 1U : 0U;
}

void Subtract(WindowTotals& t, const WindowTotals& s) noexcept {
  t.calls -= s.calls;
  t.failures -= s.failures;
  t.slow -= s.slow;
}

}  // namespace

CountWindow::CountWindow(std::uint32_t size) : ring_(std::clamp(size, 1U, kMaxSize), 0) {}

void CountWindow::Clear() noexcept {
  std::fill(ring_.begin(), ring_.end(), 0);
  next_ = 0;
  packed_ = 0;
}

TimeWindow::TimeWindow(std::uint32_t seconds) : buckets_(std::max<std::uint32_t>(seconds, 1U)) {}

TimeWindow::Bucket& TimeWindow::BucketFor(std::int64_t second) noexcept {
  const auto n = static_cast<std::int64_t>(buckets_.size());
  return buckets_[static_cast<std::size_t>(((second % n) + n) % n)];
}

void TimeWindow::AdvanceTo(std::int64_t second) noexcept {
  if (second <= head_) {
    return;
  }
  const auto n = static_cast<std::int64_t>(buckets_.size());
  if (head_ < 0 || second - head_ >= n) {
    // Everything held is older than the window that ends at `second`.
    for (Bucket& b : buckets_) {
      b = Bucket{};
    }
    totals_ = {};
  } else {
    for (std::int64_t s = head_ + 1; s <= second; ++s) {
      Bucket& b = BucketFor(s);
      Subtract(totals_, b.totals);
      b = Bucket{};
    }
  }
  head_ = second;
}

void TimeWindow::Add(std::int64_t second, Sample sample) noexcept {
  AdvanceTo(second);
  const auto n = static_cast<std::int64_t>(buckets_.size());
  if (second <= head_ - n) {
    return;  // older than the window
  }
  Bucket& b = BucketFor(second);
  b.second = second;
  AddTo(b.totals, sample);
  AddTo(totals_, sample);
}

WindowTotals TimeWindow::TotalsAt(std::int64_t second) noexcept {
  AdvanceTo(second);
  return totals_;
}

void TimeWindow::Clear() noexcept {
  for (Bucket& b : buckets_) {
    b = Bucket{};
  }
  head_ = -1;
  totals_ = {};
}

}  // namespace fusebox

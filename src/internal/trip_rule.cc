#include "internal/trip_rule.h"

#include <algorithm>
#include <cmath>

namespace fusebox::internal {

std::uint64_t MinCountReaching(std::uint64_t calls, double threshold) noexcept {
  const auto n = static_cast<double>(static_cast<std::int64_t>(calls));
  auto reaches = [&](std::uint64_t c) {
    return static_cast<double>(static_cast<std::int64_t>(c)) / n >= threshold;
  };
  auto c = static_cast<std::uint64_t>(std::max(0.0, std::floor(threshold * n)));
  c = std::min(c, calls);
  while (c > 0 && reaches(c - 1)) {
    --c;
  }
  while (c <= calls && !reaches(c)) {
    ++c;
  }
  return c;
}

std::unique_ptr<WindowRule> WindowRule::For(const CircuitBreakerConfig& config) {
  if (config.trip == TripPolicy::kConsecutive) {
    return nullptr;
  }
  auto rule = std::make_unique<WindowRule>();
  if (config.trip == TripPolicy::kCountWindow) {
    rule->count_ = std::make_unique<CountWindow>(config.window_size);
  } else {
    rule->time_ = std::make_unique<TimeWindow>(config.window_size);
  }
  return rule;
}

WindowTotals WindowRule::TotalsSeenAt(TimePoint now) const {
  if (count_) {
    return count_->totals();
  }
  TimeWindow copy = *time_;
  return copy.TotalsAt(WholeSecondsSinceEpoch(now));
}

void WindowRule::Clear() noexcept {
  if (count_) {
    count_->Clear();
  }
  if (time_) {
    time_->Clear();
  }
}

}  // namespace fusebox::internal

#include "internal/inflight_tracker.h"

namespace fusebox::internal {

std::uint64_t InflightTracker::Add(TimePoint start) {
  entries_.push_back({start, false});
  return base_ + entries_.size() - 1;
}

void InflightTracker::Done(std::uint64_t ticket) noexcept {
  if (ticket < base_ || ticket - base_ >= entries_.size()) {
    return;  // cleared by a transition since
  }
  const auto index = static_cast<std::size_t>(ticket - base_);
  entries_[index].done = true;
  if (index < frontier_) {
    --slow_;
  }
  while (!entries_.empty() && entries_.front().done) {
    entries_.pop_front();
    ++base_;
    if (frontier_ > 0) {
      --frontier_;
    }
  }
}

void InflightTracker::Advance(TimePoint now, Duration slow_after) noexcept {
  while (frontier_ < entries_.size() && entries_[frontier_].start + slow_after <= now) {
    if (!entries_[frontier_].done) {
      ++slow_;
    }
    ++frontier_;
  }
}

void InflightTracker::Clear() noexcept {
  base_ += entries_.size();
  entries_.clear();
  frontier_ = 0;
  slow_ = 0;
}

}  // namespace fusebox::internal

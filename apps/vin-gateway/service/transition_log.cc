#include "service/transition_log.h"

#include <algorithm>

namespace fusebox::gateway {

TransitionLog::TransitionLog(std::size_t capacity)
    : capacity_(std::max<std::size_t>(1, capacity)) {}

void TransitionLog::Record(const fusebox::TransitionEvent& transition, WallTime at) {
  fusebox::Locked lock(mu_);
  if (records_.size() == capacity_) {
    records_.pop_front();
  }
  records_.push_back(TransitionRecord{transition.from, transition.to, transition.cause, at});
  ++total_;
}

std::vector<TransitionRecord> TransitionLog::Recent() const {
  fusebox::Locked lock(mu_);
  return {records_.begin(), records_.end()};
}

std::uint64_t TransitionLog::total() const {
  fusebox::Locked lock(mu_);
  return total_;
}

}  // namespace fusebox::gateway

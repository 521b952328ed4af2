#include "server_queue.h"

#include <algorithm>

namespace fusebox::sim {

bool ServerQueue::Join(const Call& call, std::uint32_t capacity) {
  if (line_.empty() && busy_ < capacity) {
    ++busy_;
    return true;
  }
  line_.push_back(call);
  return false;
}

void ServerQueue::Finish() {
  if (busy_ > 0) {
    --busy_;
  }
}

std::optional<ServerQueue::Call> ServerQueue::StartNext(Micros now, std::uint32_t capacity) {
  while (busy_ < capacity && !line_.empty()) {
    const Call next = line_.front();
    line_.pop_front();
    if (next.deadline <= now) {
      continue;  // its client is gone: its deadline ends it
    }
    ++busy_;
    return next;
  }
  return std::nullopt;
}

bool ServerQueue::Leave(std::uint32_t slot) {
  // Calls of one budget leave in the order they came, so the one leaving is almost always at the
  // front; the search from the front is short.
  const auto it =
      std::find_if(line_.begin(), line_.end(), [slot](const Call& c) { return c.slot == slot; });
  if (it == line_.end()) {
    return false;
  }
  line_.erase(it);
  return true;
}

}  // namespace fusebox::sim

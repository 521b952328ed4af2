#include "service_queue.h"

namespace fusebox::vpic_sim {

ServiceQueue::Entry ServiceQueue::Enter(int servers, std::optional<int> queue_limit) {
  servers_ = servers;
  if (waiting_.empty() && serving() < servers_) {
    serving_.insert(++last_);
    return {.ticket = last_, .place = Place::kServing};
  }
  if (queue_limit && waiting() >= *queue_limit) {
    return {.ticket = 0, .place = Place::kFull};
  }
  waiting_.insert(++last_);
  return {.ticket = last_, .place = Place::kWaiting};
}

std::vector<ServiceQueue::Ticket> ServiceQueue::Leave(Ticket ticket) {
  std::vector<Ticket> started;
  if (waiting_.erase(ticket) > 0 || serving_.erase(ticket) == 0) {
    return started;
  }
  while (!waiting_.empty() && serving() < servers_) {
    const Ticket next = *waiting_.begin();
    waiting_.erase(waiting_.begin());
    serving_.insert(next);
    started.push_back(next);
  }
  return started;
}

}  // namespace fusebox::vpic_sim

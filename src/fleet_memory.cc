// InMemoryFleetBus: the FleetLink of instances in one process (tests, simulations). Deliveries
// and lease answers run on the calling thread, never under the bus's lock, because a receiver
// calls back into the bus (an adopted transition releases its lease request).
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fusebox/fleet.h"

namespace fusebox {

std::unique_ptr<InMemoryFleetBus::Link> InMemoryFleetBus::Connect(std::string instance) {
  auto link = std::make_unique<Link>(*this, std::move(instance));
  Locked lock(mu_);
  links_.push_back(link.get());
  return link;
}

void InMemoryFleetBus::Publish(Link& from, const FleetMessage& message) {
  std::vector<FleetReceiver*> receivers;
  {
    Locked lock(mu_);
    auto it = stored_.find(message.breaker);
    if (it != stored_.end() && !IsNewer(message, it->second.generation, it->second.sender)) {
      return;  // the fleet already stored something newer: this one is stale for everyone
    }
    FleetMessage stored = message;
    // Kept as the instant the cooldown ends on the bus's clock; Reconcile turns it back into a
    // remaining duration.
    // (Clamped like the wire form, so that no test's message overflows the clock's arithmetic.)
    stored.remaining_cooldown =
        (clock_.Now() + std::clamp(message.remaining_cooldown, Duration(0), kMaxFleetCooldown))
            .time_since_epoch();
    stored_[message.breaker] = std::move(stored);
    for (Link* link : links_) {
      if (link == &from || !link->connected()) {
        continue;
      }
      Locked link_lock(link->mu_);
      if (link->receiver_ != nullptr && link->watched_.contains(message.breaker)) {
        receivers.push_back(link->receiver_);
      }
    }
  }
  for (FleetReceiver* receiver : receivers) {
    receiver->OnMessage(message);
  }
}

void InMemoryFleetBus::Reconcile(Link& link, const std::string& breaker) {
  FleetMessage message;
  {
    Locked lock(mu_);
    auto it = stored_.find(breaker);
    if (it == stored_.end()) {
      return;
    }
    message = it->second;
    const TimePoint until(message.remaining_cooldown);
    message.remaining_cooldown = std::max(Duration(0), until - clock_.Now());
  }
  if (FleetReceiver* receiver = link.receiver()) {
    receiver->OnMessage(message);
  }
}

void InMemoryFleetBus::TryLeases(const std::vector<Pending>& requests) {
  struct Answer {
    Link* link;
    std::string breaker;
    std::uint64_t generation;
    std::uint32_t slots;
    std::string holder;
  };
  std::vector<Answer> answers;
  {
    Locked lock(mu_);
    const TimePoint now = clock_.Now();
    for (const Pending& r : requests) {
      if (!r.link->connected()) {
        continue;
      }
      auto& slots = leases_[r.breaker + "#" + std::to_string(r.generation)];
      if (slots.size() < r.slots) {
        slots.resize(r.slots);
      }
      std::uint32_t won = 0;
      std::string holder;
      for (std::uint32_t i = 0; i < r.slots; ++i) {
        LeaseSlot& slot = slots[i];
        const bool free = slot.holder.empty() || slot.expires <= now;
        if (free || slot.holder == r.link->instance()) {
          if (free) {
            slot = LeaseSlot{r.link->instance(), now + r.ttl};
          }
          ++won;
        } else if (holder.empty()) {
          holder = slot.holder;
        }
      }
      if (won > 0) {
        std::erase_if(pending_,
                      [&](const Pending& p) { return p.link == r.link && p.breaker == r.breaker; });
        holder = r.link->instance();
      }
      answers.push_back(Answer{r.link, r.breaker, r.generation, won, holder});
    }
  }
  for (const Answer& a : answers) {
    if (FleetReceiver* receiver = a.link->receiver()) {
      receiver->OnLease(a.breaker, a.generation, a.slots, a.holder);
    }
  }
}

void InMemoryFleetBus::Poll() {
  std::vector<Pending> requests;
  {
    Locked lock(mu_);
    requests = pending_;
  }
  TryLeases(requests);
}

// ---- Link ----

InMemoryFleetBus::Link::~Link() {
  Locked lock(bus_.mu_);
  std::erase(bus_.links_, this);
  std::erase_if(bus_.pending_, [this](const Pending& p) { return p.link == this; });
}

FleetReceiver* InMemoryFleetBus::Link::receiver() const {
  Locked lock(mu_);
  return receiver_;
}

void InMemoryFleetBus::Link::SetReceiver(FleetReceiver* receiver) {
  Locked lock(mu_);
  receiver_ = receiver;
}

void InMemoryFleetBus::Link::Watch(const std::string& breaker) {
  {
    Locked lock(mu_);
    watched_.insert(breaker);
  }
  if (connected()) {
    bus_.Reconcile(*this, breaker);
  }
}

void InMemoryFleetBus::Link::Publish(const FleetMessage& message) {
  if (connected()) {
    bus_.Publish(*this, message);
  }
}

void InMemoryFleetBus::Link::AcquireLease(const std::string& breaker, std::uint64_t generation,
                                          std::uint32_t slots, Duration ttl) {
  Pending request{this, breaker, generation, std::max(slots, 1U), ttl};
  {
    Locked lock(bus_.mu_);
    std::erase_if(bus_.pending_,
                  [&](const Pending& p) { return p.link == this && p.breaker == breaker; });
    bus_.pending_.push_back(request);
  }
  bus_.TryLeases({request});
}

void InMemoryFleetBus::Link::ReleaseLease(const std::string& breaker) {
  Locked lock(bus_.mu_);
  std::erase_if(bus_.pending_,
                [&](const Pending& p) { return p.link == this && p.breaker == breaker; });
}

void InMemoryFleetBus::Link::SetConnected(bool connected) {
  const bool was = connected_.exchange(connected);
  if (!connected || was) {
    return;
  }
  std::vector<std::string> watched;
  std::vector<Pending> mine;
  {
    Locked lock(mu_);
    watched.assign(watched_.begin(), watched_.end());
  }
  for (const std::string& breaker : watched) {
    bus_.Reconcile(*this, breaker);
  }
  if (FleetReceiver* r = receiver()) {
    r->OnConnected();
  }
  {
    Locked lock(bus_.mu_);
    for (const Pending& p : bus_.pending_) {
      if (p.link == this) {
        mine.push_back(p);
      }
    }
  }
  bus_.TryLeases(mine);
}

void InMemoryFleetBus::Link::Inject(const FleetMessage& message) {
  if (FleetReceiver* r = receiver()) {
    r->OnMessage(message);
  }
}

}  // namespace fusebox

#include "service/hot_decodes.h"

namespace fusebox::gateway {

HotDecodes::Entry HotDecodes::Lookup(const std::string& key) {
  if (capacity_ == 0) {
    return {};
  }
  fusebox::Locked lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) {
    return {};
  }
  order_.splice(order_.begin(), order_, it->second);
  return it->second->second;
}

void HotDecodes::Put(const std::string& key, DecodePtr decode) {
  if (capacity_ == 0 || decode == nullptr) {
    return;
  }
  fusebox::Locked lock(mu_);
  if (auto it = index_.find(key); it != index_.end()) {
    if (it->second->second.decode != decode) {
      it->second->second = Entry{std::move(decode), nullptr};
    }
    order_.splice(order_.begin(), order_, it->second);
    return;
  }
  order_.emplace_front(key, Entry{std::move(decode), nullptr});
  index_.emplace(key, order_.begin());
  while (order_.size() > capacity_) {
    index_.erase(order_.back().first);
    order_.pop_back();
  }
}

void HotDecodes::AttachFreshBody(const std::string& key, const DecodePtr& decode, BodyPtr body) {
  if (capacity_ == 0) {
    return;
  }
  fusebox::Locked lock(mu_);
  auto it = index_.find(key);
  if (it != index_.end() && it->second->second.decode == decode) {
    it->second->second.fresh_body = std::move(body);
  }
}

std::size_t HotDecodes::size() const {
  fusebox::Locked lock(mu_);
  return order_.size();
}

}  // namespace fusebox::gateway

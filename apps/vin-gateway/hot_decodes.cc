#include "hot_decodes.h"

namespace vin_gateway {

DecodePtr HotDecodes::Get(const std::string& key) {
  if (capacity_ == 0) {
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) {
    return nullptr;
  }
  order_.splice(order_.begin(), order_, it->second);
  return it->second->second;
}

void HotDecodes::Put(const std::string& key, DecodePtr decode) {
  if (capacity_ == 0 || decode == nullptr) {
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = index_.find(key); it != index_.end()) {
    it->second->second = std::move(decode);
    order_.splice(order_.begin(), order_, it->second);
    return;
  }
  order_.emplace_front(key, std::move(decode));
  index_.emplace(key, order_.begin());
  while (order_.size() > capacity_) {
    index_.erase(order_.back().first);
    order_.pop_back();
  }
}

std::size_t HotDecodes::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return order_.size();
}

}  // namespace vin_gateway

#include "fusebox/bulkhead.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace fusebox {

std::optional<ConfigError> BulkheadConfig::Validate() const {
  if (max_concurrent < 1 || max_concurrent > 1'000'000) {
    return ConfigError{"max_concurrent", "max_concurrent must be in [1, 1000000], got " +
                                             std::to_string(max_concurrent)};
  }
  return std::nullopt;
}

BulkheadPermit& BulkheadPermit::operator=(BulkheadPermit&& other) noexcept {
  if (this != &other) {
    Release();
    bulkhead_ = other.bulkhead_;
    other.bulkhead_ = nullptr;
  }
  return *this;
}

void BulkheadPermit::Release() noexcept {
  if (bulkhead_ != nullptr) {
    bulkhead_->ReleaseSlot();
    bulkhead_ = nullptr;
  }
}

Result<std::unique_ptr<Bulkhead>, ConfigError> Bulkhead::Create(std::string name, Config config) {
  if (auto error = config.Validate()) {
    return *std::move(error);
  }
  return std::unique_ptr<Bulkhead>(new Bulkhead(std::move(name), config.max_concurrent));
}

Result<BulkheadPermit> Bulkhead::TryAcquire() noexcept {
  // Increment only from a value below the cap: in_flight_ never exceeds max_concurrent_, even for
  // an instant (a fetch_add-then-undo would overshoot and could make a concurrent caller reject
  // while a slot is actually free). compare_exchange_weak reloads `current` on failure.
  std::uint32_t current = in_flight_.load(std::memory_order_relaxed);
  do {
    if (current >= max_concurrent_) {
      rejected_.fetch_add(1, std::memory_order_relaxed);
      return Error{ReasonCode::kOverloaded, kRetryAfter};
    }
  } while (!in_flight_.compare_exchange_weak(current, current + 1, std::memory_order_acquire,
                                             std::memory_order_relaxed));
  admitted_.fetch_add(1, std::memory_order_relaxed);
  return BulkheadPermit(this);
}

void Bulkhead::ReleaseSlot() noexcept { in_flight_.fetch_sub(1, std::memory_order_release); }

}  // namespace fusebox

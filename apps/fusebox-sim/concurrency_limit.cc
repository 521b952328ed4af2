#include "concurrency_limit.h"

#include <fmt/format.h>

#include <utility>

namespace fusebox::sim {

void ConcurrencyLimit::Slot::Record(Outcome outcome, bool drop) {
  if (fixed_) {
    fixed_->Release();
  } else if (adaptive_) {
    if (drop) {
      adaptive_->RecordDrop();
    } else {
      adaptive_->Record(outcome);
    }
  }
}

Result<ConcurrencyLimit, std::string> ConcurrencyLimit::Create(const Limit& spec, Clock& clock,
                                                               OnChange on_change) {
  ConcurrencyLimit limit;
  if (!spec.adaptive) {
    auto bulkhead = Bulkhead::Create("limit", {.max_concurrent = spec.max_in_flight});
    if (!bulkhead) {
      return fmt::format("the bulkhead refused the limit: {}", bulkhead.error().message);
    }
    limit.fixed_ = std::move(*bulkhead);
    return limit;
  }
  AdaptiveLimitDeps deps{.clock = &clock, .on_change = {}};
  if (on_change) {
    deps.on_change = [on_change = std::move(on_change)](const LimitChange& change) {
      on_change(change.new_limit);
    };
  }
  auto adaptive = AdaptiveLimit::Create("limit", spec.adaptive_config, std::move(deps));
  if (!adaptive) {
    return fmt::format("the adaptive limit refused the config: {}", adaptive.error().message);
  }
  limit.adaptive_ = std::move(*adaptive);
  return limit;
}

std::optional<ConcurrencyLimit::Slot> ConcurrencyLimit::TryAcquire() {
  if (fixed_) {
    Result<BulkheadPermit> permit = fixed_->TryAcquire();
    if (!permit) {
      return std::nullopt;
    }
    return Slot(std::move(*permit));
  }
  Result<AdaptivePermit> permit = adaptive_->TryAcquire();
  if (!permit) {
    return std::nullopt;
  }
  return Slot(std::move(*permit));
}

std::uint32_t ConcurrencyLimit::limit() const {
  return fixed_ ? fixed_->max_concurrent() : adaptive_->limit();
}

}  // namespace fusebox::sim

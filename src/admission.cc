#include "fusebox/admission.h"

#include <stdexcept>
#include <utility>

namespace fusebox {

Result<Admission> Admit(const Guards& guards, Priority priority) noexcept {
  Admission admission;
  if (guards.bulkhead != nullptr) {
    Result<BulkheadPermit> slot = guards.bulkhead->TryAcquire();
    if (!slot) {
      return slot.error();
    }
    admission.slot_.emplace(std::move(*slot));
  }
  if (guards.limit != nullptr) {
    Result<AdaptivePermit> slot = guards.limit->TryAcquire();
    if (!slot) {
      return slot.error();
    }
    admission.adaptive_.emplace(std::move(*slot));
  }
  Result<Permit> permit = guards.breaker->TryAcquire(priority);
  if (!permit) {
    return permit.error();
  }
  admission.probe_ = permit->is_probe();
  admission.permit_.emplace(std::move(*permit));
  if (guards.throttle != nullptr && !admission.probe_) {
    Result<ThrottleTicket> ticket = guards.throttle->TryAcquire();
    if (!ticket) {
      // Nothing was sent: the breaker and the limit learn nothing from it.
      admission.permit_->Record(Outcome::kIgnored);
      if (admission.adaptive_) {
        admission.adaptive_->Record(Outcome::kIgnored);
      }
      return ticket.error();
    }
    admission.ticket_.emplace(std::move(*ticket));
  }
  return admission;
}

Permit& Admission::permit() {
  if (!permit_) {
    throw std::logic_error("fusebox::Admission: the breaker's permit was taken or recorded");
  }
  return *permit_;
}

Permit Admission::TakePermit() {
  Permit taken = std::move(permit());
  permit_.reset();
  return taken;
}

void Admission::Record(Outcome outcome) noexcept {
  if (permit_) {
    permit_->Record(outcome);
  }
  if (adaptive_) {
    adaptive_->Record(outcome);
  }
  if (ticket_) {
    ticket_->Record(outcome);
  }
  Release();
}

void Admission::RecordRefusedForLoad(MinOpen hold) noexcept {
  if (permit_) {
    permit_->Record(Outcome::kFailure, hold);
  }
  if (adaptive_) {
    adaptive_->RecordDrop();
  }
  if (ticket_) {
    ticket_->Record(Outcome::kFailure);
  }
  Release();
}

void Admission::Release() noexcept {
  permit_.reset();
  adaptive_.reset();
  ticket_.reset();
  slot_.reset();
}

}  // namespace fusebox

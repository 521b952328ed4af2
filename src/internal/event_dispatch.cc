#include "internal/event_dispatch.h"

#include <cstddef>
#include <variant>

namespace fusebox::internal {

void Deliver(const EventBatch& batch, const Subscribers& to) noexcept {
  if (to.observers) {
    for (std::size_t i = 0; i < batch.size; ++i) {
      if (const auto* t = std::get_if<TransitionEvent>(&batch[i].detail)) {
        for (const auto& [id, observer] : *to.observers) {
          try {
            observer(*t);
          } catch (...) {  // NOLINT(bugprone-empty-catch): as for listeners
          }
        }
      }
    }
  }
  if (to.coordination && to.coordination->on_transition) {
    for (std::size_t i = 0; i < batch.size; ++i) {
      if (const auto* t = std::get_if<TransitionEvent>(&batch[i].detail)) {
        try {
          to.coordination->on_transition(*t);
        } catch (...) {  // NOLINT(bugprone-empty-catch): as for listeners
        }
      }
    }
  }
  if (!to.listeners) {
    return;
  }
  for (std::size_t i = 0; i < batch.size; ++i) {
    for (const auto& [id, listener] : *to.listeners) {
      try {
        listener(batch[i]);
      } catch (...) {  // NOLINT(bugprone-empty-catch): a listener must not break the call path
      }
    }
  }
}

}  // namespace fusebox::internal

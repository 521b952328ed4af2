// internal/probe_slots.h (not installed: the breaker's HALF_OPEN probe slots)
//
// HALF_OPEN admits at most half_open_max_probes probes at once, one slot each. A slot is free, or
// held by the probe admitted with its deadline (its start plus the budget it was admitted with);
// a probe that has not reported by its deadline timed out at that instant. The breaker keeps the
// slots (one inline, more in its cold block); these are the questions it asks of them.
//
// Thread safety: none; the breaker asks under its lock. Time: told, never read.
//
// Example:
//   std::span<ProbeSlot> slots = ...;
//   if (ProbeSlot* free = FreeSlot(slots)) *free = ProbeSlot{now + budget, true};
//   std::optional<TimePoint> due = EarliestBusyDeadline(slots, kNoSlot);
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <optional>
#include <span>

#include "fusebox/clock.h"

namespace fusebox::internal {

struct ProbeSlot {
  TimePoint deadline{};
  bool busy = false;
};

// No slot: EarliestBusyDeadline then skips none.
inline constexpr std::size_t kNoSlot = std::numeric_limits<std::size_t>::max();

// A free slot, or null when every slot is busy.
inline ProbeSlot* FreeSlot(std::span<ProbeSlot> slots) noexcept {
  const auto free =
      std::find_if(slots.begin(), slots.end(), [](const ProbeSlot& p) { return !p.busy; });
  return free == slots.end() ? nullptr : &*free;
}

// The earliest deadline of a busy slot other than `except`, if any.
inline std::optional<TimePoint> EarliestBusyDeadline(std::span<const ProbeSlot> slots,
                                                     std::size_t except) noexcept {
  std::optional<TimePoint> earliest;
  for (std::size_t i = 0; i < slots.size(); ++i) {
    if (i != except && slots[i].busy && (!earliest || slots[i].deadline < *earliest)) {
      earliest = slots[i].deadline;
    }
  }
  return earliest;
}

}  // namespace fusebox::internal

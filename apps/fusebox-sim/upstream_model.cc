#include "upstream_model.h"

#include <algorithm>

namespace fusebox::sim {

UpstreamModel::UpstreamModel(const Scenario& scenario) : scenario_(scenario) {}

// The phase in force at `t`, or null.
const Phase* UpstreamModel::PhaseAt(Micros t) {
  const std::vector<Phase>& phases = scenario_.phases;
  while (phase_cursor_ < phases.size() && phases[phase_cursor_].to <= t) {
    ++phase_cursor_;
  }
  if (phase_cursor_ < phases.size() && phases[phase_cursor_].from <= t) {
    return &phases[phase_cursor_];
  }
  return nullptr;
}

UpstreamFate UpstreamModel::Decide(Micros t, std::uint32_t in_flight) {
  const Phase* phase = PhaseAt(t);
  if (phase == nullptr) {
    return {Outcome::kSuccess, scenario_.upstream_latency, FateKind::kAnswers};
  }
  switch (phase->mode) {
    case Mode::kOk:
    case Mode::kSlow:
      return {Outcome::kSuccess, phase->latency, FateKind::kAnswers};
    case Mode::kError:
      return {Outcome::kFailure, phase->latency, FateKind::kAnswers};
    case Mode::kHang:
      return {Outcome::kTimeout, 0, FateKind::kAnswers};
    case Mode::kFragile:
      return FragileFate(*phase, phase->capacity, in_flight, t);
    case Mode::kWarming:
      return FragileFate(*phase, WarmCapacity(*phase, t), in_flight, t);
    case Mode::kQueue:
      return {Outcome::kSuccess, phase->latency, FateKind::kQueued};
    case Mode::kRefuse:
      if (in_flight >= phase->capacity) {
        return {Outcome::kFailure, 0, FateKind::kRefused};
      }
      return {Outcome::kSuccess, phase->latency, FateKind::kAnswers};
  }
  return {Outcome::kSuccess, scenario_.upstream_latency, FateKind::kAnswers};
}

std::uint32_t UpstreamModel::QueueCapacity(Micros t) {
  const std::vector<Phase>& phases = scenario_.phases;
  while (queue_cursor_ < phases.size() && phases[queue_cursor_].from <= t) {
    if (phases[queue_cursor_].mode == Mode::kQueue) {
      queue_capacity_ = phases[queue_cursor_].capacity;
    }
    ++queue_cursor_;
  }
  return queue_capacity_;
}

// A warming upstream's capacity at `t`: from cold_capacity when it (re)started, at the phase's
// start or at the end of its last collapse, linearly to capacity over warmup (rounded down).
std::uint32_t UpstreamModel::WarmCapacity(const Phase& phase, Micros t) const {
  const Micros since = collapsed_phase_ == &phase ? collapsed_until_ : phase.from;
  if (t <= since) {
    return phase.cold_capacity;
  }
  if (t - since >= phase.warmup) {
    return phase.capacity;
  }
  const auto grown = static_cast<std::uint64_t>(phase.capacity - phase.cold_capacity) *
                     static_cast<std::uint64_t>(t - since) /
                     static_cast<std::uint64_t>(phase.warmup);
  return phase.cold_capacity + static_cast<std::uint32_t>(grown);
}

UpstreamFate UpstreamModel::FragileFate(const Phase& phase, std::uint32_t capacity,
                                        std::uint32_t in_flight, Micros t) {
  if (collapsed_phase_ == &phase && t < collapsed_until_) {
    return {Outcome::kFailure, 0, FateKind::kAnswers};
  }
  if (in_flight >= capacity) {
    // One call more than it can serve: it fails, and so does everything for `relapse`.
    collapsed_phase_ = &phase;
    collapsed_until_ = t + phase.relapse;
    collapses_.emplace_back(t, std::min(collapsed_until_, phase.to));
    return {Outcome::kFailure, 0, FateKind::kAnswers};
  }
  return {Outcome::kSuccess, phase.latency, FateKind::kAnswers};
}

}  // namespace fusebox::sim

#include "fault_engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

namespace fusebox::vpic_sim {
namespace {

constexpr Micros kMaxLatency = 3600 * kMicrosPerSecond;
constexpr std::int64_t kStartupKey = -1;
constexpr std::int64_t kNoKey = std::numeric_limits<std::int64_t>::min();

}  // namespace

const std::vector<std::string_view>& FaultLabels() {
  static const std::vector<std::string_view> kLabels = {
      "ok",        "slow",           "error",
      "hang",      "reset",          "garbage",
      "truncated", "drip",           "capacity_rejected",
      "interim",   "queue_abandoned"};
  return kLabels;
}

FaultEngine::FaultEngine(FaultSpec startup, Schedule schedule, std::uint64_t seed)
    : startup_(startup), schedule_(std::move(schedule)), random_(seed), active_key_(kNoKey) {}

void FaultEngine::SetOverride(const FaultSpec& spec) {
  override_ = spec;
  ++override_generation_;
}

void FaultEngine::Reset(Micros now) {
  override_.reset();
  origin_ = now;
  active_key_ = kNoKey;
  flap_count_ = 0;
  relapse_until_.reset();
}

const FaultSpec& FaultEngine::Effective(Micros now, std::string* source) const {
  if (override_) {
    if (source != nullptr) {
      *source = "control";
    }
    return *override_;
  }
  if (const Phase* phase = schedule_.PhaseAt(now - origin_)) {
    if (source != nullptr) {
      *source = fmt::format("schedule phase {}", (phase - schedule_.phases.data()) + 1);
    }
    return phase->spec;
  }
  if (source != nullptr) {
    *source = "startup";
  }
  return startup_;
}

std::int64_t FaultEngine::ActiveKey(Micros now) const {
  if (override_) {
    return -2 - override_generation_;
  }
  if (const Phase* phase = schedule_.PhaseAt(now - origin_)) {
    return phase - schedule_.phases.data();
  }
  return kStartupKey;
}

Micros FaultEngine::SampleLatency(const LatencySpec& latency) {
  switch (latency.dist) {
    case LatencyDist::kFixed:
      return latency.value;
    case LatencyDist::kUniform: {
      const double span = static_cast<double>(latency.max - latency.min);
      return latency.min + static_cast<Micros>(std::floor(random_.Uniform01() * (span + 1.0)));
    }
    case LatencyDist::kLognormal: {
      // Box-Muller; 1 - u keeps the logarithm's argument in (0, 1].
      const double u1 = 1.0 - random_.Uniform01();
      const double u2 = random_.Uniform01();
      const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
      double draw = static_cast<double>(latency.value) * std::exp(latency.sigma * z);
      draw = std::min(draw, static_cast<double>(kMaxLatency));
      if (latency.max > 0) {
        draw = std::min(draw, static_cast<double>(latency.max));
      }
      return static_cast<Micros>(std::llround(draw));
    }
  }
  return latency.value;
}

Decision FaultEngine::Admit(Micros now, std::int64_t in_flight) {
  const std::int64_t key = ActiveKey(now);
  if (key != active_key_) {
    active_key_ = key;
    flap_count_ = 0;
    relapse_until_.reset();
  }
  const FaultSpec& spec = Effective(now, nullptr);
  Decision d;
  auto fail = [&spec, &d](Micros delay) {
    d.action = Action::kError;
    d.delay = delay;
    d.status = spec.status;
    d.retry_after_s = spec.retry_after_s;
    d.label = "error";
  };
  switch (spec.mode) {
    case FaultMode::kOk:
      d.delay = SampleLatency(spec.latency);
      d.label = "ok";
      break;
    case FaultMode::kSlow:
      d.delay = SampleLatency(spec.latency);
      d.label = "slow";
      break;
    case FaultMode::kError:
      fail(SampleLatency(spec.latency));
      break;
    case FaultMode::kHang:
      d.action = Action::kHang;
      d.label = "hang";
      break;
    case FaultMode::kReset:
      d.action = Action::kReset;
      d.delay = SampleLatency(spec.latency);
      d.label = "reset";
      break;
    case FaultMode::kGarbage:
      d.action = Action::kGarbage;
      d.delay = SampleLatency(spec.latency);
      d.label = "garbage";
      break;
    case FaultMode::kTruncated:
      d.action = Action::kTruncated;
      d.delay = SampleLatency(spec.latency);
      d.label = "truncated";
      break;
    case FaultMode::kDrip:
      d.action = Action::kDrip;
      d.delay = SampleLatency(spec.latency);
      d.drip_bytes = spec.drip_bytes;
      d.drip_interval = spec.drip_interval;
      d.label = "drip";
      break;
    case FaultMode::kFlap: {
      const std::uint64_t k = flap_count_++;
      const auto every = static_cast<std::uint64_t>(spec.every);
      if ((k / every) % 2 == 0) {
        d.delay = SampleLatency(spec.latency);
        d.label = "ok";
      } else {
        fail(SampleLatency(spec.latency));
      }
      break;
    }
    case FaultMode::kInterim: {
      // The first request under the fault gets one, then one in `every`.
      const std::uint64_t k = flap_count_++;
      d.delay = SampleLatency(spec.latency);
      if (k % static_cast<std::uint64_t>(spec.every) == 0) {
        d.interim_status = spec.interim_status;
        d.label = "interim";
      } else {
        d.label = "ok";
      }
      break;
    }
    case FaultMode::kCapacity:
      if (relapse_until_ && now < *relapse_until_) {
        fail(0);
      } else if (in_flight > spec.capacity) {
        if (spec.relapse > 0) {
          relapse_until_ = now + spec.relapse;
          fail(0);
        } else {
          d.action = Action::kReject;
          d.status = 503;
          d.retry_after_s = spec.retry_after_s;
          d.label = "capacity_rejected";
        }
      } else {
        relapse_until_.reset();
        d.delay = SampleLatency(spec.latency);
        d.label = "ok";
      }
      break;
    case FaultMode::kQueue: {
      const ServiceQueue::Entry entry = queue_.Enter(spec.capacity, spec.queue_limit);
      if (entry.place == ServiceQueue::Place::kFull) {
        d.action = Action::kReject;
        d.status = 503;
        d.retry_after_s = spec.retry_after_s;
        d.label = "capacity_rejected";
        break;
      }
      d.delay = SampleLatency(spec.latency);
      d.label = "ok";
      d.ticket = entry.ticket;
      d.wait_for_server = entry.place == ServiceQueue::Place::kWaiting;
      break;
    }
  }
  return d;
}

}  // namespace fusebox::vpic_sim

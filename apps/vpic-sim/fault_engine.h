// apps/vpic-sim/fault_engine.h
//
// The FaultEngine turns "the fault in force now" into a Decision for one request. Which fault is
// in force: a fault set at run time (POST /__control/faults) until a reset; else the schedule
// phase covering the time since start (or since the last reset); else the startup fault (flags).
//
// The `queue` fault's line (service_queue.h) is kept here too: a request given a ticket gives it
// back with Leave when it ends, which names the waiting requests that get a server through it.
//
// Thread safety: FaultEngine is not thread-safe: the server calls it from its one I/O thread.
// Time: the engine reads no clock; callers pass `now` (time since start, microseconds).
// Randomness: a SplitMix64 seeded from the constructor's seed.
//
// Example:
//   auto spec = ParseFaultJson(R"({"mode":"error","status":503})");
//   FaultEngine engine(FaultSpec{}, Schedule{}, /*seed=*/1);
//   engine.SetOverride(*spec);
//   Decision d = engine.Admit(/*now=*/0, /*in_flight=*/1);  // d.action == Action::kError
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fault_spec.h"
#include "fusebox/random.h"
#include "schedule.h"
#include "service_queue.h"

namespace fusebox::vpic_sim {

// What the server does with one request.
enum class Action : std::uint8_t {
  kAnswer,     // the real answer, after `delay`
  kError,      // `status` with an error body, after `delay`
  kHang,       // never answer
  kReset,      // TCP RST after `delay`
  kGarbage,    // 200 with a non-JSON body, after `delay`
  kTruncated,  // the answer cut short, after `delay`
  kDrip,       // the answer, `drip_bytes` per `drip_interval`, after `delay`
  kReject,     // capacity exceeded: `status` (503) at once
};

struct Decision {
  Action action = Action::kAnswer;
  Micros delay = 0;
  int status = 200;
  std::optional<int> retry_after_s;
  int drip_bytes = 0;
  Micros drip_interval = 0;
  // > 0: an informational answer with this status goes out at once, before `delay` and the
  // action (kAnswer only).
  int interim_status = 0;
  // The fault served, as counted in /__control/stats: one of FaultLabels().
  std::string_view label = "ok";
  // queue: the request's place in the service (0: none), given back with FaultEngine::Leave
  // when the request ends, however it ends.
  std::uint64_t ticket = 0;
  // queue: the request waits for a server (until a Leave names its ticket), then `delay`.
  bool wait_for_server = false;
};

// "ok", "slow", "error", "hang", "reset", "garbage", "truncated", "drip", "capacity_rejected",
// "interim", "queue_abandoned" (a request whose client left while it waited for a server).
const std::vector<std::string_view>& FaultLabels();

class FaultEngine {
 public:
  FaultEngine(FaultSpec startup, Schedule schedule, std::uint64_t seed);

  // Decides the fate of a request admitted at `now` while `in_flight` requests (this one
  // included) are being handled.
  Decision Admit(Micros now, std::int64_t in_flight);

  // The request holding `ticket` (a Decision's) ends: answered, or its client left, whether it
  // was served or still waiting. Returns the tickets of the waiting requests that got a server
  // through it, oldest first: their wait ends now. The line outlives a change of fault or a
  // Reset: requests already in it are served in turn.
  std::vector<std::uint64_t> Leave(std::uint64_t ticket) { return queue_.Leave(ticket); }
  std::int64_t queue_waiting() const { return queue_.waiting(); }

  // Puts `spec` in force until the next Reset (flap counts and relapse start afresh).
  void SetOverride(const FaultSpec& spec);
  // Clears the override and restarts the schedule: its phases count from `now`.
  void Reset(Micros now);

  // The fault in force at `now`, and where it comes from: "control", "schedule phase N" (1-based)
  // or "startup".
  const FaultSpec& Effective(Micros now, std::string* source) const;

 private:
  Micros SampleLatency(const LatencySpec& latency);
  std::int64_t ActiveKey(Micros now) const;

  FaultSpec startup_;
  Schedule schedule_;
  std::optional<FaultSpec> override_;
  std::int64_t override_generation_ = 0;
  Micros origin_ = 0;
  SplitMix64Random random_;
  // The state of the fault in force, reset whenever another one takes over.
  std::int64_t active_key_ = -1;
  std::uint64_t flap_count_ = 0;  // flap and interim: requests counted under the fault
  std::optional<Micros> relapse_until_;
  ServiceQueue queue_;
};

}  // namespace fusebox::vpic_sim

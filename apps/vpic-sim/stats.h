// apps/vpic-sim/stats.h
//
// The counters behind GET /__control/stats, so that a test can assert exactly how many calls
// reached the upstream and what each one got:
//
//   {"requests_total": 7,
//    "requests": {"DecodeVinValues": 5, "DecodeVinValuesExtended": 0,
//                 "DecodeVINValuesBatch": 1, "other": 1},
//    "batch_vins": 3, "in_flight": 1, "max_in_flight": 2, "queued": 0, "max_queued": 0,
//    "faults": {"ok": 5, "slow": 0, "error": 2, "hang": 0, ...}}
//
// Control requests (/__control/...) are never counted. `in_flight` counts decode requests read
// and not yet fully answered (a hanging request stays in flight until its connection closes);
// `queued` those of them waiting for a server in the `queue` fault.
//
// Thread safety: none; the server touches it only from its I/O thread. Time: none.
//
// Example:
//   Stats stats;
//   stats.CountRequest("DecodeVinValues");
//   stats.Enter();  ...  stats.Leave();
//   std::string json = boost::json::serialize(stats.ToJson());
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>

namespace fusebox::vpic_sim {

class Stats {
 public:
  Stats();

  // `endpoint` is ToString(Endpoint) or "other".
  void CountRequest(std::string_view endpoint);
  void CountBatchVins(std::int64_t n) { batch_vins_ += n; }
  // `label` is one of FaultLabels().
  void CountFault(std::string_view label);

  void Enter();
  void Leave();
  std::int64_t in_flight() const { return in_flight_; }

  // A request starts and stops waiting for a server (the `queue` fault).
  void EnterQueue();
  void LeaveQueue() { --queued_; }

  // Zeroes every counter; max_in_flight and max_queued restart from the current values.
  void Reset();

  boost::json::object ToJson() const;

 private:
  std::int64_t requests_total_ = 0;
  std::map<std::string, std::int64_t, std::less<>> requests_;
  std::map<std::string, std::int64_t, std::less<>> faults_;
  std::int64_t batch_vins_ = 0;
  std::int64_t in_flight_ = 0;
  std::int64_t max_in_flight_ = 0;
  std::int64_t queued_ = 0;
  std::int64_t max_queued_ = 0;
};

// Enters on construction and leaves on destruction, whatever path the request takes.
class InFlight {
 public:
  explicit InFlight(Stats& stats) : stats_(stats) { stats_.Enter(); }
  ~InFlight() { stats_.Leave(); }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;

 private:
  Stats& stats_;
};

}  // namespace fusebox::vpic_sim

#include "stats.h"

#include <algorithm>

#include "fault_engine.h"
#include "recordings.h"

namespace fusebox::vpic_sim {

Stats::Stats() { Reset(); }

void Stats::CountRequest(std::string_view endpoint) {
  ++requests_total_;
  auto it = requests_.find(endpoint);
  if (it == requests_.end()) {
    it = requests_.emplace(std::string(endpoint), 0).first;
  }
  ++it->second;
}

void Stats::CountFault(std::string_view label) {
  auto it = faults_.find(label);
  if (it == faults_.end()) {
    it = faults_.emplace(std::string(label), 0).first;
  }
  ++it->second;
}

void Stats::Enter() {
  ++in_flight_;
  max_in_flight_ = std::max(max_in_flight_, in_flight_);
}

void Stats::Leave() { --in_flight_; }

void Stats::EnterQueue() {
  ++queued_;
  max_queued_ = std::max(max_queued_, queued_);
}

void Stats::Reset() {
  requests_total_ = 0;
  requests_.clear();
  for (Endpoint e : {Endpoint::kDecodeVinValues, Endpoint::kDecodeVinValuesExtended,
                     Endpoint::kDecodeVinValuesBatch}) {
    requests_.emplace(std::string(ToString(e)), 0);
  }
  requests_.emplace("other", 0);
  faults_.clear();
  for (std::string_view label : FaultLabels()) {
    faults_.emplace(std::string(label), 0);
  }
  batch_vins_ = 0;
  max_in_flight_ = in_flight_;
  max_queued_ = queued_;
}

boost::json::object Stats::ToJson() const {
  boost::json::object out;
  out["requests_total"] = requests_total_;
  boost::json::object requests;
  for (const auto& [name, n] : requests_) {
    requests[name] = n;
  }
  out["requests"] = std::move(requests);
  out["batch_vins"] = batch_vins_;
  out["in_flight"] = in_flight_;
  out["max_in_flight"] = max_in_flight_;
  out["queued"] = queued_;
  out["max_queued"] = max_queued_;
  boost::json::object faults;
  for (const auto& [name, n] : faults_) {
    faults[name] = n;
  }
  out["faults"] = std::move(faults);
  return out;
}

}  // namespace fusebox::vpic_sim

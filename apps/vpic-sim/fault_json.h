// apps/vpic-sim/fault_json.h
//
// The control API's fault body (POST /__control/faults, GET's "fault"): a JSON object with
// "mode" and any setting of FaultFields() under its JSON name ("status", "retry_after_s",
// "latency_ms", "latency_dist", "latency_min_ms", "latency_max_ms", "latency_sigma", "every",
// "capacity", "relapse_ms", "drip_bytes", "drip_interval_ms"). Durations are milliseconds.
//
// Example:
//   auto spec = ParseFaultJson(R"({"mode":"error","status":503})");
#pragma once

#include <string_view>

#include <boost/json/object.hpp>

#include "fault_spec.h"
#include "fusebox/status.h"

namespace fusebox::vpic_sim {

// Unknown fields, wrong types, out-of-range values and a field given twice ({"mode":"ok",
// "mode":"hang"}) are errors naming the field; a body that is not a JSON object is an error with
// field "body".
Result<FaultSpec, ConfigError> ParseFaultJson(std::string_view body);
// The same fields, all present (retry_after_s only when set); ParseFaultJson reads it back.
boost::json::object FaultSpecToJson(const FaultSpec& spec);

}  // namespace fusebox::vpic_sim

// vin-gateway/reply_json.h
//
// The JSON bodies of the HTTP contract (gateway-api.md): every body has `status` and `message`;
// decode answers add `vin`, `vehicle`, `source`, `stale`, `fetched_at`, `upstream_codes`,
// `problems` and `check_digit` as the answer calls for. Untrusted text (the VIN as typed) is
// sanitized to valid UTF-8 before it is put in a body.
//
// Thread safety: pure functions. Time: none (fetched_at is rendered from the decode).
//
// Example:
//   std::string body = boost::json::serialize(AnswerJson(answer));
//   std::string error = ErrorBody(GatewayStatus::kBadRequest, "vins must be a list");
#pragma once

#include <string>
#include <string_view>

#include <boost/json/object.hpp>

#include "decode_answer.h"
#include "gateway_status.h"

namespace vin_gateway {

boost::json::object AnswerJson(const DecodeAnswer& answer);

// {"status": ..., "message": ...}; message defaults to DefaultMessage(status).
boost::json::object StatusJson(GatewayStatus status, std::string_view message = {});
std::string ErrorBody(GatewayStatus status, std::string_view message = {});

}  // namespace vin_gateway

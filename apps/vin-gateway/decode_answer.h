// vin-gateway/decode_answer.h
//
// Everything the gateway says about one VIN: the outcome of the decode path (decode_service.h),
// rendered as JSON by reply_json.h. A plain value.
//
// Thread safety: a value type. Time: none.
//
// Example:
//   DecodeAnswer answer = co_await service.Decode(segment, 0, peer);
//   response.result(answer.http_status());   // 200 for OK and stale answers
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "decode.h"
#include "fusebox/clock.h"
#include "gateway_metrics.h"
#include "gateway_status.h"
#include "vin.h"

namespace vin_gateway {

// Everything a decode answer says (rendered by ToJson in reply_json.h).
struct DecodeAnswer {
  GatewayStatus status = GatewayStatus::kOk;
  std::string vin;           // normalized; meaningful only when vin_readable
  bool vin_readable = true;  // false when the input could not be read at all (over 64 bytes)
  std::string message;
  DecodePtr decode;  // set for OK and for stale answers
  Source source = Source::kNone;
  bool stale = false;
  std::vector<VinProblem> problems;                   // VIN_INVALID
  std::optional<CheckDigit> check_digit;              // every VIN that passed validation
  fusebox::Duration retry_after{0};                   // for the Retry-After header
  std::optional<fusebox::Duration> upstream_latency;  // this request's flight called upstream
  bool joined = false;                                // a single-flight follower
  std::string upstream_detail;                        // why the upstream call failed, for the log
  // The JSON body, when the decode service has it rendered already (fresh hits, rendered once
  // per stored decode); the same bytes as AnswerJson(*this) would give. Null: render it.
  std::shared_ptr<const std::string> rendered_body;

  // 200 for OK and stale answers, else HttpStatus(status).
  unsigned http_status() const noexcept {
    return (status == GatewayStatus::kOk || stale) ? 200 : HttpStatus(status);
  }
};

}  // namespace vin_gateway

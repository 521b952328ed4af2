// vin-gateway/core/decode_answer.h
//
// Everything the gateway says about one VIN: the outcome of the decode path
// (service/decode_service.h), rendered as JSON by core/answer_json.h. A plain value.
//
// Thread safety: a value type. Time: none.
//
// Example:
//   DecodeAnswer answer = co_await service.Decode(segment, 0, peer);
//   response.result(answer.http_status());   // 200 for OK and stale answers
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/decode.h"
#include "core/decode_status.h"
#include "core/vin.h"
#include "fusebox/clock.h"
#include "fusebox/outcome.h"

namespace fusebox::gateway {

// Where the decode in an answer came from. kOffline: the offline decoder's answer from NHTSA's
// vPIC database snapshot (docs/offline-decode.md), never vPIC itself.
enum class Source : std::uint8_t { kNone, kLive, kCache, kOffline };

// "", "live", "cache", "offline".
constexpr std::string_view ToString(Source source) noexcept {
  switch (source) {
    case Source::kLive:
      return "live";
    case Source::kCache:
      return "cache";
    case Source::kOffline:
      return "offline";
    case Source::kNone:
      break;
  }
  return "";
}

// Everything a decode answer says (rendered by AnswerJson in core/answer_json.h).
struct DecodeAnswer {
  DecodeStatus status = DecodeStatus::kOk;
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
  bool led_call = false;  // this request was admitted and made the upstream call itself
  // What the breaker recorded of that call (led_call), once it ended; the log's replay reads it.
  std::optional<fusebox::Outcome> upstream_outcome;
  std::string upstream_detail;  // why the upstream call failed, for the log
  // CIRCUIT_OPEN, CIRCUIT_HALF_OPEN: what the vehicle database did when it last failed (the
  // answer's `upstream_problem`, and the words of its message).
  UpstreamProblem upstream_problem = UpstreamProblem::kUnknown;
  // The JSON body, when the decode service has it rendered already (fresh hits, rendered once
  // per stored decode by AnswerBody); the same bytes AnswerBody(*this) gives. Null: render it.
  std::shared_ptr<const std::string> rendered_body;
  // The snapshot date ("YYYY-MM-DD") of an offline decode (source kOffline); "" otherwise.
  std::string offline_snapshot;

  // 200 for OK, stale and offline answers, else HttpStatus(status).
  unsigned http_status() const noexcept {
    return (status == DecodeStatus::kOk || stale || source == Source::kOffline)
               ? 200
               : HttpStatus(status);
  }
};

}  // namespace fusebox::gateway

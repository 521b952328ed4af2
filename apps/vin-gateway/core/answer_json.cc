#include "core/answer_json.h"

#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>

namespace vin_gateway {

namespace json = boost::json;

json::object Envelope(std::string_view status, std::string_view message) {
  json::object body;
  body["status"] = status;
  body["message"] = message;
  return body;
}

json::object AnswerJson(const DecodeAnswer& answer) {
  json::object body =
      Envelope(ToString(answer.status), answer.message.empty() ? DefaultMessage(answer.status)
                                                               : std::string_view(answer.message));
  if (answer.vin_readable) {
    body["vin"] = SanitizeUtf8(answer.vin);
  }
  if (answer.check_digit) {
    body["check_digit"] = ToString(*answer.check_digit);
  }
  if (!answer.problems.empty()) {
    json::array problems;
    for (const VinProblem& p : answer.problems) {
      json::object problem;
      problem["position"] = p.position;
      problem["rule"] = p.rule;
      problem["message"] = SanitizeUtf8(p.message);
      problems.push_back(std::move(problem));
    }
    body["problems"] = std::move(problems);
  }
  if (answer.decode) {
    json::object vehicle;
    for (const auto& [key, value] : answer.decode->vehicle) {
      vehicle[key] = SanitizeUtf8(value);
    }
    json::array codes;
    for (int code : answer.decode->upstream_codes) {
      codes.emplace_back(code);
    }
    body["vehicle"] = std::move(vehicle);
    body["source"] = ToString(answer.source);
    body["stale"] = answer.stale;
    body["fetched_at"] = FormatRfc3339(answer.decode->fetched_at);
    body["upstream_codes"] = std::move(codes);
    if (answer.decode->model_year != 0) {
      body["modelyear"] = answer.decode->model_year;
    }
    if (!answer.offline_snapshot.empty()) {
      body["offline_snapshot"] = answer.offline_snapshot;
    }
  } else if (answer.status != DecodeStatus::kVinInvalid) {
    body["stale"] = false;
  }
  if (HasRetryAfter(answer.status) && !answer.stale && answer.source != Source::kOffline) {
    body["retry_after_s"] = RetryAfterSeconds(answer.retry_after);
  }
  return body;
}

std::string AnswerBody(const DecodeAnswer& answer) { return json::serialize(AnswerJson(answer)); }

}  // namespace vin_gateway

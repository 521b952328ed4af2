#include "core/answer_json.h"

#include <array>

#include <boost/json/array.hpp>
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/serialize.hpp>

namespace vin_gateway {

namespace json = boost::json;

json::object Envelope(std::string_view status, std::string_view message,
                      json::storage_ptr storage) {
  // Room for every member an answer has (no rehash as they are added).
  json::object body(12, std::move(storage));
  body["status"] = status;
  body["message"] = message;
  return body;
}

json::object AnswerJson(const DecodeAnswer& answer, const json::storage_ptr& storage) {
  json::object body = Envelope(
      ToString(answer.status),
      answer.message.empty() ? DefaultMessage(answer.status) : std::string_view(answer.message),
      storage);
  if (answer.vin_readable) {
    body["vin"] = SanitizeUtf8(answer.vin);
  }
  if (answer.check_digit) {
    body["check_digit"] = ToString(*answer.check_digit);
  }
  if (!answer.problems.empty()) {
    json::array problems(storage);
    for (const VinProblem& p : answer.problems) {
      json::object problem(storage);
      problem["position"] = p.position;
      problem["rule"] = p.rule;
      problem["message"] = SanitizeUtf8(p.message);
      problems.push_back(std::move(problem));
    }
    body["problems"] = std::move(problems);
  }
  if (answer.decode) {
    json::object vehicle(storage);
    for (const auto& [key, value] : answer.decode->vehicle) {
      vehicle[key] = SanitizeUtf8(value);
    }
    json::array codes(storage);
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

std::string AnswerBody(const DecodeAnswer& answer) {
  // The object lives only to be serialized: its keys, strings and tables come from one buffer on
  // the stack (and the heap past it, for a large vehicle) rather than a malloc each.
  std::array<unsigned char, 4096> buffer;
  json::monotonic_resource resource(buffer.data(), buffer.size());
  return json::serialize(AnswerJson(answer, &resource));
}

}  // namespace vin_gateway

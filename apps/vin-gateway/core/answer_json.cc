#include "core/answer_json.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/array.hpp>
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/serialize.hpp>

namespace fusebox::gateway {

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
  if (answer.upstream_problem != UpstreamProblem::kUnknown) {
    body["upstream_problem"] = ToString(answer.upstream_problem);
  }
  if (HasRetryAfter(answer.status) && !answer.stale && answer.source != Source::kOffline) {
    body["retry_after_s"] = RetryAfterSeconds(answer.retry_after);
  }
  return body;
}

namespace {

// Whether `text` serializes as itself between quotes. Boost.JSON escapes control characters,
// '"' and the backslash, and writes every other byte as it is (so UTF-8 text, like the default
// messages' dashes, passes).
bool SerializesAsItself(std::string_view text) noexcept {
  return std::all_of(text.begin(), text.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte >= 0x20 && byte != 0x7f && c != '"' && c != '\\';
  });
}

// Whether `vin` is rendered as itself: AnswerJson passes it through SanitizeUtf8 first, which
// leaves printable ASCII alone (all a valid VIN can hold).
bool VinRendersAsItself(std::string_view vin) noexcept {
  return std::all_of(vin.begin(), vin.end(),
                     [](char c) { return c >= 0x20 && c <= 0x7e && c != '"' && c != '\\'; });
}

void AppendMember(std::string& body, std::string_view key, std::string_view plain_text) {
  body += ",\"";
  body += key;
  body += "\":\"";
  body += plain_text;
  body += '"';
}

// The body of an answer without a decode or problems (the refusals and errors, most of what an
// outage answers), written directly when every text in it serializes as itself: the bytes that
// serializing AnswerJson gives (tests/vin_gateway/answer_json_test.cc compares them over every
// status and field combination), for about a third of the instructions. nullopt: AnswerJson must
// render it.
std::optional<std::string> PlainAnswerBody(const DecodeAnswer& answer) {
  if (answer.decode || !answer.problems.empty()) {
    return std::nullopt;
  }
  // The status names and default messages serialize as themselves (answer_json_test holds every
  // one to the serialized object): only a message of the answer's own and the VIN are checked.
  const std::string_view status = ToString(answer.status);
  const std::string_view message =
      answer.message.empty() ? DefaultMessage(answer.status) : std::string_view(answer.message);
  if ((!answer.message.empty() && !SerializesAsItself(answer.message)) ||
      (answer.vin_readable && !VinRendersAsItself(answer.vin))) {
    return std::nullopt;
  }
  std::string body;
  body.reserve(96 + message.size() + answer.vin.size());
  body += "{\"status\":\"";
  body += status;
  body += "\",\"message\":\"";
  body += message;
  body += '"';
  if (answer.vin_readable) {
    AppendMember(body, "vin", answer.vin);
  }
  if (answer.check_digit) {
    AppendMember(body, "check_digit", ToString(*answer.check_digit));
  }
  if (answer.status != DecodeStatus::kVinInvalid) {
    body += ",\"stale\":false";
  }
  if (answer.upstream_problem != UpstreamProblem::kUnknown) {
    AppendMember(body, "upstream_problem", ToString(answer.upstream_problem));
  }
  if (HasRetryAfter(answer.status) && !answer.stale && answer.source != Source::kOffline) {
    std::array<char, 24> digits{};
    const auto end = std::to_chars(digits.data(), digits.data() + digits.size(),
                                   RetryAfterSeconds(answer.retry_after))
                         .ptr;
    body += ",\"retry_after_s\":";
    body.append(digits.data(), end);
  }
  body += '}';
  return body;
}

}  // namespace

std::string AnswerBody(const DecodeAnswer& answer) {
  if (std::optional<std::string> plain = PlainAnswerBody(answer)) {
    return std::move(*plain);
  }
  // The object lives only to be serialized: its keys, strings and tables come from one buffer on
  // the stack (and the heap past it, for a large vehicle) rather than a malloc each.
  std::array<unsigned char, 4096> buffer;
  json::monotonic_resource resource(buffer.data(), buffer.size());
  return json::serialize(AnswerJson(answer, &resource));
}

}  // namespace fusebox::gateway

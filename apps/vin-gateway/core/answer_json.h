// vin-gateway/core/answer_json.h
//
// The one renderer of a decode answer's body (docs/http-api.md): every body has `status` and
// `message`; decode answers add `vin`, `vehicle`, `source`, `stale`, `fetched_at`,
// `upstream_codes`, `problems`, `check_digit`, `modelyear` and `retry_after_s` as the answer
// calls for. Untrusted text (the VIN as typed) is sanitized to valid UTF-8 before it is put in a
// body.
//
// Every path that answers a decode goes through AnswerJson: the HTTP layer for one VIN and for
// each result of a batch, and the decode service when it renders a fresh hit's body once per
// stored decode (DecodeAnswer::rendered_body holds AnswerBody's bytes).
//
// Thread safety: pure functions. Time: none (fetched_at is rendered from the decode).
//
// Example:
//   std::string body = AnswerBody(answer);
//   results.push_back(AnswerJson(answer));   // one element of a batch
#pragma once

#include <string>
#include <string_view>

#include <boost/json/object.hpp>
#include <boost/json/storage_ptr.hpp>

#include "core/decode_answer.h"

namespace fusebox::gateway {

// The answer as a JSON object, its memory from `storage` (the default heap when null).
boost::json::object AnswerJson(const DecodeAnswer& answer,
                               const boost::json::storage_ptr& storage = {});
// The same, serialized: the body of a single decode. An answer without a decode or problems (a
// refusal, an error) whose texts need no escaping is written without building the object, in
// the same bytes.
std::string AnswerBody(const DecodeAnswer& answer);

// {"status": status, "message": message}: the envelope every body of the gateway starts with.
boost::json::object Envelope(std::string_view status, std::string_view message,
                             boost::json::storage_ptr storage = {});

}  // namespace fusebox::gateway

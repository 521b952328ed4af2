// The answer body: the directly written body of a refusal or error is byte for byte what
// serializing the JSON object gives, for every status and every combination of the fields such a
// body has; texts that need escaping take the object's path.
#include "core/answer_json.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "core/decode.h"

namespace {

using fusebox::gateway::AnswerBody;
using fusebox::gateway::AnswerJson;
using fusebox::gateway::CheckDigit;
using fusebox::gateway::DecodeAnswer;
using fusebox::gateway::DecodeStatus;
using fusebox::gateway::Source;
using fusebox::gateway::UpstreamProblem;

std::string Serialized(const DecodeAnswer& answer) {
  return boost::json::serialize(AnswerJson(answer));
}

TEST(AnswerBodyTest, EveryBodyIsTheSerializedObject) {
  const std::vector<std::string> vins = {
      "1FTMW1T88MFA00001", "",        "1FTMW1T88MFA0000", "has \"quote\"", "back\\slash",
      "caf\xc3\xa9",       "bad\xff", "tab\there",        "del\x7f"};
  const std::vector<std::string> messages = {"",
                                             "The upstream is down.",
                                             "say \"why\"",
                                             "line\nbreak",
                                             "down \xe2\x80\x94 try later",
                                             "not UTF-8 \xff",
                                             "del \x7f"};
  const std::vector<std::optional<CheckDigit>> digits = {std::nullopt, CheckDigit::kValid,
                                                         CheckDigit::kMismatch};
  const std::vector<std::chrono::milliseconds> retries = {std::chrono::milliseconds(0),
                                                          std::chrono::milliseconds(1500),
                                                          std::chrono::milliseconds(20'000)};
  auto decode = std::make_shared<fusebox::gateway::Decode>();
  decode->vin = "1FTMW1T88MFA00001";
  decode->vehicle = {{"Make", "FORD"}, {"Model", "Transit"}};
  decode->upstream_codes = {0};
  int compared = 0;
  for (const DecodeStatus status : fusebox::gateway::kAllDecodeStatuses) {
    for (const std::string& vin : vins) {
      for (const bool readable : {true, false}) {
        for (const std::string& message : messages) {
          for (const auto& digit : digits) {
            for (const auto retry : retries) {
              for (const bool stale : {false, true}) {
                for (const Source source : {Source::kNone, Source::kCache, Source::kOffline}) {
                  for (const bool with_decode : {false, true}) {
                    for (const UpstreamProblem problem :
                         {UpstreamProblem::kUnknown, UpstreamProblem::kErrors,
                          UpstreamProblem::kSlow}) {
                      DecodeAnswer a;
                      a.upstream_problem = problem;
                      a.status = status;
                      a.vin = vin;
                      a.vin_readable = readable;
                      a.message = message;
                      a.check_digit = digit;
                      a.retry_after = retry;
                      a.stale = stale;
                      a.source = source;
                      if (with_decode) {
                        a.decode = decode;
                      }
                      ASSERT_EQ(AnswerBody(a), Serialized(a))
                          << fusebox::gateway::ToString(status) << " vin=" << vin
                          << " readable=" << readable << " message=" << message;
                      ++compared;
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(compared, 12 * 9 * 2 * 7 * 3 * 3 * 2 * 3 * 2 * 3);
}

TEST(AnswerBodyTest, ARefusalBodyIsValidJsonWithItsFields) {
  DecodeAnswer a;
  a.status = DecodeStatus::kCircuitOpen;
  a.vin = "1FTMW1T88MFA00001";
  a.check_digit = CheckDigit::kValid;
  a.retry_after = std::chrono::seconds(20);
  const boost::json::value body = boost::json::parse(AnswerBody(a));
  EXPECT_EQ(body.at("status").as_string(), "CIRCUIT_OPEN");
  EXPECT_EQ(body.at("vin").as_string(), "1FTMW1T88MFA00001");
  EXPECT_EQ(body.at("check_digit").as_string(), "valid");
  EXPECT_EQ(body.at("stale").as_bool(), false);
  EXPECT_EQ(body.at("retry_after_s").as_int64(), 20);
  EXPECT_FALSE(body.at("message").as_string().empty());
}

}  // namespace

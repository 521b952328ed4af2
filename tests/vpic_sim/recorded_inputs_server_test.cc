// The recorded inputs (recorded_inputs.h) over a real server on loopback: all of them in one
// DecodeVINValuesBatch request.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <boost/json/parse.hpp>

#include "server.h"
#include "vpic_sim/recorded_inputs.h"
#include "vpic_sim/test_client.h"

namespace fusebox::vpic_sim {
namespace {

using recorded::Expected;
using recorded::ExpectRecorded;
using recorded::Inputs;
using recorded::Kind;
using recorded::RecordedInput;

// All of them in one batch, over a real server: each row is the recording's.
TEST(RecordedInputsTest, AnswerFromTheirRecordingsInABatch) {
  auto server = Server::Create({});
  ASSERT_TRUE(server.has_value());
  (*server)->Start();
  std::string data;
  std::vector<RecordedInput> inputs;
  for (const RecordedInput& in : Inputs()) {
    if (in.kind == Kind::kNested && !in.only_nested) {
      continue;  // the same VIN again
    }
    data.append(data.empty() ? "" : ";").append(in.input);
    if (in.model_year) {
      data.append(",").append(std::to_string(*in.model_year));
    }
    inputs.push_back(in);
  }
  auto reply = test_client::Post((*server)->port(), "/api/vehicles/DecodeVINValuesBatch/",
                                 "format=json&DATA=" + test_client::PercentEncode(data));
  ASSERT_TRUE(reply.has_value());
  ASSERT_EQ(reply->result_int(), 200U);
  const boost::json::value body = boost::json::parse(reply->body());
  const boost::json::array& rows = body.at("Results").as_array();
  ASSERT_EQ(rows.size(), inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    SCOPED_TRACE(inputs[i].name);
    ExpectRecorded(rows[i].as_object(), Expected(inputs[i]));
    EXPECT_EQ(std::string_view(rows[i].at("Model").as_string()), inputs[i].model);
  }
}

}  // namespace
}  // namespace fusebox::vpic_sim

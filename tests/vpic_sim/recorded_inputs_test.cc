// Every input the fixtures record (12 of the 13 of the shared MANIFEST.md) answers from its
// recording on DecodeVinValues, alone and in a batch: every variable the recording holds has the
// recorded value (nested rows through the table of nested_keys.h; the 2017 "Error Code" text split
// into ErrorCode and ErrorText). A stub its author cut down holds only some variables: the ones it
// holds with a non-null value are recorded, every other key is the synthetic decode's. The 13th,
// 1AKJHHDR3KSKX6689, has only a hand-edited stub whose codes are not that VIN's: it is synthetic.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "vpic_sim/recorded_inputs.h"

namespace fusebox::vpic_sim {
namespace {

using recorded::Api;
using recorded::Expected;
using recorded::ExpectRecorded;
using recorded::Inputs;
using recorded::Kind;
using recorded::RecordedInput;
using recorded::Target;

class RecordedInputTest : public ::testing::TestWithParam<RecordedInput> {};

TEST_P(RecordedInputTest, AnswersEveryRecordedValueAlone) {
  const RecordedInput& in = GetParam();
  const boost::json::object expected = Expected(in);
  for (bool with_year : {true, false}) {
    SCOPED_TRACE(Target(in, with_year));
    const ApiResponse r =
        Api().Handle({.method = "GET", .target = Target(in, with_year), .body = ""});
    ASSERT_EQ(r.status, 200U);
    const boost::json::object body = boost::json::parse(r.body).as_object();
    const boost::json::object& row = body.at("Results").at(0).as_object();
    ExpectRecorded(row, expected);
    EXPECT_EQ(std::string_view(row.at("Model").as_string()), in.model);
    // vPIC names what its codes mean: never an empty ErrorText next to an ErrorCode.
    EXPECT_NE(row.at("ErrorCode"), "");
    EXPECT_NE(row.at("ErrorText"), "");
    if (in.kind != Kind::kFlat && !(in.kind == Kind::kNested && !in.only_nested)) {
      // Served in vPIC's single-decode envelope.
      EXPECT_EQ(body.at("Count"), 1);
      std::string criteria = "VIN(s): ";
      criteria.append(NormalizeVin(in.input));
      EXPECT_EQ(std::string_view(body.at("SearchCriteria").as_string()), criteria);
      EXPECT_EQ(std::string_view(row.at("VIN").as_string()), NormalizeVin(in.input));
    }
    if (in.only_nested) {
      // The newest flat shape: the keys the recording lacks are "".
      EXPECT_EQ(row.size(), 154U);
      for (const auto& kv : row) {
        const std::string_view key = kv.key();
        if (!expected.contains(key) && key != "VIN" && key != "MakeID" && key != "ModelID" &&
            key != "ManufacturerId") {
          EXPECT_EQ(kv.value(), "") << key;
        }
      }
    }
    if (in.kind == Kind::kCutDown) {
      // What the stub does not hold is the synthetic decode's.
      const boost::json::object synthetic =
          Api().SyntheticRow(in.input, with_year ? in.model_year : std::nullopt, false);
      EXPECT_EQ(row.size(), synthetic.size());
      for (const auto& kv : synthetic) {
        const std::string_view key = kv.key();
        if (!expected.contains(key) && key != "MakeID" && key != "ModelID" &&
            key != "ManufacturerId") {
          ASSERT_TRUE(row.contains(key)) << key;
          EXPECT_EQ(row.at(key), kv.value()) << key;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, RecordedInputTest, ::testing::ValuesIn(Inputs()),
                         [](const ::testing::TestParamInfo<RecordedInput>& input) {
                           return input.param.name;
                         });

// The manifest's 13 inputs: 12 answer from their recordings, and 1AKJHHDR3KSKX6689 does not.
TEST(RecordedInputsTest, CoverTheThirteenInputsOfTheManifest) {
  std::set<std::string> vins;
  for (const RecordedInput& in : Inputs()) {
    vins.insert(NormalizeVin(in.input));
  }
  EXPECT_EQ(vins.size(), 12U);
  EXPECT_FALSE(vins.contains("1AKJHHDR3KSKX6689"));
  vins.insert("1AKJHHDR3KSKX6689");
  EXPECT_EQ(vins.size(), 13U);
}

boost::json::object ServedRow(std::string_view target) {
  const ApiResponse r = Api().Handle({.method = "GET", .target = target, .body = ""});
  EXPECT_EQ(r.status, 200U);
  return boost::json::parse(r.body).at("Results").at(0).as_object();
}

// The brief stub holds Make, Series (null) and ErrorCode: the rest is the synthetic decode, not "".
TEST(RecordedInputsTest, CutDownStubKeepsTheSyntheticDecodeOfWhatItDropped) {
  for (std::string_view endpoint : {"DecodeVinValues", "DecodeVinValuesExtended"}) {
    SCOPED_TRACE(endpoint);
    std::string target = "/api/vehicles/";
    target.append(endpoint).append("/3AKJHHDR1KSKX6688?format=json");
    const boost::json::object row = ServedRow(target);
    EXPECT_EQ(row.at("VIN"), "3AKJHHDR1KSKX6688");
    EXPECT_EQ(row.at("Make"), "FREIGHTLINER");  // recorded, and the synthetic decode's too
    EXPECT_EQ(row.at("MakeID"), "450");         // recorded only
    EXPECT_EQ(row.at("ErrorCode"), "0");
    EXPECT_EQ(row.at("ErrorText"), "0 - VIN decoded clean. Check Digit (9th position) is correct");
    EXPECT_EQ(row.at("ModelYear"), "2019");
    EXPECT_EQ(row.at("Manufacturer"), "DAIMLER TRUCKS NORTH AMERICA LLC");
    EXPECT_EQ(row.at("VehicleType"), "TRUCK ");
    EXPECT_EQ(row.at("VehicleDescriptor"), "3AKJHHDR*KS");
    EXPECT_EQ(row.at("Model"), "");   // neither has one
    EXPECT_EQ(row.at("Series"), "");  // recorded null: the synthetic ""
  }
}

// The 13-row stub: its values where it has them (nulls excepted), the synthetic decode elsewhere.
TEST(RecordedInputsTest, CutDownStubOverridesTheSyntheticDecodeWhereItHasValues) {
  const boost::json::object row =
      ServedRow("/api/vehicles/DecodeVinValues/3akjhhdr3kskx6689?format=json");
  EXPECT_EQ(row.at("VIN"), "3AKJHHDR3KSKX6689");
  EXPECT_EQ(row.at("Model"), "Cascadia");
  EXPECT_EQ(row.at("BodyClass"), "Truck-Tractor");
  EXPECT_EQ(row.at("MakeID"), "450");
  EXPECT_EQ(row.at("ManufacturerId"), "1024");
  EXPECT_EQ(row.at("ModelID"), "2501");
  EXPECT_EQ(row.at("ErrorCode"), "0");
  EXPECT_EQ(row.at("ModelYear"), "2019");
  EXPECT_EQ(row.at("VehicleType"), "TRUCK ");
  EXPECT_EQ(row.at("AdditionalErrorText"), "");
}

// The hand-edited stub (6,7,11,400; "Invalid character(s): 3:O;") is not this VIN's answer: the
// VIN has 17 valid characters. It gets the synthetic decode: a wrong check digit (9 computes, 3
// is written) and an unregistered WMI (1AK).
TEST(RecordedInputsTest, HandEditedStubIsNotServedForItsVin) {
  const boost::json::object row =
      ServedRow("/api/vehicles/DecodeVinValues/1AKJHHDR3KSKX6689?format=json");
  EXPECT_EQ(row, Api().SyntheticRow("1AKJHHDR3KSKX6689", std::nullopt, false));
  EXPECT_EQ(row.at("ErrorCode"), "1,7");
  EXPECT_EQ(row.at("AdditionalErrorText"), "");
  EXPECT_EQ(row.at("Make"), "");
  EXPECT_EQ(ComputeCheckDigit("1AKJHHDR3KSKX6689"), '9');
  EXPECT_EQ(Api()
                .Handle({.method = "POST",
                         .target = "/api/vehicles/DecodeVINValuesBatch/",
                         .body = "format=json&DATA=1AKJHHDR3KSKX6689"})
                .body.find("3:O"),
            std::string::npos);
}

}  // namespace
}  // namespace fusebox::vpic_sim

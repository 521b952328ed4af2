// Every input the fixtures record (12 of the 13 of the shared MANIFEST.md) answers from its
// recording on DecodeVinValues, alone and in a batch: every variable the recording holds has the
// recorded value (nested rows through the table of nested_keys.h; the 2017 "Error Code" text split
// into ErrorCode and ErrorText). A stub its author cut down holds only some variables: the ones it
// holds with a non-null value are recorded, every other key is the synthetic decode's. The 13th,
// 1AKJHHDR3KSKX6689, has only a hand-edited stub whose codes are not that VIN's: it is synthetic.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "embedded_files.h"
#include "nested_keys.h"
#include "recordings.h"
#include "server.h"
#include "vin_decoder.h"
#include "vpic_api.h"
#include "vpic_sim/fixture_files.h"
#include "vpic_sim/test_client.h"

namespace fusebox::vpic_sim {
namespace {

enum class Kind { kFlat, kBatchRow, kNested, kCutDown, kExcerpt };

struct RecordedInput {
  std::string name;
  std::string input;  // as the recording's client sent it
  std::optional<int> model_year;
  std::string fixture;
  Kind kind = Kind::kFlat;
  int batch_row = 0;         // kBatchRow: the row of the batch
  bool only_nested = false;  // kNested: the VIN has no flat recording (served converted)
  std::string model;         // the recorded Model ("" when the recording has none)
};

void PrintTo(const RecordedInput& c, std::ostream* os) { *os << c.name; }

std::vector<RecordedInput> Inputs() {
  return {
      {"FordF150", "1FTMW1T88MFA00001", std::nullopt, "davidpeckham-vpic-api/decode-vin.json",
       Kind::kFlat, 0, false, "F-150"},
      {"FordF150Year", "1FTMW1T88MFA00001", 2021,
       "davidpeckham-vpic-api/decode-vin-with-modelyear.json", Kind::kFlat, 0, false, "F-150"},
      // The nested capture of the same request: the flat answer agrees with it too.
      {"FordF150Nested", "1FTMW1T88MFA00001", 2021,
       "davidpeckham-vpic-api/decode-vin-unflattened.json", Kind::kNested, 0, false, "F-150"},
      {"BmwPartial", "5UXWX7C5*BA", 2011, "davidpeckham-vpic-api/decode-partial-vin.json",
       Kind::kFlat, 0, false, "X3"},
      {"TeslaBatchRow", "5YJSA3DS*EF", std::nullopt,
       "ShaggyTech-nhtsa-api-wrapper/decode-vin-values-batch.response.json", Kind::kBatchRow, 1,
       false, "Model S"},
      {"MustangNested", "1FA6P8C0!M!100001", 2021,
       "davidpeckham-vpic-api/decode-partial-vin-unflattened.json", Kind::kNested, 0, true,
       "Mustang"},
      {"Bmw328i", "WBA3A5C51CF256987", std::nullopt,
       "Composite-Solutions-laravel-nhtsa/WBA3A5C51CF256987.decodevinvalues.json", Kind::kFlat, 0,
       false, "328i"},
      {"Tiguan", "3VV3B7AXXNM077525", std::nullopt,
       "cfjedimaster-raymondcamden2023/3VV3B7AXXNM077525.decodevinvalues.json", Kind::kFlat, 0,
       false, "Tiguan"},
      {"GarbageExcerpt", "999999999993VV3B7AXXNM077525", std::nullopt,
       "cfjedimaster-raymondcamden2023/999999999993VV3B7AXXNM077525.excerpt.js.txt", Kind::kExcerpt,
       0, false, ""},
      {"Srx2017", "1GYDE63A740121151", std::nullopt, "barclay-nhtsa_vin/success.json",
       Kind::kNested, 0, true, "SRX"},
      {"Tacos2017", "tacos", std::nullopt, "barclay-nhtsa_vin/not_found.json", Kind::kNested, 0,
       true, ""},
      {"AudiSq5", "WA1A4AFY2J2008189", std::nullopt,
       "ShaggyTech-nhtsa-api-wrapper/decode-vin-values.response.json", Kind::kFlat, 0, false,
       "SQ5"},
      {"AudiSq5Nested", "WA1A4AFY2J2008189", std::nullopt,
       "ShaggyTech-nhtsa-api-wrapper/decode-vin.response.json", Kind::kNested, 0, false, "SQ5"},
      {"Cascadia", "3AKJHHDR3KSKX6689", std::nullopt, "cvrsor-vinfly/api_response.json",
       Kind::kCutDown, 0, false, "Cascadia"},
      {"CascadiaBrief", "3AKJHHDR1KSKX6688", std::nullopt, "cvrsor-vinfly/api_response_brief.json",
       Kind::kCutDown, 0, false, ""},
  };
}

// What the recording says, as flat keys and values.
boost::json::object Expected(const RecordedInput& in) {
  if (in.kind == Kind::kFlat || in.kind == Kind::kBatchRow) {
    return FixtureBody(in.fixture)
        .at("Results")
        .at(static_cast<std::size_t>(in.batch_row))
        .as_object();
  }
  boost::json::object expected;
  if (in.kind == Kind::kExcerpt) {
    // `"Key": "Value",` lines between comment lines.
    const std::string text = ReadFixture(in.fixture);
    std::size_t at = 0;
    while (at < text.size()) {
      std::size_t nl = text.find('\n', at);
      nl = nl == std::string::npos ? text.size() : nl;
      std::string line = text.substr(at, nl - at);
      at = nl + 1;
      while (!line.empty() && (line.back() == ',' || line.back() == ' ' || line.back() == '\r')) {
        line.pop_back();
      }
      if (line.starts_with("\"")) {
        std::string object = "{";
        object.append(line).append("}");
        const boost::json::value pair = boost::json::parse(object);
        for (const auto& kv : pair.as_object()) {
          expected[kv.key()] = kv.value();
        }
      }
    }
    EXPECT_FALSE(expected.empty());
    return expected;
  }
  const boost::json::object body = FixtureBody(in.fixture);
  for (const boost::json::value& row : body.at("Results").as_array()) {
    const auto id = static_cast<int>(row.at("VariableId").as_int64());
    const std::string_view key = FlatKeyFor(id);
    EXPECT_NE(key, "") << in.fixture << ": " << row.at("Variable");
    const boost::json::value& v = row.at("Value");
    if (in.kind == Kind::kCutDown && v.is_null()) {
      continue;  // not recorded: the synthetic value stays
    }
    const std::string value = v.is_null() ? std::string() : std::string(v.as_string());
    if (id == 143 && !IsErrorCodeList(value)) {  // the 2017 format: the text in "Error Code"
      expected["ErrorCode"] = row.at("ValueId");
      expected["ErrorText"] = value;
      continue;
    }
    if (!key.empty()) {
      expected[key] = value;
    }
  }
  return expected;
}

std::string Target(const RecordedInput& in, bool with_year) {
  std::string target = "/api/vehicles/DecodeVinValues/";
  target.append(test_client::PercentEncode(in.input)).append("?format=json");
  if (with_year && in.model_year) {
    target.append("&modelyear=").append(std::to_string(*in.model_year));
  }
  return target;
}

const VpicApi& Api() {
  static const Recordings kRecordings = [] {
    auto r = Recordings::Load(EmbeddedFiles());
    EXPECT_TRUE(r.has_value());
    return r ? std::move(*r) : Recordings{};
  }();
  static const VpicApi kApi(kRecordings, {.reference_year = 2026});
  return kApi;
}

void ExpectRecorded(const boost::json::object& served, const boost::json::object& expected) {
  for (const auto& kv : expected) {
    ASSERT_TRUE(served.contains(kv.key())) << kv.key();
    EXPECT_EQ(served.at(kv.key()), kv.value()) << kv.key();
  }
}

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

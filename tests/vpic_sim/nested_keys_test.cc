// The nested-to-flat table (nested_keys.h) against the fixtures it was derived from: converting
// either nested capture gives back the flat capture of the same request, key for key.

#include "nested_keys.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "embedded_files.h"
#include "recordings.h"
#include "vpic_sim/fixture_files.h"

namespace fusebox::vpic_sim {
namespace {

const std::vector<std::string>& FlatKeys() {
  static const std::vector<std::string> kKeys = [] {
    auto r = Recordings::Load(EmbeddedFiles());
    return r ? r->flat_keys() : std::vector<std::string>{};
  }();
  return kKeys;
}

struct Pair {
  std::string vin;
  std::string nested;
  std::string flat;
};

class NestedPairTest : public ::testing::TestWithParam<Pair> {};

TEST_P(NestedPairTest, ConvertingTheNestedCaptureGivesTheFlatCapture) {
  const Pair& p = GetParam();
  const boost::json::object flat = FixtureBody(p.flat).at("Results").at(0).as_object();
  const boost::json::object converted =
      FlattenNested(FixtureBody(p.nested).at("Results").as_array(), FlatKeys(), p.vin);
  ASSERT_EQ(converted.size(), FlatKeys().size());
  for (const auto& kv : flat) {
    ASSERT_TRUE(converted.contains(kv.key())) << kv.key();
    EXPECT_EQ(converted.at(kv.key()), kv.value()) << kv.key();
  }
  // The newest shape's keys that this older capture lacks are "".
  for (const auto& kv : converted) {
    if (!flat.contains(kv.key())) {
      EXPECT_EQ(kv.value(), "") << kv.key();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, NestedPairTest,
    ::testing::Values(Pair{"1FTMW1T88MFA00001", "davidpeckham-vpic-api/decode-vin-unflattened.json",
                           "davidpeckham-vpic-api/decode-vin-with-modelyear.json"},
                      Pair{"WA1A4AFY2J2008189",
                           "ShaggyTech-nhtsa-api-wrapper/decode-vin.response.json",
                           "ShaggyTech-nhtsa-api-wrapper/decode-vin-values.response.json"}),
    [](const ::testing::TestParamInfo<Pair>& pair) { return pair.param.vin; });

TEST(NestedKeysTest, TableIsSortedAndUsesEachFlatKeyOfTheNewestShapeOnce) {
  const std::set<std::string> flat(FlatKeys().begin(), FlatKeys().end());
  ASSERT_EQ(flat.size(), 154U);
  std::set<std::string_view> used;
  int previous = 0;
  for (const NestedKey& entry : NestedKeys()) {
    EXPECT_GT(entry.variable_id, previous);
    previous = entry.variable_id;
    EXPECT_TRUE(flat.contains(std::string(entry.flat_key))) << entry.flat_key;
    EXPECT_TRUE(used.insert(entry.flat_key).second) << entry.flat_key;
    EXPECT_EQ(FlatKeyFor(entry.variable_id), entry.flat_key);
  }
  EXPECT_EQ(FlatKeyFor(99999), "");
}

// Every variable of every nested recording vpic-sim serves lands in a flat key.
TEST(NestedKeysTest, EveryVariableOfTheServedNestedFixturesHasAFlatKey) {
  for (const char* fixture :
       {"davidpeckham-vpic-api/decode-partial-vin-unflattened.json",
        "barclay-nhtsa_vin/success.json", "barclay-nhtsa_vin/not_found.json",
        "cvrsor-vinfly/api_response.json", "cvrsor-vinfly/api_response_brief.json"}) {
    const boost::json::object body = FixtureBody(fixture);
    for (const boost::json::value& row : body.at("Results").as_array()) {
      const auto id = static_cast<int>(row.at("VariableId").as_int64());
      EXPECT_NE(FlatKeyFor(id), "") << fixture << ": " << row.at("Variable");
    }
  }
}

TEST(NestedKeysTest, OldFormatErrorCodeSplitsIntoCodeAndText) {
  const boost::json::object success = FlattenNested(
      FixtureBody("barclay-nhtsa_vin/success.json").at("Results").as_array(), FlatKeys(), "X");
  EXPECT_EQ(success.at("ErrorCode"), "0");
  EXPECT_EQ(success.at("ErrorText"),
            "0 - VIN decoded clean. Check Digit (9th position) is correct");
  const boost::json::object tacos =
      FlattenNested(FixtureBody("barclay-nhtsa_vin/not_found.json").at("Results").as_array(),
                    FlatKeys(), "TACOS");
  EXPECT_EQ(tacos.at("ErrorCode"), "11");
  EXPECT_EQ(tacos.at("ErrorText"), "11- Incorrect Model Year, decoded data may not be accurate!");
  EXPECT_TRUE(
      IsLegacyNested(FixtureBody("barclay-nhtsa_vin/not_found.json").at("Results").as_array()));
  EXPECT_FALSE(
      IsLegacyNested(FixtureBody("cvrsor-vinfly/api_response.json").at("Results").as_array()));
}

TEST(NestedKeysTest, OldFormatCodeWithoutValueIdComesFromTheText) {
  const boost::json::array rows = boost::json::parse(
                                      R"([{"Value": "1,7- Check digit; not registered",
                                           "ValueId": "", "Variable": "Error Code",
                                           "VariableId": 143}])")
                                      .as_array();
  const boost::json::object row = FlattenNested(rows, FlatKeys(), "X");
  EXPECT_EQ(row.at("ErrorCode"), "1,7");
  EXPECT_EQ(row.at("ErrorText"), "1,7- Check digit; not registered");
}

// ManufacturerId: "Manufacturer Id" (157) when not empty, else Manufacturer Name's (27) ValueId,
// whatever the order of the rows.
TEST(NestedKeysTest, ManufacturerIdPrecedenceDoesNotDependOnRowOrder) {
  const boost::json::value name = boost::json::parse(
      R"({"Value": "GENERAL MOTORS LLC", "ValueId": "984", "Variable": "Manufacturer Name",
          "VariableId": 27})");
  const boost::json::value id = boost::json::parse(
      R"({"Value": "985", "ValueId": "", "Variable": "Manufacturer Id", "VariableId": 157})");
  const boost::json::value empty_id = boost::json::parse(
      R"({"Value": "", "ValueId": "", "Variable": "Manufacturer Id", "VariableId": 157})");
  const boost::json::value null_id = boost::json::parse(
      R"({"Value": null, "ValueId": "", "Variable": "Manufacturer Id", "VariableId": 157})");
  auto manufacturer_id = [](const boost::json::array& rows) {
    return FlattenNested(rows, FlatKeys(), "X").at("ManufacturerId");
  };
  EXPECT_EQ(manufacturer_id({name, id}), "985");
  EXPECT_EQ(manufacturer_id({id, name}), "985");
  EXPECT_EQ(manufacturer_id({name, empty_id}), "984");
  EXPECT_EQ(manufacturer_id({empty_id, name}), "984");
  EXPECT_EQ(manufacturer_id({null_id, name}), "984");
  EXPECT_EQ(manufacturer_id({id}), "985");
  EXPECT_EQ(manufacturer_id({name}), "984");
  EXPECT_EQ(manufacturer_id({}), "");
  // The 2017 capture that has both: they agree.
  EXPECT_EQ(FlattenNested(FixtureBody("barclay-nhtsa_vin/success.json").at("Results").as_array(),
                          FlatKeys(), "1GYDE63A740121151")
                .at("ManufacturerId"),
            "984");
}

TEST(NestedKeysTest, RecordedOnlyConversionKeepsTheNonNullVariables) {
  const boost::json::array rows =
      boost::json::parse(
          R"([{"Value": "CADILLAC", "ValueId": "469", "Variable": "Make",
                                           "VariableId": 26},
                                          {"Value": null, "ValueId": "", "Variable": "Series",
                                           "VariableId": 34},
                                          {"Value": "", "ValueId": "", "Variable": "Trim",
                                           "VariableId": 38},
                                          {"Value": null, "ValueId": null, "Variable": "Model",
                                           "VariableId": 28},
                                          {"Value": "1", "ValueId": "", "Variable": "Nope",
                                           "VariableId": 99999},
                                          {"Value": "11- Incorrect Model Year", "ValueId": "11",
                                           "Variable": "Error Code", "VariableId": 143}])")
          .as_array();
  const boost::json::object row = FlattenNestedRecorded(rows, FlatKeys());
  EXPECT_EQ(row, (boost::json::object{{"ErrorCode", "11"},
                                      {"ErrorText", "11- Incorrect Model Year"},
                                      {"Make", "CADILLAC"},
                                      {"MakeID", "469"},
                                      {"Trim", ""}}));
  // In the order of the flat shape.
  std::vector<std::string> keys;
  for (const auto& kv : row) {
    keys.emplace_back(kv.key());
  }
  std::vector<std::string> in_order;
  for (const std::string& key : FlatKeys()) {
    if (row.contains(key)) {
      in_order.push_back(key);
    }
  }
  EXPECT_EQ(keys, in_order);
}

TEST(NestedKeysTest, ErrorCodeListIsDigitsAndCommas) {
  EXPECT_TRUE(IsErrorCodeList("0"));
  EXPECT_TRUE(IsErrorCodeList("1,4,14,400"));
  EXPECT_FALSE(IsErrorCodeList(""));
  EXPECT_FALSE(IsErrorCodeList("1,"));
  EXPECT_FALSE(IsErrorCodeList(",1"));
  EXPECT_FALSE(IsErrorCodeList("0 - VIN decoded clean"));
}

}  // namespace
}  // namespace fusebox::vpic_sim

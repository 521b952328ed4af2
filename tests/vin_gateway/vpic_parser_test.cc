// vPIC parsing against every recorded response in apps/vpic-sim/data (copies of the shared
// fixtures), plus the snake_case and ErrorCode rules.
#include "core/vpic_parser.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace {

using fusebox::gateway::ParseErrorCodes;
using fusebox::gateway::ParseVpic;
using fusebox::gateway::SnakeCase;
using fusebox::gateway::SnakeCaseLabel;
using fusebox::gateway::VpicAnswer;
using fusebox::gateway::VpicParseError;

const std::filesystem::path kFixtures = FUSEBOX_SOURCE_DIR "/apps/vpic-sim/data";

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// The davidpeckham captures wrap the raw vPIC body as "content" next to request metadata.
std::string VpicBody(const std::string& file) {
  boost::system::error_code ec;
  boost::json::value root = boost::json::parse(file, ec);
  if (!ec && root.is_object() && root.get_object().contains("content") &&
      root.get_object().contains("url")) {
    return boost::json::serialize(root.get_object().at("content"));
  }
  return file;
}

struct ExpectedRow {
  std::string vin;
  std::vector<int> codes;
  std::string make;
  std::string model;
  std::string model_year;
  std::string manufacturer;
  std::string vehicle_type;
  std::string body_class;
};

struct Expected {
  std::optional<VpicParseError> error;
  std::vector<ExpectedRow> rows;
};

const std::string kMpv = "MULTIPURPOSE PASSENGER VEHICLE (MPV)";
const std::string kSuv = "Sport Utility Vehicle (SUV)/Multi-Purpose Vehicle (MPV)";
const std::string kBmwNa = "BMW MANUFACTURER CORPORATION / BMW NORTH AMERICA";

const ExpectedRow kF150{"1FTMW1T88MFA00001",       {0},     "FORD",  "F-150", "2021",
                        "FORD MOTOR COMPANY, USA", "TRUCK", "Pickup"};
const ExpectedRow kSq5{"WA1A4AFY2J2008189", {0}, "AUDI", "SQ5", "2018", "AUDI AG", kMpv, kSuv};
const ExpectedRow kX3{"5UXWX7C5*BA", {6}, "BMW", "X3", "2011", kBmwNa, kMpv, kSuv};

// Every fixture file, relative to kFixtures, and what the parser must make of it.
const std::map<std::string, Expected>& Fixtures() {
  static const auto* fixtures = new std::map<std::string, Expected>{
      {"Composite-Solutions-laravel-nhtsa/WBA3A5C51CF256987.decodevinvalues.json",
       {std::nullopt,
        {{"WBA3A5C51CF256987",
          {1},
          "BMW",
          "328i",
          "2012",
          "BMW AG",
          "PASSENGER CAR",
          "Sedan/Saloon"}}}},
      {"ShaggyTech-nhtsa-api-wrapper/decode-vin-extended.response.json", {std::nullopt, {kSq5}}},
      {"ShaggyTech-nhtsa-api-wrapper/decode-vin-values-batch.response.json",
       {std::nullopt,
        {kX3,
         {"5YJSA3DS*EF",
          {4, 6, 14},
          "TESLA",
          "Model S",
          "2014",
          "TESLA, INC.",
          "PASSENGER CAR",
          "Hatchback/Liftback/Notchback"}}}},
      {"ShaggyTech-nhtsa-api-wrapper/decode-vin-values-extended.response.json",
       {std::nullopt, {kSq5}}},
      {"ShaggyTech-nhtsa-api-wrapper/decode-vin-values.response.json", {std::nullopt, {kSq5}}},
      {"ShaggyTech-nhtsa-api-wrapper/decode-vin.response.json", {std::nullopt, {kSq5}}},
      {"barclay-nhtsa_vin/not_found.json",
       {std::nullopt, {{"TACOS", {11}, "", "", "", "", "", ""}}}},
      {"barclay-nhtsa_vin/success.json",
       {std::nullopt,
        {{"1GYDE63A740121151",
          {0},
          "CADILLAC",
          "SRX",
          "2004",
          "GENERAL MOTORS LLC",
          kMpv,
          "Wagon"}}}},
      {"cfjedimaster-raymondcamden2023/3VV3B7AXXNM077525.decodevinvalues.json",
       {std::nullopt,
        {{"3VV3B7AXXNM077525",
          {0},
          "VOLKSWAGEN",
          "Tiguan",
          "2022",
          "VOLKSWAGEN DE MEXICO SA DE CV",
          kMpv,
          "Sport Utility Vehicle [SUV]/Multipurpose Vehicle [MPV]"}}}},
      {"cfjedimaster-raymondcamden2023/999999999993VV3B7AXXNM077525.excerpt.js.txt",
       {VpicParseError::kNotJson, {}}},
      {"cvrsor-vinfly/api_response.json",
       {std::nullopt,
        {{"3AKJHHDR3KSKX6689",
          {0},
          "FREIGHTLINER",
          "Cascadia",
          "",
          "DAIMLER TRUCKS NORTH AMERICA LLC",
          "",
          "Truck-Tractor"}}}},
      {"cvrsor-vinfly/api_response_brief.json",
       {std::nullopt, {{"3AKJHHDR1KSKX6688", {0}, "FREIGHTLINER", "", "", "", "", ""}}}},
      {"cvrsor-vinfly/api_response_http_error_code.json", {VpicParseError::kNotVpic, {}}},
      {"cvrsor-vinfly/api_response_wrong_vin.json",
       {std::nullopt, {{"3AKJHHDR1KSKX6688", {6, 7, 11, 400}, "", "", "", "", "", ""}}}},
      {"davidpeckham-vpic-api/decode-partial-vin-unflattened.json",
       {std::nullopt,
        {{"1FA6P8C0!M!100001",
          {1, 4, 14, 400},
          "FORD",
          "Mustang",
          "2021",
          "FORD MOTOR COMPANY, USA",
          "PASSENGER CAR",
          "Coupe"}}}},
      {"davidpeckham-vpic-api/decode-partial-vin.json", {std::nullopt, {kX3}}},
      {"davidpeckham-vpic-api/decode-vin-batch.json",
       {std::nullopt,
        {kX3,
         {"5YJSA3DS*EF",
          {5, 6, 14},
          "TESLA",
          "Model S",
          "2014",
          "TESLA, INC.",
          "PASSENGER CAR",
          "Hatchback/Liftback/Notchback"}}}},
      {"davidpeckham-vpic-api/decode-vin-extended.json", {std::nullopt, {kF150}}},
      {"davidpeckham-vpic-api/decode-vin-unflattened.json", {std::nullopt, {kF150}}},
      {"davidpeckham-vpic-api/decode-vin-with-modelyear.json", {std::nullopt, {kF150}}},
      {"davidpeckham-vpic-api/decode-vin.json", {std::nullopt, {kF150}}},
      // DecodeWMI is not a VIN decode: vPIC-shaped, no VIN, no ErrorCode.
      {"davidpeckham-vpic-api/decode-wmi.json",
       {std::nullopt, {{"", {}, "FORD", "", "", "", "Truck", ""}}}},
  };
  return *fixtures;
}

std::vector<std::string> FixtureFiles() {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(kFixtures)) {
    const std::string ext = entry.path().extension().string();
    if (entry.is_regular_file() && (ext == ".json" || ext == ".txt")) {
      files.push_back(std::filesystem::relative(entry.path(), kFixtures).string());
    }
  }
  return files;
}

TEST(VpicFixturesTest, EveryFixtureParsesAsExpected) {
  const std::vector<std::string> files = FixtureFiles();
  ASSERT_GE(files.size(), 20U) << "apps/vpic-sim/data is missing or short";
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    auto it = Fixtures().find(file);
    ASSERT_NE(it, Fixtures().end()) << "a fixture without expectations: add it to the table";
    const Expected& expected = it->second;
    auto parsed = ParseVpic(VpicBody(ReadFile(kFixtures / file)));
    if (expected.error) {
      ASSERT_FALSE(parsed);
      EXPECT_EQ(parsed.error(), *expected.error);
      continue;
    }
    ASSERT_TRUE(parsed) << ToString(parsed.error());
    ASSERT_EQ(parsed->rows.size(), expected.rows.size());
    for (std::size_t i = 0; i < expected.rows.size(); ++i) {
      const auto& row = parsed->rows[i];
      const ExpectedRow& want = expected.rows[i];
      EXPECT_EQ(row.vin, want.vin);
      EXPECT_EQ(row.upstream_codes, want.codes);
      EXPECT_EQ(row.vehicle.at("make"), want.make);
      EXPECT_EQ(row.vehicle.at("model"), want.model);
      EXPECT_EQ(row.vehicle.at("model_year"), want.model_year);
      EXPECT_EQ(row.vehicle.at("manufacturer"), want.manufacturer);
      EXPECT_EQ(row.vehicle.at("vehicle_type"), want.vehicle_type);
      EXPECT_EQ(row.vehicle.at("body_class"), want.body_class);
    }
  }
}

TEST(VpicFixturesTest, EveryDecodeHasTheRequiredKeysAndNoEmptyOrUntrimmedOtherValues) {
  for (const std::string& file : FixtureFiles()) {
    auto parsed = ParseVpic(VpicBody(ReadFile(kFixtures / file)));
    if (!parsed) {
      continue;
    }
    for (const auto& row : parsed->rows) {
      for (std::string_view key : fusebox::gateway::kRequiredVehicleKeys) {
        EXPECT_TRUE(row.vehicle.contains(key)) << file << ": " << key;
      }
      for (const auto& [key, value] : row.vehicle) {
        EXPECT_FALSE(key.empty()) << file;
        EXPECT_EQ(SnakeCase(key), key) << file << ": key is not snake_case";
        if (!value.empty()) {
          EXPECT_NE(value.front(), ' ') << file << ": " << key;
          EXPECT_NE(value.back(), ' ') << file << ": " << key;
        }
      }
    }
  }
}

TEST(VpicFixturesTest, FlatDecodeKeepsOtherNonEmptyFieldsInSnakeCase) {
  auto parsed = ParseVpic(VpicBody(ReadFile(kFixtures / "davidpeckham-vpic-api/decode-vin.json")));
  ASSERT_TRUE(parsed);
  const auto& vehicle = parsed->rows.at(0).vehicle;
  EXPECT_EQ(vehicle.at("plant_city"), "DEARBORN");
  EXPECT_EQ(vehicle.at("engine_hp"), "375");
  EXPECT_EQ(vehicle.at("displacement_l"), "3.5");
  EXPECT_EQ(vehicle.at("make_id"), "460");
  EXPECT_FALSE(vehicle.contains("abs"));  // "" upstream: dropped
}

TEST(VpicFixturesTest, UnflattenedDecodeMapsVariableNames) {
  auto parsed = ParseVpic(
      VpicBody(ReadFile(kFixtures / "davidpeckham-vpic-api/decode-vin-unflattened.json")));
  ASSERT_TRUE(parsed);
  const auto& vehicle = parsed->rows.at(0).vehicle;
  EXPECT_EQ(vehicle.at("plant_city"), "DEARBORN");
  EXPECT_EQ(vehicle.at("manufacturer"), "FORD MOTOR COMPANY, USA");
}

TEST(ParseVpicTest, NonJsonIsNotJson) {
  auto parsed = ParseVpic("<html>Service Unavailable</html>");
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error(), VpicParseError::kNotJson);
}

TEST(ParseVpicTest, JsonWithoutResultsIsNotVpic) {
  EXPECT_EQ(ParseVpic("{\"Count\": 1}").error(), VpicParseError::kNotVpic);
  EXPECT_EQ(ParseVpic("[1, 2]").error(), VpicParseError::kNotVpic);
  EXPECT_EQ(ParseVpic("{\"Results\": [1]}").error(), VpicParseError::kNotVpic);
}

TEST(ParseVpicTest, EmptyResultsParseWithNoRows) {
  auto parsed = ParseVpic("{\"Count\": 0, \"Results\": []}");
  ASSERT_TRUE(parsed);
  EXPECT_TRUE(parsed->rows.empty());
}

TEST(SnakeCaseTest, ConvertsVpicKeys) {
  EXPECT_EQ(SnakeCase("PlantCity"), "plant_city");
  EXPECT_EQ(SnakeCase("ModelID"), "model_id");
  EXPECT_EQ(SnakeCase("ABS"), "abs");
  EXPECT_EQ(SnakeCase("CAN_AACN"), "can_aacn");
  EXPECT_EQ(SnakeCase("NCSABodyType"), "ncsa_body_type");
  EXPECT_EQ(SnakeCase("BatteryKWh_to"), "battery_kwh_to");
  EXPECT_EQ(SnakeCase("EngineHP"), "engine_hp");
  EXPECT_EQ(SnakeCase("Series2"), "series2");
  EXPECT_EQ(SnakeCase("EVDriveUnit"), "ev_drive_unit");
}

TEST(SnakeCaseTest, ConvertsVariableLabels) {
  EXPECT_EQ(SnakeCaseLabel("Plant City"), "plant_city");
  EXPECT_EQ(SnakeCaseLabel("Base Price ($)"), "base_price");
  EXPECT_EQ(SnakeCaseLabel("Fuel Type - Primary"), "fuel_type_primary");
}

TEST(ParseErrorCodesTest, ReadsListsAndOldStyleText) {
  EXPECT_EQ(ParseErrorCodes("1,7,400"), (std::vector<int>{1, 7, 400}));
  EXPECT_EQ(ParseErrorCodes("0 - VIN decoded clean"), (std::vector<int>{0}));
  EXPECT_EQ(ParseErrorCodes("11- Incorrect Model Year"), (std::vector<int>{11}));
  EXPECT_TRUE(ParseErrorCodes("").empty());
  EXPECT_TRUE(ParseErrorCodes("n/a").empty());
}

// --- The bounds of one row (a hostile upstream must not inflate the cache) ------------------

std::string FlatBody(const std::string& fields) {
  return R"({"Results":[{)" + fields + R"("VIN":"1FTMW1T88MFA00001"}]})";
}

TEST(VpicBoundsTest, LongValuesAreCutAtACharacterBoundary) {
  // 1023 ASCII bytes, then a two-byte character that would straddle the 1024-byte bound.
  const std::string value = std::string(1023, 'a') + "\xC3\xA9" + std::string(100, 'b');
  auto answer = ParseVpic(FlatBody(R"("Note":")" + value + R"(",)"));
  ASSERT_TRUE(answer);
  const std::string& note = answer->rows.at(0).vehicle.at("note");
  EXPECT_EQ(note, std::string(1023, 'a'));
  EXPECT_LE(note.size(), fusebox::gateway::kMaxFieldValueBytes);
}

TEST(VpicBoundsTest, OverlongKeysAreDropped) {
  const std::string key(fusebox::gateway::kMaxFieldKeyBytes + 1, 'k');
  auto answer = ParseVpic(FlatBody("\"" + key + R"(":"x","Make":"FORD",)"));
  ASSERT_TRUE(answer);
  const fusebox::gateway::Vehicle& vehicle = answer->rows.at(0).vehicle;
  EXPECT_EQ(vehicle.count(key), 0U);
  EXPECT_EQ(vehicle.at("make"), "FORD");
}

TEST(VpicBoundsTest, RequiredKeysSurviveThousandsOfFieldsBeforeThem) {
  std::string fields;
  for (int i = 0; i < 5000; ++i) {
    fields += "\"Field" + std::to_string(i) + R"(":"value",)";
  }
  fields += R"("Make":"FORD","ErrorCode":"0",)";
  auto answer = ParseVpic(FlatBody(fields));
  ASSERT_TRUE(answer);
  const fusebox::gateway::VpicRow& row = answer->rows.at(0);
  EXPECT_LE(row.vehicle.size(), fusebox::gateway::kMaxVehicleFields);
  EXPECT_EQ(row.vehicle.at("make"), "FORD");
  EXPECT_EQ(row.vin, "1FTMW1T88MFA00001");
  EXPECT_EQ(row.upstream_codes, std::vector<int>{0});
  for (std::string_view key : fusebox::gateway::kRequiredVehicleKeys) {
    EXPECT_EQ(row.vehicle.count(key), 1U) << key;
  }
}

TEST(VpicBoundsTest, TextOfARowIsBounded) {
  std::string fields;
  for (int i = 0; i < 200; ++i) {  // under the field bound, 200 KiB of text
    fields += "\"Field" + std::to_string(i) + R"(":")" + std::string(1000, 'y') + R"(",)";
  }
  auto answer = ParseVpic(FlatBody(fields));
  ASSERT_TRUE(answer);
  std::size_t text = 0;
  for (const auto& [key, value] : answer->rows.at(0).vehicle) {
    text += key.size() + value.size();
  }
  EXPECT_LE(text, fusebox::gateway::kMaxVehicleTextBytes);
  EXPECT_GT(text, fusebox::gateway::kMaxVehicleTextBytes / 2);  // filled, not emptied
}

TEST(VpicBoundsTest, ErrorCodesAreCapped) {
  std::string codes;
  for (int i = 0; i < 100; ++i) {
    // Appended in two steps: gcc 12 at -O3 misreports `"," + std::to_string(i)` (-Wrestrict).
    if (i > 0) {
      codes += ',';
    }
    codes += std::to_string(i);
  }
  EXPECT_EQ(ParseErrorCodes(codes).size(), fusebox::gateway::kMaxUpstreamCodes);
}

}  // namespace

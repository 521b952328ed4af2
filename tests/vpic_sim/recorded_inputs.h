// The recorded inputs of the fixtures (12 of the 13 of the shared MANIFEST.md) and what a
// DecodeVinValues answer must hold for each: shared by recorded_inputs_test.cc (in process) and
// recorded_inputs_server_test.cc (over a real server).
#pragma once

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
#include "vin_decoder.h"
#include "vpic_api.h"
#include "vpic_sim/fixture_files.h"
#include "vpic_sim/test_client.h"

namespace fusebox::vpic_sim::recorded {

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

inline void PrintTo(const RecordedInput& c, std::ostream* os) { *os << c.name; }

inline std::vector<RecordedInput> Inputs() {
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
inline boost::json::object Expected(const RecordedInput& in) {
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

inline std::string Target(const RecordedInput& in, bool with_year) {
  std::string target = "/api/vehicles/DecodeVinValues/";
  target.append(test_client::PercentEncode(in.input)).append("?format=json");
  if (with_year && in.model_year) {
    target.append("&modelyear=").append(std::to_string(*in.model_year));
  }
  return target;
}

inline const VpicApi& Api() {
  static const Recordings kRecordings = [] {
    auto r = Recordings::Load(EmbeddedFiles());
    EXPECT_TRUE(r.has_value());
    return r ? std::move(*r) : Recordings{};
  }();
  static const VpicApi kApi(kRecordings, {.reference_year = 2026});
  return kApi;
}

inline void ExpectRecorded(const boost::json::object& served, const boost::json::object& expected) {
  for (const auto& kv : expected) {
    ASSERT_TRUE(served.contains(kv.key())) << kv.key();
    EXPECT_EQ(served.at(kv.key()), kv.value()) << kv.key();
  }
}

}  // namespace fusebox::vpic_sim::recorded

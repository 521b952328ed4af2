#include "recordings.h"

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

namespace fusebox::vpic_sim {
namespace {

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

Recordings Load() {
  auto r = Recordings::Load(EmbeddedFiles());
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message);
  return r ? std::move(*r) : Recordings{};
}

TEST(EmbeddedFilesTest, HoldEveryDataFileByteForByte) {
  std::set<std::string> on_disk;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(VPIC_SIM_DATA_DIR)) {
    if (entry.path().extension() == ".json" || entry.path().extension() == ".txt") {
      on_disk.insert(std::filesystem::relative(entry.path(), VPIC_SIM_DATA_DIR).generic_string());
    }
  }
  std::set<std::string> embedded;
  for (const EmbeddedFile& f : EmbeddedFiles()) {
    embedded.emplace(f.path);
    EXPECT_EQ(f.bytes, ReadFile(std::filesystem::path(VPIC_SIM_DATA_DIR) / f.path)) << f.path;
  }
  EXPECT_EQ(embedded, on_disk);
  EXPECT_GE(embedded.size(), 20U);
}

TEST(RecordingsTest, LoadsEveryServedFixture) {
  const Recordings r = Load();
  // 8 flat singles, 2 batches, 1 batch row served alone (5YJSA3DS*EF), 3 nested, 2 cut-down
  // nested stubs, 1 excerpt.
  EXPECT_EQ(r.all().size(), 17U);
}

TEST(RecordingsTest, BatchRowAloneIsTheNewestCaptureInASingleDecodeEnvelope) {
  const Recordings r = Load();
  const Recording* rec = r.FindSingle(Endpoint::kDecodeVinValues, "5YJSA3DS*EF", std::nullopt);
  ASSERT_NE(rec, nullptr);
  EXPECT_EQ(rec->origin, Origin::kBatchRow);
  EXPECT_EQ(rec->fixture, "ShaggyTech-nhtsa-api-wrapper/decode-vin-values-batch.response.json");
  const boost::json::value body = boost::json::parse(rec->body);
  EXPECT_EQ(body.at("Count"), 1);
  EXPECT_EQ(std::string_view(body.at("Message").as_string()), r.message());
  EXPECT_EQ(body.at("SearchCriteria"), "VIN(s): 5YJSA3DS*EF");
  const boost::json::value batch = boost::json::parse(
      ReadFile(std::filesystem::path(VPIC_SIM_DATA_DIR) /
               "ShaggyTech-nhtsa-api-wrapper/decode-vin-values-batch.response.json"));
  EXPECT_EQ(body.at("Results").at(0), batch.at("Results").at(1));
  EXPECT_EQ(body.at("Results").at(0).at("Model"), "Model S");
  // 5UXWX7C5*BA,2011 has a flat single recording of its own: no batch row for it.
  const Recording* bmw = r.FindSingle(Endpoint::kDecodeVinValues, "5UXWX7C5*BA", 2011);
  ASSERT_NE(bmw, nullptr);
  EXPECT_EQ(bmw->origin, Origin::kFlat);
}

TEST(RecordingsTest, NestedOnlyRecordingsAreConvertedToTheNewestFlatShape) {
  const Recordings r = Load();
  const Recording* rec =
      r.FindSingle(Endpoint::kDecodeVinValues, "1GYDE63A740121151", std::nullopt);
  ASSERT_NE(rec, nullptr);
  EXPECT_EQ(rec->origin, Origin::kNested);
  EXPECT_TRUE(rec->legacy_format);
  std::vector<std::string> keys;
  for (const auto& kv : rec->first_row) {
    keys.emplace_back(kv.key());
  }
  EXPECT_EQ(keys, r.flat_keys());
  EXPECT_EQ(rec->first_row.at("Model"), "SRX");
  EXPECT_EQ(rec->first_row.at("VIN"), "1GYDE63A740121151");
  EXPECT_EQ(rec->first_row.at("MakeID"), "469");
  const boost::json::value body = boost::json::parse(rec->body);
  EXPECT_EQ(body.at("Count"), 1);
  EXPECT_EQ(body.at("SearchCriteria"), "VIN(s): 1GYDE63A740121151");
  EXPECT_EQ(body.at("Results").at(0), rec->first_row);
}

TEST(RecordingsTest, NestedCaptureOfAVinWithAFlatOneIsNotServed) {
  const Recordings r = Load();
  for (const Recording& rec : r.all()) {
    EXPECT_NE(rec.fixture, "davidpeckham-vpic-api/decode-vin-unflattened.json");
    EXPECT_NE(rec.fixture, "ShaggyTech-nhtsa-api-wrapper/decode-vin.response.json");
  }
}

TEST(RecordingsTest, ExcerptHoldsOnlyItsRecordedKeys) {
  const Recordings r = Load();
  const Recording* rec =
      r.FindSingle(Endpoint::kDecodeVinValues, "999999999993VV3B7AXXNM077525", std::nullopt);
  ASSERT_NE(rec, nullptr);
  EXPECT_EQ(rec->origin, Origin::kExcerpt);
  EXPECT_EQ(rec->first_row.size(), 2U);
  EXPECT_EQ(rec->first_row.at("ErrorCode"), "1,7,400");
  EXPECT_TRUE(rec->body.empty());
}

TEST(RecordingsTest, CutDownStubsHoldOnlyTheirRecordedNonNullKeys) {
  const Recordings r = Load();
  const Recording* brief =
      r.FindSingle(Endpoint::kDecodeVinValues, "3AKJHHDR1KSKX6688", std::nullopt);
  ASSERT_NE(brief, nullptr);
  EXPECT_EQ(brief->origin, Origin::kCutDown);
  EXPECT_TRUE(OverlaysSynthetic(brief->origin));
  EXPECT_TRUE(brief->body.empty());
  // Make (with its ValueId) and ErrorCode; Series is null, so it is not recorded.
  EXPECT_EQ(brief->first_row,
            (boost::json::object{{"ErrorCode", "0"}, {"Make", "FREIGHTLINER"}, {"MakeID", "450"}}));
  const Recording* full =
      r.FindSingle(Endpoint::kDecodeVinValues, "3AKJHHDR3KSKX6689", std::nullopt);
  ASSERT_NE(full, nullptr);
  EXPECT_EQ(full->origin, Origin::kCutDown);
  std::set<std::string> keys;
  for (const auto& kv : full->first_row) {
    keys.emplace(kv.key());
  }
  EXPECT_EQ(keys, (std::set<std::string>{"BodyClass", "ErrorCode", "ErrorText", "Make", "MakeID",
                                         "Manufacturer", "ManufacturerId", "Model", "ModelID",
                                         "PossibleValues", "SuggestedVIN", "VehicleDescriptor"}));
  EXPECT_EQ(full->first_row.at("ManufacturerId"), "1024");
  EXPECT_FALSE(OverlaysSynthetic(Origin::kNested));
  EXPECT_FALSE(OverlaysSynthetic(Origin::kFlat));
}

// Its codes describe an input that is not the VIN the spec sends with it.
TEST(RecordingsTest, HandEditedWrongVinStubIsNotServed) {
  const Recordings r = Load();
  EXPECT_EQ(r.FindSingle(Endpoint::kDecodeVinValues, "1AKJHHDR3KSKX6689", std::nullopt), nullptr);
  for (const Recording& rec : r.all()) {
    EXPECT_NE(rec.fixture, "cvrsor-vinfly/api_response_wrong_vin.json");
  }
}

TEST(RecordingsTest, LoadFailsNamingAMissingFixture) {
  auto r = Recordings::Load({});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("missing"), std::string::npos);
}

TEST(RecordingsTest, FlatShapeIsTheNewestWithEveryRecordedKey) {
  const Recordings r = Load();
  const std::set<std::string> keys(r.flat_keys().begin(), r.flat_keys().end());
  EXPECT_EQ(r.flat_keys().size(), 154U);
  for (const Recording& rec : r.all()) {
    for (const auto& kv : rec.first_row) {
      EXPECT_TRUE(keys.count(std::string(kv.key())) == 1) << rec.fixture << ": " << kv.key();
    }
  }
}

TEST(RecordingsTest, WrappedCaptureServesTheContentMemberVerbatim) {
  const Recordings r = Load();
  const Recording* rec =
      r.FindSingle(Endpoint::kDecodeVinValues, "1FTMW1T88MFA00001", std::nullopt);
  ASSERT_NE(rec, nullptr);
  const std::string file =
      ReadFile(std::filesystem::path(VPIC_SIM_DATA_DIR) / "davidpeckham-vpic-api/decode-vin.json");
  EXPECT_NE(file.find(rec->body), std::string::npos);
  EXPECT_EQ(rec->body.front(), '{');
  EXPECT_EQ(rec->body.back(), '}');
  EXPECT_EQ(rec->body.find("expected_result"), std::string::npos);
}

TEST(RecordingsTest, ModelYearPicksTheRecordingMadeWithIt) {
  const Recordings r = Load();
  const Recording* with = r.FindSingle(Endpoint::kDecodeVinValues, "1FTMW1T88MFA00001", 2021);
  const Recording* without =
      r.FindSingle(Endpoint::kDecodeVinValues, "1FTMW1T88MFA00001", std::nullopt);
  const Recording* other = r.FindSingle(Endpoint::kDecodeVinValues, "1FTMW1T88MFA00001", 2015);
  ASSERT_NE(with, nullptr);
  ASSERT_NE(without, nullptr);
  EXPECT_EQ(with->fixture, "davidpeckham-vpic-api/decode-vin-with-modelyear.json");
  EXPECT_EQ(without->fixture, "davidpeckham-vpic-api/decode-vin.json");
  EXPECT_EQ(other, without);
}

TEST(RecordingsTest, RecordingWithYearAlsoAnswersRequestsWithoutOne) {
  const Recordings r = Load();
  const Recording* rec = r.FindSingle(Endpoint::kDecodeVinValues, "5UXWX7C5*BA", std::nullopt);
  ASSERT_NE(rec, nullptr);
  EXPECT_EQ(rec->fixture, "davidpeckham-vpic-api/decode-partial-vin.json");
  EXPECT_EQ(r.FindSingle(Endpoint::kDecodeVinValues, "5UXWX7C5*BA", 2012), nullptr);
}

TEST(RecordingsTest, ExtendedFallsBackToThePlainRecording) {
  const Recordings r = Load();
  const Recording* rec =
      r.FindSingle(Endpoint::kDecodeVinValuesExtended, "3VV3B7AXXNM077525", std::nullopt);
  ASSERT_NE(rec, nullptr);
  EXPECT_EQ(rec->endpoint, Endpoint::kDecodeVinValues);
}

TEST(RecordingsTest, BatchMatchesExactDataFirstThenTheNewestNormalized) {
  const Recordings r = Load();
  const Recording* exact = r.FindBatch("5UXWX7C5*BA,2011;5YJSA3DS*EF");
  const Recording* spaced = r.FindBatch("5uxwx7c5*ba, 2011 ;  5yjsa3ds*ef");
  ASSERT_NE(exact, nullptr);
  ASSERT_NE(spaced, nullptr);
  EXPECT_EQ(exact->fixture, "davidpeckham-vpic-api/decode-vin-batch.json");
  EXPECT_EQ(spaced->fixture, "ShaggyTech-nhtsa-api-wrapper/decode-vin-values-batch.response.json");
  EXPECT_EQ(r.FindBatch("5UXWX7C5*BA,2011"), nullptr);
}

TEST(RecordingsTest, NormalizeBatchDataTrimsAndUpperCases) {
  EXPECT_EQ(Recordings::NormalizeBatchData(" abc , 2011 ;; def;"), "ABC,2011;DEF");
}

TEST(RawMemberTest, ReturnsTheValueBytesAsWritten) {
  EXPECT_EQ(RawMember(R"({"a": 1, "content" : { "x" : [1, "}"] } , "b": null})", "content"),
            R"({ "x" : [1, "}"] })");
}

TEST(RawMemberTest, HandlesEscapedQuotes) {
  EXPECT_EQ(RawMember(R"({"a\"": "q\"}", "b": "v"})", "b"), R"("v")");
}

TEST(RawMemberTest, RejectsNonObjectsAndMissingKeys) {
  EXPECT_EQ(RawMember("[1]", "a"), std::nullopt);
  EXPECT_EQ(RawMember(R"({"a": 1})", "b"), std::nullopt);
  EXPECT_EQ(RawMember(R"({"a": )", "a"), std::nullopt);
}

}  // namespace
}  // namespace fusebox::vpic_sim

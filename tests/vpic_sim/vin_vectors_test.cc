// The error-code rules against every row of tests/data/vin-vectors.tsv. The columns that say
// what vPIC would answer are the check-digit verdict (on the normalized VIN) and the model year:
//   valid_check_digit  yes -> no code 1, 6 or 400;  no -> code 1;  na -> code 6 or 400
//   expected_model_year  Y -> ModelYear Y when the WMI is registered (an unregistered WMI gets
//                             code 7 and nothing decoded, as vPIC does);  0 -> code 11
// The make column is a library's label, not vPIC's, so only the upper-case (vPIC-recorded)
// makes are compared exactly; every other named WMI must merely be known.

#include <gtest/gtest.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "embedded_files.h"
#include "recordings.h"
#include "testing/vin_vectors.h"
#include "vin_decoder.h"
#include "vpic_api.h"
#include "vpic_sim/test_client.h"

namespace fusebox::vpic_sim {
namespace {

constexpr DecodeOptions kOptions{.model_year = std::nullopt, .reference_year = 2026};

using fusebox::testing::VinVector;

const std::vector<VinVector>& Rows() {
  static const std::vector<VinVector> kRows = fusebox::testing::LoadVinVectors(VPIC_SIM_VECTORS);
  return kRows;
}

bool Has(const VinDecode& d, int code) {
  return std::find(d.error_codes.begin(), d.error_codes.end(), code) != d.error_codes.end();
}

TEST(VinVectorsTest, FileHasEveryRow) { EXPECT_EQ(Rows().size(), 282U); }

TEST(VinVectorsTest, CheckDigitColumnDecidesCodesOneSixAnd400) {
  for (const VinVector& row : Rows()) {
    const VinDecode d = DecodeVin(row.vin, kOptions);
    SCOPED_TRACE("line " + std::to_string(row.line) + " ErrorCode " + d.ErrorCode());
    if (row.check_digit == "yes") {
      EXPECT_FALSE(Has(d, 1));
      EXPECT_FALSE(Has(d, 6));
      EXPECT_FALSE(Has(d, 400));
    } else if (row.check_digit == "no") {
      EXPECT_TRUE(Has(d, 1));
      EXPECT_FALSE(Has(d, 6));
      EXPECT_FALSE(Has(d, 400));
    } else {
      ASSERT_EQ(row.check_digit, "na");
      EXPECT_TRUE(Has(d, 6) || Has(d, 400));
    }
  }
}

TEST(VinVectorsTest, ModelYearColumnDecidesModelYearOrCodeEleven) {
  int checked = 0;
  for (const VinVector& row : Rows()) {
    if (row.model_year.empty()) {
      continue;
    }
    ++checked;
    const VinDecode d = DecodeVin(row.vin, kOptions);
    SCOPED_TRACE("line " + std::to_string(row.line) + " ErrorCode " + d.ErrorCode());
    if (row.model_year == "0") {
      EXPECT_TRUE(Has(d, 11));
      EXPECT_EQ(d.model_year, std::nullopt);
    } else if (d.wmi == nullptr) {
      EXPECT_TRUE(Has(d, 7));
      EXPECT_EQ(d.model_year, std::nullopt);
    } else {
      EXPECT_EQ(d.model_year, std::stoi(row.model_year));
    }
  }
  EXPECT_GT(checked, 150);
}

TEST(VinVectorsTest, NamedManufacturersAreKnown) {
  int checked = 0;
  for (const VinVector& row : Rows()) {
    const std::string& make = row.make;
    if (make.empty() || make.starts_with("country") || make.starts_with("region") ||
        make.starts_with("small manufacturer") || make.starts_with("Dafra")) {
      // Dafra (95V) sells no vehicles in the U.S.: vPIC answers 7 for it.
      continue;
    }
    ++checked;
    const VinDecode d = DecodeVin(row.vin, kOptions);
    SCOPED_TRACE("line " + std::to_string(row.line) + ": " + make);
    ASSERT_NE(d.wmi, nullptr);
    const bool from_vpic =
        make.find('(') == std::string::npos &&
        std::none_of(make.begin(), make.end(), [](char c) { return c >= 'a' && c <= 'z'; });
    if (from_vpic) {
      EXPECT_EQ(d.wmi->make, make);
    }
  }
  EXPECT_GT(checked, 150);
}

// The "Error Code" Value of a 2017-format fixture ("11- Incorrect Model Year, ..."), read from
// the file; "" when it has none.
std::string LegacyErrorCodeText(std::string_view fixture) {
  std::ifstream in(std::filesystem::path(VPIC_SIM_DATA_DIR) / fixture, std::ios::binary);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::error_code ec;
  const boost::json::value body = boost::json::parse(text, ec);
  if (ec || !body.is_object() || !body.as_object().contains("Results")) {
    return "";
  }
  for (const boost::json::value& v : body.at("Results").as_array()) {
    if (v.at("VariableId") == 143 && v.at("Value").is_string()) {
      return std::string(v.at("Value").as_string());
    }
  }
  return "";
}

// The number a text starts with, as digits ("11- Incorrect ..." -> "11"); "" when none.
std::string LeadingNumber(std::string_view text) {
  int n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  return ec == std::errc() && end != text.data() ? std::to_string(n) : std::string();
}

// The same check-digit rule on what the API serves (recorded answers included), for every row
// that names a VIN (an empty path segment is a 404, as on vPIC). A row whose input is recorded in
// vPIC's 2017 format ("tacos") gets the 2017 answer as recorded (code 11 alone, the number the
// recorded "Error Code" text starts with), not today's rule.
TEST(VinVectorsTest, ServedAnswersFollowTheCheckDigitColumn) {
  auto recordings = Recordings::Load(EmbeddedFiles());
  ASSERT_TRUE(recordings.has_value());
  const VpicApi api(*recordings, {.reference_year = 2026});
  for (const VinVector& row : Rows()) {
    if (NormalizeVin(row.vin).empty()) {
      continue;
    }
    SCOPED_TRACE("line " + std::to_string(row.line));
    const std::string target =
        "/api/vehicles/DecodeVinValues/" + test_client::PercentEncode(row.vin) + "?format=json";
    const ApiResponse r = api.Handle({.method = "GET", .target = target, .body = ""});
    ASSERT_EQ(r.status, 200U);
    std::error_code ec;
    const boost::json::value body = boost::json::parse(r.body, ec);
    ASSERT_FALSE(ec);
    // Built with append: gcc 12 at -O3 misreports `"," + std::string(...)` (-Wrestrict).
    std::string codes = ",";
    codes.append(body.at("Results").at(0).at("ErrorCode").as_string().c_str());
    codes.append(",");
    const Recording* rec =
        recordings->FindSingle(Endpoint::kDecodeVinValues, NormalizeVin(row.vin), std::nullopt);
    if (rec != nullptr && rec->legacy_format) {
      // Expected from the fixture file itself, not from what the server converted it to.
      const std::string recorded = LegacyErrorCodeText(rec->fixture);
      ASSERT_FALSE(recorded.empty()) << rec->fixture;
      EXPECT_EQ(std::string_view(body.at("Results").at(0).at("ErrorCode").as_string()),
                LeadingNumber(recorded))
          << recorded;
      continue;
    }
    const bool has1 = codes.find(",1,") != std::string::npos;
    const bool has6or400 =
        codes.find(",6,") != std::string::npos || codes.find(",400,") != std::string::npos;
    if (row.check_digit == "yes") {
      EXPECT_FALSE(has1 || has6or400) << codes;
    } else if (row.check_digit == "no") {
      EXPECT_TRUE(has1 && !has6or400) << codes;
    } else {
      EXPECT_TRUE(has6or400) << codes;
    }
  }
}

TEST(VinVectorsTest, ErrorTextHasOneTextPerCode) {
  for (const VinVector& row : Rows()) {
    const VinDecode d = DecodeVin(row.vin, kOptions);
    SCOPED_TRACE("line " + std::to_string(row.line));
    ASSERT_FALSE(d.error_codes.empty());
    EXPECT_TRUE(std::is_sorted(d.error_codes.begin(), d.error_codes.end()));
    const std::string text = d.ErrorText();
    std::size_t texts = 1;
    for (std::size_t at = text.find("; "); at != std::string::npos; at = text.find("; ", at + 1)) {
      ++texts;
    }
    // Code 7's own text holds one "; ".
    EXPECT_EQ(texts, d.error_codes.size() + (Has(d, 7) ? 1 : 0)) << text;
  }
}

}  // namespace
}  // namespace fusebox::vpic_sim

#include "vin_decoder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>

#include "wmi_table.h"

namespace fusebox::vpic_sim {
namespace {

using ::testing::ElementsAre;

constexpr DecodeOptions kOptions{.model_year = std::nullopt, .reference_year = 2026};

TEST(VinDecoderTest, NormalizeTrimsWhitespaceAndUpperCases) {
  EXPECT_EQ(NormalizeVin(" \t wdbuh87j46x202412 \n"), "WDBUH87J46X202412");
}

TEST(VinDecoderTest, NormalizeKeepsInnerWhitespace) { EXPECT_EQ(NormalizeVin(" 1 2 "), "1 2"); }

TEST(VinDecoderTest, VinAlphabetExcludesIOQ) {
  std::string legal;
  for (char c = '0'; c <= 'Z'; ++c) {
    if (IsVinChar(c)) {
      legal += c;
    }
  }
  EXPECT_EQ(legal, "0123456789ABCDEFGHJKLMNPRSTUVWXYZ");
}

TEST(VinDecoderTest, CheckDigitMatchesTheRegulationsWorkedExample) {
  // 49 CFR 565.15(c): 1G4AH59H45G118341 sums to 411, and 411 mod 11 = 4.
  EXPECT_EQ(ComputeCheckDigit("1G4AH59H45G118341"), '4');
}

TEST(VinDecoderTest, CheckDigitTenIsX) { EXPECT_EQ(ComputeCheckDigit("1FTDX086XVKA87410"), 'X'); }

TEST(VinDecoderTest, CheckDigitNeedsSeventeenLegalCharacters) {
  EXPECT_EQ(ComputeCheckDigit("1G4AH59H45G11834"), std::nullopt);
  EXPECT_EQ(ComputeCheckDigit("1G4AH59H45G11834I"), std::nullopt);
}

TEST(VinDecoderTest, YearCodesCoverThirtyYearsWithoutIOQUZ0) {
  EXPECT_EQ(YearCode2010('A'), 2010);
  EXPECT_EQ(YearCode2010('Y'), 2030);
  EXPECT_EQ(YearCode2010('1'), 2031);
  EXPECT_EQ(YearCode2010('9'), 2039);
  for (char c : std::string("IOQUZ0")) {
    EXPECT_EQ(YearCode2010(c), std::nullopt) << c;
  }
}

TEST(VinDecoderTest, CleanVinIsCodeZeroWithMakeAndYear) {
  const VinDecode d = DecodeVin("1FTMW1T88MFA00001", kOptions);
  EXPECT_THAT(d.error_codes, ElementsAre(0));
  EXPECT_EQ(d.ErrorText(), "0 - VIN decoded clean. Check Digit (9th position) is correct");
  ASSERT_NE(d.wmi, nullptr);
  EXPECT_EQ(d.wmi->make, "FORD");
  EXPECT_EQ(d.wmi->manufacturer, "FORD MOTOR COMPANY, USA");
  EXPECT_EQ(d.model_year, 2021);
  EXPECT_EQ(d.vehicle_descriptor, "1FTMW1T8*MF");
}

TEST(VinDecoderTest, WrongCheckDigitIsCodeOneAndStillDecodes) {
  const VinDecode d = DecodeVin("WBA3A5C51CF256987", kOptions);
  EXPECT_EQ(d.ErrorCode(), "1");
  ASSERT_NE(d.wmi, nullptr);
  EXPECT_EQ(d.wmi->make, "BMW");
  EXPECT_EQ(d.model_year, 2012);
}

TEST(VinDecoderTest, ShortVinIsCodeSix) {
  const VinDecode d = DecodeVin("5UXWX7C5*BA", {.model_year = 2011, .reference_year = 2026});
  EXPECT_EQ(d.ErrorCode(), "6,400");
  EXPECT_EQ(d.model_year, 2011);
  EXPECT_EQ(d.vehicle_descriptor, "5UXWX7C5*BA");
}

TEST(VinDecoderTest, InvalidCharactersAreCode400WithPositions) {
  const VinDecode d = DecodeVin("1FA6P8C0!M!100001", kOptions);
  EXPECT_EQ(d.ErrorCode(), "1,400");
  EXPECT_EQ(d.additional_error_text, "Invalid character(s): 9:!, 11:!;");
  EXPECT_EQ(d.ErrorText(),
            "1 - Check Digit (9th position) does not calculate properly; 400 - Invalid "
            "Characters Present");
}

TEST(VinDecoderTest, SingleInvalidLetterUsesVpicSpelling) {
  const VinDecode d = DecodeVin("1AOJHHDR3KSKX6689", kOptions);
  EXPECT_EQ(d.additional_error_text, "Invalid character(s): 3:O;");
}

TEST(VinDecoderTest, UnknownWmiIsCodeSevenAndDecodesNothing) {
  const VinDecode d = DecodeVin("11111111111111111", kOptions);
  EXPECT_EQ(d.ErrorCode(), "7");
  EXPECT_EQ(d.wmi, nullptr);
  EXPECT_EQ(d.model_year, std::nullopt);
}

TEST(VinDecoderTest, TooLongInputMatchesVpicsAnswer) {
  // vPIC answered "1,7,400" for this 28-character input.
  const VinDecode d = DecodeVin("999999999993VV3B7AXXNM077525", kOptions);
  EXPECT_EQ(d.ErrorCode(), "1,7,400");
  EXPECT_EQ(d.ErrorText(),
            "1 - Check Digit (9th position) does not calculate properly; 7 - Manufacturer is not "
            "registered with NHTSA for sale or importation in the U.S. for use on U.S roads; "
            "Please contact the manufacturer directly for more information; 400 - Invalid "
            "Characters Present");
}

TEST(VinDecoderTest, InvalidYearCodeIsCodeEleven) {
  const VinDecode d = DecodeVin("1J4GZB8S10Y103658", kOptions);
  EXPECT_EQ(d.ErrorCode(), "1,11");
  EXPECT_EQ(d.model_year, std::nullopt);
}

TEST(VinDecoderTest, MissingYearPositionIsCodeElevenUnlessModelYearGiven) {
  EXPECT_EQ(DecodeVin("TACOS", kOptions).ErrorCode(), "6,7,11,400");
  EXPECT_EQ(DecodeVin("1FTMW1T8", {.model_year = 2021, .reference_year = 2026}).ErrorCode(), "6");
}

TEST(VinDecoderTest, DigitInPositionSevenMeansTheEarlierCycle) {
  EXPECT_EQ(DecodeVin("1J4GZB8S1TY103658", kOptions).model_year, 1996);
  EXPECT_EQ(DecodeVin("1GYDE63A740121151", kOptions).model_year, 2004);
}

TEST(VinDecoderTest, LetterInPositionSevenMeansTheLaterCycle) {
  EXPECT_EQ(DecodeVin("KMTGA4SCDRU227656", kOptions).model_year, 2024);
}

TEST(VinDecoderTest, MotorcycleYearIsTheLatestNotInTheFuture) {
  // JS1 is a motorcycle WMI: position 7 does not bind, X is 1999 or 2029.
  EXPECT_EQ(DecodeVin("JS1VX51L7X2175460", {.model_year = std::nullopt, .reference_year = 2026})
                .model_year,
            1999);
  EXPECT_EQ(DecodeVin("JS1VX51L7X2175460", {.model_year = std::nullopt, .reference_year = 2028})
                .model_year,
            2029);
}

TEST(VinDecoderTest, ModelYearParameterPicksTheCycleWhenPositionSevenDoesNotBind) {
  EXPECT_EQ(DecodeVin("JS1VX51L7X2175460", {.model_year = 2029, .reference_year = 2026}).model_year,
            2029);
}

TEST(VinDecoderTest, SmallManufacturerIsFoundByPositions12To14) {
  const VinDecode d = DecodeVin("YT9NN1U14KA007175", kOptions);
  ASSERT_NE(d.wmi, nullptr);
  EXPECT_EQ(d.wmi->make, "KOENIGSEGG");
  EXPECT_EQ(DecodeVin("TM912345678901234", kOptions).wmi, nullptr);
}

TEST(VinDecoderTest, NonPrintableBytesAreEchoedAsQuestionMarks) {
  const VinDecode d = DecodeVin("1\n2", kOptions);
  EXPECT_EQ(d.vin, "1?2");
  EXPECT_EQ(d.additional_error_text, "Invalid character(s): 2:?;");
}

TEST(WmiTableTest, HoldsAtLeastAHundredUniqueWmis) {
  std::set<std::pair<std::string_view, std::string_view>> seen;
  for (const WmiEntry& e : WmiTable()) {
    EXPECT_TRUE(seen.emplace(e.wmi, e.small_maker).second) << e.wmi;
    EXPECT_EQ(e.wmi.size(), 3U) << e.wmi;
    EXPECT_FALSE(e.make.empty()) << e.wmi;
    EXPECT_FALSE(e.manufacturer.empty()) << e.wmi;
  }
  EXPECT_GE(seen.size(), 100U);
}

TEST(WmiTableTest, TruckTypeKeepsVpicsTrailingSpace) {
  EXPECT_EQ(VehicleTypeName(VehicleClass::kLightTruck), "TRUCK ");
}

}  // namespace
}  // namespace fusebox::vpic_sim

// VIN normalization and validation, against every row of tests/data/vin-vectors.tsv and against
// the contract's rules one by one.
#include "core/vin.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testing/vin_vectors.h"

namespace {

using fusebox::gateway::CheckDigit;
using fusebox::gateway::ComputeCheckDigit;
using fusebox::gateway::NormalizeVin;
using fusebox::gateway::ValidateVin;
using fusebox::gateway::VinCheck;

using fusebox::testing::VinVector;

std::vector<VinVector> LoadVectors() {
  return fusebox::testing::LoadVinVectors(FUSEBOX_SOURCE_DIR "/tests/data/vin-vectors.tsv");
}

TEST(VinVectorsTest, EveryRowGetsTheVerdictOfItsCheckDigitColumn) {
  const std::vector<VinVector> rows = LoadVectors();
  ASSERT_GE(rows.size(), 280U) << "tests/data/vin-vectors.tsv is missing or short";
  int yes = 0;
  int no = 0;
  int na = 0;
  for (const VinVector& row : rows) {
    const VinCheck check = ValidateVin(row.vin);
    SCOPED_TRACE(testing::Message() << "line " << row.line << ": '" << row.vin << "'");
    if (row.check_digit == "yes") {
      ++yes;
      EXPECT_TRUE(check.ok());
      EXPECT_EQ(check.check_digit, CheckDigit::kValid);
    } else if (row.check_digit == "no") {
      ++no;
      // A check digit that does not compute is never a local rejection.
      EXPECT_TRUE(check.ok());
      EXPECT_EQ(check.check_digit, CheckDigit::kMismatch);
    } else {
      ASSERT_EQ(row.check_digit, "na");
      ++na;
      EXPECT_FALSE(check.ok());
      for (const auto& problem : check.problems) {
        EXPECT_TRUE(problem.rule == "length" || problem.rule == "charset") << problem.rule;
      }
    }
  }
  EXPECT_GT(yes, 0);
  EXPECT_GT(no, 0);
  EXPECT_GT(na, 0);
}

TEST(VinVectorsTest, ValidRowsNormalizeToSeventeenUpperCaseCharacters) {
  for (const VinVector& row : LoadVectors()) {
    if (row.check_digit == "na") {
      continue;
    }
    const std::string vin = NormalizeVin(row.vin);
    EXPECT_EQ(vin.size(), 17U) << row.vin;
    for (char c : vin) {
      EXPECT_TRUE(fusebox::gateway::IsVinChar(c)) << row.vin;
    }
  }
}

TEST(NormalizeVinTest, TrimsRemovesSpacesAndDashesAndUpperCases) {
  EXPECT_EQ(NormalizeVin("  1ftmw1t88-mfa 00001\t\n"), "1FTMW1T88MFA00001");
}

TEST(NormalizeVinTest, KeepsInnerControlCharacters) { EXPECT_EQ(NormalizeVin("1\n1"), "1\n1"); }

TEST(ComputeCheckDigitTest, ComputesTheIsoCheckDigit) {
  EXPECT_EQ(ComputeCheckDigit("1FTMW1T88MFA00001"), '8');
  EXPECT_EQ(ComputeCheckDigit("19XFC1F7XGE028370"), 'X');
}

TEST(ComputeCheckDigitTest, RefusesWrongLengthAndForeignCharacters) {
  EXPECT_EQ(ComputeCheckDigit("1FTMW1T88MFA0000"), std::nullopt);
  EXPECT_EQ(ComputeCheckDigit("1FTMW1T88MFA0000O"), std::nullopt);
}

TEST(ValidateVinTest, WrongCheckDigitDecodesWithMismatch) {
  const VinCheck check = ValidateVin("WBA3A5C51CF256987");
  EXPECT_TRUE(check.ok());
  EXPECT_EQ(check.check_digit, CheckDigit::kMismatch);
}

TEST(ValidateVinTest, ShortVinHasOneLengthProblemAtPositionZero) {
  const VinCheck check = ValidateVin("1J4GZB8S2T");
  ASSERT_EQ(check.problems.size(), 1U);
  EXPECT_EQ(check.problems[0].rule, "length");
  EXPECT_EQ(check.problems[0].position, 0);
  EXPECT_NE(check.problems[0].message.find("10"), std::string::npos);
}

TEST(ValidateVinTest, LetterOGetsTheOneOrZeroHintAtItsPosition) {
  const VinCheck check = ValidateVin("1FToX186XWKA10140");
  ASSERT_EQ(check.problems.size(), 1U);
  EXPECT_EQ(check.problems[0].rule, "charset");
  EXPECT_EQ(check.problems[0].position, 4);
  EXPECT_NE(
      check.problems[0].message.find("I, O and Q are never used in VINs; did you mean 1 or 0?"),
      std::string::npos);
}

TEST(ValidateVinTest, PunctuationIsACharsetProblem) {
  const VinCheck check = ValidateVin("WDBUH87J46#202412");
  ASSERT_EQ(check.problems.size(), 1U);
  EXPECT_EQ(check.problems[0].position, 11);
  EXPECT_NE(check.problems[0].message.find("'#'"), std::string::npos);
}

TEST(ValidateVinTest, PositionsCountCharactersNotBytes) {
  const VinCheck check = ValidateVin(
      "\xC3\xA9"
      "FTMW1T88MFA00001");  // é + 16
  ASSERT_EQ(check.problems.size(), 1U);
  EXPECT_EQ(check.problems[0].position, 1);
  EXPECT_NE(check.problems[0].message.find("U+00E9"), std::string::npos);
}

TEST(ValidateVinTest, EmptyInputIsALengthProblem) {
  const VinCheck check = ValidateVin("   ");
  ASSERT_EQ(check.problems.size(), 1U);
  EXPECT_EQ(check.problems[0].rule, "length");
}

TEST(ValidateVinTest, SegmentLongerThan64IsRefusedUnread) {
  const VinCheck check = ValidateVin(std::string(65, 'A'));
  ASSERT_EQ(check.problems.size(), 1U);
  EXPECT_EQ(check.problems[0].rule, "length");
  EXPECT_TRUE(check.vin.empty());
}

}  // namespace

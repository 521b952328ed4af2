// vPIC's pattern keys on their own (offline/vpic_pattern.h): the target a VIN is matched as, a
// key as a prefix with '*' and "[..]" sets and ranges, a key's specificity, and position 10's
// year codes.
#include "offline/vpic_pattern.h"

#include <gtest/gtest.h>

namespace {

using fusebox::gateway::KeyMatches;
using fusebox::gateway::PatternTarget;
using fusebox::gateway::Specificity;
using fusebox::gateway::YearCodeIndex;

TEST(PatternTargetTest, IsPositionsFourToEightABarAndTenOn) {
  EXPECT_EQ(PatternTarget("1FTMW1T88MFA00001"), "MW1T8|MFA00001");
  EXPECT_EQ(PatternTarget("1FTMW1T88M"), "MW1T8|M");
  EXPECT_EQ(PatternTarget("1FTMW1"), "MW1");  // a partial VIN gives what it has
  EXPECT_EQ(PatternTarget("1FT"), "");
}

TEST(KeyMatchesTest, MatchesAsAPrefixWithWildcards) {
  EXPECT_TRUE(KeyMatches("MW1T8|M", "MW1T8|MFA00001"));
  EXPECT_TRUE(KeyMatches("M*1", "MW1T8|MFA00001"));
  EXPECT_TRUE(KeyMatches("", "MW1T8"));
  EXPECT_FALSE(KeyMatches("MX", "MW1T8|MFA00001"));
  EXPECT_FALSE(KeyMatches("MW1T8|MFA000012", "MW1T8|MFA00001"));  // longer than the target
}

TEST(KeyMatchesTest, ASetMatchesOneCharacterOfItsMembersOrRanges) {
  EXPECT_TRUE(KeyMatches("MW1T[7-8]", "MW1T8"));
  EXPECT_TRUE(KeyMatches("MW1T[X8]", "MW1T8"));
  EXPECT_TRUE(KeyMatches("MW1T[A-C8]", "MW1T8"));
  EXPECT_FALSE(KeyMatches("MW1T[A-C]", "MW1T8"));
  EXPECT_FALSE(KeyMatches("MW1T[8", "MW1T8"));  // an unclosed set matches nothing
}

TEST(SpecificityTest, CountsPositionsThatAreNotWildcards) {
  EXPECT_EQ(Specificity("MW*T[7-8]|M"), 5);
  EXPECT_EQ(Specificity("*****|*"), 0);
  EXPECT_EQ(Specificity("MW1T8|MFA00001"), 13);
}

TEST(YearCodeIndexTest, FollowsTheThirtyYearCycleAndRefusesTheRest) {
  EXPECT_EQ(YearCodeIndex('A'), 0);
  EXPECT_EQ(YearCodeIndex('Y'), 20);
  EXPECT_EQ(YearCodeIndex('1'), 21);
  EXPECT_EQ(YearCodeIndex('9'), 29);
  for (char c : {'I', 'O', 'Q', 'U', 'Z', '0', '*'}) {
    EXPECT_EQ(YearCodeIndex(c), -1) << c;
  }
}

}  // namespace

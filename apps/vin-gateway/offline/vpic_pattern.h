// vin-gateway/offline/vpic_pattern.h
//
// vPIC's pattern keys: a Pattern.Keys value is matched, as a prefix, against VIN positions 4-8,
// '|', 10-17, with SQL LIKE's meaning of vPIC's '*' (any one character) and "[..]" (one character
// of a set or range, "[A-C]" or "[ABX]"). Of the keys that match, the most specific wins.
//
// Thread safety: pure functions. Time: none.
//
// Example:
//   PatternTarget("1FTMW1T88MFA00001")             // "MW1T8|MFA00001"
//   KeyMatches("MW*T[7-8]|M", "MW1T8|MFA00001")    // true
//   Specificity("MW*T[7-8]|M")                     // 5: M, W, T, [7-8], M
#pragma once

#include <string>
#include <string_view>

namespace fusebox::gateway {

// The string a VIN's patterns are matched against: positions 4-8, then '|' and positions 10-17
// when the VIN reaches position 10 (a shorter VIN gives what it has).
std::string PatternTarget(std::string_view vin);

// Whether `key` matches a prefix of `target` (PatternTarget).
bool KeyMatches(std::string_view key, std::string_view target);

// The key's positions that are not '*' (a "[..]" set counts as one position; the '|' between
// positions 8 and 10 is no position).
int Specificity(std::string_view key);

// Position 10's place in the 30-year model-year cycle (A=0 ... Y=20, 1=21 ... 9=29), or -1 for a
// character that is no year code.
int YearCodeIndex(char c);

}  // namespace fusebox::gateway

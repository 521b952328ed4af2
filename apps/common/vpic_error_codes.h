// common/vpic_error_codes.h
//
// NHTSA vPIC's decode error codes and their texts, worded as the real service words them (the
// recorded answers under apps/vpic-sim/data): the one table of both vpic-sim (which answers
// with them) and vin-gateway's offline decoder (which imitates them). Only the codes either
// program gives are listed.
//
// Thread safety: pure functions over constant data. Time: none.
//
// Example:
//   VpicErrorText(kVpicIncompleteVin)   // "6 - Incomplete VIN"
//   VpicErrorText(42)                   // "" (not in the table)
#pragma once

#include <string_view>

namespace fusebox::app {

// The codes either program gives, by name (vPIC's ErrorCode field).
inline constexpr int kVpicDecodedClean = 0;
inline constexpr int kVpicCheckDigitWrong = 1;
inline constexpr int kVpicIncompleteVin = 6;
inline constexpr int kVpicUnknownWmi = 7;  // the manufacturer is not registered with NHTSA
inline constexpr int kVpicNoDetailedData = 8;
inline constexpr int kVpicNoModelYearCode = 11;  // position 10 is no model-year code
inline constexpr int kVpicInvalidCharacters = 400;

// vPIC's Element ids that both programs name (the Element table; Variable ids in an answer).
inline constexpr int kVpicElementMake = 26;
inline constexpr int kVpicElementModel = 28;
inline constexpr int kVpicElementModelYear = 29;

// vPIC's text of one error code, "<code> - <text>"; empty for a code not in the table.
std::string_view VpicErrorText(int code);

}  // namespace fusebox::app

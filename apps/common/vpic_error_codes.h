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
//   VpicErrorText(6)              // "6 - Incomplete VIN"
//   VpicErrorText(42)             // "" (not in the table)
#pragma once

#include <string_view>

namespace fusebox::app {

// vPIC's text of one error code, "<code> - <text>"; empty for a code not in the table.
std::string_view VpicErrorText(int code);

}  // namespace fusebox::app

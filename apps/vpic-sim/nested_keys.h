// apps/vpic-sim/nested_keys.h
//
// vPIC's older nested answer (DecodeVin: Results is a list of {Value, ValueId, Variable,
// VariableId} rows) turned into the newest flat shape (DecodeVinValues: one row of string values
// keyed by short names such as "BodyCabType"). vpic-sim serves recordings that exist only in the
// nested shape this way (recordings.h).
//
// The table maps a VariableId to its flat key. vPIC renames variables over time but keeps their
// ids ("Wheel Base (inches)" in 2017, "Wheel Base (inches) From" later: both 111, WheelBaseShort),
// so the id is the key. It was derived from the two VINs the fixtures record in both shapes (see
// nested_keys.cc and tools/derive_nested_keys.py, which regenerates it).
//
// Conversion (FlattenNested):
//   - every key of `flat_keys` starts as "";
//   - "VIN" is the decoded VIN (the request's, normalized): vPIC's flat row always echoes it;
//   - a row whose VariableId is in the table sets that key to its Value (null -> "");
//   - MakeID and ModelID take the ValueId of Make (26) and Model (28), as the flat shape does;
//   - ManufacturerId has two sources, with a fixed precedence whatever the row order: the
//     "Manufacturer Id" variable (157, only the 2017 captures have it) when its Value is not
//     empty, else the ValueId of Manufacturer Name (27);
//   - the 2017 format, whose "Error Code" Value holds text ("0 - VIN decoded clean. ...") and
//     which has no "Error Text" (191) row: ErrorCode gets the code list (the row's ValueId, or the
//     leading digits of the text), ErrorText the text as recorded.
// Rows with an unknown VariableId are dropped; a variable recorded twice takes its last row.
//
// A recording its author cut down (rows deleted) is not a whole answer: FlattenNestedRecorded
// keeps only the keys that a row with a non-null Value sets (the id keys with their variable,
// ErrorText with a 2017 "Error Code" text), for laying over the synthetic decode.
//
// Thread safety: pure functions over constant data.
//
// Example:
//   boost::json::object row = FlattenNested(results, recordings.flat_keys(), "1GYDE63A740121151");
//   row["Model"];  // "SRX"
#pragma once

#include <span>
#include <string>
#include <string_view>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

namespace fusebox::vpic_sim {

struct NestedKey {
  int variable_id;
  std::string_view flat_key;
  // How the pairs decided it: "value" (the only key whose values agree in both pairs), "name"
  // (among the keys whose values agree, the one the variable's name spells), "hint" (among those,
  // the one vPIC's abbreviation names), "name*" (2017-only variable, by name alone).
  std::string_view evidence;
};

// The table, sorted by variable_id.
std::span<const NestedKey> NestedKeys();

// The flat key of a nested VariableId, or "" when the table has none.
std::string_view FlatKeyFor(int variable_id);

// True when `text` is a vPIC code list such as "0" or "1,4,14,400".
bool IsErrorCodeList(std::string_view text);

// The flat row for a nested `results` array (see the header comment). `flat_keys` fixes the
// keys and their order; keys outside it are not added.
boost::json::object FlattenNested(const boost::json::array& results,
                                  std::span<const std::string> flat_keys, std::string_view vin);

// Only the keys `results` records with a non-null Value, converted as FlattenNested does, in the
// order of `flat_keys` (no "VIN": the recording has no such variable).
boost::json::object FlattenNestedRecorded(const boost::json::array& results,
                                          std::span<const std::string> flat_keys);

// True when `results` is in the 2017 format (its "Error Code" Value is text, not a code list).
bool IsLegacyNested(const boost::json::array& results);

}  // namespace fusebox::vpic_sim

// apps/vpic-sim/vin_decoder.h
//
// The synthetic decode that vpic-sim gives every VIN without a recorded response. It follows the
// rules vPIC applies, so that a client sees the same error codes it would get from NHTSA:
//
//   input --trim ASCII whitespace, upper-case--> vin
//   400  a character outside 0-9 A-H J-N P R-Z, or anything past position 17
//        (AdditionalErrorText "Invalid character(s): 3:O, 9:!;")
//   6    fewer than 17 characters ("Incomplete VIN")
//   1    17 or more characters and the check digit (position 9) does not compute; the VIN is
//        still decoded
//   7    WMI (positions 1-3) not in the WMI table: nothing is decoded
//   11   position 10 is not a model-year code (or is missing and no modelyear was given)
//   0    none of the above
//
// Codes are listed ascending ("1,7,400") and ErrorText joins vPIC's texts with "; ".
// The model year comes from position 10 (A=2010 ... Y=2030, 1=2031 ... 9=2039, one 30-year
// cycle earlier when the position-7 rule says so): for cars, MPVs and light trucks a digit in
// position 7 means 1980-2009 and a letter 2010-2039. For other vehicles (and when position 7 is
// not a VIN character) the `modelyear` the client gave picks the cycle when it matches one, else
// the later year that is not after `reference_year + 1`.
//
// Thread safety: pure functions. Time: only `DecodeOptions::reference_year`, passed in.
//
// Example:
//   VinDecode d = DecodeVin(" 1ftmw1t88mfa00001 ", {.reference_year = 2026});
//   d.ErrorCode();   // "0"
//   *d.model_year;   // 2021
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "wmi_table.h"

namespace fusebox::vpic_sim {

struct DecodeOptions {
  // The client's `modelyear` (query parameter or batch ", year"); ignored outside 1980..2039.
  std::optional<int> model_year;
  // The current calendar year; decides the 30-year cycle for vehicles the position-7 rule does not
  // bind. Default 2026; valid range [1981, 2100] (clamped).
  int reference_year = 2026;
};

struct VinDecode {
  std::string vin;                    // the normalized input, echoed as "VIN"
  std::vector<int> error_codes;       // ascending; {0} when clean
  std::string additional_error_text;  // "Invalid character(s): ...;" when 400, else ""
  const WmiEntry* wmi = nullptr;      // null when the WMI is unknown (code 7)
  std::optional<int> model_year;      // unset when it cannot be decoded
  std::string vehicle_descriptor;     // positions 1-8, '*', positions 10-11 ("" when short)

  // "0", "6", "1,7,400" ...
  std::string ErrorCode() const;
  // vPIC's texts for the codes, joined with "; ".
  std::string ErrorText() const;
};

// Trims surrounding ASCII whitespace and upper-cases ASCII letters.
std::string NormalizeVin(std::string_view raw);

// True for the 33 characters a VIN may hold: 0-9 and A-Z without I, O, Q.
bool IsVinChar(char c);

// The ISO 3779 / 49 CFR 565.15(c) check digit ('0'-'9' or 'X') of a 17-character VIN, or nullopt
// when the VIN is not 17 characters or holds a character outside the VIN alphabet.
std::optional<char> ComputeCheckDigit(std::string_view vin);

// The year that a position-10 code names in the 2010-2039 cycle, or nullopt when `code` is not a
// model-year code (I, O, Q, U, Z and 0 are not).
std::optional<int> YearCode2010(char code);

// vPIC's text for one error code, e.g. "6 - Incomplete VIN" (empty for unknown codes).
std::string_view ErrorTextFor(int code);

// The synthetic decode of `raw` (the VIN as the client sent it, before normalization).
VinDecode DecodeVin(std::string_view raw, const DecodeOptions& options);

}  // namespace fusebox::vpic_sim

#include "common/vpic_error_codes.h"

namespace fusebox::app {

std::string_view VpicErrorText(int code) {
  switch (code) {
    case kVpicDecodedClean:
      return "0 - VIN decoded clean. Check Digit (9th position) is correct";
    case kVpicCheckDigitWrong:
      return "1 - Check Digit (9th position) does not calculate properly";
    case kVpicIncompleteVin:
      return "6 - Incomplete VIN";
    case kVpicUnknownWmi:
      return "7 - Manufacturer is not registered with NHTSA for sale or importation in the U.S. "
             "for use on U.S roads; Please contact the manufacturer directly for more information";
    case kVpicNoDetailedData:
      return "8 - No detailed data available currently";
    case kVpicNoModelYearCode:
      return "11 - Incorrect Model Year - Position 10 does not match valid model year codes (I, "
             "O, Q, U, Z, 0). Decoded data may not be accurate.";
    case kVpicInvalidCharacters:
      return "400 - Invalid Characters Present";
    default:
      return "";
  }
}

}  // namespace fusebox::app

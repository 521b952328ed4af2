#include "common/vpic_error_codes.h"

namespace fusebox::app {

std::string_view VpicErrorText(int code) {
  switch (code) {
    case 0:
      return "0 - VIN decoded clean. Check Digit (9th position) is correct";
    case 1:
      return "1 - Check Digit (9th position) does not calculate properly";
    case 6:
      return "6 - Incomplete VIN";
    case 7:
      return "7 - Manufacturer is not registered with NHTSA for sale or importation in the U.S. "
             "for use on U.S roads; Please contact the manufacturer directly for more information";
    case 8:
      return "8 - No detailed data available currently";
    case 11:
      return "11 - Incorrect Model Year - Position 10 does not match valid model year codes (I, "
             "O, Q, U, Z, 0). Decoded data may not be accurate.";
    case 400:
      return "400 - Invalid Characters Present";
    default:
      return "";
  }
}

}  // namespace fusebox::app

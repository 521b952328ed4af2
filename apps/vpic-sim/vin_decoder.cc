#include "vin_decoder.h"

#include <algorithm>
#include <array>
#include <cstddef>

#include "common/vpic_error_codes.h"

namespace fusebox::vpic_sim {
namespace {

constexpr std::size_t kVinLength = 17;
constexpr std::string_view kYearCodes = "ABCDEFGHJKLMNPRSTVWXY123456789";  // 2010 .. 2039
constexpr std::array<int, kVinLength> kWeights = {8, 7, 6, 5, 4, 3, 2, 10, 0,
                                                  9, 8, 7, 6, 5, 4, 3, 2};

bool IsAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }

// The transliteration value of a VIN character (49 CFR 565.15(c) Table IV).
int Transliterate(char c) {
  if (IsDigit(c)) {
    return c - '0';
  }
  static constexpr std::string_view kLetters = "ABCDEFGHJKLMNPRSTUVWXYZ";
  static constexpr std::array<int, 23> kValues = {1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4,
                                                  5, 7, 9, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::size_t at = kLetters.find(c);
  return at == std::string_view::npos ? 0 : kValues[at];
}

// How an invalid character is shown in AdditionalErrorText: printable ASCII as is, anything
// else as '?', so that the JSON stays valid UTF-8.
char Printable(char c) {
  const auto u = static_cast<unsigned char>(c);
  return (u >= 0x20 && u < 0x7f) ? c : '?';
}

std::optional<int> ResolveModelYear(const VinDecode& d, const DecodeOptions& options) {
  const std::string& vin = d.vin;
  const bool year_given =
      options.model_year && *options.model_year >= 1980 && *options.model_year <= 2039;
  const std::optional<int> late = vin.size() >= 10 ? YearCode2010(vin[9]) : std::nullopt;
  if (!late) {
    return year_given ? options.model_year : std::nullopt;
  }
  const int early = *late - 30;
  if (UsesPosition7Rule(d.wmi->vehicle_class)) {
    if (IsDigit(vin[6])) {
      return early;
    }
    if (IsVinChar(vin[6])) {
      return *late;
    }
  }
  if (year_given && (*options.model_year == early || *options.model_year == *late)) {
    return options.model_year;
  }
  const int horizon = std::clamp(options.reference_year, 1981, 2100) + 1;
  return *late <= horizon ? *late : early;
}

}  // namespace

std::string NormalizeVin(std::string_view raw) {
  while (!raw.empty() && IsAsciiSpace(raw.front())) {
    raw.remove_prefix(1);
  }
  while (!raw.empty() && IsAsciiSpace(raw.back())) {
    raw.remove_suffix(1);
  }
  std::string out(raw);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') {
      c = static_cast<char>(c - 'a' + 'A');
    }
  }
  return out;
}

bool IsVinChar(char c) { return IsDigit(c) || (IsUpper(c) && c != 'I' && c != 'O' && c != 'Q'); }

std::optional<char> ComputeCheckDigit(std::string_view vin) {
  if (vin.size() != kVinLength || !std::all_of(vin.begin(), vin.end(), IsVinChar)) {
    return std::nullopt;
  }
  int sum = 0;
  for (std::size_t i = 0; i < kVinLength; ++i) {
    sum += Transliterate(vin[i]) * kWeights[i];
  }
  const int remainder = sum % 11;
  return remainder == 10 ? 'X' : static_cast<char>('0' + remainder);
}

std::optional<int> YearCode2010(char code) {
  const std::size_t at = kYearCodes.find(code);
  if (at == std::string_view::npos) {
    return std::nullopt;
  }
  return 2010 + static_cast<int>(at);
}

std::string_view ErrorTextFor(int code) { return fusebox::app::VpicErrorText(code); }

std::string VinDecode::ErrorCode() const {
  std::string out;
  for (int code : error_codes) {
    if (!out.empty()) {
      out += ',';
    }
    out += std::to_string(code);
  }
  return out;
}

std::string VinDecode::ErrorText() const {
  std::string out;
  for (int code : error_codes) {
    if (!out.empty()) {
      out += "; ";
    }
    out += ErrorTextFor(code);
  }
  return out;
}

VinDecode DecodeVin(std::string_view raw, const DecodeOptions& options) {
  VinDecode d;
  d.vin = NormalizeVin(raw);
  const std::string& vin = d.vin;

  std::string invalid;
  for (std::size_t i = 0; i < vin.size(); ++i) {
    if (i >= kVinLength || !IsVinChar(vin[i])) {
      if (!invalid.empty()) {
        invalid += ", ";
      }
      invalid += std::to_string(i + 1);
      invalid += ':';
      invalid += Printable(vin[i]);
    }
  }
  for (char& c : d.vin) {
    c = Printable(c);
  }

  std::vector<int> codes;
  if (vin.size() >= kVinLength) {
    const std::optional<char> check =
        ComputeCheckDigit(std::string_view(vin).substr(0, kVinLength));
    if (!check || *check != vin[8]) {
      codes.push_back(fusebox::app::kVpicCheckDigitWrong);
    }
  } else {
    codes.push_back(fusebox::app::kVpicIncompleteVin);
  }
  const bool wmi_valid =
      vin.size() >= 3 && IsVinChar(vin[0]) && IsVinChar(vin[1]) && IsVinChar(vin[2]);
  d.wmi = wmi_valid ? FindWmi(vin) : nullptr;
  if (d.wmi == nullptr) {
    codes.push_back(fusebox::app::kVpicUnknownWmi);
  }
  const bool year_code_ok = vin.size() >= 10 && YearCode2010(vin[9]).has_value();
  const bool year_given =
      options.model_year && *options.model_year >= 1980 && *options.model_year <= 2039;
  if (vin.size() >= 10 ? !year_code_ok : !year_given) {
    codes.push_back(fusebox::app::kVpicNoModelYearCode);
  }
  if (!invalid.empty()) {
    codes.push_back(fusebox::app::kVpicInvalidCharacters);
    d.additional_error_text = "Invalid character(s): " + invalid + ";";
  }
  if (codes.empty()) {
    codes.push_back(fusebox::app::kVpicDecodedClean);
  }
  std::sort(codes.begin(), codes.end());
  d.error_codes = std::move(codes);

  if (vin.size() >= 11) {
    d.vehicle_descriptor = d.vin.substr(0, 8) + "*" + d.vin.substr(9, 2);
  }
  if (d.wmi != nullptr) {
    d.model_year = ResolveModelYear(d, options);
  }
  return d;
}

}  // namespace fusebox::vpic_sim

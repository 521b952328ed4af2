#include "core/vin.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace fusebox::gateway {
namespace {

bool IsAsciiSpace(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// Transliteration values of ISO 3779 (0 for characters that never appear in a VIN).
constexpr int Transliterate(char c) noexcept {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  switch (c) {
    case 'A':
    case 'J':
      return 1;
    case 'B':
    case 'K':
    case 'S':
      return 2;
    case 'C':
    case 'L':
    case 'T':
      return 3;
    case 'D':
    case 'M':
    case 'U':
      return 4;
    case 'E':
    case 'N':
    case 'V':
      return 5;
    case 'F':
    case 'W':
      return 6;
    case 'G':
    case 'P':
    case 'X':
      return 7;
    case 'H':
    case 'Y':
      return 8;
    case 'R':
    case 'Z':
      return 9;
    default:
      return 0;
  }
}

constexpr std::array<int, kVinLength> kWeights = {8, 7, 6, 5, 4, 3, 2, 10, 0,
                                                  9, 8, 7, 6, 5, 4, 3, 2};

// Length of the UTF-8 sequence that starts with `lead` (1 for ASCII and for stray bytes).
std::size_t SequenceLength(unsigned char lead) noexcept {
  if (lead >= 0xF0 && lead <= 0xF4) {
    return 4;
  }
  if (lead >= 0xE0) {
    return lead <= 0xEF ? 3 : 1;
  }
  if (lead >= 0xC2) {
    return 2;
  }
  return 1;
}

// Splits `s` into characters: whole UTF-8 sequences when well formed, single bytes otherwise.
std::vector<std::string_view> Characters(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t n = SequenceLength(static_cast<unsigned char>(s[i]));
    if (i + n > s.size()) {
      n = 1;
    }
    for (std::size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0U) != 0x80U) {
        n = 1;
        break;
      }
    }
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

// How a refused character is shown in a message: 'x' when printable ASCII, U+XXXX for other
// well-formed characters, byte 0xNN for a stray byte.
std::string Describe(std::string_view ch) {
  const auto lead = static_cast<unsigned char>(ch[0]);
  if (ch.size() == 1) {
    if (lead >= 0x20 && lead < 0x7F) {
      return fmt::format("'{}'", ch);
    }
    if (lead < 0x80) {
      return fmt::format("U+{:04X}", lead);
    }
    return fmt::format("byte 0x{:02X}", lead);
  }
  std::uint32_t cp = lead & (ch.size() == 2 ? 0x1FU : ch.size() == 3 ? 0x0FU : 0x07U);
  for (std::size_t k = 1; k < ch.size(); ++k) {
    cp = (cp << 6U) | (static_cast<unsigned char>(ch[k]) & 0x3FU);
  }
  return fmt::format("U+{:04X}", cp);
}

}  // namespace

std::string_view ToString(CheckDigit check_digit) noexcept {
  return check_digit == CheckDigit::kValid ? "valid" : "mismatch";
}

std::string VinCheck::Summary() const {
  if (problems.empty()) {
    return "";
  }
  if (problems.size() == 1) {
    return problems.front().message;
  }
  std::string out = problems.front().message;
  out += fmt::format(" ({} problems in all.)", problems.size());
  return out;
}

std::string NormalizeVin(std::string_view raw) {
  std::size_t begin = 0;
  std::size_t end = raw.size();
  while (begin < end && IsAsciiSpace(raw[begin])) {
    ++begin;
  }
  while (end > begin && IsAsciiSpace(raw[end - 1])) {
    --end;
  }
  // Written in place into a buffer of the largest size, then cut: no per-byte append. Through a
  // local pointer: a store through the string's own would make the compiler reload it per byte.
  std::string out(end - begin, '\0');
  char* const dst = out.data();
  const char* const src = raw.data();
  std::size_t n = 0;
  for (std::size_t i = begin; i < end; ++i) {
    const char c = src[i];
    dst[n] = (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
    n += (c != ' ' && c != '-') ? 1 : 0;
  }
  out.resize(n);
  return out;
}

namespace {

// By byte: its ISO 3779 value plus one for a VIN character (0 for anything else), so that one
// lookup both checks a character and weighs it.
constexpr std::array<std::uint8_t, 256> kVinCharValue = [] {
  std::array<std::uint8_t, 256> values{};
  for (int b = 0; b < 256; ++b) {
    const char c = static_cast<char>(b);
    const bool vin_char =
        (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z' && c != 'I' && c != 'O' && c != 'Q');
    values[static_cast<std::size_t>(b)] =
        vin_char ? static_cast<std::uint8_t>(Transliterate(c) + 1) : std::uint8_t{0};
  }
  return values;
}();

}  // namespace

bool IsVinChar(char c) noexcept { return kVinCharValue[static_cast<unsigned char>(c)] != 0; }

std::optional<char> ComputeCheckDigit(std::string_view vin) {
  if (vin.size() != kVinLength) {
    return std::nullopt;
  }
  int total = 0;
  for (std::size_t i = 0; i < kVinLength; ++i) {
    const int value = kVinCharValue[static_cast<unsigned char>(vin[i])];
    if (value == 0) {
      return std::nullopt;
    }
    total += (value - 1) * kWeights[i];
  }
  const int remainder = total % 11;
  return remainder == 10 ? 'X' : static_cast<char>('0' + remainder);
}

namespace {

// Position 9 against the digit the other sixteen give (a 17-character VIN of VIN characters).
CheckDigit CheckDigitOf(std::string_view vin) {
  const std::optional<char> expected = ComputeCheckDigit(vin);
  return (expected && *expected == vin[8]) ? CheckDigit::kValid : CheckDigit::kMismatch;
}

}  // namespace

VinCheck ValidateVin(std::string_view raw) {
  VinCheck check;
  if (raw.size() > kMaxVinSegment) {
    check.problems.push_back(
        {0, "length",
         fmt::format("A VIN has 17 characters; this input is {} bytes long.", raw.size())});
    return check;
  }
  check.vin = NormalizeVin(raw);
  // The usual input, 17 VIN characters, needs no split into UTF-8 sequences (a vector per
  // request on the hot path); anything else takes the general path and its precise problems.
  if (const std::optional<char> expected = ComputeCheckDigit(check.vin)) {
    check.check_digit = *expected == check.vin[8] ? CheckDigit::kValid : CheckDigit::kMismatch;
    return check;
  }
  const std::vector<std::string_view> chars = Characters(check.vin);
  if (chars.empty()) {
    check.problems.push_back({0, "length", "The VIN is empty; a VIN has 17 characters."});
    return check;
  }
  if (chars.size() != kVinLength) {
    check.problems.push_back(
        {0, "length", fmt::format("A VIN has 17 characters; this one has {}.", chars.size())});
  }
  for (std::size_t i = 0; i < chars.size(); ++i) {
    const std::string_view ch = chars[i];
    if (ch.size() == 1 && IsVinChar(ch[0])) {
      continue;
    }
    const int position = static_cast<int>(i) + 1;
    if (ch == "I" || ch == "O" || ch == "Q") {
      check.problems.push_back(
          {position, "charset",
           fmt::format("Position {} is '{}': I, O and Q are never used in VINs; did you mean 1 or "
                       "0?",
                       position, ch)});
    } else {
      check.problems.push_back(
          {position, "charset",
           fmt::format("Position {} is {}, which is never used in VINs (only 0-9 and A-Z without "
                       "I, O, Q).",
                       position, Describe(ch))});
    }
  }
  if (check.ok()) {
    check.check_digit = CheckDigitOf(check.vin);
  }
  return check;
}

}  // namespace fusebox::gateway

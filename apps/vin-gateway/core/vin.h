// vin-gateway/core/vin.h
//
// VIN normalization and local validation: the first step of every decode. The gateway refuses
// locally only what vPIC could never decode (docs/http-api.md), so that a bad paste never reaches
// the upstream, the breaker or any shared budget, and never counts as an upstream failure:
//
//   raw path segment --NormalizeVin--> trimmed, inner spaces and dashes removed, upper-cased
//     --ValidateVin--> 17 characters from 0-9 A-H J-N P R-Z, else VIN_INVALID with problems
//
// Nothing else is a local rejection. A check digit that does not compute (real European VINs and
// NHTSA-listed OEM errors fail it) is reported as `CheckDigit::kMismatch` and decoded normally; an
// unusual model-year character is left to vPIC.
//
// Positions are 1-based and count characters (UTF-8 code points), not bytes; position 0 means the
// whole VIN. Input is untrusted: every byte sequence is handled, none asserts.
//
// Thread safety: pure functions. Time: none.
//
// Example:
//   fusebox::gateway::VinCheck check = fusebox::gateway::ValidateVin(" 1ftmw1t88-mfa00001 ");
//   if (!check.ok()) return Invalid(check.problems);   // 422 VIN_INVALID
//   Decode(check.vin, check.check_digit);              // "1FTMW1T88MFA00001", kValid
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fusebox::gateway {

// A VIN segment longer than this is refused (rule `length`) before any other work.
inline constexpr std::size_t kMaxVinSegment = 64;
inline constexpr std::size_t kVinLength = 17;
// A batch decode holds 1 to this many VINs (the batch route's limit; the default client burst
// is at least this, so that a fresh client's bucket admits one whole batch).
inline constexpr std::size_t kMaxBatchVins = 50;

enum class CheckDigit { kValid, kMismatch };

// "valid", "mismatch".
std::string_view ToString(CheckDigit check_digit) noexcept;

// One reason a VIN was refused.
struct VinProblem {
  int position = 0;  // 1-based character position; 0 for the whole VIN
  std::string rule;  // "length" or "charset"
  std::string message;

  friend bool operator==(const VinProblem&, const VinProblem&) = default;
};

// The verdict on one input.
struct VinCheck {
  std::string vin;                                 // the normalized VIN (may be invalid)
  std::vector<VinProblem> problems;                // empty when the VIN may go upstream
  CheckDigit check_digit = CheckDigit::kMismatch;  // meaningful only when ok()

  bool ok() const noexcept { return problems.empty(); }
  // A human sentence summing up the problems ("" when ok()).
  std::string Summary() const;
};

// Trims surrounding ASCII whitespace, removes inner spaces and dashes, upper-cases ASCII letters.
// Other bytes are kept as they are (and then refused by ValidateVin).
std::string NormalizeVin(std::string_view raw);

// Whether `c` may appear in a VIN: 0-9 and A-Z except I, O, Q (upper case only).
bool IsVinChar(char c) noexcept;

// The ISO 3779 / 49 CFR 565.15(c) check digit ('0'-'9' or 'X') of a 17-character VIN made of
// VIN characters; nullopt for anything else.
std::optional<char> ComputeCheckDigit(std::string_view vin);

// Normalizes `raw` and validates it. Inputs longer than kMaxVinSegment bytes are refused with one
// `length` problem without being normalized.
VinCheck ValidateVin(std::string_view raw);

}  // namespace fusebox::gateway

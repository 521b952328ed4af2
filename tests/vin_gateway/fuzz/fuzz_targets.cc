#include "vin_gateway/fuzz/fuzz_targets.h"

#include <string>
#include <string_view>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "core/answer_json.h"
#include "core/decode.h"
#include "core/decode_answer.h"
#include "core/vin.h"
#include "core/vpic_parser.h"

namespace fusebox::gateway::fuzz {
namespace {

void Check(bool condition) {
  if (!condition) {
    __builtin_trap();
  }
}

}  // namespace

int VinNormalizer(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const VinCheck check = ValidateVin(input);
  if (check.ok()) {
    Check(check.vin.size() == kVinLength);
    for (char c : check.vin) {
      Check(IsVinChar(c));
    }
    Check(NormalizeVin(check.vin) == check.vin);  // idempotent
  }
  for (const VinProblem& p : check.problems) {
    Check(p.position >= 0 && static_cast<std::size_t>(p.position) <= check.vin.size());
    Check(p.rule == "length" || p.rule == "charset");
  }
  DecodeAnswer answer;
  answer.status = check.ok() ? DecodeStatus::kOk : DecodeStatus::kVinInvalid;
  answer.vin = check.vin;
  answer.problems = check.problems;
  answer.message = check.Summary();
  const std::string body = boost::json::serialize(AnswerJson(answer));
  boost::system::error_code ec;
  (void)boost::json::parse(body, ec);
  Check(!ec);
  Check(SanitizeUtf8(body) == body);
  return 0;
}

int VpicParser(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto parsed = ParseVpic(input);
  if (!parsed) {
    return 0;
  }
  for (const VpicRow& row : parsed->rows) {
    for (std::string_view key : kRequiredVehicleKeys) {
      Check(row.vehicle.contains(key));
    }
    for (const auto& [key, value] : row.vehicle) {
      Check(SnakeCase(key) == key || key.empty());
      if (!value.empty()) {
        Check(value.front() != ' ' && value.back() != ' ');
      }
    }
  }
  return 0;
}

}  // namespace fusebox::gateway::fuzz

// vin-gateway/core/vpic_parser.h
//
// Reads what vPIC answers and turns it into the gateway's `vehicle` map. The classifier's rule
// (docs/http-api.md) is: any parseable vPIC answer is a success, however sparse, with its ErrorCode
// set passed through as `upstream_codes`; a body that is not vPIC JSON is an upstream failure. So
// the parser is strict about shape and lenient about content, and it bounds what it keeps, so
// that a hostile or broken upstream (30,000 fields in a body just under the 1 MiB cap) cannot
// inflate the cache or the memory of the gateway:
//
//   body --not JSON-------------------------------------------> kNotJson
//        --JSON without a "Results" array of objects ----------> kNotVpic
//        --flat rows (DecodeVinValues, ...Batch, ...Extended) --> one VpicRow per row
//        --variable rows (DecodeVin: {Variable, Value}) --------> one VpicRow
//
// Each row's fields become snake_case keys (`PlantCity` -> `plant_city`, `Plant City` ->
// `plant_city`, `Manufacturer Name` -> `manufacturer`), values trimmed, empty and null values
// dropped, except that make, model, model_year, manufacturer, vehicle_type and body_class are
// always present (possibly ""). `vin` is the VIN the upstream says it decoded (the row's VIN,
// else the SearchCriteria), for the gateway's echo check. The ErrorCode value ("0", "1,7,400",
// or the 2017-era "0 - VIN decoded clean...") becomes the list of its leading integers.
//
// The bounds of one row (docs/gateway.md, "Limits"; real vPIC rows have about 150 fields, values
// under 400 bytes and under 2 KiB of non-empty text):
//   - keys longer than kMaxFieldKeyBytes are dropped;
//   - values longer than kMaxFieldValueBytes are cut (at a UTF-8 character boundary);
//   - at most kMaxVehicleFields fields, holding at most kMaxVehicleTextBytes of keys and values
//     (as JSON-escaped text); fields past either bound are dropped, in the upstream's order,
//     except the required keys, `vin` and `error_code`, which are always kept;
//   - at most kMaxUpstreamCodes error codes.
//
// Thread safety: pure functions. Time: none. Input is untrusted; nothing asserts or throws.
//
// Example:
//   auto answer = fusebox::gateway::ParseVpic(body);
//   if (!answer) return Outcome::kFailure;               // not vPIC JSON
//   const VpicRow& row = answer->rows.front();
//   row.vehicle.at("make");                              // "FORD"
//   row.upstream_codes;                                  // {0}
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "fusebox/status.h"

namespace fusebox::gateway {

// snake_case key -> trimmed value.
using Vehicle = std::map<std::string, std::string, std::less<>>;

// The keys every `vehicle` has (docs/http-api.md).
inline constexpr std::string_view kRequiredVehicleKeys[] = {
    "make", "model", "model_year", "manufacturer", "vehicle_type", "body_class"};

// The bounds of one row (see above).
inline constexpr std::size_t kMaxVehicleFields = 256;
inline constexpr std::size_t kMaxFieldKeyBytes = 64;
inline constexpr std::size_t kMaxFieldValueBytes = 1024;
inline constexpr std::size_t kMaxVehicleTextBytes = std::size_t{16} * 1024;
inline constexpr std::size_t kMaxUpstreamCodes = 32;

struct VpicRow {
  std::string vin;                  // the VIN the row answers for, trimmed and upper-cased
  std::vector<int> upstream_codes;  // ErrorCode as integers, e.g. {1, 7, 400}
  Vehicle vehicle;
};

struct VpicAnswer {
  std::vector<VpicRow> rows;
};

enum class VpicParseError : std::uint8_t { kNotJson, kNotVpic };

// "NOT_JSON", "NOT_VPIC".
std::string_view ToString(VpicParseError error) noexcept;

fusebox::Result<VpicAnswer, VpicParseError> ParseVpic(std::string_view body);

// `PlantCity` -> `plant_city`, `ModelID` -> `model_id`, `BatteryKWh_to` -> `battery_kwh_to`,
// `CAN_AACN` -> `can_aacn`, `NCSABodyType` -> `ncsa_body_type`.
std::string SnakeCase(std::string_view key);

// `Plant City` -> `plant_city`, `Base Price ($)` -> `base_price`, `Fuel Type - Primary` ->
// `fuel_type_primary` (the variable names of DecodeVin's unflattened rows).
std::string SnakeCaseLabel(std::string_view label);

// The leading comma-separated integers of an ErrorCode value: "1,7,400" -> {1, 7, 400},
// "0 - VIN decoded clean" -> {0}, "" -> {}; at most kMaxUpstreamCodes of them.
std::vector<int> ParseErrorCodes(std::string_view value);

}  // namespace fusebox::gateway

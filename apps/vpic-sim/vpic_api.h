// apps/vpic-sim/vpic_api.h
//
// vPIC's HTTP surface, without the network: routes a request to one of the three decode endpoints
// and builds the answer vPIC would give: the recording's answer when the input is recorded
// (recordings.h: flat bytes, a batch row, a converted nested recording, or the keys of an excerpt
// or a cut-down stub over the synthetic decode), otherwise the synthetic decode of vin_decoder.h in
// the newest flat shape.
//
//   GET  /api/vehicles/DecodeVinValues/{vin}?format=json[&modelyear=YYYY]
//   GET  /api/vehicles/DecodeVinValuesExtended/{vin}?format=json[&modelyear=YYYY]
//   POST /api/vehicles/DecodeVINValuesBatch/   body DATA=vin[,year];vin...&format=json (<= 50)
//
// Paths and parameter names are case-insensitive, like vPIC's (ASP.NET) routing; the VIN segment
// and the form are percent-decoded. Every decode answers HTTP 200, invalid VINs included (the
// problem is in ErrorCode). Any other path answers 404 with vPIC's error body
// (`{"message": ..., "messageDetail": ...}`); a known path with the wrong method answers 405; a
// batch of more than 50 VINs answers 400. The answer is always JSON (the `format` parameter is
// accepted and ignored).
//
// Thread safety: const after construction; Handle may be called concurrently.
//
// Example:
//   VpicApi api(recordings, {.reference_year = 2026});
//   ApiResponse r = api.Handle({.method = "GET",
//                               .target = "/api/vehicles/decodevinvalues/1FTMW1T88MFA00001"});
//   // r.status == 200, r.body is the recorded response
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>

#include "recordings.h"
#include "vin_decoder.h"

namespace fusebox::vpic_sim {

inline constexpr std::size_t kMaxBatchVins = 50;

struct ApiRequest {
  std::string_view method;  // "GET", "POST", ...
  std::string_view target;  // path and query, as received
  std::string_view body;    // the form body for the batch endpoint
};

struct ApiResponse {
  unsigned status = 200;
  std::string body;
  std::string content_type = "application/json; charset=utf-8";
  std::string allow;  // for 405: the allowed method
};

// Which endpoint a target names; nullopt for anything else. Used for per-endpoint counts before
// the request is answered (a fault may answer it instead).
std::optional<Endpoint> RouteOf(std::string_view target);

struct ApiOptions {
  // See DecodeOptions::reference_year. Default 2026, range [1981, 2100].
  int reference_year = 2026;
};

class VpicApi {
 public:
  VpicApi(const Recordings& recordings, ApiOptions options);

  ApiResponse Handle(const ApiRequest& request) const;

  // The synthetic flat row of one VIN (every key of the newest flat shape, all strings).
  boost::json::object SyntheticRow(std::string_view raw_vin, std::optional<int> model_year,
                                   bool extended) const;

 private:
  ApiResponse Single(Endpoint endpoint, std::string_view raw_vin, std::string_view query) const;
  ApiResponse Batch(std::string_view body) const;
  ApiResponse NotFound(std::string_view target) const;

  const Recordings& recordings_;
  ApiOptions options_;
};

// Percent-decodes `text` ('+' as a space when `form` is true). Malformed escapes stay as they are.
std::string PercentDecode(std::string_view text, bool form);

// The value of parameter `name` (case-insensitive) in an `a=1&b=2` string, percent-decoded with
// '+' as space; nullopt when absent.
std::optional<std::string> FormValue(std::string_view form, std::string_view name);

// A `modelyear` value: 4 digits in [1900, 2100], else nullopt (vPIC ignores other values).
std::optional<int> ParseModelYear(std::string_view text);

}  // namespace fusebox::vpic_sim

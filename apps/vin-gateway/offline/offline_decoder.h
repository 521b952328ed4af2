// vin-gateway/offline/offline_decoder.h
//
// Decodes VINs from a snapshot of NHTSA's own vPIC database (the "lite" edition as SQLite, which
// scripts/install-deps.sh puts in var/vpic/vpic.lite.db), without any network call: the answer
// the gateway gives when vPIC cannot be asked (docs/offline-decode.md).
//
// The rules are vPIC's pattern decoding, read from the database's tables:
//   - WMI: VIN positions 1-3, or 1-3 plus 12-14 when position 3 is '9' (small manufacturers);
//     unknown WMI -> vPIC's error code 7, nothing else decoded.
//   - model year: the caller's, else position 10 on the 30-year cycle, the cycle chosen by
//     position 7 (digit: 1980-2009, letter: 2010-2039 first) for passenger cars, MPVs and
//     trucks, and for every other type the latest cycle not past next year first; of these
//     candidates the first for which the WMI has a VIN schema.
//   - VIN schemas: those Wmi_VinSchema links to the WMI for that year.
//   - patterns: each Pattern.Keys is matched, as a prefix, against positions 4-8, '|', 10-17;
//     '*' matches any one character, "[..]" one character of a set or range. Per element the most
//     specific matching key wins (most positions that are not '*'), then the newest pattern.
//   - values: lookup elements through their lookup table (Make, Model, BodyStyle, ...), Make
//     from the model's make when no pattern names it, else from the WMI; displacement in the
//     other units through the Conversion table.
//   - error codes: 0 clean, 1 check digit, 6 incomplete VIN, 7 unknown WMI, 8 no detailed data,
//     11 no model-year code at position 10, 400 invalid characters.
//
// The result is the live path's decode model (core/decode.h): the same snake_case `vehicle` keys
// a flat vPIC answer gives (`make`, `model`, `model_year`, `body_class`, `plant_country`,
// `displacement_l`, ...), vPIC's codes as `upstream_codes`, and `fetched_at` = the snapshot date.
//
// Open reads the whole decoding data into memory once (vpic_snapshot.h: about 330k pattern keys)
// and closes the file; Decode touches no file and allocates only its answer.
//
// Thread safety: Decode and snapshot_date are const and safe from any number of threads.
// Time: Decode never blocks; Open takes about a second (docs/benchmarks.md).
//
// Example:
//   auto decoder = fusebox::gateway::OfflineDecoder::Open("var/vpic/vpic.lite.db");
//   if (!decoder) return Fail(decoder.error().message);   // missing, not SQLite, wrong schema
//   Decode d = decoder->Decode("1FTMW1T88MFA00001", std::nullopt);
//   d.vehicle.at("model");                                  // "F-150"
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/decode.h"
#include "fusebox/status.h"
#include "offline/vpic_snapshot.h"

namespace fusebox::gateway {

class OfflineDecoder {
 public:
  // Opens `path` read-only, loads the decoding data, closes the file.
  static fusebox::Result<OfflineDecoder, OfflineOpenFailure> Open(const std::string& path);

  OfflineDecoder(OfflineDecoder&&) noexcept;
  OfflineDecoder& operator=(OfflineDecoder&&) noexcept;
  ~OfflineDecoder();

  // Decodes `vin` (normalized by the caller; any bytes are accepted, and a partial VIN with '*'
  // placeholders decodes as far as its known positions allow). `model_year` overrides position
  // 10 as vPIC's `modelyear` parameter does.
  fusebox::gateway::Decode Decode(std::string_view vin, std::optional<int> model_year) const;

  // The snapshot's date, "YYYY-MM-DD": the latest ProcessedOn of the WMI table, the day NHTSA
  // last processed a manufacturer's submission into this data.
  const std::string& snapshot_date() const noexcept;

 private:
  explicit OfflineDecoder(std::unique_ptr<const VpicSnapshot> snapshot);
  std::unique_ptr<const VpicSnapshot> snapshot_;
};

}  // namespace fusebox::gateway

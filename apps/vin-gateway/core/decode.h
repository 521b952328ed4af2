// vin-gateway/core/decode.h
//
// One successful decode, as the gateway stores it (cache) and serves it (`vehicle`,
// `upstream_codes`, `fetched_at`). A decode is immutable once made; requests share it through a
// `std::shared_ptr<const Decode>` (single-flight hands one copy to every waiter).
//
// The cache stores it as a small JSON document (`SerializeDecode`), so that every cache backend
// (memory, SQLite, later redis) holds the same bytes.
//
// Thread safety: pure functions; a Decode is a value. Time: `fetched_at` is wall-clock time
// (it is shown to users as RFC 3339 and compared with the cache TTL), supplied by the caller.
//
// Example:
//   Decode d{.vin = row.vin, .vehicle = row.vehicle, .upstream_codes = row.upstream_codes,
//            .fetched_at = wall_clock.Now()};
//   co_await cache.Put(CacheKey(d.vin, d.model_year), {SerializeDecode(d), d.fetched_at});
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/vpic_parser.h"
#include "core/wall_clock.h"

namespace fusebox::gateway {

struct Decode {
  std::string vin;     // the normalized VIN asked for
  int model_year = 0;  // the `modelyear` asked for; 0 when none
  Vehicle vehicle;
  std::vector<int> upstream_codes;
  WallTime fetched_at{};
};

using DecodePtr = std::shared_ptr<const Decode>;

// The cache key: the normalized VIN, plus "@YYYY" when a model year was asked for.
std::string CacheKey(std::string_view vin, int model_year);

// The most a stored form can hold: a decode's vehicle is bounded by the parser (at most
// kMaxVehicleFields fields and kMaxVehicleTextBytes of text, core/vpic_parser.h), which puts its
// stored form under 19 KiB; anything larger in a cache was not written by this gateway.
inline constexpr std::size_t kMaxStoredDecodeBytes = std::size_t{20} * 1024;

// The stored form (JSON) and back. Deserialize returns nullopt for anything it did not write
// (and for anything larger than kMaxStoredDecodeBytes, unread).
std::string SerializeDecode(const Decode& decode);
std::optional<Decode> DeserializeDecode(std::string_view text);

// Replaces every invalid UTF-8 sequence with U+FFFD, so that anything echoed from untrusted
// input can go into a JSON string.
std::string SanitizeUtf8(std::string_view s);

}  // namespace fusebox::gateway

// apps/vpic-sim/recordings.h
//
// The recorded vPIC responses that vpic-sim serves (see data/README.md). Every input the fixtures
// record answers from its recording:
//   - flat recordings (DecodeVinValues, DecodeVinValuesExtended, DecodeVINValuesBatch) are served
//     byte for byte: the recorded file itself, or, for files that wrap the response in capture
//     metadata (`{"url": ..., "content": {...}}`), the exact bytes of the `content` value;
//   - a VIN recorded only as a row of a batch answers a single decode with that row as recorded
//     (Count 1, the newest Message, SearchCriteria "VIN(s): <VIN>", as vPIC writes a single
//     decode). When two batch captures hold it, the newest (last in the table) wins;
//   - a VIN recorded only in the nested DecodeVin shape answers with that recording converted to
//     the newest flat shape (nested_keys.h), in the same single-decode envelope;
//   - a VIN whose recording is partial (an excerpt: a blog post that elided keys; or a nested
//     test stub its author cut down to a few rows) answers with the synthetic decode, each key
//     the recording holds with a non-null value overriding the synthetic one (VpicApi does the
//     overlay): a cut-down stub is not a whole answer, so the keys it dropped are not "".
// A recording whose error codes describe an input other than the VIN it is filed under (the
// hand-edited vinfly stub api_response_wrong_vin.json) is not served at all: that VIN gets the
// synthetic decode.
// A flat single recording wins over a batch row, which wins over a nested or partial one.
//
// Matching, done on the normalized VIN (trimmed, upper-cased):
//   - single decodes: same endpoint and VIN, and a model year that fits: a recording made with
//     `modelyear=Y` answers requests for Y; one made without answers requests without a year or
//     with a year no other recording has; one made with a year also answers requests without one
//     when no recording without a year exists. DecodeVinValuesExtended falls back to the plain
//     DecodeVinValues recording of the same VIN (same keys, NCSA fields left empty).
//   - batches: a DATA field equal to a recorded one byte for byte gets that recording; one equal
//     after normalization (items trimmed and upper-cased) gets the newest recording of it.
//   - 404: a request target equal to a recorded one gets the recorded error body.
// The newest recorded flat row (the one with the most keys) fixes the key order of synthetic
// decodes and of converted nested recordings.
//
// Thread safety: immutable after Load(); all const members may be called concurrently.
//
// Example:
//   auto recordings = Recordings::Load(EmbeddedFiles());
//   if (!recordings) { return Fail(recordings.error()); }
//   const Recording* r = recordings->FindSingle(Endpoint::kDecodeVinValues, "3VV3B7AXXNM077525",
//                                               std::nullopt);
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "embedded_files.h"
#include "fusebox/status.h"

namespace fusebox::vpic_sim {

enum class Endpoint : std::uint8_t {
  kDecodeVinValues,
  kDecodeVinValuesExtended,
  kDecodeVinValuesBatch,
};

// "DecodeVinValues", "DecodeVinValuesExtended", "DecodeVINValuesBatch" (vPIC's spelling).
std::string_view ToString(Endpoint endpoint);

// Where a recording's answer comes from.
enum class Origin : std::uint8_t {
  kFlat,      // a flat recording, served byte for byte
  kBatchRow,  // one row of a recorded batch, served alone as a single decode
  kNested,    // a nested DecodeVin recording, converted to the newest flat shape
  kExcerpt,   // an excerpt: `first_row` holds the recorded keys only; `body` is empty
  kCutDown,   // a cut-down nested recording: `first_row` holds the converted keys whose recorded
              // Value is not null (FlattenNestedRecorded); `body` is empty
};

// True for the origins whose `first_row` is laid over the synthetic decode (kExcerpt, kCutDown)
// instead of being the whole answer.
bool OverlaysSynthetic(Origin origin);

struct Recording {
  std::string_view fixture;  // path under data/, e.g. "cvrsor-vinfly/api_response.json"
  Origin origin = Origin::kFlat;
  // kNested, kCutDown: the 2017 format, whose "Error Code" holds text (split into ErrorCode and
  // ErrorText).
  bool legacy_format = false;
  Endpoint endpoint = Endpoint::kDecodeVinValues;
  std::string vin;                // single decodes: the normalized VIN
  std::optional<int> model_year;  // single decodes: the recorded `modelyear`, if any
  std::string batch_data;         // batches: the recorded DATA field, as sent
  std::string body;               // the response bytes (kFlat: exactly as recorded)
  boost::json::object first_row;  // Results[0] of the body (the row a batch reuses)
};

class Recordings {
 public:
  // Indexes the recordings named in recordings.cc among `files`. Fails, naming the fixture, when
  // one is missing or not the JSON (or excerpt) it should be.
  static Result<Recordings, ConfigError> Load(std::span<const EmbeddedFile> files);

  const Recording* FindSingle(Endpoint endpoint, std::string_view vin,
                              std::optional<int> model_year) const;
  const Recording* FindBatch(std::string_view raw_data) const;
  // The recorded 404 body for exactly this request target, or nullptr.
  const std::string* FindNotFound(std::string_view target) const;

  // The keys of the newest flat shape, in vPIC's order.
  const std::vector<std::string>& flat_keys() const { return flat_keys_; }
  // vPIC's success Message of that shape.
  const std::string& message() const { return message_; }
  const std::vector<Recording>& all() const { return recordings_; }

  // Canonical form of a batch DATA field: items split on ';', VIN trimmed and upper-cased, year
  // trimmed, empty items dropped, joined with ';'.
  static std::string NormalizeBatchData(std::string_view data);

 private:
  std::vector<Recording> recordings_;
  std::vector<std::pair<std::string, std::string>> not_found_;  // target, body
  std::vector<std::string> flat_keys_;
  std::string message_;

  bool HasExact(std::string_view vin, std::optional<int> model_year) const;
  std::string SingleBody(const boost::json::object& row, std::string_view vin) const;

  // Load's steps, one per fixture table of recordings.cc; each fails naming the fixture.
  std::optional<ConfigError> AddSingles(std::span<const EmbeddedFile> files);
  std::optional<ConfigError> AddBatches(std::span<const EmbeddedFile> files);
  std::optional<ConfigError> AddBatchRows();
  std::optional<ConfigError> AddNested(std::span<const EmbeddedFile> files);
  std::optional<ConfigError> AddExcerpts(std::span<const EmbeddedFile> files);
  std::optional<ConfigError> AddNotFounds(std::span<const EmbeddedFile> files);
};

// The bytes of the top-level member `key` of the JSON object in `text` (the value exactly as
// written, whitespace inside it included), or nullopt when `text` is not an object holding `key`.
std::optional<std::string_view> RawMember(std::string_view text, std::string_view key);

}  // namespace fusebox::vpic_sim

#include "recordings.h"

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <system_error>
#include <utility>

#include <boost/json/array.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include "nested_keys.h"
#include "vin_decoder.h"

namespace fusebox::vpic_sim {
namespace {

// What each served fixture answers. Later batch entries are newer captures of the same request.
struct SingleSpec {
  std::string_view fixture;
  Endpoint endpoint;
  std::string_view vin;
  std::optional<int> model_year;
};

constexpr SingleSpec kSingles[] = {
    {"davidpeckham-vpic-api/decode-vin.json", Endpoint::kDecodeVinValues, "1FTMW1T88MFA00001",
     std::nullopt},
    {"davidpeckham-vpic-api/decode-vin-with-modelyear.json", Endpoint::kDecodeVinValues,
     "1FTMW1T88MFA00001", 2021},
    {"davidpeckham-vpic-api/decode-vin-extended.json", Endpoint::kDecodeVinValuesExtended,
     "1FTMW1T88MFA00001", 2021},
    {"davidpeckham-vpic-api/decode-partial-vin.json", Endpoint::kDecodeVinValues, "5UXWX7C5*BA",
     2011},
    {"Composite-Solutions-laravel-nhtsa/WBA3A5C51CF256987.decodevinvalues.json",
     Endpoint::kDecodeVinValues, "WBA3A5C51CF256987", std::nullopt},
    {"cfjedimaster-raymondcamden2023/3VV3B7AXXNM077525.decodevinvalues.json",
     Endpoint::kDecodeVinValues, "3VV3B7AXXNM077525", std::nullopt},
    {"ShaggyTech-nhtsa-api-wrapper/decode-vin-values.response.json", Endpoint::kDecodeVinValues,
     "WA1A4AFY2J2008189", std::nullopt},
    {"ShaggyTech-nhtsa-api-wrapper/decode-vin-values-extended.response.json",
     Endpoint::kDecodeVinValuesExtended, "WA1A4AFY2J2008189", std::nullopt},
};

struct BatchSpec {
  std::string_view fixture;
  std::string_view data;  // the DATA field as the recording's client sent it
};

constexpr BatchSpec kBatches[] = {
    {"davidpeckham-vpic-api/decode-vin-batch.json", "5UXWX7C5*BA,2011;5YJSA3DS*EF"},
    {"ShaggyTech-nhtsa-api-wrapper/decode-vin-values-batch.response.json",
     "5UXWX7C5*BA,2011; 5YJSA3DS*EF"},
};

// Recordings in the nested DecodeVin shape of VINs that have no flat recording (nested_keys.h).
// A whole recording is served converted; one its author cut down (MANIFEST.md: "cut down") is laid
// over the synthetic decode, like an excerpt. The nested captures of 1FTMW1T88MFA00001 and
// WA1A4AFY2J2008189 are not listed: their flat captures of the same request are served (and the
// two shapes agree, see tests/vpic_sim/nested_keys_test.cc).
// cvrsor-vinfly/api_response_wrong_vin.json is not listed either: its author cut it down and
// hand-edited it, and its codes (6,7,11,400; "Invalid character(s): 3:O;") describe an input
// that is not 1AKJHHDR3KSKX6689, the VIN the spec sends with it (17 VIN characters, no O).
// That VIN gets the synthetic decode.
struct NestedSpec {
  std::string_view fixture;
  std::string_view vin;  // normalized
  std::optional<int> model_year;
  bool cut_down = false;
};

constexpr NestedSpec kNested[] = {
    {"davidpeckham-vpic-api/decode-partial-vin-unflattened.json", "1FA6P8C0!M!100001", 2021},
    {"barclay-nhtsa_vin/success.json", "1GYDE63A740121151", std::nullopt},
    {"barclay-nhtsa_vin/not_found.json", "TACOS", std::nullopt},
    // Cut down by their author, to 13 and to 3 rows.
    {"cvrsor-vinfly/api_response.json", "3AKJHHDR3KSKX6689", std::nullopt, true},
    {"cvrsor-vinfly/api_response_brief.json", "3AKJHHDR1KSKX6688", std::nullopt, true},
};

// Excerpts: the recorded keys of a flat answer whose other keys the author elided. Lines of
// `"Key": "Value",` between `{` and `}`; `//` comment lines are skipped.
struct ExcerptSpec {
  std::string_view fixture;
  std::string_view vin;  // normalized
};

constexpr ExcerptSpec kExcerpts[] = {
    {"cfjedimaster-raymondcamden2023/999999999993VV3B7AXXNM077525.excerpt.js.txt",
     "999999999993VV3B7AXXNM077525"},
};

struct NotFoundSpec {
  std::string_view fixture;
  std::string_view target;
};

constexpr NotFoundSpec kNotFounds[] = {
    {"cvrsor-vinfly/api_response_http_error_code.json",
     "/api/vehicles/wrong-api-endpoint/1AKJHHDR3KSKX6689?format=json"},
};

// ---- a minimal JSON skipper: enough to find where a value starts and ends ----
// RawMember needs a value's bytes as written (a capture's `content` is served byte for byte).
// Boost.JSON parses into values and keeps no source offsets, so the skipping is done here.

bool IsJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

void SkipSpace(std::string_view text, std::size_t& at) {
  while (at < text.size() && IsJsonSpace(text[at])) {
    ++at;
  }
}

// Skips a string starting at text[at] == '"'; leaves `at` after the closing quote.
bool SkipString(std::string_view text, std::size_t& at, std::string_view* contents) {
  if (at >= text.size() || text[at] != '"') {
    return false;
  }
  const std::size_t begin = ++at;
  while (at < text.size()) {
    if (text[at] == '\\') {
      at += 2;
      continue;
    }
    if (text[at] == '"') {
      if (contents != nullptr) {
        *contents = text.substr(begin, at - begin);
      }
      ++at;
      return true;
    }
    ++at;
  }
  return false;
}

bool SkipValue(std::string_view text, std::size_t& at, int depth) {
  if (depth > 64) {
    return false;
  }
  SkipSpace(text, at);
  if (at >= text.size()) {
    return false;
  }
  const char c = text[at];
  if (c == '"') {
    return SkipString(text, at, nullptr);
  }
  if (c == '{' || c == '[') {
    const char close = c == '{' ? '}' : ']';
    ++at;
    SkipSpace(text, at);
    if (at < text.size() && text[at] == close) {
      ++at;
      return true;
    }
    for (;;) {
      if (c == '{') {
        SkipSpace(text, at);
        if (!SkipString(text, at, nullptr)) {
          return false;
        }
        SkipSpace(text, at);
        if (at >= text.size() || text[at] != ':') {
          return false;
        }
        ++at;
      }
      if (!SkipValue(text, at, depth + 1)) {
        return false;
      }
      SkipSpace(text, at);
      if (at >= text.size()) {
        return false;
      }
      if (text[at] == ',') {
        ++at;
        continue;
      }
      if (text[at] == close) {
        ++at;
        return true;
      }
      return false;
    }
  }
  // A number, true, false or null: runs until a delimiter.
  const std::size_t begin = at;
  while (at < text.size() && !IsJsonSpace(text[at]) && text[at] != ',' && text[at] != '}' &&
         text[at] != ']') {
    ++at;
  }
  return at > begin;
}

std::optional<std::string_view> FindFile(std::span<const EmbeddedFile> files,
                                         std::string_view path) {
  for (const EmbeddedFile& f : files) {
    if (f.path == path) {
      return f.bytes;
    }
  }
  return std::nullopt;
}

ConfigError FixtureError(std::string_view fixture, std::string_view what) {
  return ConfigError{std::string(fixture), std::string(fixture) + ": " + std::string(what)};
}

// The response body of a fixture: the `content` member of a capture wrapper, else the file.
std::string_view ResponseBytes(std::string_view file) {
  if (auto content = RawMember(file, "content")) {
    return *content;
  }
  return file;
}

Result<boost::json::object, ConfigError> ParseObject(std::string_view fixture,
                                                     std::string_view body) {
  std::error_code ec;
  boost::json::value v = boost::json::parse(body, ec);
  if (ec || !v.is_object()) {
    return FixtureError(fixture, "not a JSON object");
  }
  return std::move(v.as_object());
}

Result<boost::json::object, ConfigError> FirstRow(std::string_view fixture,
                                                  const boost::json::object& body) {
  const boost::json::value* results = body.if_contains("Results");
  if (results == nullptr || !results->is_array() || results->as_array().empty() ||
      !results->as_array()[0].is_object()) {
    return FixtureError(fixture, "has no Results[0] object");
  }
  return results->as_array()[0].as_object();
}

// The "Key": "Value" pairs of an excerpt, or an error naming the line that is neither that nor
// a comment or brace.
Result<boost::json::object, ConfigError> ParseExcerpt(std::string_view fixture,
                                                      std::string_view text) {
  boost::json::object keys;
  std::size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    while (!line.empty() && IsJsonSpace(line.front())) {
      line.remove_prefix(1);
    }
    while (!line.empty() && (IsJsonSpace(line.back()) || line.back() == ',')) {
      line.remove_suffix(1);
    }
    if (line.empty() || line == "{" || line == "}" || line.starts_with("//")) {
      continue;
    }
    std::error_code ec;
    // Built with append: gcc 12 at -O3 misreports `"{" + std::string(...)` (-Wrestrict).
    std::string object = "{";
    object.append(line);
    object.append("}");
    const boost::json::value pair = boost::json::parse(object, ec);
    if (ec || !pair.is_object() || pair.as_object().size() != 1 ||
        !pair.as_object().begin()->value().is_string()) {
      std::string what = "line ";
      what.append(std::to_string(line_number)).append(" is not a \"Key\": \"string\" pair");
      return FixtureError(fixture, what);
    }
    const auto& kv = *pair.as_object().begin();
    keys[kv.key()] = kv.value();
  }
  if (keys.empty()) {
    return FixtureError(fixture, "holds no recorded key");
  }
  return keys;
}

// The VINs of a batch DATA field, in order, with their model years.
std::vector<std::pair<std::string, std::optional<int>>> BatchItems(std::string_view data) {
  std::vector<std::pair<std::string, std::optional<int>>> items;
  const std::string normalized = Recordings::NormalizeBatchData(data);
  std::string_view rest = normalized;
  while (!rest.empty()) {
    const std::size_t semi = rest.find(';');
    const std::string_view item = rest.substr(0, semi);
    rest = semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
    const std::size_t comma = item.find(',');
    std::optional<int> year;
    if (comma != std::string_view::npos) {
      int y = 0;
      const std::string_view digits = item.substr(comma + 1);
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), y);
      if (ec == std::errc() && end == digits.data() + digits.size()) {
        year = y;
      }
    }
    items.emplace_back(std::string(item.substr(0, comma)), year);
  }
  return items;
}

// Calls `add(entry, bytes)` for each entry of a fixture table, in table order, with the bytes of
// the fixture the entry names; stops at the first fixture missing from `files` or at the first
// error `add` returns.
template <typename Table, typename AddFixture>
std::optional<ConfigError> ForEachFixture(std::span<const EmbeddedFile> files, const Table& table,
                                          AddFixture add) {
  for (const auto& spec : table) {
    const std::optional<std::string_view> file = FindFile(files, spec.fixture);
    if (!file) {
      return FixtureError(spec.fixture, "missing from the embedded data");
    }
    if (std::optional<ConfigError> error = add(spec, *file)) {
      return error;
    }
  }
  return std::nullopt;
}

// A flat recording as served (its response bytes as recorded and their Results[0]), and the
// parsed response.
struct FlatCapture {
  Recording recording;
  boost::json::object body;
};

Result<FlatCapture, ConfigError> ReadFlat(std::string_view fixture, std::string_view file) {
  FlatCapture flat;
  flat.recording.fixture = fixture;
  flat.recording.body = std::string(ResponseBytes(file));
  auto body = ParseObject(fixture, flat.recording.body);
  if (!body) {
    return body.error();
  }
  auto row = FirstRow(fixture, *body);
  if (!row) {
    return row.error();
  }
  flat.recording.first_row = std::move(*row);
  flat.body = std::move(*body);
  return flat;
}

}  // namespace

std::string_view ToString(Endpoint endpoint) {
  switch (endpoint) {
    case Endpoint::kDecodeVinValues:
      return "DecodeVinValues";
    case Endpoint::kDecodeVinValuesExtended:
      return "DecodeVinValuesExtended";
    case Endpoint::kDecodeVinValuesBatch:
      return "DecodeVINValuesBatch";
  }
  return "";
}

bool OverlaysSynthetic(Origin origin) {
  return origin == Origin::kExcerpt || origin == Origin::kCutDown;
}

std::optional<std::string_view> RawMember(std::string_view text, std::string_view key) {
  std::size_t at = 0;
  SkipSpace(text, at);
  if (at >= text.size() || text[at] != '{') {
    return std::nullopt;
  }
  ++at;
  for (;;) {
    SkipSpace(text, at);
    std::string_view name;
    if (!SkipString(text, at, &name)) {
      return std::nullopt;
    }
    SkipSpace(text, at);
    if (at >= text.size() || text[at] != ':') {
      return std::nullopt;
    }
    ++at;
    SkipSpace(text, at);
    const std::size_t begin = at;
    if (!SkipValue(text, at, 0)) {
      return std::nullopt;
    }
    if (name == key) {
      return text.substr(begin, at - begin);
    }
    SkipSpace(text, at);
    if (at >= text.size() || text[at] != ',') {
      return std::nullopt;
    }
    ++at;
  }
}

std::string Recordings::NormalizeBatchData(std::string_view data) {
  std::string out;
  while (!data.empty()) {
    const std::size_t semi = data.find(';');
    std::string_view item = data.substr(0, semi);
    data = semi == std::string_view::npos ? std::string_view() : data.substr(semi + 1);
    const std::size_t comma = item.find(',');
    std::string vin = NormalizeVin(item.substr(0, comma));
    std::string year =
        comma == std::string_view::npos ? std::string() : NormalizeVin(item.substr(comma + 1));
    if (vin.empty() && year.empty()) {
      continue;
    }
    if (!out.empty()) {
      out += ';';
    }
    out += vin;
    if (!year.empty()) {
      out += ',' + year;
    }
  }
  return out;
}

Result<Recordings, ConfigError> Recordings::Load(std::span<const EmbeddedFile> files) {
  Recordings r;
  // In precedence order: a flat recording wins over a batch row, which wins over a nested or
  // partial one (each step skips a VIN and model year that an earlier step recorded).
  if (auto error = r.AddSingles(files)) {
    return *error;
  }
  if (auto error = r.AddBatches(files)) {
    return *error;
  }
  if (r.flat_keys_.empty() || r.message_.empty()) {
    return ConfigError{"recordings", "no flat DecodeVinValues recording with a Message"};
  }
  if (auto error = r.AddBatchRows()) {
    return *error;
  }
  if (auto error = r.AddNested(files)) {
    return *error;
  }
  if (auto error = r.AddExcerpts(files)) {
    return *error;
  }
  if (auto error = r.AddNotFounds(files)) {
    return *error;
  }
  return r;
}

std::optional<ConfigError> Recordings::AddSingles(std::span<const EmbeddedFile> files) {
  std::size_t widest = 0;
  return ForEachFixture(
      files, kSingles,
      [this, &widest](const SingleSpec& spec, std::string_view file) -> std::optional<ConfigError> {
        auto flat = ReadFlat(spec.fixture, file);
        if (!flat) {
          return flat.error();
        }
        Recording& rec = flat->recording;
        rec.endpoint = spec.endpoint;
        rec.vin = std::string(spec.vin);
        rec.model_year = spec.model_year;
        // The widest row (the first of the widest) is the newest flat shape: its keys and Message.
        if (rec.first_row.size() > widest) {
          widest = rec.first_row.size();
          flat_keys_.clear();
          for (const auto& kv : rec.first_row) {
            flat_keys_.emplace_back(kv.key());
          }
          const boost::json::value* message = flat->body.if_contains("Message");
          message_ = message != nullptr && message->is_string() ? std::string(message->as_string())
                                                                : std::string();
        }
        recordings_.push_back(std::move(rec));
        return std::nullopt;
      });
}

std::optional<ConfigError> Recordings::AddBatches(std::span<const EmbeddedFile> files) {
  return ForEachFixture(
      files, kBatches,
      [this](const BatchSpec& spec, std::string_view file) -> std::optional<ConfigError> {
        auto flat = ReadFlat(spec.fixture, file);
        if (!flat) {
          return flat.error();
        }
        Recording& rec = flat->recording;
        rec.endpoint = Endpoint::kDecodeVinValuesBatch;
        rec.batch_data = std::string(spec.data);
        recordings_.push_back(std::move(rec));
        return std::nullopt;
      });
}

// Batch rows of VINs without a flat single recording; a later capture replaces an earlier one.
std::optional<ConfigError> Recordings::AddBatchRows() {
  std::vector<Recording> rows;
  for (const BatchSpec& spec : kBatches) {
    const Recording* batch = nullptr;
    for (const Recording& rec : recordings_) {
      if (rec.endpoint == Endpoint::kDecodeVinValuesBatch && rec.fixture == spec.fixture) {
        batch = &rec;
      }
    }
    if (batch == nullptr) {
      continue;
    }
    const boost::json::value parsed = boost::json::parse(batch->body);  // valid: parsed before
    const boost::json::array& results = parsed.at("Results").as_array();
    const auto items = BatchItems(spec.data);
    if (items.size() != results.size()) {
      return FixtureError(spec.fixture, "has not one row per DATA item");
    }
    for (std::size_t i = 0; i < items.size(); ++i) {
      const auto& [vin, year] = items[i];
      if (!results[i].is_object() || HasExact(vin, year)) {
        continue;
      }
      Recording rec;
      rec.fixture = spec.fixture;
      rec.origin = Origin::kBatchRow;
      rec.vin = vin;
      rec.model_year = year;
      rec.first_row = results[i].as_object();
      rec.body = SingleBody(rec.first_row, vin);
      std::erase_if(rows,
                    [&](const Recording& old) { return old.vin == vin && old.model_year == year; });
      rows.push_back(std::move(rec));
    }
  }
  for (Recording& rec : rows) {
    recordings_.push_back(std::move(rec));
  }
  return std::nullopt;
}

std::optional<ConfigError> Recordings::AddNested(std::span<const EmbeddedFile> files) {
  return ForEachFixture(
      files, kNested,
      [this](const NestedSpec& spec, std::string_view file) -> std::optional<ConfigError> {
        if (HasExact(spec.vin, spec.model_year)) {
          return std::nullopt;
        }
        auto body = ParseObject(spec.fixture, ResponseBytes(file));
        if (!body) {
          return body.error();
        }
        const boost::json::value* results = body->if_contains("Results");
        if (results == nullptr || !results->is_array() || results->as_array().empty()) {
          return FixtureError(spec.fixture, "has no nested Results rows");
        }
        Recording rec;
        rec.fixture = spec.fixture;
        rec.origin = spec.cut_down ? Origin::kCutDown : Origin::kNested;
        rec.legacy_format = IsLegacyNested(results->as_array());
        rec.vin = std::string(spec.vin);
        rec.model_year = spec.model_year;
        if (spec.cut_down) {
          rec.first_row = FlattenNestedRecorded(results->as_array(), flat_keys_);
        } else {
          rec.first_row = FlattenNested(results->as_array(), flat_keys_, spec.vin);
          rec.body = SingleBody(rec.first_row, spec.vin);
        }
        recordings_.push_back(std::move(rec));
        return std::nullopt;
      });
}

std::optional<ConfigError> Recordings::AddExcerpts(std::span<const EmbeddedFile> files) {
  return ForEachFixture(
      files, kExcerpts,
      [this](const ExcerptSpec& spec, std::string_view file) -> std::optional<ConfigError> {
        if (HasExact(spec.vin, std::nullopt)) {
          return std::nullopt;
        }
        auto keys = ParseExcerpt(spec.fixture, file);
        if (!keys) {
          return keys.error();
        }
        Recording rec;
        rec.fixture = spec.fixture;
        rec.origin = Origin::kExcerpt;
        rec.vin = std::string(spec.vin);
        rec.first_row = std::move(*keys);
        recordings_.push_back(std::move(rec));
        return std::nullopt;
      });
}

std::optional<ConfigError> Recordings::AddNotFounds(std::span<const EmbeddedFile> files) {
  return ForEachFixture(
      files, kNotFounds,
      [this](const NotFoundSpec& spec, std::string_view file) -> std::optional<ConfigError> {
        not_found_.emplace_back(std::string(spec.target), std::string(file));
        return std::nullopt;
      });
}

bool Recordings::HasExact(std::string_view vin, std::optional<int> model_year) const {
  return std::any_of(recordings_.begin(), recordings_.end(), [&](const Recording& rec) {
    return rec.endpoint == Endpoint::kDecodeVinValues && rec.vin == vin &&
           rec.model_year == model_year;
  });
}

std::string Recordings::SingleBody(const boost::json::object& row, std::string_view vin) const {
  boost::json::object body;
  body["Count"] = 1;
  body["Message"] = message_;
  std::string criteria = "VIN(s): ";
  criteria.append(vin);
  body["SearchCriteria"] = criteria;
  boost::json::array results;
  results.emplace_back(row);
  body["Results"] = std::move(results);
  return boost::json::serialize(body);
}

const Recording* Recordings::FindSingle(Endpoint endpoint, std::string_view vin,
                                        std::optional<int> model_year) const {
  const Recording* exact = nullptr;
  const Recording* yearless = nullptr;
  const Recording* any = nullptr;
  for (const Recording& rec : recordings_) {
    if (rec.endpoint != endpoint || rec.vin != vin) {
      continue;
    }
    if (model_year && rec.model_year == model_year) {
      exact = exact != nullptr ? exact : &rec;
    } else if (!rec.model_year) {
      yearless = yearless != nullptr ? yearless : &rec;
    } else if (!model_year) {
      any = any != nullptr ? any : &rec;
    }
  }
  const Recording* found = exact != nullptr ? exact : (yearless != nullptr ? yearless : any);
  if (found == nullptr && endpoint == Endpoint::kDecodeVinValuesExtended) {
    return FindSingle(Endpoint::kDecodeVinValues, vin, model_year);
  }
  return found;
}

const Recording* Recordings::FindBatch(std::string_view raw_data) const {
  for (const Recording& rec : recordings_) {
    if (rec.endpoint == Endpoint::kDecodeVinValuesBatch && rec.batch_data == raw_data) {
      return &rec;
    }
  }
  const std::string wanted = NormalizeBatchData(raw_data);
  const Recording* newest = nullptr;
  for (const Recording& rec : recordings_) {
    if (rec.endpoint == Endpoint::kDecodeVinValuesBatch &&
        NormalizeBatchData(rec.batch_data) == wanted) {
      newest = &rec;
    }
  }
  return newest;
}

const std::string* Recordings::FindNotFound(std::string_view target) const {
  for (const auto& [recorded_target, body] : not_found_) {
    if (recorded_target == target) {
      return &body;
    }
  }
  return nullptr;
}

}  // namespace fusebox::vpic_sim

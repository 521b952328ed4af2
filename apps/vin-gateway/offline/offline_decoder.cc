// The offline decoder: vPIC's tables loaded once into flat in-memory indexes (see the header for
// the rules). Patterns are grouped by (schema, key), since most keys carry several elements, so a
// decode matches each distinct key once: about 330k keys for 800k patterns, and at most a few
// thousand for any one WMI and year.
#include "offline/offline_decoder.h"

#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <system_error>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "common/vpic_error_codes.h"
#include "core/vin.h"
#include "core/vpic_parser.h"

namespace vin_gateway {
namespace {

// vPIC's Element ids the decoder treats specially.
constexpr int kElementMake = 26;
constexpr int kElementModel = 28;
constexpr int kElementModelYear = 29;

// The vehicle types whose position 7 picks the model-year cycle (49 CFR 565.15: passenger cars,
// MPVs and trucks; vPIC's VehicleType ids).
constexpr int kVehicleTypeTruck = 3;
constexpr int kVehicleTypePassengerCar = 2;
constexpr int kVehicleTypeMpv = 7;

class Database {
 public:
  explicit Database(sqlite3* db) : db_(db) {}
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database() { sqlite3_close_v2(db_); }
  sqlite3* get() const { return db_; }

 private:
  sqlite3* db_;
};

class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql) {
    rc_ = sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr);
  }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement() { sqlite3_finalize(stmt_); }
  bool ok() const { return rc_ == SQLITE_OK && stmt_ != nullptr; }
  int rc() const { return rc_; }
  // SQLITE_ROW, SQLITE_DONE or an error.
  int Step() { return rc_ = sqlite3_step(stmt_); }
  int Int(int column) const { return sqlite3_column_int(stmt_, column); }
  bool IsNull(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
  std::string_view Text(int column) const {
    const auto* text = sqlite3_column_text(stmt_, column);
    if (text == nullptr) {
      return {};
    }
    return {reinterpret_cast<const char*>(text),
            static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column))};
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_OK;
};

struct SchemaRange {
  int schema_id = 0;
  int year_from = 0;
  int year_to = 0;  // inclusive; INT_MAX-like when open
};

struct WmiInfo {
  int manufacturer_id = 0;
  int make_id = 0;
  int vehicle_type_id = 0;
  std::vector<int> make_ids;  // Wmi_Make, plus make_id
  std::vector<SchemaRange> schemas;
};

// One element value a key gives.
struct KeyValue {
  int element_id = 0;
  int pattern_id = 0;
  std::uint32_t value = 0;  // index into Data::strings
};

// One distinct key of a schema, with the values it gives (a range of Data::key_values).
struct KeyGroup {
  std::string key;
  int specificity = 0;
  std::uint32_t first = 0;
  std::uint32_t count = 0;
};

struct ElementInfo {
  std::string key;  // the vehicle key: SnakeCase(Element.Code)
  std::string lookup_table;
};

struct Conversion {
  int from = 0;
  int to = 0;
  char op = '*';
  double factor = 1.0;
};

int ParseInt(std::string_view text) {
  int year = 0;
  std::from_chars(text.data(), text.data() + text.size(), year);
  return year;
}

bool IsIdentifier(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// Key positions that are not '*' (a "[..]" set counts as one position; the '|' between positions
// 8 and 10 is no position).
int Specificity(std::string_view key) {
  int n = 0;
  for (std::size_t i = 0; i < key.size(); ++i) {
    if (key[i] == '[') {
      const std::size_t close = key.find(']', i);
      i = close == std::string_view::npos ? key.size() : close;
      ++n;
    } else if (key[i] != '*' && key[i] != '|') {
      ++n;
    }
  }
  return n;
}

// Whether `key` matches a prefix of `target` (positions 4-8, '|', 10-17), with SQL LIKE's
// meaning of vPIC's '*' (any one character) and "[..]" (one character of the set or range).
bool KeyMatches(std::string_view key, std::string_view target) {
  std::size_t j = 0;
  for (std::size_t i = 0; i < key.size(); ++j) {
    if (j >= target.size()) {
      return false;
    }
    const char c = target[j];
    const char k = key[i];
    if (k == '*') {
      ++i;
      continue;
    }
    if (k == '[') {
      const std::size_t close = key.find(']', i + 1);
      if (close == std::string_view::npos) {
        return false;
      }
      bool in = false;
      for (std::size_t m = i + 1; m < close; ++m) {
        if (m + 2 < close && key[m + 1] == '-') {
          in = in || (c >= key[m] && c <= key[m + 2]);
          m += 2;
        } else {
          in = in || key[m] == c;
        }
      }
      if (!in) {
        return false;
      }
      i = close + 1;
      continue;
    }
    if (k != c) {
      return false;
    }
    ++i;
  }
  return true;
}

// Position 10's place in the 30-year cycle (A=0 ... Y=20, 1=21 ... 9=29), or -1.
int YearCodeIndex(char c) {
  static constexpr std::string_view kCodes = "ABCDEFGHJKLMNPRSTVWXY123456789";
  const std::size_t i = kCodes.find(c);
  return i == std::string_view::npos ? -1 : static_cast<int>(i);
}

int CurrentYear() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  return tm.tm_year + 1900;
}

// vPIC's number format for a converted value: up to 14 significant digits, no trailing zeros,
// but at least one decimal ("2.0").
std::string FormatDecimal(double value) {
  std::string text = fmt::format("{:.14g}", value);
  if (text.find_first_of(".e") == std::string::npos) {
    text += ".0";
  }
  return text;
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') {
      c = static_cast<char>(c - 'a' + 'A');
    }
  }
  return out;
}

}  // namespace

struct OfflineDecoder::Data {
  std::string snapshot_date;
  WallTime snapshot_time{};
  std::unordered_map<std::string, WmiInfo> wmis;
  std::unordered_map<int, std::vector<KeyGroup>> schemas;
  std::vector<KeyValue> key_values;
  std::vector<std::string> strings;
  std::unordered_map<int, ElementInfo> elements;
  std::unordered_map<int, std::string> makes;
  std::unordered_map<int, std::string> manufacturers;
  std::unordered_map<int, std::string> vehicle_types;
  std::unordered_map<int, std::string> models;
  std::unordered_map<int, std::vector<int>> model_makes;  // Make_Model: model -> makes
  std::vector<Conversion> conversions;
};

std::string_view ToString(OfflineOpenError error) noexcept {
  switch (error) {
    case OfflineOpenError::kMissing:
      return "MISSING";
    case OfflineOpenError::kNotSqlite:
      return "NOT_SQLITE";
    case OfflineOpenError::kWrongSchema:
      return "WRONG_SCHEMA";
  }
  return "UNKNOWN";
}

namespace {

using LoadResult = fusebox::Result<bool, OfflineOpenFailure>;

OfflineOpenFailure Failure(OfflineOpenError error, const std::string& path, std::string_view what) {
  return OfflineOpenFailure{error, fmt::format("offline vPIC database {}: {}", path, what)};
}

// Runs `sql`, calling `row` for each result row. A failure to prepare is a wrong schema (a
// missing table or column), except when SQLite says the file is no database at all.
template <typename RowFn>
std::optional<OfflineOpenFailure> ForEachRow(sqlite3* db, const std::string& path,
                                             const std::string& sql, RowFn row) {
  Statement stmt(db, sql);
  if (!stmt.ok()) {
    const int rc = stmt.rc();
    const OfflineOpenError error = (rc == SQLITE_NOTADB || rc == SQLITE_CORRUPT)
                                       ? OfflineOpenError::kNotSqlite
                                       : OfflineOpenError::kWrongSchema;
    return Failure(error, path, fmt::format("{} ({})", sqlite3_errmsg(db), sql));
  }
  int rc = SQLITE_OK;
  while ((rc = stmt.Step()) == SQLITE_ROW) {
    row(stmt);
  }
  if (rc != SQLITE_DONE) {
    return Failure(OfflineOpenError::kNotSqlite, path,
                   fmt::format("reading failed: {} ({})", sqlite3_errmsg(db), sql));
  }
  return std::nullopt;
}

std::uint32_t Intern(std::vector<std::string>& strings,
                     std::unordered_map<std::string, std::uint32_t>& index,
                     std::string_view value) {
  auto [it, inserted] =
      index.try_emplace(std::string(value), static_cast<std::uint32_t>(strings.size()));
  if (inserted) {
    strings.emplace_back(value);
  }
  return it->second;
}

}  // namespace

fusebox::Result<OfflineDecoder, OfflineOpenFailure> OfflineDecoder::Open(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Failure(OfflineOpenError::kMissing, path, "no such file");
  }
  sqlite3* raw = nullptr;
  const int open_rc =
      sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
  Database db(raw);
  if (open_rc != SQLITE_OK) {
    return Failure(OfflineOpenError::kNotSqlite, path,
                   raw == nullptr ? "cannot open" : sqlite3_errmsg(raw));
  }
  // No locking needed: nothing writes the snapshot. immutable=1 would need a URI; query_only is
  // enough to be sure this code never writes.
  sqlite3_exec(db.get(), "PRAGMA query_only = 1", nullptr, nullptr, nullptr);

  auto data = std::make_unique<Data>();
  std::optional<OfflineOpenFailure> failure;
  const auto run = [&](const std::string& sql, auto row) {
    if (!failure) {
      failure = ForEachRow(db.get(), path, sql, row);
    }
  };

  // A first read tells a file that is not SQLite from one that is not vPIC's.
  run("SELECT count(*) FROM sqlite_master", [](const Statement&) {});

  run("SELECT Id, Name FROM Make",
      [&](const Statement& s) { data->makes.emplace(s.Int(0), Upper(s.Text(1))); });
  run("SELECT Id, Name FROM Manufacturer",
      [&](const Statement& s) { data->manufacturers.emplace(s.Int(0), std::string(s.Text(1))); });
  run("SELECT Id, Name FROM VehicleType",
      [&](const Statement& s) { data->vehicle_types.emplace(s.Int(0), Upper(s.Text(1))); });
  run("SELECT Id, Name FROM Model",
      [&](const Statement& s) { data->models.emplace(s.Int(0), std::string(s.Text(1))); });
  run("SELECT ModelId, MakeId FROM Make_Model",
      [&](const Statement& s) { data->model_makes[s.Int(0)].push_back(s.Int(1)); });
  run("SELECT Id, Code, LookupTable FROM Element WHERE coalesce(IsPrivate, 0) = 0 AND Code IS NOT "
      "NULL",
      [&](const Statement& s) {
        data->elements.emplace(s.Int(0), ElementInfo{SnakeCase(s.Text(1)), std::string(s.Text(2))});
      });
  run("SELECT FromElementId, ToElementId, Formula FROM Conversion", [&](const Statement& s) {
    // "#x# / 1000." or "#x# * 16.387064 ": one operator and one constant.
    const std::string_view formula = s.Text(2);
    const std::size_t op = formula.find_first_of("*/");
    if (op == std::string_view::npos) {
      return;
    }
    std::string number(formula.substr(op + 1));
    char* end = nullptr;
    const double factor = std::strtod(number.c_str(), &end);
    if (end == number.c_str() || factor == 0.0) {
      return;
    }
    data->conversions.push_back(Conversion{s.Int(0), s.Int(1), formula[op], factor});
  });

  std::unordered_map<int, std::string> wmi_names;  // Wmi.Id -> WMI
  std::string latest_processed;
  run("SELECT Id, Wmi, ManufacturerId, MakeId, VehicleTypeId, ProcessedOn FROM Wmi",
      [&](const Statement& s) {
        std::string wmi = Upper(s.Text(1));
        WmiInfo& info = data->wmis[wmi];
        info.manufacturer_id = s.Int(2);
        info.make_id = s.Int(3);
        info.vehicle_type_id = s.Int(4);
        if (info.make_id != 0) {
          info.make_ids.push_back(info.make_id);
        }
        wmi_names.emplace(s.Int(0), std::move(wmi));
        const std::string_view processed = s.Text(5);
        if (processed.size() >= 10 && processed > latest_processed) {
          latest_processed = std::string(processed);
        }
      });
  run("SELECT WmiId, MakeId FROM Wmi_Make", [&](const Statement& s) {
    auto it = wmi_names.find(s.Int(0));
    if (it != wmi_names.end()) {
      std::vector<int>& ids = data->wmis[it->second].make_ids;
      if (std::find(ids.begin(), ids.end(), s.Int(1)) == ids.end()) {
        ids.push_back(s.Int(1));
      }
    }
  });
  run("SELECT WmiId, VinSchemaId, YearFrom, YearTo FROM Wmi_VinSchema", [&](const Statement& s) {
    auto it = wmi_names.find(s.Int(0));
    if (it != wmi_names.end()) {
      data->wmis[it->second].schemas.push_back(
          SchemaRange{s.Int(1), s.Int(2), s.IsNull(3) ? 9999 : s.Int(3)});
    }
  });

  // Lookup tables, each read once: only the ones some element names, and only if they exist
  // (the lite edition leaves some out; an element whose table is missing cannot be decoded).
  std::unordered_map<std::string, std::unordered_map<int, std::string>> lookups;
  for (const auto& [id, element] : data->elements) {
    if (element.lookup_table.empty() || lookups.count(element.lookup_table) != 0 ||
        !IsIdentifier(element.lookup_table)) {
      continue;
    }
    bool exists = false;
    run("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '" + element.lookup_table +
            "'",
        [&](const Statement&) { exists = true; });
    if (!exists) {
      continue;
    }
    auto& table = lookups[element.lookup_table];
    run("SELECT Id, Name FROM \"" + element.lookup_table + "\"",
        [&](const Statement& s) { table.emplace(s.Int(0), std::string(s.Text(1))); });
  }

  // Patterns: resolved to their values now, grouped by (schema, key) below.
  struct Row {
    int schema_id;
    int pattern_id;
    std::uint32_t key;
    KeyValue value;
  };
  std::vector<Row> rows;
  std::vector<std::string> keys;
  std::unordered_map<std::string, std::uint32_t> key_index;
  std::unordered_map<std::string, std::uint32_t> string_index;
  run("SELECT Id, VinSchemaId, Keys, ElementId, AttributeId FROM Pattern", [&](const Statement& s) {
    const int element_id = s.Int(3);
    auto element = data->elements.find(element_id);
    if (element == data->elements.end()) {
      return;  // private or unknown element
    }
    std::string_view value = s.Text(4);
    std::string resolved;
    if (element_id == kElementModel || element_id == kElementMake) {
      // Kept as the id: the make follows from the model (Make_Model).
    } else if (!element->second.lookup_table.empty()) {
      auto table = lookups.find(element->second.lookup_table);
      if (table == lookups.end()) {
        return;
      }
      auto name = table->second.find(ParseInt(value));
      if (name == table->second.end()) {
        return;
      }
      value = name->second;
    }
    const std::uint32_t key = Intern(keys, key_index, Upper(s.Text(2)));
    rows.push_back(Row{s.Int(1), s.Int(0), key,
                       KeyValue{element_id, s.Int(0), Intern(data->strings, string_index, value)}});
  });
  if (failure) {
    return *failure;
  }
  if (data->wmis.empty() || rows.empty() || latest_processed.empty()) {
    return Failure(OfflineOpenError::kWrongSchema, path, "no WMI, pattern or ProcessedOn data");
  }

  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return std::tie(a.schema_id, a.key, a.pattern_id) < std::tie(b.schema_id, b.key, b.pattern_id);
  });
  data->key_values.reserve(rows.size());
  for (std::size_t i = 0; i < rows.size();) {
    std::size_t j = i;
    KeyGroup group;
    group.key = keys[rows[i].key];
    group.specificity = Specificity(group.key);
    group.first = static_cast<std::uint32_t>(data->key_values.size());
    for (; j < rows.size() && rows[j].schema_id == rows[i].schema_id && rows[j].key == rows[i].key;
         ++j) {
      data->key_values.push_back(rows[j].value);
    }
    group.count = static_cast<std::uint32_t>(j - i);
    data->schemas[rows[i].schema_id].push_back(std::move(group));
    i = j;
  }

  data->snapshot_date = latest_processed.substr(0, 10);
  std::tm tm{};
  tm.tm_year = ParseInt(data->snapshot_date.substr(0, 4)) - 1900;
  tm.tm_mon = ParseInt(data->snapshot_date.substr(5, 2)) - 1;
  tm.tm_mday = ParseInt(data->snapshot_date.substr(8, 2));
  data->snapshot_time = std::chrono::system_clock::from_time_t(timegm(&tm));
  return OfflineDecoder(std::move(data));
}

OfflineDecoder::OfflineDecoder(std::unique_ptr<const Data> data) : data_(std::move(data)) {}
OfflineDecoder::OfflineDecoder(OfflineDecoder&&) noexcept = default;
OfflineDecoder& OfflineDecoder::operator=(OfflineDecoder&&) noexcept = default;
OfflineDecoder::~OfflineDecoder() = default;

const std::string& OfflineDecoder::snapshot_date() const noexcept { return data_->snapshot_date; }

vin_gateway::Decode OfflineDecoder::Decode(std::string_view raw_vin,
                                           std::optional<int> model_year) const {
  const Data& d = *data_;
  vin_gateway::Decode out;
  out.fetched_at = d.snapshot_time;
  out.model_year = model_year.value_or(0);
  std::string vin = Upper(raw_vin.substr(0, std::min(raw_vin.size(), kVinLength)));
  out.vin = SanitizeUtf8(vin);
  Vehicle& v = out.vehicle;
  for (std::string_view key : kRequiredVehicleKeys) {
    v.emplace(key, "");
  }
  v["vin"] = out.vin;
  std::vector<int>& codes = out.upstream_codes;

  const auto finish = [&]() {
    if (codes.empty()) {
      codes.push_back(0);
    }
    std::sort(codes.begin(), codes.end());
    std::string code_list;
    std::string text;
    for (int code : codes) {
      if (!code_list.empty()) {
        code_list += ',';
      }
      code_list += std::to_string(code);
      const std::string_view line = fusebox::app::VpicErrorText(code);
      if (!line.empty()) {
        if (!text.empty()) {
          text += "; ";
        }
        text += line;
      }
    }
    v["error_code"] = code_list;
    v["error_text"] = text;
    return out;
  };

  // Characters: VIN characters and '*' (vPIC's placeholder of a partial VIN).
  bool invalid = false;
  for (char& c : vin) {
    if (!IsVinChar(c) && c != '*') {
      invalid = true;
      c = '*';  // an invalid character matches no pattern position
    }
  }
  if (invalid) {
    codes.push_back(400);
  }
  const bool complete = vin.size() == kVinLength && vin.find('*') == std::string::npos;
  if (!complete) {
    codes.push_back(6);
  } else if (!invalid) {
    const std::optional<char> check = ComputeCheckDigit(vin);
    if (check && *check != vin[8]) {
      codes.push_back(1);
    }
  }

  // WMI.
  if (vin.size() < 3) {
    codes.push_back(7);
    return finish();
  }
  std::string wmi = vin.substr(0, 3);
  if (wmi[2] == '9' && vin.size() >= 14) {
    wmi += vin.substr(11, 3);
  }
  auto wmi_it = d.wmis.find(wmi);
  if (wmi_it == d.wmis.end()) {
    codes.push_back(7);
    return finish();
  }
  const WmiInfo& info = wmi_it->second;
  if (auto it = d.manufacturers.find(info.manufacturer_id); it != d.manufacturers.end()) {
    v["manufacturer"] = it->second;
    v["manufacturer_id"] = std::to_string(info.manufacturer_id);
  }
  if (auto it = d.vehicle_types.find(info.vehicle_type_id); it != d.vehicle_types.end()) {
    v["vehicle_type"] = it->second;
  }
  if (info.make_ids.size() == 1) {
    if (auto it = d.makes.find(info.make_ids.front()); it != d.makes.end()) {
      v["make"] = it->second;
      v["make_id"] = std::to_string(info.make_ids.front());
    }
  }

  // Model year: position 10 names a year in each 30-year cycle. For passenger cars, MPVs and
  // trucks a digit at position 7 means 2009 or earlier, a letter 2010 or later first (49 CFR
  // 565.15; older cars had letters there too); every other type tries the latest cycle not past
  // next year first. The decode takes the first candidate whose patterns give a Model, else the
  // first that gives anything, else the first (so a 1995 bus is not read as 2025 when only its
  // 1995 schema knows it). The caller's model year is the only candidate when given.
  std::array<int, 4> candidates{};
  std::size_t candidate_count = 0;
  if (model_year) {
    candidates[candidate_count++] = *model_year;
  } else if (vin.size() >= 10 && YearCodeIndex(vin[9]) >= 0) {
    const int index = YearCodeIndex(vin[9]);
    const bool light = info.vehicle_type_id == kVehicleTypePassengerCar ||
                       info.vehicle_type_id == kVehicleTypeMpv ||
                       info.vehicle_type_id == kVehicleTypeTruck;
    const int next_year = CurrentYear() + 1;
    if (light && vin[6] >= '0' && vin[6] <= '9') {
      candidates[candidate_count++] = 1980 + index;
    } else {
      const int first = light && vin[6] != '*' ? 2010 + index : 1980 + index;
      for (int y = first + 60; y >= 1980 + index; y -= 30) {
        if (y <= next_year && candidate_count < candidates.size()) {
          candidates[candidate_count++] = y;
        }
      }
    }
  }

  // Patterns of the schemas valid for a year, matched against positions 4-8 '|' 10-17.
  std::string target = vin.size() > 3 ? vin.substr(3, 5) : std::string();
  if (vin.size() > 9) {
    target += '|';
    target += vin.substr(9);
  }
  struct Best {
    int specificity = -1;
    int pattern_id = 0;
    std::uint32_t value = 0;
  };
  using Matches = std::unordered_map<int, Best>;
  const auto match = [&](int for_year) {
    Matches found;
    for (const SchemaRange& range : info.schemas) {
      if (for_year < range.year_from || for_year > range.year_to) {
        continue;
      }
      auto schema = d.schemas.find(range.schema_id);
      if (schema == d.schemas.end()) {
        continue;
      }
      for (const KeyGroup& group : schema->second) {
        if (!KeyMatches(group.key, target)) {
          continue;
        }
        for (std::uint32_t i = 0; i < group.count; ++i) {
          const KeyValue& kv = d.key_values[group.first + i];
          Best& b = found[kv.element_id];
          if (std::tie(group.specificity, kv.pattern_id) > std::tie(b.specificity, b.pattern_id)) {
            b = Best{group.specificity, kv.pattern_id, kv.value};
          }
        }
      }
    }
    return found;
  };
  if (candidate_count == 0 && vin.size() >= 10 && vin[9] != '*') {
    codes.push_back(11);  // position 10 is no model-year code (U, Z, 0 or not a VIN character)
  }
  int year = candidate_count > 0 ? candidates[0] : 0;
  Matches best;
  bool have_any = false;
  for (std::size_t c = 0; c < candidate_count; ++c) {
    Matches found = match(candidates[c]);
    if (found.count(kElementModel) != 0) {
      year = candidates[c];
      best = std::move(found);
      break;
    }
    if (!have_any && !found.empty()) {
      have_any = true;
      year = candidates[c];
      best = std::move(found);
    }
  }
  if (year != 0) {
    v["model_year"] = std::to_string(year);
  }
  if (best.empty()) {
    codes.push_back(8);
    return finish();
  }

  const auto id_of = [&](std::uint32_t value) { return ParseInt(d.strings[value]); };
  for (const auto& [element_id, b] : best) {
    const std::string& value = d.strings[b.value];
    if (element_id == kElementModel) {
      const int model_id = id_of(b.value);
      if (auto it = d.models.find(model_id); it != d.models.end()) {
        v["model"] = it->second;
        v["model_id"] = std::to_string(model_id);
      }
    } else if (element_id == kElementMake) {
      const int make_id = id_of(b.value);
      if (auto it = d.makes.find(make_id); it != d.makes.end()) {
        v["make"] = it->second;
        v["make_id"] = std::to_string(make_id);
      }
    } else if (element_id != kElementModelYear) {
      v[d.elements.at(element_id).key] = value;
    }
  }
  // The make of the model (Make_Model) when no pattern names one: one of the WMI's makes if the
  // model has several, else the model's own (a Mercury model under a Ford WMI is a Mercury).
  if (best.count(kElementMake) == 0 && best.count(kElementModel) != 0) {
    const int model_id = id_of(best.at(kElementModel).value);
    if (auto makes = d.model_makes.find(model_id); makes != d.model_makes.end()) {
      int chosen = 0;
      for (int make_id : makes->second) {
        const bool of_wmi =
            std::find(info.make_ids.begin(), info.make_ids.end(), make_id) != info.make_ids.end();
        if (d.makes.count(make_id) != 0 && (chosen == 0 || of_wmi)) {
          chosen = make_id;
          if (of_wmi) {
            break;
          }
        }
      }
      if (chosen != 0) {
        v["make"] = d.makes.at(chosen);
        v["make_id"] = std::to_string(chosen);
      }
    }
  }
  // Units the patterns did not give, through vPIC's Conversion formulas.
  for (const Conversion& c : d.conversions) {
    if (best.count(c.to) != 0 || best.count(c.from) == 0) {
      continue;
    }
    auto from = d.elements.find(c.from);
    auto to = d.elements.find(c.to);
    if (from == d.elements.end() || to == d.elements.end() || v.count(to->second.key) != 0) {
      continue;
    }
    const std::string& text = d.strings[best.at(c.from).value];
    char* end = nullptr;
    const double x = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || !std::isfinite(x)) {
      continue;
    }
    v[to->second.key] = FormatDecimal(c.op == '*' ? x * c.factor : x / c.factor);
  }
  return finish();
}

}  // namespace vin_gateway

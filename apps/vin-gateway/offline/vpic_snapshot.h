// vin-gateway/offline/vpic_snapshot.h
//
// NHTSA's vPIC "lite" database read once into flat in-memory indexes: what the offline decoder
// (offline_decoder.h) decodes from, without touching the file again. Pattern values are resolved
// through their lookup tables at load and interned; patterns are grouped by (schema, key), since
// most keys carry several elements, so a decode matches each distinct key once: about 330k keys
// for 800k patterns, and at most a few thousand for any one WMI and year.
//
// Thread safety: a loaded snapshot is immutable. Time: loading takes about a second.
//
// Example:
//   auto snapshot = LoadVpicSnapshot("var/vpic/vpic.lite.db");
//   if (!snapshot) return Fail(snapshot.error().message);
//   const WmiInfo& ford = (*snapshot)->wmis.at("1FT");
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/wall_clock.h"
#include "fusebox/status.h"

namespace fusebox::gateway {

enum class OfflineOpenError : std::uint8_t {
  kMissing,      // no file at the path
  kNotSqlite,    // not a (readable) SQLite database: truncated, garbage, unreadable
  kWrongSchema,  // SQLite, but without vPIC's tables and columns, or without any data
};

// "MISSING", "NOT_SQLITE", "WRONG_SCHEMA".
std::string_view ToString(OfflineOpenError error) noexcept;

struct OfflineOpenFailure {
  OfflineOpenError error = OfflineOpenError::kMissing;
  std::string message;  // names the path and what was wrong with it
};

// A VIN schema a WMI uses for a range of model years (Wmi_VinSchema).
struct SchemaRange {
  int schema_id = 0;
  int year_from = 0;
  int year_to = 0;  // inclusive; 9999 when open
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
  std::uint32_t value = 0;  // index into VpicSnapshot::strings
};

// One distinct key of a schema, with the values it gives (a range of VpicSnapshot::key_values).
struct KeyGroup {
  std::string key;
  int specificity = 0;  // vpic_pattern.h
  std::uint32_t first = 0;
  std::uint32_t count = 0;
};

struct ElementInfo {
  std::string key;  // the vehicle key: SnakeCase(Element.Code)
  std::string lookup_table;
};

// A unit conversion between two elements: `to` = `from` op factor.
struct Conversion {
  int from = 0;
  int to = 0;
  char op = '*';
  double factor = 1.0;
};

struct VpicSnapshot {
  std::string snapshot_date;  // "YYYY-MM-DD": the latest Wmi.ProcessedOn
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

// Opens `path` read-only, loads the decoding data, closes the file.
fusebox::Result<std::unique_ptr<const VpicSnapshot>, OfflineOpenFailure> LoadVpicSnapshot(
    const std::string& path);

// `s` in ASCII upper case.
std::string Upper(std::string_view s);

// The leading decimal integer of `text`; 0 when there is none.
int ParseInt(std::string_view text);

}  // namespace fusebox::gateway

#include "core/vpic_parser.h"

#include <cctype>
#include <string>
#include <string_view>
#include <utility>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

namespace fusebox::gateway {
namespace {

namespace json = boost::json;

bool IsUpper(char c) noexcept { return c >= 'A' && c <= 'Z'; }
bool IsLower(char c) noexcept { return c >= 'a' && c <= 'z'; }
bool IsDigit(char c) noexcept { return c >= '0' && c <= '9'; }
char Lower(char c) noexcept { return IsUpper(c) ? static_cast<char>(c - 'A' + 'a') : c; }

std::string_view Trim(std::string_view s) noexcept {
  const auto space = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
  };
  while (!s.empty() && space(s.front())) {
    s.remove_prefix(1);
  }
  while (!s.empty() && space(s.back())) {
    s.remove_suffix(1);
  }
  return s;
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (IsLower(c)) {
      c = static_cast<char>(c - 'a' + 'A');
    }
  }
  return out;
}

// A field value as text: strings trimmed, numbers and booleans printed, anything else "".
std::string ValueText(const json::value& v) {
  if (const json::string* s = v.if_string()) {
    return std::string(Trim(std::string_view(s->data(), s->size())));
  }
  if (v.is_number() || v.is_bool()) {
    return json::serialize(v);
  }
  return "";
}

// Unflattened names that do not snake_case to the flat key the contract requires.
std::string CanonicalLabelKey(std::string key) {
  if (key == "manufacturer_name") {
    return "manufacturer";
  }
  return key;
}

// The VIN in a SearchCriteria such as "VIN:1FT..." or "VIN(s): 1FT...".
std::string VinFromSearchCriteria(std::string_view criteria) {
  criteria = Trim(criteria);
  if (criteria.substr(0, 3) != "VIN") {
    return "";
  }
  const std::size_t colon = criteria.find(':');
  if (colon == std::string_view::npos) {
    return "";
  }
  return Upper(Trim(criteria.substr(colon + 1)));
}

// The size of `s` inside a JSON string: quote and backslash escaped, control characters as \u00XX.
std::size_t JsonTextSize(std::string_view s) noexcept {
  std::size_t size = 0;
  for (char c : s) {
    const auto byte = static_cast<unsigned char>(c);
    size += (c == '"' || c == '\\') ? 2 : byte < 0x20 ? 6 : 1;
  }
  return size;
}

// `value` cut to at most kMaxFieldValueBytes, never inside a UTF-8 sequence.
void CapValue(std::string& value) {
  if (value.size() <= kMaxFieldValueBytes) {
    return;
  }
  std::size_t end = kMaxFieldValueBytes;
  while (end > 0 && (static_cast<unsigned char>(value[end]) & 0xC0U) == 0x80U) {
    --end;  // value[end] continues a sequence: cut before the sequence starts
  }
  value.resize(end);
}

bool AlwaysKept(std::string_view key) noexcept {
  if (key == "vin" || key == "error_code") {
    return true;
  }
  for (std::string_view required : kRequiredVehicleKeys) {
    if (key == required) {
      return true;
    }
  }
  return false;
}

// Builds one row's vehicle within the bounds of the header. The always-kept keys are offered
// first (a first pass over the row), then the others in the upstream's order; a field past a bound
// is dropped, so every field counts against the same bounds.
class BoundedVehicle {
 public:
  void Offer(std::string key, std::string value) {
    if (key.empty() || key.size() > kMaxFieldKeyBytes) {
      return;
    }
    CapValue(value);
    const std::size_t size = JsonTextSize(key) + JsonTextSize(value);
    std::size_t replaced = 0;
    auto it = vehicle_.find(key);
    if (it != vehicle_.end()) {
      replaced = JsonTextSize(it->first) + JsonTextSize(it->second);
    } else if (vehicle_.size() >= kMaxVehicleFields) {
      return;
    }
    if (text_bytes_ - replaced + size > kMaxVehicleTextBytes) {
      return;
    }
    text_bytes_ = text_bytes_ - replaced + size;
    vehicle_.insert_or_assign(std::move(key), std::move(value));  // a repeated key: the last wins
  }

  // The required keys that no field gave, as "".
  void AddMissingRequired() {
    for (std::string_view key : kRequiredVehicleKeys) {
      if (vehicle_.try_emplace(std::string(key)).second) {
        text_bytes_ += key.size();
      }
    }
  }

  Vehicle Take() { return std::move(vehicle_); }

 private:
  Vehicle vehicle_;
  std::size_t text_bytes_ = 0;
};

// The row a bounded vehicle makes: its VIN (the asked one when vPIC gives none) and error codes.
VpicRow FinishRow(BoundedVehicle& vehicle, const std::string& criteria_vin) {
  VpicRow row;
  row.vehicle = vehicle.Take();
  if (auto it = row.vehicle.find("vin"); it != row.vehicle.end()) {
    row.vin = Upper(it->second);
  } else {
    row.vin = criteria_vin;
  }
  if (auto it = row.vehicle.find("error_code"); it != row.vehicle.end()) {
    row.upstream_codes = ParseErrorCodes(it->second);
  }
  return row;
}

VpicRow FlatRow(const json::object& object, const std::string& criteria_vin) {
  BoundedVehicle vehicle;
  for (const bool kept_pass : {true, false}) {
    for (const auto& [key, value] : object) {
      if (key.size() > 4 * kMaxFieldKeyBytes) {
        continue;  // longer than any key it could snake_case to
      }
      std::string name = SnakeCase(std::string_view(key.data(), key.size()));
      if (AlwaysKept(name) != kept_pass) {
        continue;
      }
      std::string text = ValueText(value);
      if (!text.empty()) {
        vehicle.Offer(std::move(name), std::move(text));
      }
    }
    if (kept_pass) {
      vehicle.AddMissingRequired();
    }
  }
  return FinishRow(vehicle, criteria_vin);
}

VpicRow VariableRows(const json::array& results, const std::string& criteria_vin) {
  BoundedVehicle vehicle;
  for (const bool kept_pass : {true, false}) {
    for (const json::value& item : results) {
      const json::object& object = item.get_object();
      const json::value* variable = object.if_contains("Variable");
      const json::value* value = object.if_contains("Value");
      if (variable == nullptr || !variable->is_string() || value == nullptr) {
        continue;
      }
      const json::string& label = variable->get_string();
      if (label.size() > 4 * kMaxFieldKeyBytes) {
        continue;  // longer than any key it could snake_case to
      }
      std::string name =
          CanonicalLabelKey(SnakeCaseLabel(std::string_view(label.data(), label.size())));
      if (AlwaysKept(name) != kept_pass) {
        continue;
      }
      std::string text = ValueText(*value);
      if (!text.empty()) {
        vehicle.Offer(std::move(name), std::move(text));
      }
    }
    if (kept_pass) {
      vehicle.AddMissingRequired();
    }
  }
  return FinishRow(vehicle, criteria_vin);
}

}  // namespace

std::string_view ToString(VpicParseError error) noexcept {
  return error == VpicParseError::kNotJson ? "NOT_JSON" : "NOT_VPIC";
}

fusebox::Result<VpicAnswer, VpicParseError> ParseVpic(std::string_view body) {
  boost::system::error_code ec;
  json::value root = json::parse(body, ec);
  if (ec) {
    return VpicParseError::kNotJson;
  }
  const json::object* top = root.if_object();
  if (top == nullptr) {
    return VpicParseError::kNotVpic;
  }
  const json::value* results_value = top->if_contains("Results");
  if (results_value == nullptr || !results_value->is_array()) {
    return VpicParseError::kNotVpic;
  }
  const json::array& results = results_value->get_array();
  for (const json::value& item : results) {
    if (!item.is_object()) {
      return VpicParseError::kNotVpic;
    }
  }
  std::string criteria_vin;
  if (const json::value* criteria = top->if_contains("SearchCriteria");
      criteria != nullptr && criteria->is_string()) {
    const json::string& s = criteria->get_string();
    criteria_vin = VinFromSearchCriteria(std::string_view(s.data(), s.size()));
  }

  VpicAnswer answer;
  if (results.empty()) {
    return answer;
  }
  const json::object& first = results.front().get_object();
  if (first.contains("Variable") && first.contains("Value")) {
    answer.rows.push_back(VariableRows(results, criteria_vin));
    return answer;
  }
  // A batch's SearchCriteria names no single VIN; only a lone row may borrow it.
  const std::string fallback_vin = results.size() == 1 ? criteria_vin : std::string();
  for (const json::value& item : results) {
    answer.rows.push_back(FlatRow(item.get_object(), fallback_vin));
  }
  return answer;
}

std::string SnakeCase(std::string_view key) {
  // Units whose capitals are not word starts.
  std::string source(key);
  for (std::size_t at = source.find("KWh"); at != std::string::npos;
       at = source.find("KWh", at + 3)) {
    source.replace(at, 3, "Kwh");
  }
  std::string out;
  out.reserve(source.size() + 8);
  for (std::size_t i = 0; i < source.size(); ++i) {
    const char c = source[i];
    if (IsUpper(c)) {
      const bool after_word = i > 0 && (IsLower(source[i - 1]) || IsDigit(source[i - 1]));
      const bool acronym_end =
          i > 0 && IsUpper(source[i - 1]) && i + 1 < source.size() && IsLower(source[i + 1]);
      if ((after_word || acronym_end) && !out.empty() && out.back() != '_') {
        out += '_';
      }
      out += Lower(c);
    } else if (IsLower(c) || IsDigit(c)) {
      out += c;
    } else if (!out.empty() && out.back() != '_') {
      out += '_';
    }
  }
  while (!out.empty() && out.back() == '_') {
    out.pop_back();
  }
  return out;
}

std::string SnakeCaseLabel(std::string_view label) {
  std::string out;
  out.reserve(label.size());
  for (char c : label) {
    if (IsUpper(c) || IsLower(c) || IsDigit(c)) {
      out += Lower(c);
    } else if (!out.empty() && out.back() != '_') {
      out += '_';
    }
  }
  while (!out.empty() && out.back() == '_') {
    out.pop_back();
  }
  return out;
}

std::vector<int> ParseErrorCodes(std::string_view value) {
  std::vector<int> codes;
  std::size_t i = 0;
  const auto skip_spaces = [&] {
    while (i < value.size() && value[i] == ' ') {
      ++i;
    }
  };
  while (codes.size() < kMaxUpstreamCodes) {
    skip_spaces();
    const std::size_t start = i;
    int number = 0;
    while (i < value.size() && IsDigit(value[i]) && i - start < 6) {
      number = number * 10 + (value[i] - '0');
      ++i;
    }
    if (i == start) {
      break;
    }
    codes.push_back(number);
    skip_spaces();
    if (i < value.size() && value[i] == ',') {
      ++i;
      continue;
    }
    break;
  }
  return codes;
}

}  // namespace fusebox::gateway

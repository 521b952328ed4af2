#include "vpic_api.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <vector>

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

namespace fusebox::vpic_sim {
namespace {

constexpr std::string_view kBackendUrl = "https://backend-vpic-api.nhtsa.gov";
constexpr std::string_view kPrefix = "/api/vehicles/";

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           auto lower = [](char c) {
             return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
           };
           return lower(x) == lower(y);
         });
}

bool IStartsWith(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && IEquals(text.substr(0, prefix.size()), prefix);
}

struct SplitTarget {
  std::string_view path;
  std::string_view query;
};

SplitTarget Split(std::string_view target) {
  const std::size_t q = target.find('?');
  if (q == std::string_view::npos) {
    return {target, {}};
  }
  return {target.substr(0, q), target.substr(q + 1)};
}

// For "/api/vehicles/<action>/<rest>": the action and the rest (rest may be empty).
struct ParsedPath {
  std::string_view action;
  std::string_view rest;
  bool has_rest_slash = false;
};

std::optional<ParsedPath> ParseVehiclesPath(std::string_view path) {
  if (!IStartsWith(path, kPrefix)) {
    return std::nullopt;
  }
  path.remove_prefix(kPrefix.size());
  ParsedPath p;
  const std::size_t slash = path.find('/');
  p.action = path.substr(0, slash);
  if (slash != std::string_view::npos) {
    p.has_rest_slash = true;
    p.rest = path.substr(slash + 1);
  }
  return p;
}

std::string Serialize(const boost::json::object& object) { return boost::json::serialize(object); }

ApiResponse ErrorBody(unsigned status, const std::string& message, const std::string& detail) {
  boost::json::object body;
  body["message"] = message;
  if (!detail.empty()) {
    body["messageDetail"] = detail;
  }
  ApiResponse r;
  r.status = status;
  r.body = Serialize(body);
  return r;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

// Client-supplied text echoed in a JSON body: printable ASCII kept, anything else as '?', so the
// body stays valid UTF-8 whatever bytes the client sent.
std::string Printable(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) {
      c = '?';
    }
  }
  return out;
}

std::string SearchCriteria(std::string_view vin) { return "VIN(s): " + std::string(vin); }

// A partial recording's keys (an excerpt's, a cut-down stub's) over a synthetic row.
void Overlay(boost::json::object& row, const boost::json::object& recorded) {
  for (const auto& kv : recorded) {
    row[kv.key()] = kv.value();
  }
}

}  // namespace

std::string PercentDecode(std::string_view text, bool form) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%' && i + 2 < text.size() && HexValue(text[i + 1]) >= 0 &&
        HexValue(text[i + 2]) >= 0) {
      out += static_cast<char>(HexValue(text[i + 1]) * 16 + HexValue(text[i + 2]));
      i += 2;
    } else if (c == '+' && form) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::optional<std::string> FormValue(std::string_view form, std::string_view name) {
  while (!form.empty()) {
    const std::size_t amp = form.find('&');
    const std::string_view pair = form.substr(0, amp);
    form = amp == std::string_view::npos ? std::string_view() : form.substr(amp + 1);
    const std::size_t eq = pair.find('=');
    const std::string key = PercentDecode(pair.substr(0, eq), true);
    if (IEquals(key, name)) {
      return eq == std::string_view::npos ? std::string()
                                          : PercentDecode(pair.substr(eq + 1), true);
    }
  }
  return std::nullopt;
}

std::optional<int> ParseModelYear(std::string_view text) {
  while (!text.empty() && text.front() == ' ') {
    text.remove_prefix(1);
  }
  while (!text.empty() && text.back() == ' ') {
    text.remove_suffix(1);
  }
  int year = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), year);
  if (ec != std::errc() || end != text.data() + text.size() || text.size() != 4 || year < 1900 ||
      year > 2100) {
    return std::nullopt;
  }
  return year;
}

std::optional<Endpoint> RouteOf(std::string_view target) {
  const auto parsed = ParseVehiclesPath(Split(target).path);
  if (!parsed) {
    return std::nullopt;
  }
  if (IEquals(parsed->action, ToString(Endpoint::kDecodeVinValuesBatch)) &&
      (parsed->rest.empty())) {
    return Endpoint::kDecodeVinValuesBatch;
  }
  if (!parsed->rest.empty() && parsed->rest.find('/') == std::string_view::npos) {
    if (IEquals(parsed->action, ToString(Endpoint::kDecodeVinValues))) {
      return Endpoint::kDecodeVinValues;
    }
    if (IEquals(parsed->action, ToString(Endpoint::kDecodeVinValuesExtended))) {
      return Endpoint::kDecodeVinValuesExtended;
    }
  }
  return std::nullopt;
}

VpicApi::VpicApi(const Recordings& recordings, ApiOptions options)
    : recordings_(recordings), options_(options) {}

ApiResponse VpicApi::Handle(const ApiRequest& request) const {
  const std::optional<Endpoint> endpoint = RouteOf(request.target);
  if (!endpoint) {
    return NotFound(request.target);
  }
  const SplitTarget split = Split(request.target);
  if (*endpoint == Endpoint::kDecodeVinValuesBatch) {
    if (request.method != "POST") {
      ApiResponse r = ErrorBody(405,
                                "The requested resource does not support http method '" +
                                    Printable(request.method) + "'.",
                                "");
      r.allow = "POST";
      return r;
    }
    return Batch(request.body);
  }
  if (request.method != "GET") {
    ApiResponse r = ErrorBody(
        405,
        "The requested resource does not support http method '" + Printable(request.method) + "'.",
        "");
    r.allow = "GET";
    return r;
  }
  const std::string_view rest = ParseVehiclesPath(split.path)->rest;
  return Single(*endpoint, rest, split.query);
}

boost::json::object VpicApi::SyntheticRow(std::string_view raw_vin, std::optional<int> model_year,
                                          bool extended) const {
  (void)extended;  // NCSA* fields are empty for synthetic decodes, extended or not.
  const VinDecode d =
      DecodeVin(raw_vin, {.model_year = model_year, .reference_year = options_.reference_year});
  boost::json::object row;
  row.reserve(recordings_.flat_keys().size());
  for (const std::string& key : recordings_.flat_keys()) {
    row[key] = "";
  }
  auto set = [&row](std::string_view key, std::string_view value) {
    if (auto* slot = row.if_contains(key)) {
      *slot = value;
    }
  };
  set("VIN", d.vin);
  set("ErrorCode", d.ErrorCode());
  set("ErrorText", d.ErrorText());
  set("AdditionalErrorText", d.additional_error_text);
  set("VehicleDescriptor", d.vehicle_descriptor);
  if (d.wmi != nullptr) {
    set("Make", d.wmi->make);
    set("Manufacturer", d.wmi->manufacturer);
    set("VehicleType", VehicleTypeName(d.wmi->vehicle_class));
    if (d.model_year) {
      set("ModelYear", std::to_string(*d.model_year));
    }
    const VehicleClass vc = d.wmi->vehicle_class;
    if (vc == VehicleClass::kPassengerCar || vc == VehicleClass::kMpv ||
        vc == VehicleClass::kLightTruck) {
      // What vPIC fills in for every car, MPV and light truck.
      for (std::string_view key :
           {"BusFloorConfigType", "BusType", "CustomMotorcycleType", "MotorcycleChassisType",
            "MotorcycleSuspensionType", "TrailerBodyType", "TrailerType"}) {
        set(key, "Not Applicable");
      }
    }
  }
  return row;
}

ApiResponse VpicApi::Single(Endpoint endpoint, std::string_view raw_segment,
                            std::string_view query) const {
  const std::string raw_vin = PercentDecode(raw_segment, false);
  std::optional<int> model_year;
  if (auto year = FormValue(query, "modelyear")) {
    model_year = ParseModelYear(*year);
  }
  ApiResponse r;
  const std::string vin = NormalizeVin(raw_vin);
  const Recording* rec = recordings_.FindSingle(endpoint, vin, model_year);
  if (rec != nullptr && !OverlaysSynthetic(rec->origin)) {
    r.body = rec->body;
    return r;
  }
  boost::json::object row =
      SyntheticRow(raw_vin, model_year, endpoint == Endpoint::kDecodeVinValuesExtended);
  if (rec != nullptr) {
    Overlay(row, rec->first_row);
  }
  boost::json::object body;
  body["Count"] = 1;
  body["Message"] = recordings_.message();
  body["SearchCriteria"] = SearchCriteria(row["VIN"].as_string());
  boost::json::array results;
  results.emplace_back(std::move(row));
  body["Results"] = std::move(results);
  r.body = Serialize(body);
  return r;
}

ApiResponse VpicApi::Batch(std::string_view form) const {
  const std::string data = FormValue(form, "DATA").value_or("");
  if (const Recording* rec = recordings_.FindBatch(data)) {
    ApiResponse r;
    r.body = rec->body;
    return r;
  }
  std::vector<std::pair<std::string, std::optional<int>>> items;
  std::string_view rest = data;
  while (!rest.empty()) {
    const std::size_t semi = rest.find(';');
    const std::string_view item = rest.substr(0, semi);
    rest = semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
    const std::size_t comma = item.find(',');
    std::string vin(item.substr(0, comma));
    std::optional<int> year;
    if (comma != std::string_view::npos) {
      year = ParseModelYear(item.substr(comma + 1));
    }
    if (NormalizeVin(vin).empty()) {
      continue;
    }
    items.emplace_back(std::move(vin), year);
  }
  if (items.size() > kMaxBatchVins) {
    return ErrorBody(
        400, "The request is invalid.",
        "DecodeVINValuesBatch accepts at most 50 VINs; got " + std::to_string(items.size()) + ".");
  }
  boost::json::array results;
  for (const auto& [raw_vin, year] : items) {
    const Recording* rec =
        recordings_.FindSingle(Endpoint::kDecodeVinValues, NormalizeVin(raw_vin), year);
    if (rec != nullptr && !OverlaysSynthetic(rec->origin)) {
      results.emplace_back(rec->first_row);
    } else {
      boost::json::object row = SyntheticRow(raw_vin, year, false);
      if (rec != nullptr) {
        Overlay(row, rec->first_row);
      }
      results.emplace_back(std::move(row));
    }
  }
  boost::json::object body;
  body["Count"] = results.size();
  body["Message"] = recordings_.message();
  body["SearchCriteria"] = "";
  body["Results"] = std::move(results);
  ApiResponse r;
  r.body = Serialize(body);
  return r;
}

ApiResponse VpicApi::NotFound(std::string_view target) const {
  if (const std::string* recorded = recordings_.FindNotFound(target)) {
    ApiResponse r;
    r.status = 404;
    r.body = *recorded;
    return r;
  }
  const SplitTarget split = Split(target);
  const std::string uri = std::string(kBackendUrl) + Printable(target);
  std::string detail;
  if (auto parsed = ParseVehiclesPath(split.path); parsed && !parsed->action.empty()) {
    detail = "No action was found on the controller 'Vehicles' that matches the name '" +
             Printable(PercentDecode(parsed->action, false)) + "'.";
  } else {
    detail = "No route data was found for this request.";
  }
  return ErrorBody(404, "No HTTP resource was found that matches the request URI '" + uri + "'.",
                   detail);
}

}  // namespace fusebox::vpic_sim

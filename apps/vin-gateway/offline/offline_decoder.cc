// The offline decoder: vPIC's pattern decoding (see the header for the rules) over a snapshot
// loaded once (vpic_snapshot.h), one step of the rules per function.
#include "offline/offline_decoder.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "common/vpic_error_codes.h"
#include "core/vin.h"
#include "offline/vpic_pattern.h"

namespace fusebox::gateway {
namespace {

namespace vpic = fusebox::app;

// The vehicle types whose position 7 picks the model-year cycle (49 CFR 565.15: passenger cars,
// MPVs and trucks; vPIC's VehicleType ids).
constexpr int kVehicleTypeTruck = 3;
constexpr int kVehicleTypePassengerCar = 2;
constexpr int kVehicleTypeMpv = 7;

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

// The winning value of one element: the most specific key, then the newest pattern.
struct Best {
  int specificity = -1;
  int pattern_id = 0;
  std::uint32_t value = 0;  // index into VpicSnapshot::strings
};
using Matches = std::unordered_map<int, Best>;  // element id -> its winning value

// The model years a decode tries, in order (at most four).
struct YearCandidates {
  std::array<int, 4> years{};
  std::size_t count = 0;
  void Add(int year) {
    if (count < years.size()) {
      years[count++] = year;
    }
  }
};

// One decode: the answer built step by step, and vPIC's codes so far.
class OfflineDecode {
 public:
  OfflineDecode(const VpicSnapshot& d, std::string_view raw_vin) : d_(d) {
    out_.fetched_at = d.snapshot_time;
    vin_ = Upper(raw_vin.substr(0, std::min(raw_vin.size(), kVinLength)));
    out_.vin = SanitizeUtf8(vin_);
    for (std::string_view key : kRequiredVehicleKeys) {
      v_.emplace(key, "");
    }
    v_["vin"] = out_.vin;
  }

  fusebox::gateway::Decode Run(std::optional<int> model_year) {
    out_.model_year = model_year.value_or(0);
    CheckCharacters();
    const WmiInfo* wmi = FindWmi();
    if (wmi == nullptr) {
      codes().push_back(vpic::kVpicUnknownWmi);
      return Finish();
    }
    AddWmiFacts(*wmi);
    const Matches best = MatchForYear(*wmi, Candidates(*wmi, model_year));
    if (best.empty()) {
      codes().push_back(vpic::kVpicNoDetailedData);
      return Finish();
    }
    AddMatched(best);
    AddMakeOfModel(*wmi, best);
    AddConversions(best);
    return Finish();
  }

 private:
  std::vector<int>& codes() { return out_.upstream_codes; }

  // VIN characters and '*' (vPIC's placeholder of a partial VIN); an invalid character becomes
  // '*', which matches no pattern position. Codes 400, 6 and 1.
  void CheckCharacters() {
    bool invalid = false;
    for (char& c : vin_) {
      if (!IsVinChar(c) && c != '*') {
        invalid = true;
        c = '*';
      }
    }
    if (invalid) {
      codes().push_back(vpic::kVpicInvalidCharacters);
    }
    const bool complete = vin_.size() == kVinLength && vin_.find('*') == std::string::npos;
    if (!complete) {
      codes().push_back(vpic::kVpicIncompleteVin);
    } else if (!invalid) {
      const std::optional<char> check = ComputeCheckDigit(vin_);
      if (check && *check != vin_[8]) {
        codes().push_back(vpic::kVpicCheckDigitWrong);
      }
    }
  }

  // Positions 1-3, or 1-3 plus 12-14 when position 3 is '9' (small manufacturers).
  const WmiInfo* FindWmi() const {
    if (vin_.size() < 3) {
      return nullptr;
    }
    std::string wmi = vin_.substr(0, 3);
    if (wmi[2] == '9' && vin_.size() >= 14) {
      wmi += vin_.substr(11, 3);
    }
    auto it = d_.wmis.find(wmi);
    return it == d_.wmis.end() ? nullptr : &it->second;
  }

  void AddWmiFacts(const WmiInfo& wmi) {
    if (auto it = d_.manufacturers.find(wmi.manufacturer_id); it != d_.manufacturers.end()) {
      v_["manufacturer"] = it->second;
      v_["manufacturer_id"] = std::to_string(wmi.manufacturer_id);
    }
    if (auto it = d_.vehicle_types.find(wmi.vehicle_type_id); it != d_.vehicle_types.end()) {
      v_["vehicle_type"] = it->second;
    }
    if (wmi.make_ids.size() == 1) {
      SetMake(wmi.make_ids.front());
    }
  }

  // Position 10 names a year in each 30-year cycle. For passenger cars, MPVs and trucks a digit at
  // position 7 means 2009 or earlier, a letter 2010 or later first (49 CFR 565.15; older cars had
  // letters there too); every other type tries the latest cycle not past next year first. The
  // caller's model year is the only candidate when given.
  YearCandidates Candidates(const WmiInfo& wmi, std::optional<int> model_year) const {
    YearCandidates candidates;
    if (model_year) {
      candidates.Add(*model_year);
      return candidates;
    }
    const int index = vin_.size() >= 10 ? YearCodeIndex(vin_[9]) : -1;
    if (index < 0) {
      return candidates;
    }
    const bool light = wmi.vehicle_type_id == kVehicleTypePassengerCar ||
                       wmi.vehicle_type_id == kVehicleTypeMpv ||
                       wmi.vehicle_type_id == kVehicleTypeTruck;
    if (light && vin_[6] >= '0' && vin_[6] <= '9') {
      candidates.Add(1980 + index);
      return candidates;
    }
    const int next_year = CurrentYear() + 1;
    const int first = light && vin_[6] != '*' ? 2010 + index : 1980 + index;
    for (int y = first + 60; y >= 1980 + index; y -= 30) {
      if (y <= next_year) {
        candidates.Add(y);
      }
    }
    return candidates;
  }

  // The first candidate whose patterns give a Model, else the first that gives anything, else
  // the first (so a 1995 bus is not read as 2025 when only its 1995 schema knows it): its year
  // goes in the answer, its matches are returned. Code 11 when position 10 names no year.
  Matches MatchForYear(const WmiInfo& wmi, const YearCandidates& candidates) {
    if (candidates.count == 0 && vin_.size() >= 10 && vin_[9] != '*') {
      codes().push_back(vpic::kVpicNoModelYearCode);  // U, Z, 0 or not a VIN character
    }
    const std::string target = PatternTarget(vin_);
    int year = candidates.count > 0 ? candidates.years[0] : 0;
    Matches best;
    bool have_any = false;
    for (std::size_t c = 0; c < candidates.count; ++c) {
      Matches found = Match(wmi, candidates.years[c], target);
      if (found.count(vpic::kVpicElementModel) != 0) {
        year = candidates.years[c];
        best = std::move(found);
        break;
      }
      if (!have_any && !found.empty()) {
        have_any = true;
        year = candidates.years[c];
        best = std::move(found);
      }
    }
    if (year != 0) {
      v_["model_year"] = std::to_string(year);
    }
    return best;
  }

  // The patterns of the WMI's schemas valid in `year` that match `target`, the best per element.
  Matches Match(const WmiInfo& wmi, int year, std::string_view target) const {
    Matches found;
    for (const SchemaRange& range : wmi.schemas) {
      if (year < range.year_from || year > range.year_to) {
        continue;
      }
      auto schema = d_.schemas.find(range.schema_id);
      if (schema == d_.schemas.end()) {
        continue;
      }
      for (const KeyGroup& group : schema->second) {
        if (!KeyMatches(group.key, target)) {
          continue;
        }
        for (std::uint32_t i = 0; i < group.count; ++i) {
          const KeyValue& kv = d_.key_values[group.first + i];
          Best& b = found[kv.element_id];
          if (std::tie(group.specificity, kv.pattern_id) > std::tie(b.specificity, b.pattern_id)) {
            b = Best{group.specificity, kv.pattern_id, kv.value};
          }
        }
      }
    }
    return found;
  }

  int IdOf(const Best& best) const { return ParseInt(d_.strings[best.value]); }

  void SetMake(int make_id) {
    if (auto it = d_.makes.find(make_id); it != d_.makes.end()) {
      v_["make"] = it->second;
      v_["make_id"] = std::to_string(make_id);
    }
  }

  void AddMatched(const Matches& best) {
    for (const auto& [element_id, b] : best) {
      if (element_id == vpic::kVpicElementModel) {
        const int model_id = IdOf(b);
        if (auto it = d_.models.find(model_id); it != d_.models.end()) {
          v_["model"] = it->second;
          v_["model_id"] = std::to_string(model_id);
        }
      } else if (element_id == vpic::kVpicElementMake) {
        SetMake(IdOf(b));
      } else if (element_id != vpic::kVpicElementModelYear) {
        v_[d_.elements.at(element_id).key] = d_.strings[b.value];
      }
    }
  }

  // The make of the model (Make_Model) when no pattern names one: one of the WMI's makes if the
  // model has several, else the model's own (a Mercury model under a Ford WMI is a Mercury).
  void AddMakeOfModel(const WmiInfo& wmi, const Matches& best) {
    if (best.count(vpic::kVpicElementMake) != 0 || best.count(vpic::kVpicElementModel) == 0) {
      return;
    }
    auto makes = d_.model_makes.find(IdOf(best.at(vpic::kVpicElementModel)));
    if (makes == d_.model_makes.end()) {
      return;
    }
    int chosen = 0;
    for (int make_id : makes->second) {
      const bool of_wmi =
          std::find(wmi.make_ids.begin(), wmi.make_ids.end(), make_id) != wmi.make_ids.end();
      if (d_.makes.count(make_id) != 0 && (chosen == 0 || of_wmi)) {
        chosen = make_id;
        if (of_wmi) {
          break;
        }
      }
    }
    if (chosen != 0) {
      v_["make"] = d_.makes.at(chosen);
      v_["make_id"] = std::to_string(chosen);
    }
  }

  // Units the patterns did not give, through vPIC's Conversion formulas.
  void AddConversions(const Matches& best) {
    for (const Conversion& c : d_.conversions) {
      if (best.count(c.to) != 0 || best.count(c.from) == 0) {
        continue;
      }
      auto from = d_.elements.find(c.from);
      auto to = d_.elements.find(c.to);
      if (from == d_.elements.end() || to == d_.elements.end() || v_.count(to->second.key) != 0) {
        continue;
      }
      const std::string& text = d_.strings[best.at(c.from).value];
      char* end = nullptr;
      const double x = std::strtod(text.c_str(), &end);
      if (end == text.c_str() || !std::isfinite(x)) {
        continue;
      }
      v_[to->second.key] = FormatDecimal(c.op == '*' ? x * c.factor : x / c.factor);
    }
  }

  // The codes in order (0 when there is none) as `error_code`, their texts as `error_text`.
  fusebox::gateway::Decode Finish() {
    std::vector<int>& all = codes();
    if (all.empty()) {
      all.push_back(vpic::kVpicDecodedClean);
    }
    std::sort(all.begin(), all.end());
    std::string code_list;
    std::string text;
    for (int code : all) {
      if (!code_list.empty()) {
        code_list += ',';
      }
      code_list += std::to_string(code);
      const std::string_view line = vpic::VpicErrorText(code);
      if (!line.empty()) {
        if (!text.empty()) {
          text += "; ";
        }
        text += line;
      }
    }
    v_["error_code"] = code_list;
    v_["error_text"] = text;
    return std::move(out_);
  }

  const VpicSnapshot& d_;
  fusebox::gateway::Decode out_;
  Vehicle& v_ = out_.vehicle;
  std::string vin_;  // upper case, at most 17 characters; invalid characters become '*'
};

}  // namespace

fusebox::Result<OfflineDecoder, OfflineOpenFailure> OfflineDecoder::Open(const std::string& path) {
  auto snapshot = LoadVpicSnapshot(path);
  if (!snapshot) {
    return snapshot.error();
  }
  return OfflineDecoder(std::move(*snapshot));
}

OfflineDecoder::OfflineDecoder(std::unique_ptr<const VpicSnapshot> snapshot)
    : snapshot_(std::move(snapshot)) {}
OfflineDecoder::OfflineDecoder(OfflineDecoder&&) noexcept = default;
OfflineDecoder& OfflineDecoder::operator=(OfflineDecoder&&) noexcept = default;
OfflineDecoder::~OfflineDecoder() = default;

const std::string& OfflineDecoder::snapshot_date() const noexcept {
  return snapshot_->snapshot_date;
}

fusebox::gateway::Decode OfflineDecoder::Decode(std::string_view vin,
                                                std::optional<int> model_year) const {
  return OfflineDecode(*snapshot_, vin).Run(model_year);
}

}  // namespace fusebox::gateway

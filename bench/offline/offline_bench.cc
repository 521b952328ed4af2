// offline-bench: the offline decoder's speed and answers, for the side-by-side run against corgi
// (bench/offline/run.sh; results in docs/benchmarks.md and docs/offline-decode.md).
//
//   offline-bench generate DB N SEED    N VINs built from the database's real WMIs and Model
//                                       patterns, with valid check digits, one per line
//   offline-bench run DB VINS OUT       decodes every VIN of the file VINS: start-up time, RSS
//                                       before and after loading, decodes per second and
//                                       latency percentiles of a first pass and of five more
//                                       (JSON on stdout); each VIN's answer
//                                       as one JSON line in OUT, for bench/offline/compare.mjs
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "core/vin.h"
#include "offline/offline_decoder.h"

namespace {

using Clock = std::chrono::steady_clock;

double RssMiB() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      return std::stod(line.substr(6)) / 1024.0;
    }
  }
  return 0;
}

double Micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

int Run(const std::string& db, const std::string& vins_path, const std::string& out_path) {
  std::vector<std::string> vins;
  {
    std::ifstream in(vins_path);
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty()) {
        vins.push_back(fusebox::gateway::NormalizeVin(line));  // as the gateway does first
      }
    }
  }
  const double rss_before = RssMiB();
  const auto start = Clock::now();
  auto opened = fusebox::gateway::OfflineDecoder::Open(db);
  const auto loaded = Clock::now();
  if (!opened) {
    std::cerr << opened.error().message << "\n";
    return 1;
  }
  const fusebox::gateway::OfflineDecoder& decoder = *opened;
  const double rss_after = RssMiB();

  // The answers, once, for the comparison: the first pass, timed on its own.
  std::ofstream out(out_path);
  std::vector<double> first_pass;
  const auto first_start = Clock::now();
  for (const std::string& vin : vins) {
    const auto t0 = Clock::now();
    const fusebox::gateway::Decode d = decoder.Decode(vin, std::nullopt);
    first_pass.push_back(Micros(Clock::now() - t0));
    boost::json::object row;
    row["vin"] = vin;
    for (const char* key :
         {"make", "model", "model_year", "manufacturer", "body_class", "vehicle_type",
          "plant_country", "engine_cylinders", "displacement_l"}) {
      auto it = d.vehicle.find(key);
      row[key] = it == d.vehicle.end() ? "" : it->second;
    }
    boost::json::array codes;
    for (int code : d.upstream_codes) {
      codes.emplace_back(code);
    }
    row["codes"] = std::move(codes);
    out << boost::json::serialize(row) << "\n";
  }
  const double first_seconds = std::chrono::duration<double>(Clock::now() - first_start).count();
  std::sort(first_pass.begin(), first_pass.end());

  // Timed passes: every VIN, five times, each decode timed on its own.
  std::vector<double> latencies;
  latencies.reserve(vins.size() * 5);
  std::size_t sink = 0;
  const auto timed_start = Clock::now();
  for (int pass = 0; pass < 5; ++pass) {
    for (const std::string& vin : vins) {
      const auto t0 = Clock::now();
      sink += decoder.Decode(vin, std::nullopt).vehicle.size();
      latencies.push_back(Micros(Clock::now() - t0));
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - timed_start).count();
  std::sort(latencies.begin(), latencies.end());
  const auto percentile = [](const std::vector<double>& sorted, double p) {
    return sorted[std::min(sorted.size() - 1,
                           static_cast<std::size_t>(p * static_cast<double>(sorted.size())))];
  };
  const auto pct = [&](double p) { return percentile(latencies, p); };
  boost::json::object summary;
  summary["decoder"] = "fusebox offline (C++)";
  summary["vins"] = vins.size();
  summary["decodes"] = latencies.size();
  summary["startup_ms"] = Micros(loaded - start) / 1000.0;
  summary["rss_before_mib"] = rss_before;
  summary["rss_after_load_mib"] = rss_after;
  summary["decodes_per_s"] = static_cast<double>(latencies.size()) / seconds;
  summary["p50_us"] = pct(0.50);
  summary["p99_us"] = pct(0.99);
  summary["max_us"] = latencies.back();
  summary["first_pass_decodes_per_s"] = static_cast<double>(first_pass.size()) / first_seconds;
  summary["first_pass_p50_us"] = percentile(first_pass, 0.50);
  summary["first_pass_p99_us"] = percentile(first_pass, 0.99);
  summary["snapshot"] = decoder.snapshot_date();
  summary["checksum"] = sink;
  std::cout << boost::json::serialize(summary) << "\n";
  return 0;
}

// VINs from the database's own data: a random WMI-schema link, a year in its range, one of the
// schema's Model keys filled in ('*' and sets with random VIN characters), position 10 the year's
// code (position 7 consistent with it for light vehicles), the 6-character WMI's positions 12-14,
// and the check digit.
int Generate(const std::string& db_path, int count, unsigned seed) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    std::cerr << "cannot open " << db_path << "\n";
    return 1;
  }
  struct Link {
    std::string wmi;
    int vehicle_type;
    int schema;
    int from;
    int to;
  };
  std::vector<Link> links;
  std::map<int, std::vector<std::string>> model_keys;
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(db,
                     "SELECT w.Wmi, coalesce(w.VehicleTypeId, 0), l.VinSchemaId, l.YearFrom, "
                     "coalesce(l.YearTo, 2026) FROM Wmi_VinSchema l JOIN Wmi w ON w.Id = l.WmiId",
                     -1, &s, nullptr);
  while (sqlite3_step(s) == SQLITE_ROW) {
    links.push_back({reinterpret_cast<const char*>(sqlite3_column_text(s, 0)),
                     sqlite3_column_int(s, 1), sqlite3_column_int(s, 2), sqlite3_column_int(s, 3),
                     std::min(2026, sqlite3_column_int(s, 4))});
  }
  sqlite3_finalize(s);
  sqlite3_prepare_v2(db, "SELECT VinSchemaId, Keys FROM Pattern WHERE ElementId = 28", -1, &s,
                     nullptr);
  while (sqlite3_step(s) == SQLITE_ROW) {
    model_keys[sqlite3_column_int(s, 0)].push_back(
        reinterpret_cast<const char*>(sqlite3_column_text(s, 1)));
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  std::erase_if(links, [&](const Link& l) {
    return model_keys.count(l.schema) == 0 || l.from > l.to || l.from < 1981 ||
           (l.wmi.size() != 3 && l.wmi.size() != 6);
  });

  static constexpr std::string_view kVinChars = "0123456789ABCDEFGHJKLMNPRSTUVWXYZ";
  static constexpr std::string_view kYearCodes = "ABCDEFGHJKLMNPRSTVWXY123456789";
  std::mt19937 rng(seed);
  const auto pick = [&](std::string_view from) {
    return from[std::uniform_int_distribution<std::size_t>(0, from.size() - 1)(rng)];
  };
  int made = 0;
  for (int attempt = 0; made < count && attempt < count * 50; ++attempt) {
    const Link& link = links[std::uniform_int_distribution<std::size_t>(0, links.size() - 1)(rng)];
    const auto& keys = model_keys[link.schema];
    const std::string& key =
        keys[std::uniform_int_distribution<std::size_t>(0, keys.size() - 1)(rng)];
    const int year = std::uniform_int_distribution<int>(link.from, link.to)(rng);
    // Target positions 4-8 '|' 10-17 (14 characters); '\0' = free.
    std::string target(14, '\0');
    target[5] = '|';
    bool ok = true;
    std::size_t j = 0;
    for (std::size_t i = 0; i < key.size() && ok; ++j) {
      if (j >= target.size()) {
        ok = false;
        break;
      }
      if (key[i] == '*') {
        ++i;
      } else if (key[i] == '[') {
        const std::size_t close = key.find(']', i);
        if (close == std::string::npos) {
          ok = false;
          break;
        }
        std::string set;
        for (std::size_t m = i + 1; m < close; ++m) {
          if (m + 2 < close && key[m + 1] == '-') {
            for (char c = key[m]; c <= key[m + 2]; ++c) {
              set += c;
            }
            m += 2;
          } else {
            set += key[m];
          }
        }
        std::erase_if(set, [](char c) { return !fusebox::gateway::IsVinChar(c); });
        if (set.empty()) {
          ok = false;
        } else {
          target[j] = pick(set);
        }
        i = close + 1;
      } else {
        if (key[i] != target[j] && !(target[j] == '\0' && fusebox::gateway::IsVinChar(key[i]))) {
          ok = false;
        }
        target[j] = key[i];
        ++i;
      }
    }
    const char year_code = kYearCodes[static_cast<std::size_t>((year - 1980) % 30)];
    const bool light = link.vehicle_type == 2 || link.vehicle_type == 3 || link.vehicle_type == 7;
    const auto fix = [&](std::size_t index, char c) {
      if (target[index] != '\0' && target[index] != c) {
        ok = false;
      }
      target[index] = c;
    };
    fix(6, year_code);
    if (light && target[3] == '\0') {
      target[3] = year >= 2010 ? pick("ABCDEFGHJKLMNPRSTUVWXYZ") : pick("0123456789");
    } else if (light && (year >= 2010) != (target[3] >= 'A' && target[3] <= 'Z')) {
      ok = false;
    }
    if (link.wmi.size() == 6) {
      for (std::size_t k = 0; k < 3; ++k) {
        fix(8 + k, link.wmi[3 + k]);
      }
    }
    if (!ok) {
      continue;
    }
    std::string vin = link.wmi.substr(0, 3);
    for (std::size_t k = 0; k < target.size(); ++k) {
      if (k == 5) {
        vin += '0';  // the check digit, below
      } else {
        vin += target[k] != '\0' ? target[k] : (k >= 11 ? pick("0123456789") : pick(kVinChars));
      }
    }
    std::optional<char> check = fusebox::gateway::ComputeCheckDigit(vin);
    if (!check) {
      continue;
    }
    vin[8] = *check;
    std::cout << vin << "\n";
    ++made;
  }
  return made == count ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv, argv + argc);
  if (args.size() == 5 && args[1] == "generate") {
    return Generate(args[2], std::stoi(args[3]), static_cast<unsigned>(std::stoul(args[4])));
  }
  if (args.size() == 5 && args[1] == "run") {
    return Run(args[2], args[3], args[4]);
  }
  std::cerr << "usage: offline-bench generate DB N SEED | offline-bench run DB VINS OUT\n";
  return 2;
}

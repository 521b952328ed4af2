// The offline decoder against real vPIC answers nobody here wrote: every recorded response in
// apps/vpic-sim/data (flat rows and nested DecodeVin variables, parsed by the gateway's own
// parser). For each recorded row the offline decode of the same VIN (and model year, when the
// recording asked for one) must agree on the fields below wherever the recording has them. The
// test prints the agreement per field; Make, Model and ModelYear must agree everywhere, except
// the cases tests/vin_gateway/data/offline-known-differences.tsv lists, each with the reason (a
// difference the snapshot causes, not the decoder).
//
// Needs the database scripts/install-deps.sh installs (var/vpic/vpic.lite.db); label
// integration. Also here: the decoder over the VIN fuzzer's corpus (every VIN vector and seeded
// mutations of them), and the open errors for missing, truncated and foreign files.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <sqlite3.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "core/vin.h"
#include "core/vpic_parser.h"
#include "fuzz/fuzz_support.h"
#include "offline/offline_decoder.h"

namespace {

using fusebox::gateway::OfflineDecoder;
using fusebox::gateway::OfflineOpenError;

const std::filesystem::path kSourceDir = FUSEBOX_SOURCE_DIR;
const std::filesystem::path kDatabase = kSourceDir / "var/vpic/vpic.lite.db";
const std::filesystem::path kRecordings = kSourceDir / "apps/vpic-sim/data";

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

const OfflineDecoder& Decoder() {
  static const auto* decoder = [] {
    auto opened = OfflineDecoder::Open(kDatabase.string());
    if (!opened) {
      ADD_FAILURE() << opened.error().message
                    << "\nthe offline vPIC database is installed by scripts/install-deps.sh";
      return static_cast<OfflineDecoder*>(nullptr);
    }
    return new OfflineDecoder(std::move(opened).value());
  }();
  if (decoder == nullptr) {
    throw std::runtime_error("no offline database: run scripts/install-deps.sh");
  }
  return *decoder;
}

struct Recorded {
  std::string file;
  std::string vin;
  std::optional<int> model_year;
  fusebox::gateway::Vehicle vehicle;
};

// Every recorded row with a VIN. The davidpeckham captures wrap the body as "content" next to the
// URL, which names the model year when one was asked for.
std::vector<Recorded> Recordings() {
  std::vector<Recorded> out;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(kRecordings)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".json") {
      continue;
    }
    std::string body = ReadFile(entry.path());
    std::optional<int> model_year;
    boost::system::error_code ec;
    boost::json::value root = boost::json::parse(body, ec);
    if (!ec && root.is_object() && root.get_object().contains("content") &&
        root.get_object().contains("url")) {
      const std::string url(root.get_object().at("url").as_string());
      if (auto at = url.find("modelyear="); at != std::string::npos) {
        model_year = std::stoi(url.substr(at + 10, 4));
      }
      body = boost::json::serialize(root.get_object().at("content"));
    }
    auto parsed = fusebox::gateway::ParseVpic(body);
    if (!parsed) {
      continue;
    }
    for (const auto& row : parsed->rows) {
      if (row.vin.empty() || row.vehicle.at("make").empty()) {
        continue;  // not a decode of a VIN (a WMI lookup, an error body, a garbage input)
      }
      out.push_back({std::filesystem::relative(entry.path(), kRecordings).string(), row.vin,
                     model_year, row.vehicle});
    }
  }
  return out;
}

// file \t vin \t field \t offline value \t reason
std::set<std::string> KnownDifferences() {
  std::set<std::string> out;
  std::ifstream in(kSourceDir / "tests/vin_gateway/data/offline-known-differences.tsv");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') {
      continue;
    }
    std::istringstream fields(line);
    std::string file, vin, field;
    std::getline(fields, file, '\t');
    std::getline(fields, vin, '\t');
    std::getline(fields, field, '\t');
    out.insert(file + "|" + vin + "|" + field);
  }
  return out;
}

// vPIC writes numbers as the data holds them ("2.0", "1.998"); compare them as numbers.
bool SameValue(const std::string& a, const std::string& b) {
  if (a == b) {
    return true;
  }
  char* end_a = nullptr;
  char* end_b = nullptr;
  const double x = std::strtod(a.c_str(), &end_a);
  const double y = std::strtod(b.c_str(), &end_b);
  return end_a != a.c_str() && *end_a == '\0' && end_b != b.c_str() && *end_b == '\0' &&
         std::abs(x - y) < 1e-6;
}

TEST(OfflineAccuracyTest, AgreesWithEveryRecordedVpicAnswer) {
  const OfflineDecoder& decoder = Decoder();
  const std::vector<Recorded> recorded = Recordings();
  ASSERT_GE(recorded.size(), 10U) << "apps/vpic-sim/data is missing or short";
  const std::set<std::string> known = KnownDifferences();
  static const std::vector<std::string> kFields = {
      "make",         "model",         "model_year",       "manufacturer",  "body_class",
      "vehicle_type", "plant_country", "engine_cylinders", "displacement_l"};
  static const std::set<std::string> kMustAgree = {"make", "model", "model_year"};
  struct Tally {
    int agree = 0;
    int known = 0;  // documented snapshot differences
    int compared = 0;
  };
  std::map<std::string, Tally> agreement;
  for (const Recorded& r : recorded) {
    const fusebox::gateway::Decode offline = decoder.Decode(r.vin, r.model_year);
    for (const std::string& field : kFields) {
      auto want = r.vehicle.find(field);
      if (want == r.vehicle.end() || want->second.empty()) {
        continue;
      }
      auto got = offline.vehicle.find(field);
      const std::string value = got == offline.vehicle.end() ? "" : got->second;
      Tally& tally = agreement[field];
      ++tally.compared;
      if (SameValue(value, want->second)) {
        ++tally.agree;
        continue;
      }
      const bool excused = known.count(r.file + "|" + r.vin + "|" + field) != 0;
      std::printf("  differs %s %s %s: recorded \"%s\", offline \"%s\"%s\n", r.file.c_str(),
                  r.vin.c_str(), field.c_str(), want->second.c_str(), value.c_str(),
                  excused ? " (known: snapshot)" : "");
      if (excused) {
        ++tally.known;
      } else if (kMustAgree.count(field) != 0) {
        ADD_FAILURE() << r.file << " " << r.vin << " " << field << ": recorded \"" << want->second
                      << "\", offline \"" << value << "\"";
      }
    }
  }
  std::printf("offline vs recorded vPIC answers (%zu rows):\n", recorded.size());
  for (const std::string& field : kFields) {
    const Tally& t = agreement[field];
    std::printf("  %-16s agree %2d of %2d (%5.1f%%), known snapshot differences %d\n",
                field.c_str(), t.agree, t.compared,
                t.compared == 0 ? 100.0 : 100.0 * t.agree / t.compared, t.known);
  }
}

TEST(OfflineAccuracyTest, UnknownWmiAnswersAsVpicDoes) {
  const fusebox::gateway::Decode d = Decoder().Decode("1AKJHHDR3KSKX6689", std::nullopt);
  EXPECT_EQ(d.upstream_codes, (std::vector<int>{1, 7}));
  EXPECT_EQ(d.vehicle.at("make"), "");
  EXPECT_EQ(d.vehicle.at("error_code"), "1,7");
}

TEST(OfflineAccuracyTest, SnapshotDateIsADate) {
  const std::string& date = Decoder().snapshot_date();
  ASSERT_EQ(date.size(), 10U);
  EXPECT_EQ(date[4], '-');
  EXPECT_EQ(date[7], '-');
  EXPECT_GE(date, "2020-01-01");
}

// The VIN fuzzer's corpus (tests/data/vin-vectors.tsv) and seeded mutations of it: any bytes in,
// an answer out, never a crash; the required keys always present.
TEST(OfflineAccuracyTest, FuzzCorpusAndMutationsNeverCrash) {
  const OfflineDecoder& decoder = Decoder();
  std::ifstream in(kSourceDir / "tests/data/vin-vectors.tsv");
  std::vector<std::string> corpus;
  std::string line;
  while (std::getline(in, line)) {
    corpus.push_back(line.substr(0, line.find('\t')));
  }
  ASSERT_GE(corpus.size(), 100U);
  std::mt19937_64 rng(15);
  int decoded = 0;
  for (const std::string& seed : corpus) {
    for (int i = 0; i <= 20; ++i) {
      const std::string input = i == 0 ? seed : fusebox::fuzz::Mutate(seed, rng);
      const fusebox::gateway::Decode d = decoder.Decode(input, std::nullopt);
      for (std::string_view key : fusebox::gateway::kRequiredVehicleKeys) {
        EXPECT_EQ(d.vehicle.count(key), 1U) << input;
      }
      EXPECT_FALSE(d.upstream_codes.empty()) << input;
      decoded += d.vehicle.at("model").empty() ? 0 : 1;
    }
  }
  EXPECT_GT(decoded, 100);
}

TEST(OfflineOpenTest, MissingTruncatedAndForeignFilesAreTypedErrors) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("offline_open_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  auto missing = OfflineDecoder::Open((dir / "none.db").string());
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().error, OfflineOpenError::kMissing);

  { std::ofstream(dir / "garbage.db") << "this is not a database, just text\n"; }
  auto garbage = OfflineDecoder::Open((dir / "garbage.db").string());
  ASSERT_FALSE(garbage);
  EXPECT_EQ(garbage.error().error, OfflineOpenError::kNotSqlite) << garbage.error().message;

  // A real SQLite database, but not vPIC's.
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open((dir / "other.db").string().c_str(), &other), SQLITE_OK);
  sqlite3_exec(other, "CREATE TABLE Wmi (Id INTEGER)", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  auto wrong = OfflineDecoder::Open((dir / "other.db").string());
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().error, OfflineOpenError::kWrongSchema) << wrong.error().message;

  if (std::filesystem::exists(kDatabase)) {
    // The first 64 KiB of the real file: a valid header, then nothing.
    std::string head = ReadFile(kDatabase).substr(0, 64 * 1024);
    std::ofstream(dir / "truncated.db", std::ios::binary) << head;
    auto truncated = OfflineDecoder::Open((dir / "truncated.db").string());
    ASSERT_FALSE(truncated);
    EXPECT_NE(truncated.error().error, OfflineOpenError::kMissing) << truncated.error().message;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace

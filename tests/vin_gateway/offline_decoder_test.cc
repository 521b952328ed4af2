// The offline decoder's rules on a small vPIC-shaped database written by the test (no download
// needed: unit tier), and the decode service's offline fallback against a fake upstream:
//   - WMI of 3 characters, and of 6 when position 3 is '9'; an unknown WMI is code 7;
//   - the model year from position 10 (the cycle chosen by position 7 for passenger cars, the
//     latest cycle otherwise) or the caller's, selecting the VIN schemas of that year;
//   - keys as prefixes with '*' and "[..]" ranges, the most specific key winning, lookups,
//     displacement conversion, private elements never shown, the check digit as code 1;
//   - the gateway: offline answers only when no live decode is possible and no stale copy exists,
//     per VIN in batches, and `?source=offline` without touching the upstream.
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include "core/answer_json.h"
#include "core/vin.h"
#include "fusebox/circuit_breaker.h"
#include "fusebox/testing/manual_clock.h"
#include "offline/offline_decoder.h"
#include "service/cache.h"
#include "service/decode_service.h"
#include "service/gateway_metrics.h"
#include "service/rate_limiter.h"
#include "service/upstream_limits.h"
#include "vin_gateway/fake_vpic_client.h"
#include "vin_gateway/manual_wall_clock.h"

namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;
using fusebox::gateway::DecodeAnswer;
using fusebox::gateway::DecodeStatus;
using fusebox::gateway::OfflineDecoder;
using fusebox::gateway::Source;

// A vPIC database in miniature: the tables and columns the decoder reads, a few rows each.
constexpr char kMiniVpic[] = R"sql(
CREATE TABLE Make (Id INTEGER NOT NULL, Name TEXT NOT NULL);
INSERT INTO Make VALUES (1, 'Testmake'), (2, 'Othermake');
CREATE TABLE Manufacturer (Id INTEGER NOT NULL, Name TEXT NOT NULL);
INSERT INTO Manufacturer VALUES (1, 'TEST MOTORS'), (2, 'SMALL TRAILERS');
CREATE TABLE VehicleType (Id INTEGER NOT NULL, Name TEXT NOT NULL);
INSERT INTO VehicleType VALUES (2, 'Passenger Car'), (6, 'Trailer');
CREATE TABLE Model (Id INTEGER NOT NULL, Name TEXT NOT NULL);
INSERT INTO Model VALUES (10, 'Alpha'), (11, 'Beta'), (12, 'Gamma');
CREATE TABLE Make_Model (Id INTEGER, MakeId INTEGER NOT NULL, ModelId INTEGER NOT NULL);
INSERT INTO Make_Model VALUES (1, 1, 10), (2, 1, 11), (3, 2, 12);
CREATE TABLE Element (Id INTEGER NOT NULL, Name TEXT NOT NULL, Code TEXT, LookupTable TEXT,
                      IsPrivate INTEGER);
INSERT INTO Element VALUES (5, 'Body Class', 'BodyClass', 'BodyStyle', NULL),
  (9, 'Engine Number of Cylinders', 'EngineCylinders', NULL, NULL),
  (11, 'Displacement (CC)', 'DisplacementCC', NULL, NULL),
  (13, 'Displacement (L)', 'DisplacementL', NULL, NULL),
  (26, 'Make', 'Make', 'Make', NULL), (28, 'Model', 'Model', 'Model', NULL),
  (29, 'Model Year', 'ModelYear', NULL, NULL),
  (96, 'NCSA Body Type', 'NCSABodyType', NULL, 1);
CREATE TABLE BodyStyle (Id INTEGER NOT NULL, Name TEXT NOT NULL);
INSERT INTO BodyStyle VALUES (1, 'Sedan/Saloon'), (2, 'Coupe');
CREATE TABLE Conversion (Id INTEGER, FromElementId INTEGER, ToElementId INTEGER, Formula TEXT);
INSERT INTO Conversion VALUES (3, 11, 13, '#x# / 1000.');
CREATE TABLE Wmi (Id INTEGER NOT NULL, Wmi TEXT NOT NULL, ManufacturerId INTEGER, MakeId INTEGER,
                  VehicleTypeId INTEGER, ProcessedOn TEXT);
INSERT INTO Wmi VALUES (1, '1T2', 1, 1, 2, '2025-06-30 10:00:00'),
  (2, '1T9ABC', 2, NULL, 6, '2024-01-02 00:00:00');
CREATE TABLE Wmi_Make (WmiId INTEGER NOT NULL, MakeId INTEGER NOT NULL);
INSERT INTO Wmi_Make VALUES (2, 1), (2, 2);
CREATE TABLE Wmi_VinSchema (Id INTEGER, WmiId INTEGER NOT NULL, VinSchemaId INTEGER NOT NULL,
                            YearFrom INTEGER NOT NULL, YearTo INTEGER);
INSERT INTO Wmi_VinSchema VALUES (1, 1, 100, 2010, 2019), (2, 1, 101, 2020, NULL),
  (3, 2, 200, 1990, NULL), (4, 1, 102, 1981, 1989);
CREATE TABLE Pattern (Id INTEGER NOT NULL, VinSchemaId INTEGER NOT NULL, Keys TEXT NOT NULL,
                      ElementId INTEGER NOT NULL, AttributeId TEXT NOT NULL);
INSERT INTO Pattern VALUES
  (1, 100, 'A****', 28, '10'), (2, 100, 'AB***', 28, '11'), (3, 100, 'A****', 11, '2000.0'),
  (4, 100, '[C-E]****', 5, '2'), (5, 100, '*****|*[1-3]', 9, '4'), (6, 100, 'A****', 5, '1'),
  (7, 100, 'A****', 96, 'private'), (8, 101, 'A****', 28, '11'),
  (9, 200, '*****', 28, '12'), (10, 200, '*****', 5, '99'), (11, 102, 'Z****', 28, '10');
)sql";

// `vin` with its check digit computed into position 9.
std::string WithCheckDigit(std::string vin) {
  vin[8] = '0';
  vin[8] = fusebox::gateway::ComputeCheckDigit(vin).value_or('0');
  return vin;
}

class MiniVpic {
 public:
  // wal: in WAL journal mode, as NHTSA's snapshot ships. dir: where (default the temp directory).
  explicit MiniVpic(bool wal = false, std::filesystem::path dir = {}) {
    if (dir.empty()) {
      dir = std::filesystem::temp_directory_path();
    }
    path_ =
        dir / ("mini_vpic_" + std::to_string(getpid()) + "_" + std::to_string(counter_++) + ".db");
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    char* error = nullptr;
    if (wal) {
      EXPECT_EQ(sqlite3_exec(db, "PRAGMA journal_mode = WAL", nullptr, nullptr, &error), SQLITE_OK);
    }
    EXPECT_EQ(sqlite3_exec(db, kMiniVpic, nullptr, nullptr, &error), SQLITE_OK)
        << (error ? error : "");
    sqlite3_free(error);
    sqlite3_close(db);
    auto opened = OfflineDecoder::Open(path_.string());
    EXPECT_TRUE(opened) << (opened ? "" : opened.error().message);
    if (opened) {
      decoder_.emplace(std::move(opened).value());
    }
  }
  ~MiniVpic() { std::filesystem::remove(path_); }
  const OfflineDecoder& decoder() const { return *decoder_; }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
  std::optional<OfflineDecoder> decoder_;
};

// The packaged snapshot lives in /usr/share, which the service may not write: opening it must
// write nothing beside it (a WAL-mode database would otherwise need a -shm file there, and fails
// its first read as "attempt to write a readonly database"). The directory's name has the
// characters an SQLite URI gives a meaning to.
TEST(OfflineDecoderTest, WalSnapshotOpensWithoutWritingBesideIt) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("vpic ?#%41 dir " + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  {
    MiniVpic vpic(/*wal=*/true, dir);
    EXPECT_EQ(vpic.decoder().snapshot_date(), "2025-06-30");
    std::vector<std::string> beside;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      beside.push_back(entry.path().filename().string());
    }
    ASSERT_EQ(beside.size(), 1U) << testing::PrintToString(beside);
    EXPECT_TRUE(beside[0].ends_with(".db")) << beside[0];
  }
  std::filesystem::remove_all(dir);
}

TEST(OfflineDecoderTest, SnapshotIsTheLatestProcessedOnDate) {
  MiniVpic vpic;
  EXPECT_EQ(vpic.decoder().snapshot_date(), "2025-06-30");
}

TEST(OfflineDecoderTest, MostSpecificKeyWinsAndLookupsResolve) {
  MiniVpic vpic;
  // Position 7 'C' (a letter): the 2010 cycle; position 10 'E': 2014 -> schema 100.
  const auto d = vpic.decoder().Decode(WithCheckDigit("1T2AB1C2_E1000001"), std::nullopt);
  EXPECT_EQ(d.vehicle.at("model"), "Beta");  // "AB***" beats "A****"
  EXPECT_EQ(d.vehicle.at("make"), "TESTMAKE");
  EXPECT_EQ(d.vehicle.at("manufacturer"), "TEST MOTORS");
  EXPECT_EQ(d.vehicle.at("vehicle_type"), "PASSENGER CAR");
  EXPECT_EQ(d.vehicle.at("model_year"), "2014");
  EXPECT_EQ(d.vehicle.at("body_class"), "Sedan/Saloon");
  EXPECT_EQ(d.vehicle.at("displacement_cc"), "2000.0");
  EXPECT_EQ(d.vehicle.at("displacement_l"), "2.0");  // through the Conversion formula
  EXPECT_EQ(d.vehicle.at("engine_cylinders"), "4");  // "*****|*[1-3]": position 11 is '1'
  EXPECT_EQ(d.vehicle.count("ncsa_body_type"), 0U);  // a private element
  EXPECT_EQ(d.upstream_codes, (std::vector<int>{0}));
  EXPECT_EQ(d.vehicle.at("error_code"), "0");
}

TEST(OfflineDecoderTest, RangesAndWildcardsMatchOneCharacterEach) {
  MiniVpic vpic;
  const auto coupe = vpic.decoder().Decode(WithCheckDigit("1T2DB1C2_E4000001"), std::nullopt);
  EXPECT_EQ(coupe.vehicle.at("body_class"), "Coupe");      // [C-E]
  EXPECT_EQ(coupe.vehicle.count("engine_cylinders"), 0U);  // position 11 '4' not in [1-3]
  EXPECT_EQ(coupe.vehicle.at("model"), "");                // no key for 'D'
  const auto none = vpic.decoder().Decode(WithCheckDigit("1T2FB1C2_E1000001"), std::nullopt);
  EXPECT_EQ(none.vehicle.at("body_class"), "");
}

TEST(OfflineDecoderTest, ModelYearSelectsTheSchema) {
  MiniVpic vpic;
  // Position 10 'L' with a letter at 7: 2020 -> schema 101 (Beta for "A****").
  EXPECT_EQ(
      vpic.decoder().Decode(WithCheckDigit("1T2AR1C2_L1000001"), std::nullopt).vehicle.at("model"),
      "Beta");
  // A digit at position 7: 1984, no schema for that year: code 8, nothing decoded.
  const auto old = vpic.decoder().Decode(WithCheckDigit("1T2AR112_E1000001"), std::nullopt);
  EXPECT_EQ(old.vehicle.at("model_year"), "1984");
  EXPECT_EQ(old.vehicle.at("model"), "");
  EXPECT_EQ(old.upstream_codes, (std::vector<int>{8}));
  // A letter at position 7 tries 2014 first; only the 1984 schema knows a model for 'Z': 1984.
  const auto older = vpic.decoder().Decode(WithCheckDigit("1T2ZB1C2_E1000001"), std::nullopt);
  EXPECT_EQ(older.vehicle.at("model_year"), "1984");
  EXPECT_EQ(older.vehicle.at("model"), "Alpha");
  // The caller's year wins over position 10.
  const auto asked = vpic.decoder().Decode(WithCheckDigit("1T2AR1C2_E1000001"), 2021);
  EXPECT_EQ(asked.vehicle.at("model_year"), "2021");
  EXPECT_EQ(asked.vehicle.at("model"), "Beta");
  EXPECT_EQ(asked.model_year, 2021);
}

TEST(OfflineDecoderTest, SixCharacterWmiAndTheMakeOfTheModel) {
  MiniVpic vpic;
  // Position 3 '9': the WMI is 1T9 + positions 12-14 (ABC). A trailer: position 10 'E' is the
  // latest 'E' year not past next year, whatever position 7 says.
  const auto d = vpic.decoder().Decode(WithCheckDigit("1T9XXXXX_E1ABC001"), std::nullopt);
  EXPECT_EQ(d.vehicle.at("manufacturer"), "SMALL TRAILERS");
  EXPECT_EQ(d.vehicle.at("vehicle_type"), "TRAILER");
  EXPECT_EQ(d.vehicle.at("model"), "Gamma");
  EXPECT_EQ(d.vehicle.at("make"), "OTHERMAKE");   // the WMI has two makes: the model's
  EXPECT_EQ(d.vehicle.at("model_year"), "2014");  // until 2043
  EXPECT_EQ(d.vehicle.at("body_class"), "") << "an unknown BodyStyle id is dropped, not shown";
}

TEST(OfflineDecoderTest, UnknownWmiBadCheckDigitAndPartialVins) {
  MiniVpic vpic;
  const auto unknown = vpic.decoder().Decode(WithCheckDigit("5XXAB1C2_E1000001"), std::nullopt);
  EXPECT_EQ(unknown.vehicle.at("make"), "");
  EXPECT_NE(std::find(unknown.upstream_codes.begin(), unknown.upstream_codes.end(), 7),
            unknown.upstream_codes.end());
  std::string bad = WithCheckDigit("1T2AB1C2_E1000001");
  bad[8] = bad[8] == '1' ? '2' : '1';
  const auto mismatch = vpic.decoder().Decode(bad, std::nullopt);
  EXPECT_EQ(mismatch.upstream_codes, (std::vector<int>{1}));
  EXPECT_EQ(mismatch.vehicle.at("model"), "Beta");            // decoded all the same, as vPIC does
  std::string no_year = WithCheckDigit("1T2AB1C2_U1000001");  // 'U' is no year code
  const auto unknown_year = vpic.decoder().Decode(no_year, std::nullopt);
  EXPECT_EQ(unknown_year.upstream_codes, (std::vector<int>{8, 11}));
  EXPECT_EQ(unknown_year.vehicle.at("make"), "TESTMAKE");
  const auto partial = vpic.decoder().Decode("1T2AB1C2*E", std::nullopt);
  EXPECT_EQ(partial.upstream_codes, (std::vector<int>{6}));
  EXPECT_EQ(partial.vehicle.at("model"), "Beta");
  for (const char* junk : {"", "1", "\xff\xfe", "1T2AB1C2*E1000001999999", "!!!!!!!!!!!!!!!!!"}) {
    const auto d = vpic.decoder().Decode(junk, std::nullopt);
    EXPECT_FALSE(d.upstream_codes.empty()) << junk;
    EXPECT_EQ(d.vehicle.count("make"), 1U) << junk;
  }
}

// The decode service with an offline decoder, against a fake upstream.
class Gateway {
 public:
  Gateway() {
    fusebox::CircuitBreakerConfig config;
    config.failure_threshold = 3;
    config.call_timeout = 2s;
    config.cooldown = 20s;
    config.half_open_successes = 1;
    breaker = std::move(fusebox::CircuitBreaker::Create("vpic", config, {.clock = &clock}).value());
    limits = fusebox::gateway::UpstreamLimits::Fixed(16);
    cache = fusebox::gateway::MakeMemoryCache(1000);
    limiter = std::make_unique<fusebox::gateway::RateLimiter>(0, 40, clock);
    service = std::make_unique<fusebox::gateway::DecodeService>(
        fusebox::gateway::DecodeServiceDeps{*cache, client, *breaker, *limits, *limiter, clock,
                                            wall, metrics, &vpic.decoder()},
        fusebox::gateway::DecodeServiceOptions{.cache_ttl = 24h});
  }

  DecodeAnswer Decode(std::string vin) {
    std::optional<DecodeAnswer> out;
    net::co_spawn(io, service->Decode(std::move(vin), 0, "10.0.0.1"),
                  [&out](std::exception_ptr error, DecodeAnswer answer) {
                    if (!error) {
                      out = std::move(answer);
                    }
                  });
    io.restart();
    io.run();
    EXPECT_TRUE(out.has_value());
    return out.value_or(DecodeAnswer{});
  }

  std::vector<DecodeAnswer> Batch(std::vector<std::string> vins) {
    std::vector<DecodeAnswer> out;
    net::co_spawn(io, service->DecodeBatch(std::move(vins), 0, "10.0.0.1"),
                  [&out](std::exception_ptr error, std::vector<DecodeAnswer> answers) {
                    if (!error) {
                      out = std::move(answers);
                    }
                  });
    io.restart();
    io.run();
    return out;
  }

  void Trip() {
    client.mode = fusebox::gateway::testing::FakeVpicClient::Mode::kStatus;
    client.status = 503;
    for (const char* vin : {"137ZA903X1E412677", "19XFC1F7XGE028370", "1C4RJEAG2EC476429"}) {
      Decode(vin);
    }
    ASSERT_EQ(breaker->state(), fusebox::State::kOpen);
  }

  MiniVpic vpic;
  fusebox::testing::ManualClock clock;
  fusebox::gateway::testing::ManualWallClock wall;
  fusebox::gateway::testing::FakeVpicClient client;
  std::unique_ptr<fusebox::CircuitBreaker> breaker;
  std::unique_ptr<fusebox::gateway::UpstreamLimits> limits;
  std::unique_ptr<fusebox::gateway::Cache> cache;
  std::unique_ptr<fusebox::gateway::RateLimiter> limiter;
  fusebox::gateway::GatewayMetrics metrics;
  net::io_context io;
  std::unique_ptr<fusebox::gateway::DecodeService> service;
};

const std::string kMiniVin = WithCheckDigit("1T2AB1C2_E1000001");

TEST(OfflineFallbackTest, NoLiveDecodeAndNoStaleCopyAnswersOffline) {
  Gateway g;
  g.Trip();  // its three failed decodes were answered offline too (their WMIs are unknown here)
  const std::uint64_t served = g.metrics.offline_answers();
  const DecodeAnswer answer = g.Decode(kMiniVin);
  EXPECT_EQ(answer.status, DecodeStatus::kCircuitOpen);  // the reason, as for stale answers
  EXPECT_EQ(answer.source, Source::kOffline);
  EXPECT_FALSE(answer.stale);
  EXPECT_EQ(answer.http_status(), 200U);
  EXPECT_EQ(answer.offline_snapshot, "2025-06-30");
  EXPECT_EQ(answer.message, fusebox::gateway::kOfflineMessage);
  ASSERT_TRUE(answer.decode);
  EXPECT_EQ(answer.decode->vehicle.at("model"), "Beta");
  const std::string body = fusebox::gateway::AnswerBody(answer);
  EXPECT_NE(body.find("\"source\":\"offline\""), std::string::npos) << body;
  EXPECT_NE(body.find("\"offline_snapshot\":\"2025-06-30\""), std::string::npos) << body;
  EXPECT_EQ(body.find("retry_after_s"), std::string::npos) << body;
  EXPECT_EQ(g.metrics.offline_answers(), served + 1);
}

TEST(OfflineFallbackTest, UpstreamErrorAnswersOffline) {
  Gateway g;
  g.client.mode = fusebox::gateway::testing::FakeVpicClient::Mode::kStatus;
  g.client.status = 500;
  const DecodeAnswer answer = g.Decode(kMiniVin);
  EXPECT_EQ(answer.status, DecodeStatus::kUpstreamError);
  EXPECT_EQ(answer.source, Source::kOffline);
  EXPECT_EQ(g.client.calls, 1);
}

TEST(OfflineFallbackTest, StaleLiveCopyIsPreferredOverOffline) {
  Gateway g;
  g.Decode("1FTMW1T88MFA00001");  // live, cached
  g.wall.Advance(25h);
  g.Trip();
  const DecodeAnswer answer = g.Decode("1FTMW1T88MFA00001");
  EXPECT_EQ(answer.source, Source::kCache);
  EXPECT_TRUE(answer.stale);
  EXPECT_TRUE(answer.offline_snapshot.empty());
}

TEST(OfflineFallbackTest, BatchFallsBackPerVin) {
  Gateway g;
  g.Decode("1FTMW1T88MFA00001");
  g.wall.Advance(25h);
  g.Trip();
  const std::vector<DecodeAnswer> answers = g.Batch({"1FTMW1T88MFA00001", kMiniVin, "BAD"});
  ASSERT_EQ(answers.size(), 3U);
  EXPECT_EQ(answers[0].source, Source::kCache);
  EXPECT_TRUE(answers[0].stale);
  EXPECT_EQ(answers[1].source, Source::kOffline);
  EXPECT_EQ(answers[1].status, DecodeStatus::kCircuitOpen);
  EXPECT_EQ(answers[2].status, DecodeStatus::kVinInvalid);
}

TEST(OfflineFallbackTest, SourceOfflineNeverCallsTheUpstream) {
  Gateway g;
  const DecodeAnswer answer = g.service->DecodeOffline(kMiniVin, 0);
  EXPECT_EQ(answer.status, DecodeStatus::kOk);
  EXPECT_EQ(answer.source, Source::kOffline);
  EXPECT_EQ(answer.http_status(), 200U);
  EXPECT_EQ(g.client.calls, 0);
  EXPECT_EQ(g.service->offline_snapshot(), "2025-06-30");
  EXPECT_EQ(g.service->DecodeOffline("NOT A VIN", 0).status, DecodeStatus::kVinInvalid);
}

}  // namespace

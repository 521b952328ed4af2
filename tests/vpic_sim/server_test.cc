// vpic-sim over real loopback sockets: servers on 127.0.0.1 port 0, started and stopped by each
// test; every wait is an I/O operation with a deadline.

#include "server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include <boost/beast/core/error.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "fault_json.h"
#include "fusebox/testing/manual_clock.h"
#include "vpic_sim/test_client.h"

namespace fusebox::vpic_sim {
namespace {

using namespace std::chrono_literals;
using test_client::DeclaredContentLength;
using test_client::Get;
using test_client::HttpGet;
using test_client::HttpPost;
using test_client::Post;
using test_client::RawBody;
using test_client::ReadEnd;
using test_client::Stats;
using test_client::StatsValue;
using test_client::TestConnection;
using test_client::WaitForStat;

constexpr std::string_view kSyntheticPath =
    "/api/vehicles/DecodeVinValues/1G1JC1440PZ215164?format=json";

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

boost::json::value ParseJson(std::string_view text) {
  std::error_code ec;
  boost::json::value v = boost::json::parse(text, ec);
  EXPECT_FALSE(ec) << text.substr(0, 200);
  return v;
}

FaultSpec Fault(std::string_view json) {
  auto spec = ParseFaultJson(json);
  EXPECT_TRUE(spec.has_value()) << (spec ? "" : spec.error().message);
  return spec ? *spec : FaultSpec{};
}

std::unique_ptr<Server> StartServer(ServerOptions options = {}) {
  auto server = Server::Create(std::move(options));
  EXPECT_TRUE(server.has_value()) << (server ? "" : server.error().message);
  if (!server) {
    return nullptr;
  }
  (*server)->Start();
  return std::move(*server);
}

std::unique_ptr<Server> StartWithFault(std::string_view json) {
  ServerOptions options;
  options.faults = Fault(json);
  return StartServer(std::move(options));
}

// ---- recorded responses ----

struct RecordedCase {
  std::string name;
  std::string fixture;
  std::string method;
  std::string target;
  std::string body;
  unsigned status = 200;
};

std::vector<RecordedCase> RecordedCases() {
  const std::string batch = "/api/vehicles/DecodeVINValuesBatch/";
  return {
      {"PeckhamDecodeVin", "davidpeckham-vpic-api/decode-vin.json", "GET",
       "/api/vehicles/DecodeVinValues/1FTMW1T88MFA00001?format=json", "", 200},
      {"PeckhamWithModelYear", "davidpeckham-vpic-api/decode-vin-with-modelyear.json", "GET",
       "/api/vehicles/DecodeVinValues/1FTMW1T88MFA00001?modelyear=2021&format=json", "", 200},
      {"PeckhamExtended", "davidpeckham-vpic-api/decode-vin-extended.json", "GET",
       "/api/vehicles/DecodeVinValuesExtended/1FTMW1T88MFA00001?modelyear=2021&format=json", "",
       200},
      {"PeckhamPartial", "davidpeckham-vpic-api/decode-partial-vin.json", "GET",
       "/api/vehicles/DecodeVinValues/5UXWX7C5*BA?modelyear=2011&format=json", "", 200},
      {"PeckhamBatch", "davidpeckham-vpic-api/decode-vin-batch.json", "POST", batch,
       "DATA=5UXWX7C5%2ABA%2C2011%3B5YJSA3DS%2AEF&format=json", 200},
      {"ShaggyTechBatch", "ShaggyTech-nhtsa-api-wrapper/decode-vin-values-batch.response.json",
       "POST", batch, "DATA=5UXWX7C5*BA,2011;+5YJSA3DS*EF&format=json", 200},
      {"LaravelNhtsa", "Composite-Solutions-laravel-nhtsa/WBA3A5C51CF256987.decodevinvalues.json",
       "GET", "/api/vehicles/DecodeVinValues/WBA3A5C51CF256987?format=json", "", 200},
      {"RaymondCamden", "cfjedimaster-raymondcamden2023/3VV3B7AXXNM077525.decodevinvalues.json",
       "GET", "/api/vehicles/decodevinvalues/3VV3B7AXXNM077525?format=json", "", 200},
      {"ShaggyTechValues", "ShaggyTech-nhtsa-api-wrapper/decode-vin-values.response.json", "GET",
       "/api/vehicles/DecodeVinValues/WA1A4AFY2J2008189?format=json", "", 200},
      {"ShaggyTechExtended",
       "ShaggyTech-nhtsa-api-wrapper/decode-vin-values-extended.response.json", "GET",
       "/api/vehicles/DecodeVinValuesExtended/WA1A4AFY2J2008189?format=json", "", 200},
      {"VinflyNotFound", "cvrsor-vinfly/api_response_http_error_code.json", "GET",
       "/api/vehicles/wrong-api-endpoint/1AKJHHDR3KSKX6689?format=json", "", 404},
  };
}

// Test names print the case's name, not its bytes.
void PrintTo(const RecordedCase& c, std::ostream* os) { *os << c.name; }

class RecordedResponseTest : public ::testing::TestWithParam<RecordedCase> {};

TEST_P(RecordedResponseTest, IsServedByteForByte) {
  const RecordedCase& c = GetParam();
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  auto reply =
      c.method == "GET" ? Get(server->port(), c.target) : Post(server->port(), c.target, c.body);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->result_int(), c.status);
  EXPECT_EQ((*reply)[boost::beast::http::field::content_type], "application/json; charset=utf-8");
  const std::string file = ReadFile(std::filesystem::path(VPIC_SIM_DATA_DIR) / c.fixture);
  const boost::json::value recorded = ParseJson(file);
  if (recorded.as_object().contains("content")) {
    // A capture wrapper: the response is the `content` member exactly as it appears in the file.
    EXPECT_NE(file.find(reply->body()), std::string::npos);
    EXPECT_EQ(ParseJson(reply->body()), recorded.as_object().at("content"));
  } else {
    EXPECT_EQ(reply->body(), file);
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, RecordedResponseTest, ::testing::ValuesIn(RecordedCases()),
                         [](const ::testing::TestParamInfo<RecordedCase>& case_info) {
                           return case_info.param.name;
                         });

// ---- the vPIC surface ----

TEST(VpicEndpointTest, PathsAreCaseInsensitive) {
  auto server = StartServer();
  auto upper = Get(server->port(), "/API/VEHICLES/DECODEVINVALUES/1FTMW1T88MFA00001?FORMAT=JSON");
  auto normal = Get(server->port(), "/api/vehicles/DecodeVinValues/1FTMW1T88MFA00001?format=json");
  ASSERT_TRUE(upper && normal);
  EXPECT_EQ(upper->result_int(), 200U);
  EXPECT_EQ(upper->body(), normal->body());
}

TEST(VpicEndpointTest, UnknownPathAnswers404WithVpicErrorBody) {
  auto server = StartServer();
  for (std::string_view target : {"/api/vehicles/DecodeWMI/1FT?format=json", "/", "/api"}) {
    auto reply = Get(server->port(), target);
    ASSERT_TRUE(reply.has_value()) << target;
    EXPECT_EQ(reply->result_int(), 404U) << target;
    const boost::json::object body = ParseJson(reply->body()).as_object();
    EXPECT_TRUE(body.contains("message")) << target;
    EXPECT_TRUE(body.contains("messageDetail")) << target;
  }
}

TEST(VpicEndpointTest, WrongMethodAnswers405) {
  auto server = StartServer();
  auto reply = Post(server->port(), kSyntheticPath, "x=1");
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->result_int(), 405U);
  EXPECT_EQ((*reply)[boost::beast::http::field::allow], "GET");
}

TEST(VpicEndpointTest, SyntheticDecodeHasEveryRecordedKeyWithStringValues) {
  std::set<std::string> recorded_keys;
  for (const char* fixture :
       {"cfjedimaster-raymondcamden2023/3VV3B7AXXNM077525.decodevinvalues.json",
        "Composite-Solutions-laravel-nhtsa/WBA3A5C51CF256987.decodevinvalues.json",
        "ShaggyTech-nhtsa-api-wrapper/decode-vin-values.response.json"}) {
    const boost::json::value v =
        ParseJson(ReadFile(std::filesystem::path(VPIC_SIM_DATA_DIR) / fixture));
    for (const auto& kv : v.at("Results").at(0).as_object()) {
      recorded_keys.emplace(kv.key());
    }
  }
  auto server = StartServer();
  auto reply = Get(server->port(), kSyntheticPath);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->result_int(), 200U);
  const boost::json::value body = ParseJson(reply->body());
  EXPECT_EQ(body.at("Count"), 1);
  EXPECT_EQ(body.at("SearchCriteria"), "VIN(s): 1G1JC1440PZ215164");
  const boost::json::object& row = body.at("Results").at(0).as_object();
  for (const std::string& key : recorded_keys) {
    ASSERT_TRUE(row.contains(key)) << key;
  }
  for (const auto& kv : row) {
    EXPECT_TRUE(kv.value().is_string()) << kv.key();
  }
  EXPECT_EQ(row.at("ErrorCode"), "0");
  EXPECT_EQ(row.at("Make"), "CHEVROLET");
  EXPECT_EQ(row.at("ModelYear"), "1993");
  EXPECT_EQ(row.at("Model"), "");
}

TEST(VpicEndpointTest, InvalidVinStillAnswers200) {
  auto server = StartServer();
  auto reply = Get(server->port(), "/api/vehicles/DecodeVinValues/IOQ?format=json");
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->result_int(), 200U);
  const boost::json::value body = ParseJson(reply->body());
  EXPECT_EQ(body.at("Results").at(0).at("ErrorCode"), "6,7,11,400");
  EXPECT_EQ(body.at("Results").at(0).at("AdditionalErrorText"),
            "Invalid character(s): 1:I, 2:O, 3:Q;");
}

TEST(VpicEndpointTest, VinSegmentIsPercentDecodedAndNormalized) {
  auto server = StartServer();
  auto reply =
      Get(server->port(), "/api/vehicles/DecodeVinValues/%20WDbuH87J46X202412%20%20?format=json");
  ASSERT_TRUE(reply.has_value());
  const boost::json::value row = ParseJson(reply->body()).at("Results").at(0);
  EXPECT_EQ(row.at("VIN"), "WDBUH87J46X202412");
  EXPECT_EQ(row.at("ErrorCode"), "0");
  EXPECT_EQ(row.at("ModelYear"), "2006");
}

TEST(VpicEndpointTest, BatchDecodesEveryItemInOrder) {
  auto server = StartServer();
  auto reply =
      Post(server->port(), "/api/vehicles/DecodeVINValuesBatch",
           "format=json&DATA=1G1JC1440PZ215164%3Bnachos%3BWBA3A5C51CF256987%2C2012%3Btacos");
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->result_int(), 200U);
  const boost::json::value body = ParseJson(reply->body());
  EXPECT_EQ(body.at("Count"), 4);
  EXPECT_EQ(body.at("SearchCriteria"), "");
  const boost::json::array& rows = body.at("Results").as_array();
  ASSERT_EQ(rows.size(), 4U);
  EXPECT_EQ(rows[0].at("VIN"), "1G1JC1440PZ215164");
  EXPECT_EQ(rows[1].at("VIN"), "NACHOS");
  EXPECT_EQ(rows[1].at("ErrorCode"), "6,7,11,400");  // synthetic
  EXPECT_EQ(rows[2].at("Model"), "328i");            // the recorded row
  EXPECT_EQ(rows[3].at("VIN"), "TACOS");
  EXPECT_EQ(rows[3].at("ErrorCode"), "11");  // recorded in 2017 (barclay-nhtsa_vin), converted
}

TEST(VpicEndpointTest, NestedOnlyRecordingIsServedConverted) {
  auto server = StartServer();
  auto reply = Get(server->port(), "/api/vehicles/DecodeVinValues/1GYDE63A740121151?format=json");
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->result_int(), 200U);
  const boost::json::value row = ParseJson(reply->body()).at("Results").at(0);
  EXPECT_EQ(row.at("Make"), "CADILLAC");
  EXPECT_EQ(row.at("Model"), "SRX");
  EXPECT_EQ(row.at("ModelYear"), "2004");
  EXPECT_EQ(row.at("ErrorCode"), "0");
  EXPECT_EQ(row.at("Trim"), "");
}

TEST(VpicEndpointTest, BatchOfMoreThanFiftyAnswers400) {
  std::string data;
  for (int i = 0; i < 51; ++i) {
    data += (i > 0 ? ";" : "") + std::string("1G1JC1440PZ215164");
  }
  auto server = StartServer();
  auto reply = Post(server->port(), "/api/vehicles/DecodeVINValuesBatch/", "DATA=" + data);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->result_int(), 400U);
}

TEST(VpicEndpointTest, KeepAliveConnectionCarriesSeveralRequests) {
  auto server = StartServer();
  TestConnection c;
  ASSERT_TRUE(c.Connect(server->port()));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c.Send(HttpGet(kSyntheticPath)));
    auto reply = c.ReadResponse();
    ASSERT_TRUE(reply.has_value()) << i;
    EXPECT_EQ(reply->result_int(), 200U);
  }
}

// ---- fault modes ----

TEST(FaultModeTest, ErrorAnswersTheChosenStatus) {
  auto server = StartWithFault(R"({"mode":"error","status":504})");
  auto reply = Get(server->port(), kSyntheticPath);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->result_int(), 504U);
  EXPECT_EQ(StatsValue(Stats(server->port()), "faults", "error"), 1);
}

TEST(FaultModeTest, TooManyRequestsCarriesRetryAfter) {
  auto server = StartWithFault(R"({"mode":"error","status":429,"retry_after_s":7})");
  auto reply = Get(server->port(), kSyntheticPath);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->result_int(), 429U);
  EXPECT_EQ((*reply)[boost::beast::http::field::retry_after], "7");
}

TEST(FaultModeTest, HangHoldsTheRequestInFlightUntilTheClientGivesUp) {
  auto server = StartWithFault(R"({"mode":"hang"})");
  TestConnection c;
  ASSERT_TRUE(c.Connect(server->port()));
  ASSERT_TRUE(c.Send(HttpGet(kSyntheticPath)));
  EXPECT_EQ(WaitForStat(server->port(), "in_flight", "", 1), 1);
  EXPECT_FALSE(c.ReadResponse(300ms).has_value());
  EXPECT_EQ(c.last_error(), boost::beast::error::timeout);
  EXPECT_EQ(StatsValue(Stats(server->port()), "faults", "hang"), 1);
  c.Close();
  EXPECT_EQ(WaitForStat(server->port(), "in_flight", "", 0), 0);
}

TEST(FaultModeTest, SlowAnswersAfterTheLatency) {
  auto server = StartWithFault(R"({"mode":"slow","latency_ms":300})");
  const auto start = std::chrono::steady_clock::now();
  auto reply = Get(server->port(), kSyntheticPath);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->result_int(), 200U);
  EXPECT_GE(elapsed, 300ms);
  EXPECT_EQ(StatsValue(Stats(server->port()), "faults", "slow"), 1);
}

// A client that gives up during the latency stops counting at once, as in hang mode.
TEST(FaultModeTest, SlowReleasesInFlightWhenTheClientLeaves) {
  auto server = StartWithFault(R"({"mode":"slow","latency_ms":600000})");
  TestConnection c;
  ASSERT_TRUE(c.Connect(server->port()));
  ASSERT_TRUE(c.Send(HttpGet(kSyntheticPath)));
  ASSERT_EQ(WaitForStat(server->port(), "in_flight", "", 1), 1);
  c.Close();
  EXPECT_EQ(WaitForStat(server->port(), "in_flight", "", 0), 0);
  EXPECT_EQ(StatsValue(Stats(server->port()), "faults", "slow"), 1);
}

TEST(FaultModeTest, DripReleasesInFlightWhenTheClientLeaves) {
  auto server = StartWithFault(R"({"mode":"drip","drip_bytes":1,"drip_interval_ms":60000})");
  TestConnection c;
  ASSERT_TRUE(c.Connect(server->port()));
  ASSERT_TRUE(c.Send(HttpGet(kSyntheticPath)));
  // The head and the first byte go out at once; the next byte waits a minute.
  ASSERT_EQ(WaitForStat(server->port(), "in_flight", "", 1), 1);
  c.Close();
  EXPECT_EQ(WaitForStat(server->port(), "in_flight", "", 0), 0);
  EXPECT_EQ(StatsValue(Stats(server->port()), "faults", "drip"), 1);
}

TEST(FaultModeTest, ClientThatLeavesFreesItsCapacitySlot) {
  auto server = StartWithFault(R"({"mode":"capacity","capacity":1,"latency_ms":600000})");
  TestConnection first;
  ASSERT_TRUE(first.Connect(server->port()));
  ASSERT_TRUE(first.Send(HttpGet(kSyntheticPath)));
  ASSERT_EQ(WaitForStat(server->port(), "in_flight", "", 1), 1);
  first.Close();
  ASSERT_EQ(WaitForStat(server->port(), "in_flight", "", 0), 0);
  TestConnection second;
  ASSERT_TRUE(second.Connect(server->port()));
  ASSERT_TRUE(second.Send(HttpGet(kSyntheticPath)));
  ASSERT_EQ(WaitForStat(server->port(), "in_flight", "", 1), 1);  // admitted, not rejected
  const boost::json::object stats = Stats(server->port());
  EXPECT_EQ(StatsValue(stats, "faults", "capacity_rejected"), 0);
  EXPECT_EQ(StatsValue(stats, "faults", "ok"), 2);
}

// Watching the connection during a latency keeps what the client sends meanwhile.
TEST(FaultModeTest, SlowKeepsAPipelinedRequest) {
  auto server = StartWithFault(R"({"mode":"slow","latency_ms":100})");
  TestConnection c;
  ASSERT_TRUE(c.Connect(server->port()));
  ASSERT_TRUE(c.Send(HttpGet(kSyntheticPath) +
                     HttpGet("/api/vehicles/DecodeVinValues/1FTMW1T88MFA00001?format=json")));
  auto one = c.ReadResponse();
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(ParseJson(one->body()).at("Results").at(0).at("VIN"), "1G1JC1440PZ215164");
  auto two = c.ReadResponse();
  ASSERT_TRUE(two.has_value());
  EXPECT_EQ(ParseJson(two->body()).at("Results").at(0).at("VIN"), "1FTMW1T88MFA00001");
}

TEST(FaultModeTest, ResetClosesTheConnectionWithoutAnAnswer) {
  auto server = StartWithFault(R"({"mode":"reset"})");
  TestConnection c;
  ASSERT_TRUE(c.Connect(server->port()));
  ASSERT_TRUE(c.Send(HttpGet(kSyntheticPath)));
  const test_client::RawRead read = c.ReadAll(2s);
  EXPECT_TRUE(read.end == ReadEnd::kReset || read.end == ReadEnd::kEof) << read.ec.message();
  EXPECT_EQ(read.bytes, "");
}

TEST(FaultModeTest, GarbageAnswers200WithABodyThatIsNotJson) {
  auto server = StartWithFault(R"({"mode":"garbage"})");
  auto reply = Get(server->port(), kSyntheticPath);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->result_int(), 200U);
  std::error_code ec;
  (void)boost::json::parse(reply->body(), ec);
  EXPECT_TRUE(ec);
}

TEST(FaultModeTest, TruncatedSendsLessThanContentLength) {
  auto server = StartWithFault(R"({"mode":"truncated"})");
  TestConnection c;
  ASSERT_TRUE(c.Connect(server->port()));
  ASSERT_TRUE(c.Send(HttpGet(kSyntheticPath)));
  const test_client::RawRead read = c.ReadAll(2s);
  EXPECT_NE(read.end, ReadEnd::kTimeout);
  const std::int64_t declared = DeclaredContentLength(read.bytes);
  const std::string_view body = RawBody(read.bytes);
  EXPECT_GT(body.size(), 0U);
  EXPECT_LT(static_cast<std::int64_t>(body.size()), declared);
}

TEST(FaultModeTest, DripSendsAFewBytesPerInterval) {
  auto server = StartWithFault(R"({"mode":"drip","drip_bytes":4,"drip_interval_ms":100})");
  TestConnection c;
  ASSERT_TRUE(c.Connect(server->port()));
  ASSERT_TRUE(c.Send(HttpGet(kSyntheticPath)));
  const test_client::RawRead read = c.ReadAll(350ms);
  EXPECT_EQ(read.end, ReadEnd::kTimeout);
  const std::string_view body = RawBody(read.bytes);
  EXPECT_GE(body.size(), 4U);   // the first chunk goes out at once
  EXPECT_LE(body.size(), 20U);  // at most 1 + 350 / 100 more chunks of 4
  EXPECT_GT(DeclaredContentLength(read.bytes), 1000);
  EXPECT_EQ(body.substr(0, 4), R"({"Co)");
}

TEST(FaultModeTest, InterimSendsEarlyHintsAtOnceThenTheAnswerAfterTheLatency) {
  auto server = StartWithFault(R"({"mode":"interim","latency_ms":300})");
  // Within the latency only the interim answer has come (a read that times out closes the
  // connection, so the whole exchange is read on a second one).
  TestConnection first;
  ASSERT_TRUE(first.Connect(server->port()));
  ASSERT_TRUE(first.Send(HttpGet(kSyntheticPath)));
  const test_client::RawRead early = first.ReadAll(150ms);
  EXPECT_EQ(early.end, ReadEnd::kTimeout);
  EXPECT_EQ(early.bytes.rfind("HTTP/1.1 103 Early Hints\r\n", 0), 0U) << early.bytes;
  EXPECT_TRUE(early.bytes.ends_with("\r\n\r\n")) << early.bytes;
  EXPECT_EQ(early.bytes.find("200 OK"), std::string::npos);
  // Then the real answer follows on the same connection.
  TestConnection second;
  ASSERT_TRUE(second.Connect(server->port()));
  ASSERT_TRUE(second.Send(HttpGet(kSyntheticPath)));
  const test_client::RawRead whole = second.ReadAll(1500ms);
  EXPECT_EQ(whole.bytes.rfind("HTTP/1.1 103 Early Hints\r\n", 0), 0U) << whole.bytes;
  const std::size_t final_at = whole.bytes.find("HTTP/1.1 200 OK\r\n");
  ASSERT_NE(final_at, std::string::npos) << whole.bytes.substr(0, 200);
  EXPECT_NE(whole.bytes.find("1G1JC1440PZ215164", final_at), std::string::npos);
  EXPECT_EQ(StatsValue(Stats(server->port()), "faults", "interim"), 2);
}

TEST(FaultModeTest, InterimIsNeverSentToAnHttp10Client) {
  auto server = StartWithFault(R"({"mode":"interim","interim_status":100})");
  TestConnection c;
  ASSERT_TRUE(c.Connect(server->port()));
  ASSERT_TRUE(c.Send("GET " + std::string(kSyntheticPath) + " HTTP/1.0\r\n\r\n"));
  const test_client::RawRead read = c.ReadAll(2s);
  EXPECT_EQ(read.bytes.rfind("HTTP/1.0 200", 0), 0U) << read.bytes.substr(0, 40);
}

TEST(FaultModeTest, FlapAlternatesOkAndError) {
  auto server = StartWithFault(R"({"mode":"flap","every":2,"status":502})");
  std::vector<unsigned> statuses;
  for (int i = 0; i < 6; ++i) {
    auto reply = Get(server->port(), kSyntheticPath);
    ASSERT_TRUE(reply.has_value());
    statuses.push_back(reply->result_int());
  }
  EXPECT_EQ(statuses, (std::vector<unsigned>{200, 200, 502, 502, 200, 200}));
}

TEST(FaultModeTest, CapacityRejectsTheRequestBeyondCapacity) {
  auto server = StartWithFault(R"({"mode":"capacity","capacity":1,"latency_ms":2000})");
  TestConnection first;
  ASSERT_TRUE(first.Connect(server->port()));
  ASSERT_TRUE(first.Send(HttpGet(kSyntheticPath)));
  ASSERT_EQ(WaitForStat(server->port(), "in_flight", "", 1), 1);
  auto second = Get(server->port(), kSyntheticPath, 1s);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->result_int(), 503U);
  const boost::json::object stats = Stats(server->port());
  EXPECT_EQ(StatsValue(stats, "faults", "capacity_rejected"), 1);
  EXPECT_EQ(StatsValue(stats, "max_in_flight"), 2);
}

TEST(FaultModeTest, CapacityRelapseFailsEveryRequestForTheRelapse) {
  fusebox::testing::ManualClock clock;
  ServerOptions options;
  options.faults = Fault(R"({"mode":"capacity","capacity":1,"latency_ms":300,"relapse_ms":5000})");
  options.clock = &clock;
  auto server = StartServer(std::move(options));
  TestConnection first;
  ASSERT_TRUE(first.Connect(server->port()));
  ASSERT_TRUE(first.Send(HttpGet(kSyntheticPath)));
  ASSERT_EQ(WaitForStat(server->port(), "in_flight", "", 1), 1);
  auto overload = Get(server->port(), kSyntheticPath);
  ASSERT_TRUE(overload.has_value());
  EXPECT_EQ(overload->result_int(), 503U);
  auto served = first.ReadResponse();
  ASSERT_TRUE(served.has_value());
  EXPECT_EQ(served->result_int(), 200U);
  auto during = Get(server->port(), kSyntheticPath);  // alone, but still collapsed
  ASSERT_TRUE(during.has_value());
  EXPECT_EQ(during->result_int(), 503U);
  clock.Advance(5s);
  auto after = Get(server->port(), kSyntheticPath);
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->result_int(), 200U);
}

// Three requests at once, one server: each is served in turn for the latency, so the answers
// come one latency apart, the last after three.
TEST(FaultModeTest, QueueServesInTurnSoLatencyGrowsWithLoad) {
  auto server = StartWithFault(R"({"mode":"queue","capacity":1,"latency_ms":200})");
  const auto start = std::chrono::steady_clock::now();
  std::vector<TestConnection> clients(3);
  for (TestConnection& c : clients) {
    ASSERT_TRUE(c.Connect(server->port()));
    ASSERT_TRUE(c.Send(HttpGet(kSyntheticPath)));
  }
  ASSERT_EQ(WaitForStat(server->port(), "in_flight", "", 3), 3);
  std::vector<std::chrono::steady_clock::duration> answered;
  for (TestConnection& c : clients) {
    auto reply = c.ReadResponse();
    ASSERT_TRUE(reply.has_value());
    EXPECT_EQ(reply->result_int(), 200U);
    answered.push_back(std::chrono::steady_clock::now() - start);
  }
  EXPECT_GE(answered[0], 200ms);
  EXPECT_GE(answered[1], 400ms);
  EXPECT_GE(answered[2], 600ms);
  const boost::json::object stats = Stats(server->port());
  EXPECT_EQ(StatsValue(stats, "max_queued"), 2);
  EXPECT_EQ(StatsValue(stats, "queued"), 0);
  EXPECT_EQ(StatsValue(stats, "faults", "ok"), 3);
}

TEST(FaultModeTest, QueueClientThatLeavesWhileWaitingIsNotServed) {
  auto server = StartWithFault(R"({"mode":"queue","capacity":1,"latency_ms":300})");
  TestConnection served;
  ASSERT_TRUE(served.Connect(server->port()));
  ASSERT_TRUE(served.Send(HttpGet(kSyntheticPath)));
  ASSERT_EQ(WaitForStat(server->port(), "in_flight", "", 1), 1);
  TestConnection gone;
  ASSERT_TRUE(gone.Connect(server->port()));
  ASSERT_TRUE(gone.Send(HttpGet(kSyntheticPath)));
  ASSERT_EQ(WaitForStat(server->port(), "queued", "", 1), 1);
  gone.Close();
  EXPECT_EQ(WaitForStat(server->port(), "queued", "", 0), 0);
  EXPECT_EQ(StatsValue(Stats(server->port()), "faults", "queue_abandoned"), 1);
  // The next in line gets the server once the served one is answered; the one gone never does.
  TestConnection next;
  ASSERT_TRUE(next.Connect(server->port()));
  ASSERT_TRUE(next.Send(HttpGet(kSyntheticPath)));
  auto first = served.ReadResponse();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->result_int(), 200U);
  auto second = next.ReadResponse();
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->result_int(), 200U);
  const boost::json::object stats = Stats(server->port());
  EXPECT_EQ(StatsValue(stats, "faults", "ok"), 2);  // the first and the next, not the one gone
  EXPECT_EQ(StatsValue(stats, "faults", "queue_abandoned"), 1);
}

// A server does not know its client left: the one served keeps serving for the whole latency,
// so the next in line starts only then (two latencies after the first arrived), not at once.
TEST(FaultModeTest, QueueServedRequestKeepsItsServerWhenItsClientLeaves) {
  auto server = StartWithFault(R"({"mode":"queue","capacity":1,"latency_ms":300})");
  const auto start = std::chrono::steady_clock::now();
  TestConnection served;
  ASSERT_TRUE(served.Connect(server->port()));
  ASSERT_TRUE(served.Send(HttpGet(kSyntheticPath)));
  ASSERT_EQ(WaitForStat(server->port(), "in_flight", "", 1), 1);
  TestConnection next;
  ASSERT_TRUE(next.Connect(server->port()));
  ASSERT_TRUE(next.Send(HttpGet(kSyntheticPath)));
  ASSERT_EQ(WaitForStat(server->port(), "queued", "", 1), 1);
  served.Close();
  EXPECT_EQ(WaitForStat(server->port(), "in_flight", "", 1), 1);  // the one gone, no longer
  auto reply = next.ReadResponse();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->result_int(), 200U);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 600ms);
}

TEST(FaultModeTest, QueueBeyondItsLimitAnswers503AtOnce) {
  auto server = StartWithFault(
      R"({"mode":"queue","capacity":1,"queue_limit":1,"latency_ms":600000,"retry_after_s":2})");
  TestConnection served;
  ASSERT_TRUE(served.Connect(server->port()));
  ASSERT_TRUE(served.Send(HttpGet(kSyntheticPath)));
  TestConnection waiting;
  ASSERT_TRUE(waiting.Connect(server->port()));
  ASSERT_TRUE(waiting.Send(HttpGet(kSyntheticPath)));
  ASSERT_EQ(WaitForStat(server->port(), "queued", "", 1), 1);
  auto refused = Get(server->port(), kSyntheticPath, 2s);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->result_int(), 503U);
  EXPECT_EQ((*refused)[boost::beast::http::field::retry_after], "2");
  EXPECT_EQ(StatsValue(Stats(server->port()), "faults", "capacity_rejected"), 1);
}

// ---- control API ----

TEST(ControlApiTest, PostFaultsSwitchesTheModeAtRunTime) {
  auto server = StartServer();
  auto set = Post(server->port(), "/__control/faults", R"({"mode":"error","status":503})",
                  "application/json");
  ASSERT_TRUE(set.has_value());
  EXPECT_EQ(set->result_int(), 200U);
  auto reply = Get(server->port(), kSyntheticPath);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->result_int(), 503U);
}

TEST(ControlApiTest, BadFaultJsonAnswers400NamingTheField) {
  auto server = StartServer();
  struct Case {
    std::string_view body;
    std::string_view field;
  };
  for (const Case& c : {Case{R"({"mode":"error","status":418})", "status"},
                        Case{R"({"mode":"slow","latency_ms":"fast"})", "latency_ms"},
                        Case{R"({"mode":"error","colour":"red"})", "colour"},
                        Case{R"({"mode":"boom"})", "mode"}, Case{R"({"mode":)", "body"}}) {
    auto reply = Post(server->port(), "/__control/faults", c.body, "application/json");
    ASSERT_TRUE(reply.has_value()) << c.body;
    EXPECT_EQ(reply->result_int(), 400U) << c.body;
    const boost::json::value body = ParseJson(reply->body());
    EXPECT_EQ(body.at("error"), "invalid_fault") << c.body;
    EXPECT_EQ(std::string_view(body.at("field").as_string()), c.field) << c.body;
  }
  EXPECT_EQ(Get(server->port(), kSyntheticPath)->result_int(), 200U);  // unchanged
}

TEST(ControlApiTest, RepeatedKeyAnswers400NamingIt) {
  auto server = StartServer();
  auto reply = Post(server->port(), "/__control/faults", R"({"mode":"ok","mode":"hang"})",
                    "application/json");
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->result_int(), 400U);
  const boost::json::value body = ParseJson(reply->body());
  EXPECT_EQ(body.at("error"), "invalid_fault");
  EXPECT_EQ(body.at("field"), "mode");
  EXPECT_NE(std::string_view(body.at("message").as_string()).find("mode"), std::string::npos);
  EXPECT_EQ(Stats(server->port()).at("fault").at("mode"), "ok");  // unchanged
}

TEST(ControlApiTest, ResetRestoresTheStartupFaultAndZeroesCounters) {
  auto server = StartWithFault(R"({"mode":"error","status":502})");
  ASSERT_TRUE(Post(server->port(), "/__control/faults", R"({"mode":"garbage"})").has_value());
  ASSERT_TRUE(Get(server->port(), kSyntheticPath).has_value());
  auto reset = Post(server->port(), "/__control/reset", "");
  ASSERT_TRUE(reset.has_value());
  EXPECT_EQ(reset->result_int(), 200U);
  const boost::json::object stats = Stats(server->port());
  EXPECT_EQ(StatsValue(stats, "requests_total"), 0);
  EXPECT_EQ(StatsValue(stats, "faults", "garbage"), 0);
  EXPECT_EQ(stats.at("fault_source"), "startup");
  EXPECT_EQ(Get(server->port(), kSyntheticPath)->result_int(), 502U);
}

TEST(ControlApiTest, StatsCountRequestsPerEndpoint) {
  auto server = StartServer();
  const std::uint16_t port = server->port();
  ASSERT_TRUE(Get(port, kSyntheticPath).has_value());
  ASSERT_TRUE(Get(port, "/api/vehicles/DecodeVinValues/1FTMW1T88MFA00001").has_value());
  ASSERT_TRUE(Get(port, "/api/vehicles/DecodeVinValuesExtended/1FTMW1T88MFA00001").has_value());
  ASSERT_TRUE(
      Post(port, "/api/vehicles/DecodeVINValuesBatch/", "DATA=1G1JC1440PZ215164;A;B").has_value());
  ASSERT_TRUE(Get(port, "/nowhere").has_value());
  const boost::json::object stats = Stats(port);
  EXPECT_EQ(StatsValue(stats, "requests_total"), 5);
  EXPECT_EQ(StatsValue(stats, "requests", "DecodeVinValues"), 2);
  EXPECT_EQ(StatsValue(stats, "requests", "DecodeVinValuesExtended"), 1);
  EXPECT_EQ(StatsValue(stats, "requests", "DecodeVINValuesBatch"), 1);
  EXPECT_EQ(StatsValue(stats, "requests", "other"), 1);
  EXPECT_EQ(StatsValue(stats, "batch_vins"), 3);
  EXPECT_EQ(StatsValue(stats, "faults", "ok"), 5);
  EXPECT_EQ(StatsValue(stats, "in_flight"), 0);
  EXPECT_EQ(StatsValue(stats, "max_in_flight"), 1);
}

TEST(ControlApiTest, ControlRequestsAreNeverFaultedOrCounted) {
  auto server = StartWithFault(R"({"mode":"hang"})");
  const boost::json::object stats = Stats(server->port());
  EXPECT_EQ(StatsValue(stats, "requests_total"), 0);
  EXPECT_EQ(stats.at("fault").at("mode"), "hang");
}

TEST(ControlApiTest, GetFaultsReportsTheFaultInForce) {
  auto server = StartServer();
  ASSERT_TRUE(Post(server->port(), "/__control/faults", R"({"mode":"slow","latency_ms":8000})")
                  .has_value());
  auto reply = Get(server->port(), "/__control/faults");
  ASSERT_TRUE(reply.has_value());
  const boost::json::value body = ParseJson(reply->body());
  EXPECT_EQ(body.at("fault_source"), "control");
  EXPECT_EQ(body.at("fault").at("mode"), "slow");
  EXPECT_EQ(body.at("fault").at("latency_ms"), 8000);
}

TEST(ControlApiTest, UnknownControlPathAnswers404) {
  auto server = StartServer();
  auto reply = Get(server->port(), "/__control/nope");
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->result_int(), 404U);
  EXPECT_EQ(StatsValue(Stats(server->port()), "requests_total"), 0);
}

// ---- schedule ----

TEST(ScheduleServerTest, PhasesFollowTheServerClock) {
  fusebox::testing::ManualClock clock;
  auto schedule = ParseSchedule(R"(
[[upstream.phase]]
from = "0s"
to = "10s"
mode = "error"
status = 502
[[upstream.phase]]
from = "10s"
to = "20s"
mode = "garbage"
)",
                                "schedule.toml");
  ASSERT_TRUE(schedule.has_value());
  ServerOptions options;
  options.schedule = *schedule;
  options.clock = &clock;
  auto server = StartServer(std::move(options));
  EXPECT_EQ(Get(server->port(), kSyntheticPath)->result_int(), 502U);
  clock.Advance(10s);
  auto garbage = Get(server->port(), kSyntheticPath);
  ASSERT_TRUE(garbage.has_value());
  EXPECT_EQ(garbage->result_int(), 200U);
  std::error_code ec;
  (void)boost::json::parse(garbage->body(), ec);
  EXPECT_TRUE(ec);
  EXPECT_EQ(Stats(server->port()).at("fault_source"), "schedule phase 2");
  clock.Advance(10s);
  auto ok = Get(server->port(), kSyntheticPath);
  ASSERT_TRUE(ok.has_value());
  EXPECT_NE(ok->body().find("Results"), std::string::npos);
}

// ---- TLS ----

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "vpic-sim-test-XXXXXX");
    path_ = mkdtemp(pattern.data()) != nullptr ? pattern : "";
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(TlsTest, ServesHttpsWithTheGivenCertificate) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string cert = dir.path() + "/cert.pem";
  const std::string key = dir.path() + "/key.pem";
  const std::string command =
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
      "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -keyout " +
      key + " -out " + cert + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0);
  ServerOptions options;
  options.tls = TlsFiles{cert, key};
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(server->url().starts_with("https://127.0.0.1:"));
  auto reply = test_client::HttpsGet(
      server->port(), "/api/vehicles/DecodeVinValues/3VV3B7AXXNM077525?format=json", cert);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->result_int(), 200U);
  EXPECT_EQ(reply->body(),
            ReadFile(std::filesystem::path(VPIC_SIM_DATA_DIR) /
                     "cfjedimaster-raymondcamden2023/3VV3B7AXXNM077525.decodevinvalues.json"));
}

TEST(TlsTest, SlowAnswersOverHttpsAfterWatchingTheConnection) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string cert = dir.path() + "/cert.pem";
  const std::string key = dir.path() + "/key.pem";
  const std::string command =
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
      "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -keyout " +
      key + " -out " + cert + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0);
  ServerOptions options;
  options.tls = TlsFiles{cert, key};
  options.faults = Fault(R"({"mode":"slow","latency_ms":100})");
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);
  auto reply = test_client::HttpsGet(server->port(), std::string(kSyntheticPath), cert);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->result_int(), 200U);
  EXPECT_EQ(ParseJson(reply->body()).at("Results").at(0).at("VIN"), "1G1JC1440PZ215164");
}

TEST(TlsTest, MissingCertificateIsAConfigError) {
  ServerOptions options;
  options.tls = TlsFiles{"/nonexistent/cert.pem", "/nonexistent/key.pem"};
  auto server = Server::Create(std::move(options));
  ASSERT_FALSE(server.has_value());
  EXPECT_EQ(server.error().field, "tls-cert");
}

// ---- scale and setup ----

TEST(ServerScaleTest, HoldsAThousandHangingConnections) {
  constexpr int kConnections = 1000;
  auto server = StartWithFault(R"({"mode":"hang"})");
  const std::string request = HttpGet(kSyntheticPath);
  std::vector<int> fds;
  for (int i = 0; i < kConnections; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    fds.push_back(fd);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(server->port());
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)), 0) << i;
    ASSERT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(request.size()));
  }
  EXPECT_EQ(WaitForStat(server->port(), "in_flight", "", kConnections, 20s), kConnections);
  for (int fd : fds) {
    ::close(fd);
  }
  EXPECT_EQ(WaitForStat(server->port(), "in_flight", "", 0, 20s), 0);
}

TEST(ServerSetupTest, BadListenAddressIsAConfigError) {
  ServerOptions options;
  options.listen = "127.0.0.1:99999";
  auto server = Server::Create(std::move(options));
  ASSERT_FALSE(server.has_value());
  EXPECT_EQ(server.error().field, "listen");
}

TEST(ServerSetupTest, StopReturnsPromptlyWithHangingConnections) {
  auto server = StartWithFault(R"({"mode":"hang"})");
  TestConnection c;
  ASSERT_TRUE(c.Connect(server->port()));
  ASSERT_TRUE(c.Send(HttpGet(kSyntheticPath)));
  ASSERT_EQ(WaitForStat(server->port(), "in_flight", "", 1), 1);
  const auto start = std::chrono::steady_clock::now();
  server.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  const test_client::RawRead read = c.ReadAll(2s);
  EXPECT_NE(read.end, ReadEnd::kTimeout);
}

}  // namespace
}  // namespace fusebox::vpic_sim

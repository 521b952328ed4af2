// The gateway process with its offline decoder: the fallback over HTTP when vPIC cannot be
// reached, `?source=offline`, /status, and the start-up rules of --offline-db (an explicit bad
// path stops the start; a missing default path is one log line). Needs the database that
// scripts/install-deps.sh installs for the cases that decode; label integration.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "vin_gateway/process_harness.h"

namespace {

using fusebox::gateway::testing::ChildProcess;
using fusebox::gateway::testing::Http;

const std::filesystem::path kDatabase =
    std::filesystem::path(FUSEBOX_SOURCE_DIR) / "var/vpic/vpic.lite.db";

std::filesystem::path TempDir() {
  auto dir =
      std::filesystem::temp_directory_path() / ("offline_gateway_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

// The gateway in front of a port nobody listens on: every live decode is UPSTREAM_ERROR.
std::vector<std::string> Args(std::vector<std::string> extra) {
  std::vector<std::string> argv = {VIN_GATEWAY_BINARY, "--listen",           "127.0.0.1:0",
                                   "--upstream-url",   "http://127.0.0.1:1", "--cache",
                                   "memory",           "--client-rate",      "0"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

TEST(OfflineGatewayTest, AnswersFromTheSnapshotWhenTheUpstreamFails) {
  ASSERT_TRUE(std::filesystem::exists(kDatabase))
      << kDatabase << " is missing: run scripts/install-deps.sh";
  const auto dir = TempDir();
  ChildProcess gateway(Args({"--offline-db", kDatabase.string()}), {},
                       (dir / "gateway.log").string());
  ASSERT_TRUE(gateway.started()) << gateway.Log();

  auto answer = Http(gateway.port(), "GET", "/api/v1/vin/1FTMW1T88MFA00001");
  EXPECT_EQ(answer.status, 200) << answer.body;
  auto body = boost::json::parse(answer.body).as_object();
  EXPECT_EQ(body.at("status").as_string(), "UPSTREAM_ERROR");
  EXPECT_EQ(body.at("source").as_string(), "offline");
  EXPECT_EQ(body.at("offline_snapshot").as_string().size(), 10U);
  EXPECT_EQ(body.at("vehicle").as_object().at("model").as_string(), "F-150");
  EXPECT_FALSE(answer.headers.count("retry-after"));

  auto asked = Http(gateway.port(), "GET", "/api/v1/vin/3VV3B7AXXNM077525?source=offline");
  EXPECT_EQ(asked.status, 200) << asked.body;
  auto asked_body = boost::json::parse(asked.body).as_object();
  EXPECT_EQ(asked_body.at("status").as_string(), "OK");
  EXPECT_EQ(asked_body.at("vehicle").as_object().at("model").as_string(), "Tiguan");
  EXPECT_EQ(Http(gateway.port(), "GET", "/api/v1/vin/3VV3B7AXXNM077525?source=live").status, 400);

  auto status = boost::json::parse(Http(gateway.port(), "GET", "/status").body).as_object();
  const auto& offline = status.at("offline").as_object();
  EXPECT_TRUE(offline.at("enabled").as_bool());
  EXPECT_EQ(offline.at("served").to_number<int>(), 2);
  EXPECT_NE(Http(gateway.port(), "GET", "/metrics").body.find("vin_gateway_offline_snapshot_info"),
            std::string::npos);
  EXPECT_EQ(gateway.Terminate(), 0);
  std::filesystem::remove_all(dir);
}

TEST(OfflineGatewayTest, AnExplicitBadPathStopsTheStart) {
  const auto dir = TempDir();
  {
    ChildProcess gateway(Args({"--offline-db", (dir / "none.db").string()}), {},
                         (dir / "missing.log").string());
    EXPECT_FALSE(gateway.started());
    EXPECT_NE(gateway.Log().find("--offline-db"), std::string::npos) << gateway.Log();
  }
  {
    std::ofstream(dir / "garbage.db") << "not a database\n";
    ChildProcess gateway(Args({"--offline-db", (dir / "garbage.db").string()}), {},
                         (dir / "garbage.log").string());
    EXPECT_FALSE(gateway.started());
    EXPECT_NE(gateway.Log().find("not a database"), std::string::npos) << gateway.Log();
  }
  std::filesystem::remove_all(dir);
}

TEST(OfflineGatewayTest, AMissingDefaultPathIsOneLogLineAndNoOfflineAnswers) {
  // The default path is relative to the working directory: the test's own, where no
  // var/vpic/vpic.lite.db is (ctest runs in the build tree).
  ASSERT_FALSE(std::filesystem::exists("var/vpic/vpic.lite.db"));
  const auto dir = TempDir();
  ChildProcess gateway(Args({}), {}, (dir / "gateway.log").string());
  ASSERT_TRUE(gateway.started()) << gateway.Log();
  EXPECT_NE(gateway.Log().find("offline decode unavailable"), std::string::npos) << gateway.Log();
  auto answer = Http(gateway.port(), "GET", "/api/v1/vin/1FTMW1T88MFA00001");
  EXPECT_EQ(answer.status, 502) << answer.body;
  EXPECT_EQ(Http(gateway.port(), "GET", "/api/v1/vin/1FTMW1T88MFA00001?source=offline").status,
            404);
  EXPECT_EQ(gateway.Terminate(), 0);
  std::filesystem::remove_all(dir);
}

}  // namespace

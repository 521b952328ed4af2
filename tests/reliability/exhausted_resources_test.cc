// The gateway short of local resources: a cache directory it may not write, a file-size limit of
// a few KiB (RLIMIT_FSIZE, set with prlimit), a cache file overwritten with garbage while it runs;
// and a cache file that is not the gateway's (another application's SQLite database).
// In each case it keeps answering live decodes, says in /status and /readyz that the cache is
// broken (never with the file's path: those routes are public), and never blames the upstream:
// the breaker stays CLOSED with no failure counted.
#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <gtest/gtest.h>

#include "reliability/reliability_support.h"

namespace reliability {
namespace {

namespace json = boost::json;

class ExhaustedResourcesTest : public GatewayProcessTest {
 protected:
  // Decodes `count` new VINs and re-decodes the first; every one must be answered 200.
  int DecodeMany(char series, int count) {
    int ok = 0;
    for (int i = 0; i < count; ++i) {
      const HttpResult r = Decode(UniqueVin(series, i));
      EXPECT_EQ(r.status, 200) << r.body;
      ok += r.status == 200 ? 1 : 0;
    }
    return ok;
  }

  // What the gateway shows of a broken cache.
  struct Observed {
    bool alive = false;
    bool healthy = true;  // /status
    bool ready_says_broken = false;
    std::string error;
    // Neither /status, /readyz nor /metrics names the test's directory (where the file is).
    bool location_hidden = false;
    std::string state;
    std::int64_t failed = -1;
  };

  // The part every case shares: the gateway alive, the cache reported broken on /status and
  // /readyz without its path, the breaker untouched.
  Observed ObserveBrokenCache() {
    Observed o;
    o.alive = Get("/healthz").status == 200;
    const json::value status = Status();
    EXPECT_TRUE(status.is_object()) << "no /status: the gateway is gone";
    if (!status.is_object()) {
      return o;
    }
    const json::object& cache = status.at("cache").as_object();
    o.healthy = cache.at("healthy").as_bool();
    o.error = cache.contains("error") ? std::string(cache.at("error").as_string()) : "";
    const json::value& breaker = status.at("breakers").as_array().at(0);
    o.state = std::string(breaker.at("state").as_string());
    o.failed = breaker.at("failed").to_number<std::int64_t>();
    const HttpResult ready = Get("/readyz");
    const json::value ready_body = Json(ready);
    o.ready_says_broken = ready.status == 200 && ready_body.is_object() &&
                          ready_body.at("cache").at("healthy") == false &&
                          ready_body.at("cache").as_object().contains("error");
    const std::string place = dir_.filename().string();
    o.location_hidden = true;
    for (const char* route : {"/status", "/readyz", "/metrics"}) {
      const HttpResult r = Get(route);
      const bool hidden = r.body.find(place) == std::string::npos;
      EXPECT_TRUE(hidden) << route << " names the cache's directory: " << r.body;
      o.location_hidden = o.location_hidden && hidden;
    }
    EXPECT_TRUE(o.alive);
    EXPECT_FALSE(o.healthy) << "/status does not say the cache is broken";
    EXPECT_TRUE(o.ready_says_broken) << ready.body;
    EXPECT_FALSE(o.error.empty());
    EXPECT_EQ(o.state, "CLOSED");
    EXPECT_EQ(o.failed, 0);
    return o;
  }

  static bool AsExpected(const Observed& o) {
    return o.alive && !o.healthy && o.ready_says_broken && !o.error.empty() && o.location_hidden &&
           o.state == "CLOSED" && o.failed == 0;
  }

  static std::string Describe(const Observed& o) {
    return fmt::format("cache healthy {} ({}){}; breaker {}, {} failed", o.healthy,
                       o.error.empty() ? "no error" : o.error,
                       o.location_hidden ? "" : ", its directory shown", o.state, o.failed);
  }

  static constexpr const char* kExpectedBroken =
      "/status and /readyz cache healthy false with an error, the file's directory on no public "
      "route";

  // Observes and adds the matrix row.
  void CheckAndRecord(const std::string& fault, int ok, int asked,
                      const std::string& expected_note = "",
                      const std::string& observed_note = "") {
    const Observed o = ObserveBrokenCache();
    EXPECT_EQ(ok, asked);
    AddMatrixRow({"exhausted resources", fault, "sqlite cache, call timeout 500 ms",
                  fmt::format("{0}/{0} decodes 200 live; {1}{2}; breaker CLOSED, 0 failed", asked,
                              kExpectedBroken, expected_note),
                  fmt::format("{}/{} decodes 200; {}{}", ok, asked, observed_note, Describe(o)),
                  ok == asked && AsExpected(o)});
  }
};

TEST_F(ExhaustedResourcesTest, CacheDirectoryReadOnly) {
  StartSim();
  const std::filesystem::path ro = dir_ / "read-only";
  std::filesystem::create_directories(ro);
  std::filesystem::permissions(
      ro, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec |
              std::filesystem::perms::group_read | std::filesystem::perms::group_exec |
              std::filesystem::perms::others_read | std::filesystem::perms::others_exec);
  std::filesystem::permissions(dir_, std::filesystem::perms::others_exec,
                               std::filesystem::perm_options::add);
  // Root writes through permissions: run the gateway as nobody then.
  std::vector<std::string> wrapper;
  if (::geteuid() == 0) {
    wrapper = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
  }
  StartGateway({"--cache", "sqlite:" + (ro / "cache.sqlite").string()}, {}, "", wrapper);
  CheckAndRecord("cache directory read-only", DecodeMany('D', 10), 10);
}

// The write that crosses the limit would raise SIGXFSZ, whose default action ends the process;
// the gateway ignores it, so the write fails with EFBIG and the cache breaks as on a full disk.
// (64 KiB: the gateway's own log, stderr to a file here, stays below it for 40 decodes.)
TEST_F(ExhaustedResourcesTest, FileSizeLimitOf64Kib) {
  StartSim();
  StartGateway({"--cache", "sqlite:" + (dir_ / "cache.sqlite").string()}, {}, "",
               {"/usr/bin/prlimit", "--fsize=65536:65536"});
  const int ok = DecodeMany('L', 40);
  if (Get("/healthz").status != 200) {
    const int exit_status = gateway_->Terminate(1);
    AddMatrixRow({"exhausted resources", "RLIMIT_FSIZE 64 KiB (prlimit --fsize)",
                  "sqlite cache, call timeout 500 ms",
                  "40/40 decodes 200 live; /status cache healthy false with an error; breaker "
                  "CLOSED, 0 failed",
                  fmt::format("{}/40 decodes 200, then the gateway was gone ({})", ok,
                              exit_status < 0 ? "ended by a signal: SIGXFSZ"
                                              : fmt::format("exit {}", exit_status)),
                  false});
    FAIL() << "the gateway died under RLIMIT_FSIZE after " << ok << " decodes";
  }
  CheckAndRecord("RLIMIT_FSIZE 64 KiB (prlimit --fsize)", ok, 40);
}

TEST_F(ExhaustedResourcesTest, CacheFileOverwrittenWithGarbageWhileRunning) {
  StartSim();
  const std::filesystem::path file = dir_ / "cache.sqlite";
  // A first gateway fills the file and stops cleanly (its log checkpointed into the file), so
  // that the decodes live in the file itself, not in a write-ahead log that SQLite would replay.
  StartGateway({"--cache", "sqlite:" + file.string()});
  int ok = DecodeMany('G', 60);
  ASSERT_EQ(gateway_->Terminate(), 0);
  // A second gateway opens it; then the file is truncated and filled with garbage under it.
  StartGateway({"--cache", "sqlite:" + file.string()});
  const int fd = ::open(file.c_str(), O_WRONLY | O_TRUNC);
  ASSERT_GE(fd, 0);
  const std::string garbage(256 * 1024, '\x5a');
  ASSERT_EQ(::write(fd, garbage.data(), garbage.size()), static_cast<ssize_t>(garbage.size()));
  ::close(fd);
  // Lookups of the stored decodes now read garbage pages; new decodes write more.
  ok += DecodeMany('G', 60);
  ok += DecodeMany('H', 20);
  CheckAndRecord("cache file overwritten with garbage while running", ok, 140);
}

// Another application's SQLite database (rollback journal, its own table) given as the cache:
// the gateway reports it and runs without a cache, and the file is left byte for byte as it was:
// not switched to WAL mode, no cache tables, no -wal or -shm file once the gateway has stopped.
TEST_F(ExhaustedResourcesTest, AnotherApplicationsDatabaseAsTheCacheIsLeftUntouched) {
  StartSim();
  const std::filesystem::path file = dir_ / "users.db";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "PRAGMA journal_mode=DELETE;"
                         "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL);"
                         "INSERT INTO users (name) VALUES ('ada'), ('grace');",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto read = [](const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  const std::string before = read(file);

  StartGateway({"--cache", "sqlite:" + file.string()});
  const int ok = DecodeMany('U', 10);
  const Observed o = ObserveBrokenCache();
  EXPECT_NE(o.error.find("not a vin-gateway cache"), std::string::npos) << o.error;
  const bool named_in_log = gateway_->Log().find(file.string()) != std::string::npos;
  EXPECT_TRUE(named_in_log) << "the operator's log names the file: " << gateway_->Log();
  const int exit_status = gateway_->Terminate();
  EXPECT_EQ(exit_status, 0);

  const bool same_bytes = read(file) == before;
  const bool no_log_files = !std::filesystem::exists(file.string() + "-wal") &&
                            !std::filesystem::exists(file.string() + "-shm") &&
                            !std::filesystem::exists(file.string() + "-journal");
  EXPECT_TRUE(same_bytes) << "the file changed";
  EXPECT_TRUE(no_log_files) << "a -wal, -shm or -journal file was left behind";
  AddMatrixRow(
      {"exhausted resources", "another application's SQLite database given as the cache",
       "sqlite cache (a users table, journal_mode=delete), call timeout 500 ms",
       fmt::format("10/10 decodes 200 live; {}, saying it is not a vin-gateway cache; breaker "
                   "CLOSED, 0 failed; the log names the file; after exit the file byte for byte "
                   "as before, no -wal/-shm",
                   kExpectedBroken),
       fmt::format("{}/10 decodes 200; {}; {}; after exit (status {}): {}, {}", ok, Describe(o),
                   named_in_log ? "the log names the file" : "the log does not name the file",
                   exit_status, same_bytes ? "same bytes" : "bytes changed",
                   no_log_files ? "no -wal/-shm" : "-wal/-shm/-journal left"),
       ok == 10 && AsExpected(o) && o.error.find("not a vin-gateway cache") != std::string::npos &&
           named_in_log && exit_status == 0 && same_bytes && no_log_files});
}

}  // namespace
}  // namespace reliability

// SIGKILL in the middle of a write load: many distinct VINs decoded at once, each a new row of the
// SQLite cache. After the kill the file passes `PRAGMA integrity_check` (read here through the
// SQLite C API), every decode the gateway acknowledged (answered 200 live before the kill) is in
// it, and a gateway restarted on the same file serves them from the cache without calling vPIC.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/core.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "reliability/reliability_support.h"

namespace reliability {
namespace {

class CrashSafetyTest : public GatewayProcessTest {};

// The cache file as SQLite sees it after the crash: integrity and the keys it holds.
struct FileCheck {
  std::string integrity;
  std::set<std::string> keys;
  std::string error;
};

FileCheck ReadCacheFile(const std::string& path) {
  FileCheck check;
  sqlite3* db = nullptr;
  // Read-write: opening a WAL database replays (recovers) the log the killed process left.
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    check.error = db != nullptr ? sqlite3_errmsg(db) : "cannot open";
    sqlite3_close(db);
    return check;
  }
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &stmt, nullptr) == SQLITE_OK) {
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      check.integrity += (check.integrity.empty() ? "" : "; ") +
                         std::string(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)));
    }
  } else {
    check.error = sqlite3_errmsg(db);
  }
  sqlite3_finalize(stmt);
  if (sqlite3_prepare_v2(db, "SELECT key FROM decodes", -1, &stmt, nullptr) == SQLITE_OK) {
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      check.keys.insert(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)));
    }
  } else if (check.error.empty()) {
    check.error = sqlite3_errmsg(db);
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return check;
}

TEST_F(CrashSafetyTest, SigkillDuringWriteLoadKeepsTheFileIntactAndEveryAcknowledgedDecode) {
  StartSim();
  const std::string file = (dir_ / "cache.sqlite").string();
  StartGateway({"--cache", "sqlite:" + file, "--max-in-flight", "32"});
  // Eight clients decode distinct VINs until the kill; the answers 200 "live" are acknowledged.
  constexpr int kClients = 8;
  constexpr int kAckedBeforeKill = 300;
  std::mutex mu;
  std::vector<std::string> acknowledged;
  std::atomic<bool> stop{false};
  std::atomic<int> acked{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      for (int i = 0; !stop.load(); ++i) {
        const std::string vin = UniqueVin(static_cast<char>('A' + c), i);
        const HttpResult r = Decode(vin);
        if (r.status == 200 && Field(r, "source") == "live") {
          const std::lock_guard lock(mu);
          acknowledged.push_back(vin);
          acked.fetch_add(1);
        }
      }
    });
  }
  EXPECT_TRUE(WaitUntil([&] { return acked.load() >= kAckedBeforeKill; }, 30));
  const int acked_at_kill = [&] {
    const std::lock_guard lock(mu);
    ::kill(gateway_->pid(), SIGKILL);
    return static_cast<int>(acknowledged.size());
  }();
  stop = true;
  for (std::thread& t : clients) {
    t.join();
  }
  gateway_->Terminate(5);  // reaps the killed process
  // Every 200 a client read was sent before the kill, so the whole list counts, including the
  // answers read between the kill and the clients' stop.
  std::vector<std::string> acked_vins;
  {
    const std::lock_guard lock(mu);
    acked_vins = acknowledged;
  }

  const FileCheck check = ReadCacheFile(file);
  EXPECT_EQ(check.error, "");
  EXPECT_EQ(check.integrity, "ok");
  int missing = 0;
  for (const std::string& vin : acked_vins) {
    missing += check.keys.contains(vin) ? 0 : 1;
  }
  EXPECT_EQ(missing, 0) << "acknowledged decodes lost by the crash";

  // Restart on the same file: the cache is healthy and serves the acknowledged decodes.
  StartGateway({"--cache", "sqlite:" + file});
  const long calls = UpstreamCalls();
  int from_cache = 0;
  const int sample = std::min<int>(50, static_cast<int>(acked_vins.size()));
  for (int i = 0; i < sample; ++i) {
    const HttpResult r = Decode(acked_vins[static_cast<std::size_t>(i) * acked_vins.size() /
                                           static_cast<std::size_t>(sample)]);
    from_cache += r.status == 200 && Field(r, "source") == "cache" ? 1 : 0;
  }
  EXPECT_EQ(from_cache, sample);
  EXPECT_EQ(UpstreamCalls(), calls);
  const bool healthy = Status().at("cache").at("healthy").as_bool();
  EXPECT_TRUE(healthy);

  AddMatrixRow(
      {"crash safety", "SIGKILL during write load (8 clients, distinct VINs)",
       "sqlite cache (WAL, synchronous NORMAL), restart on the same file",
       "integrity_check ok; every decode answered 200 live before the kill is in the file; "
       "after restart served from the cache, no upstream call",
       fmt::format("integrity_check {}; {} acknowledged ({} at the kill), {} rows, {} missing; "
                   "after restart {}/{} from the cache, {} upstream calls, cache healthy {}",
                   check.integrity.empty() ? check.error : check.integrity, acked_vins.size(),
                   acked_at_kill, check.keys.size(), missing, from_cache, sample,
                   UpstreamCalls() - calls, healthy),
       check.integrity == "ok" && missing == 0 && from_cache == sample && healthy});
}

}  // namespace
}  // namespace reliability

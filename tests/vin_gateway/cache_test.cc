// Both cache backends: get/put, LRU bound, the awaitable interface, and for SQLite: created with
// its directory on first run, WAL mode, stamped with the cache's application id, survives a
// reopen, a broken file is reported (never by its path), not fatal, and a file that is not a
// cache is refused and left byte for byte as it was.
#include "service/cache.h"

#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include "core/decode.h"

namespace {

using fusebox::gateway::CacheEntry;
using fusebox::gateway::WallTime;

// ctest runs each case as its own process, several at once: the process id keeps two cases of
// the same fixture from sharing (and deleting) one directory.
std::filesystem::path TempDir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("vin_gateway_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir;
}

CacheEntry Entry(const std::string& payload, int seconds = 0) {
  return {payload, WallTime(std::chrono::seconds(1'700'000'000 + seconds))};
}

// Runs `sql` on `file` through a connection of its own, as another application would. With
// `keep_log`, closes without a checkpoint: a WAL-mode file keeps its -wal and -shm files, as a
// writer that crashed leaves them.
void Exec(const std::filesystem::path& file, const std::string& sql, bool keep_log = false) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(file.string().c_str(), &db), SQLITE_OK);
  char* message = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
  EXPECT_EQ(rc, SQLITE_OK) << (message != nullptr ? message : "") << " in " << sql;
  sqlite3_free(message);
  if (keep_log) {
    sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  }
  sqlite3_close(db);
}

// The first column of the first row of `sql` on `file`, as text ("" when there is none).
std::string QueryText(const std::filesystem::path& file, const std::string& sql) {
  sqlite3* db = nullptr;
  std::string value;
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_open(file.string().c_str(), &db) == SQLITE_OK &&
      sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
      sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_text(stmt, 0) != nullptr) {
    value = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return value;
}

// Every file in `dir`, by name, with its size and a hash of its bytes: equal snapshots mean no
// byte changed and no file came or went (a -wal or -shm left behind shows as a new name).
std::map<std::string, std::string> Snapshot(const std::filesystem::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    const std::string content = bytes.str();
    files[entry.path().filename().string()] = std::to_string(content.size()) + " bytes, hash " +
                                              std::to_string(std::hash<std::string>{}(content));
  }
  return files;
}

// The schema of the caches made before the application id (the same tables and index as now).
constexpr const char* kSchemaBeforeTheApplicationId =
    "CREATE TABLE IF NOT EXISTS decodes ("
    "  key TEXT PRIMARY KEY NOT NULL,"
    "  payload TEXT NOT NULL,"
    "  fetched_at_ms INTEGER NOT NULL,"
    "  used INTEGER NOT NULL);"
    "CREATE INDEX IF NOT EXISTS decodes_by_use ON decodes(used);";

class CacheBackendTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<fusebox::gateway::ImmediateCache> Make(std::uint64_t max_entries) {
    if (GetParam() == "memory") {
      return fusebox::gateway::MakeMemoryCache(max_entries);
    }
    dir_ = TempDir("cache_backend");
    return fusebox::gateway::MakeSqliteCache((dir_ / "c.sqlite").string(), max_entries);
  }
  void TearDown() override {
    if (!dir_.empty()) {
      std::filesystem::remove_all(dir_);
    }
  }
  std::filesystem::path dir_;
};

TEST_P(CacheBackendTest, ReturnsWhatWasPutWithItsFetchTime) {
  auto cache = Make(10);
  EXPECT_FALSE(cache->GetNow("A").has_value());
  cache->PutNow("A", Entry("{\"a\":1}", 5));
  auto got = cache->GetNow("A");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->payload, "{\"a\":1}");
  EXPECT_EQ(got->fetched_at, Entry("", 5).fetched_at);
  EXPECT_TRUE(cache->Stats().healthy);
}

TEST_P(CacheBackendTest, PutReplacesAnEntry) {
  auto cache = Make(10);
  cache->PutNow("A", Entry("old"));
  cache->PutNow("A", Entry("new", 9));
  EXPECT_EQ(cache->GetNow("A")->payload, "new");
  EXPECT_EQ(cache->Stats().entries, 1U);
}

TEST_P(CacheBackendTest, EvictsTheLeastRecentlyUsedBeyondMaxEntries) {
  auto cache = Make(2);
  cache->PutNow("A", Entry("a"));
  cache->PutNow("B", Entry("b"));
  ASSERT_TRUE(cache->GetNow("A").has_value());  // A is now more recent than B
  cache->PutNow("C", Entry("c"));
  EXPECT_TRUE(cache->GetNow("A").has_value());
  EXPECT_FALSE(cache->GetNow("B").has_value());
  EXPECT_TRUE(cache->GetNow("C").has_value());
  EXPECT_EQ(cache->Stats().entries, 2U);
  EXPECT_EQ(cache->Stats().evictions, 1U);
}

// Many more keys than the bound, each read once after it was stored: the newest max_entries are
// hits and every evicted one a miss (for SQLite this also holds its key filter to the file: an
// evicted key leaves the filter, a kept one never does).
std::string ChurnKey(int n) {
  std::string key(1, 'K');  // (not "K" + ...: gcc 12 warns falsely on that at -O3)
  key += std::to_string(n);
  return key;
}

TEST_P(CacheBackendTest, UnderChurnKeepsExactlyTheNewestEntries) {
  constexpr int kMax = 50;
  auto cache = Make(kMax);
  for (int n = 0; n < 1000; ++n) {
    cache->PutNow(ChurnKey(n), Entry(std::to_string(n), n));
  }
  for (int n = 0; n < 1000; ++n) {
    const auto got = cache->GetNow(ChurnKey(n));
    if (n >= 1000 - kMax) {
      ASSERT_TRUE(got.has_value()) << n;
      EXPECT_EQ(got->payload, std::to_string(n));
    } else {
      EXPECT_FALSE(got.has_value()) << n;
    }
  }
  EXPECT_EQ(cache->Stats().entries, static_cast<std::uint64_t>(kMax));
  EXPECT_EQ(cache->Stats().evictions, static_cast<std::uint64_t>(1000 - kMax));
  EXPECT_EQ(cache->Stats().hits, static_cast<std::uint64_t>(kMax));
}

// The Cache interface (what the decode service awaits) gives what the synchronous calls give.
TEST_P(CacheBackendTest, AwaitableInterfaceAnswersLikeTheSynchronousOne) {
  std::unique_ptr<fusebox::gateway::Cache> cache = Make(10);
  boost::asio::io_context io;
  std::optional<CacheEntry> got;
  std::optional<CacheEntry> missing = Entry("unset");
  auto run = [&]() -> boost::asio::awaitable<void> {
    co_await cache->Put("A", Entry("a", 7));
    got = co_await cache->Get("A");
    missing = co_await cache->Get("B");
  };
  bool done = false;
  boost::asio::co_spawn(io, run(), [&done](std::exception_ptr error) { done = !error; });
  io.run();
  EXPECT_TRUE(done);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->payload, "a");
  EXPECT_EQ(got->fetched_at, Entry("a", 7).fetched_at);
  EXPECT_FALSE(missing.has_value());
  EXPECT_EQ(cache->Stats().puts, 1U);
  EXPECT_EQ(cache->Stats().gets, 2U);
}

INSTANTIATE_TEST_SUITE_P(Backends, CacheBackendTest, ::testing::Values("memory", "sqlite"));

TEST(SqliteCacheTest, CreatesItsDirectoryAndFileInWalMode) {
  const auto dir = TempDir("sqlite_create");
  const auto file = dir / "var" / "vin-cache.sqlite";
  {
    auto cache = fusebox::gateway::MakeSqliteCache(file.string(), 100);
    EXPECT_TRUE(cache->Stats().healthy) << cache->Stats().error;
    cache->PutNow("A", Entry("a"));
  }
  ASSERT_TRUE(std::filesystem::exists(file));
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(file.string().c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &stmt, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)), "wal");
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  std::filesystem::remove_all(dir);
}

TEST(SqliteCacheTest, EntriesSurviveAReopen) {
  const auto dir = TempDir("sqlite_reopen");
  const auto file = (dir / "c.sqlite").string();
  fusebox::gateway::MakeSqliteCache(file, 100)->PutNow("A", Entry("a", 3));
  auto reopened = fusebox::gateway::MakeSqliteCache(file, 100);
  EXPECT_EQ(reopened->Stats().entries, 1U);
  ASSERT_TRUE(reopened->GetNow("A").has_value());
  EXPECT_EQ(reopened->GetNow("A")->payload, "a");
  std::filesystem::remove_all(dir);
}

TEST(SqliteCacheTest, ASecondOpenerIsRefusedUntilTheFirstLetsGo) {
  const auto dir = TempDir("sqlite_locked");
  const auto file = (dir / "c.sqlite").string();
  auto first = fusebox::gateway::MakeSqliteCache(file, 100);
  ASSERT_TRUE(first->Stats().healthy) << first->Stats().error;
  first->PutNow("A", Entry("a", 3));

  // Tries the lock again on every Get or Put (the gateway's default is every 5 s).
  auto second = fusebox::gateway::MakeSqliteCache(file, 100, {.relock_interval = {}});
  const fusebox::gateway::CacheStats refused = second->Stats();
  EXPECT_FALSE(refused.healthy);
  EXPECT_NE(refused.error.find("in use by another process"), std::string::npos) << refused.error;
  EXPECT_FALSE(second->GetNow("A").has_value());
  second->PutNow("C", Entry("c", 5));  // dropped: the file is not this process's
  EXPECT_FALSE(second->Stats().healthy);

  first->PutNow("B", Entry("b", 4));  // the lock holder still reads and writes
  ASSERT_TRUE(first->GetNow("A").has_value());
  ASSERT_TRUE(first->GetNow("B").has_value());
  EXPECT_TRUE(first->Stats().healthy);

  first.reset();  // closing releases the file; the second one takes it at its next call
  ASSERT_TRUE(second->GetNow("A").has_value());
  EXPECT_EQ(second->GetNow("B")->payload, "b");
  EXPECT_FALSE(second->GetNow("C").has_value());
  const fusebox::gateway::CacheStats taken = second->Stats();
  EXPECT_TRUE(taken.healthy) << taken.error;
  EXPECT_TRUE(taken.error.empty());
  EXPECT_EQ(taken.entries, 2U);
  second->PutNow("C", Entry("c", 5));
  EXPECT_EQ(second->Stats().entries, 3U);
  std::filesystem::remove_all(dir);
}

TEST(SqliteCacheTest, BrokenFileIsReportedAndBehavesAsAnEmptyCache) {
  const auto dir = TempDir("sqlite_broken");
  std::filesystem::create_directories(dir);
  const auto file = dir / "c.sqlite";
  std::ofstream(file, std::ios::binary) << std::string(4096, '\x7f');
  auto cache = fusebox::gateway::MakeSqliteCache(file.string(), 100);
  const fusebox::gateway::CacheStats stats = cache->Stats();
  EXPECT_FALSE(stats.healthy);
  EXPECT_FALSE(stats.error.empty());
  cache->PutNow("A", Entry("a"));
  EXPECT_FALSE(cache->GetNow("A").has_value());
  std::filesystem::remove_all(dir);
}

TEST(SqliteCacheTest, NewCacheIsStampedWithTheApplicationIdAndKeepsItsWalIndexInMemory) {
  const auto dir = TempDir("sqlite_stamp");
  const auto file = dir / "c.sqlite";
  {
    auto cache = fusebox::gateway::MakeSqliteCache(file.string(), 100);
    ASSERT_TRUE(cache->Stats().healthy) << cache->Stats().error;
    cache->PutNow("A", Entry("a"));
    // EXCLUSIVE locking mode before WAL mode: the WAL index lives in the process, no -shm file.
    EXPECT_FALSE(std::filesystem::exists(file.string() + "-shm"));
  }
  EXPECT_EQ(QueryText(file, "PRAGMA application_id"),
            std::to_string(fusebox::gateway::kSqliteCacheApplicationId));
  std::filesystem::remove_all(dir);
}

TEST(SqliteCacheTest, CacheFromBeforeTheApplicationIdIsKeptWithItsEntriesAndStamped) {
  const auto dir = TempDir("sqlite_unstamped");
  std::filesystem::create_directories(dir);
  const auto file = dir / "c.sqlite";
  Exec(file, std::string("PRAGMA journal_mode=WAL;") + kSchemaBeforeTheApplicationId +
                 "INSERT INTO decodes VALUES ('A', 'a', 1700000003000, 1);");
  ASSERT_EQ(QueryText(file, "PRAGMA application_id"), "0");
  {
    auto cache = fusebox::gateway::MakeSqliteCache(file.string(), 100);
    ASSERT_TRUE(cache->Stats().healthy) << cache->Stats().error;
    EXPECT_EQ(cache->Stats().entries, 1U);
    const auto got = cache->GetNow("A");
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->payload, "a");
    EXPECT_EQ(got->fetched_at, Entry("", 3).fetched_at);
  }
  EXPECT_EQ(QueryText(file, "PRAGMA application_id"),
            std::to_string(fusebox::gateway::kSqliteCacheApplicationId));
  // Stamped, it opens again as a cache of its own.
  auto reopened = fusebox::gateway::MakeSqliteCache(file.string(), 100);
  EXPECT_TRUE(reopened->Stats().healthy) << reopened->Stats().error;
  EXPECT_TRUE(reopened->GetNow("A").has_value());
  reopened.reset();
  std::filesystem::remove_all(dir);
}

// Another application's database, in rollback-journal mode, given as the cache: refused with the
// reason, and neither converted to WAL mode nor given the cache's tables.
TEST(SqliteCacheTest, AnotherApplicationsDatabaseIsRefusedAndLeftUntouched) {
  const auto dir = TempDir("sqlite_foreign");
  std::filesystem::create_directories(dir);
  const auto file = dir / "users.db";
  Exec(file,
       "PRAGMA journal_mode=DELETE;"
       "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL);"
       "INSERT INTO users (name) VALUES ('ada'), ('grace');");
  const auto before = Snapshot(dir);
  ASSERT_EQ(before.size(), 1U);
  {
    auto cache = fusebox::gateway::MakeSqliteCache(file.string(), 100);
    const fusebox::gateway::CacheStats stats = cache->Stats();
    EXPECT_FALSE(stats.healthy);
    EXPECT_EQ(stats.error, "not a vin-gateway cache: it holds other tables (users)");
    cache->PutNow("A", Entry("a"));
    EXPECT_FALSE(cache->GetNow("A").has_value());
  }
  EXPECT_EQ(Snapshot(dir), before);  // the same bytes, no -wal or -shm left behind
  EXPECT_EQ(QueryText(file, "PRAGMA journal_mode"), "delete");
  EXPECT_EQ(QueryText(file, "SELECT COUNT(*) FROM sqlite_master WHERE name LIKE 'decodes%'"), "0");
  EXPECT_EQ(QueryText(file, "SELECT group_concat(name) FROM users"), "ada,grace");
  std::filesystem::remove_all(dir);
}

// Every other kind of file that is not a cache: refused with a precise reason, byte for byte as
// it was (the database, and its -wal and -shm when it came with them).
TEST(SqliteCacheTest, FilesThatAreNotCachesAreRefusedAndLeftByteForByte) {
  struct Case {
    const char* name;
    std::function<void(const std::filesystem::path&)> make;
    std::string error;
  };
  const std::string long_name(60, 't');
  const std::vector<Case> cases = {
      {"a WAL database with the log a crashed writer left",
       [](const std::filesystem::path& f) {
         Exec(f,
              "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;"
              "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);"
              "INSERT INTO users (name) VALUES ('ada');",
              /*keep_log=*/true);
       },
       "it holds other tables (users)"},
      {"another application's id, no tables",
       [](const std::filesystem::path& f) { Exec(f, "PRAGMA application_id=1196444487;"); },
       "it carries another application's id (0x47504b47)"},
      {"the cache's tables and others, one with a long name",
       [&long_name](const std::filesystem::path& f) {
         Exec(f, std::string(kSchemaBeforeTheApplicationId) +
                     "CREATE TABLE notes (x); CREATE VIEW recent AS SELECT 1;"
                     "CREATE TABLE " +
                     long_name + " (x); CREATE TABLE more (x);");
       },
       "it holds other tables (notes, view recent, " + std::string(40, 't') + "... and 1 more)"},
      {"a decodes table of other columns",
       [](const std::filesystem::path& f) {
         Exec(f, "CREATE TABLE decodes (key TEXT PRIMARY KEY, value BLOB);");
       },
       "its decodes table has other columns (key TEXT PRIMARY KEY, value BLOB)"},
      {"the cache's table without its index on use",
       [](const std::filesystem::path& f) {
         Exec(f,
              "CREATE TABLE decodes (key TEXT PRIMARY KEY NOT NULL, payload TEXT NOT NULL,"
              " fetched_at_ms INTEGER NOT NULL, used INTEGER NOT NULL);");
       },
       "its decodes table lacks the cache's indexes"},
      {"not a database",
       [](const std::filesystem::path& f) {
         std::ofstream(f, std::ios::binary) << std::string(4096, '\x7f');
       },
       "file is not a database"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const auto dir = TempDir("sqlite_not_a_cache");
    std::filesystem::create_directories(dir);
    const auto file = dir / "c.sqlite";
    c.make(file);
    const auto before = Snapshot(dir);
    {
      auto cache = fusebox::gateway::MakeSqliteCache(file.string(), 100);
      EXPECT_FALSE(cache->Stats().healthy);
      EXPECT_EQ(cache->Stats().error, "not a vin-gateway cache: " + c.error);
      cache->PutNow("A", Entry("a"));
      EXPECT_FALSE(cache->GetNow("A").has_value());
    }
    EXPECT_EQ(Snapshot(dir), before);
    std::filesystem::remove_all(dir);
  }
}

// Stats().error is shown on the public routes: whatever broke, it names neither the file nor its
// directory (the log line adds the location).
TEST(SqliteCacheTest, ErrorsNeverNameTheFileOrItsDirectory) {
  const auto dir = TempDir("sqlite_secret_place");
  std::filesystem::create_directories(dir);
  const std::string secret = dir.filename().string();
  std::vector<std::pair<std::string, fusebox::gateway::CacheStats>> broken;
  auto add = [&broken](const std::string& what, const fusebox::gateway::ImmediateCache& cache) {
    broken.emplace_back(what, cache.Stats());
  };

  std::ofstream(dir / "a-file") << "x";
  add("directory cannot be made",
      *fusebox::gateway::MakeSqliteCache((dir / "a-file" / "sub" / "c.sqlite").string(), 100));
  std::filesystem::create_directories(dir / "a-directory");
  add("a directory as the file",
      *fusebox::gateway::MakeSqliteCache((dir / "a-directory").string(), 100));
  std::ofstream(dir / "garbage", std::ios::binary) << std::string(4096, '\x7f');
  add("not a database", *fusebox::gateway::MakeSqliteCache((dir / "garbage").string(), 100));
  Exec(dir / "users.db", "CREATE TABLE users (id INTEGER PRIMARY KEY);");
  add("another application's",
      *fusebox::gateway::MakeSqliteCache((dir / "users.db").string(), 100));

  const std::string held = (dir / "held.sqlite").string();
  auto holder = fusebox::gateway::MakeSqliteCache(held, 100);
  ASSERT_TRUE(holder->Stats().healthy) << holder->Stats().error;
  add("in use by another process", *fusebox::gateway::MakeSqliteCache(held, 100));

  // A file overwritten under a running cache: the lookup of an entry written before fails.
  const auto overwritten = dir / "overwritten.sqlite";
  {
    auto filler = fusebox::gateway::MakeSqliteCache(overwritten.string(), 1000);
    for (int n = 0; n < 200; ++n) {
      filler->PutNow(ChurnKey(n), Entry(std::string(500, 'p'), n));
    }
  }  // closed: its log is checkpointed into the file
  auto running = fusebox::gateway::MakeSqliteCache(overwritten.string(), 1000);
  ASSERT_TRUE(running->Stats().healthy) << running->Stats().error;
  std::ofstream(overwritten, std::ios::binary | std::ios::trunc) << std::string(256 * 1024, 'Z');
  for (int n = 0; n < 200 && running->Stats().healthy; ++n) {
    running->GetNow(ChurnKey(n));
  }
  add("overwritten while running", *running);

  for (const auto& [what, stats] : broken) {
    EXPECT_FALSE(stats.healthy) << what;
    EXPECT_FALSE(stats.error.empty()) << what;
    EXPECT_EQ(stats.error.find(secret), std::string::npos) << what << ": " << stats.error;
    EXPECT_NE(stats.location.find(secret), std::string::npos) << what << ": the log's location";
  }
  running.reset();
  holder.reset();
  std::filesystem::remove_all(dir);
}

TEST(DecodeSerializationTest, RoundTrips) {
  fusebox::gateway::Decode d;
  d.vin = "1FTMW1T88MFA00001";
  d.model_year = 2021;
  d.vehicle = {{"make", "FORD"}, {"plant_city", "DEARBORN"}};
  d.upstream_codes = {1, 400};
  d.fetched_at = WallTime(std::chrono::milliseconds(1'700'000'000'123));
  auto back = fusebox::gateway::DeserializeDecode(fusebox::gateway::SerializeDecode(d));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->vin, d.vin);
  EXPECT_EQ(back->model_year, 2021);
  EXPECT_EQ(back->vehicle, d.vehicle);
  EXPECT_EQ(back->upstream_codes, d.upstream_codes);
  EXPECT_EQ(back->fetched_at, d.fetched_at);
  EXPECT_FALSE(fusebox::gateway::DeserializeDecode("{\"v\":2}").has_value());
}

TEST(DecodeSerializationTest, FormatsRfc3339InUtc) {
  EXPECT_EQ(fusebox::gateway::FormatRfc3339(WallTime(std::chrono::seconds(1'714'521'600))),
            "2024-05-01T00:00:00Z");
}

TEST(SanitizeUtf8Test, ReplacesInvalidSequences) {
  EXPECT_EQ(fusebox::gateway::SanitizeUtf8("a\xC3\xA9"), "a\xC3\xA9");
  EXPECT_EQ(fusebox::gateway::SanitizeUtf8("a\xFF"
                                           "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(fusebox::gateway::SanitizeUtf8("\xC3"), "\xEF\xBF\xBD");
}

}  // namespace

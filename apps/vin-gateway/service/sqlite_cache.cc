// The SQLite backend of Cache. WAL mode with synchronous=NORMAL: a crash (of the process or the
// machine) can lose the last few decodes written, never corrupt the file. Recency for LRU is a
// sequence number, refreshed on a hit only when the entry has fallen behind by more than 1/16 of
// the capacity, so that hot reads do not turn into writes.
//
// One process per cache file: the file is opened in EXCLUSIVE locking mode and the write lock is
// taken at open and held until close. The LRU sequence and the entry count live in this
// process, so two gateways sharing a file would evict each other's entries wrongly; and with the
// lock held, a read takes no file lock at all (in WAL mode each read transaction would otherwise
// cost two fcntl calls, a third of the system calls of an uncached request). A second process
// that opens the file finds it locked, reports the cache broken and serves live decodes.
//
// A file is identified before anything writes to it: by its application id
// (kSqliteCacheApplicationId, stamped when the gateway makes the file) and its schema. An empty
// database becomes a cache; a cache from before the id (exactly the cache's schema, no id) is
// stamped; anything else (another application's tables or id, a file that is not a database) is
// reported and left as it was found: no WAL switch, no tables, no write-ahead log left behind.
//
// Being the file's only writer also lets this process keep a filter of the keys it holds
// (service/key_filter.h), built from the file at open and kept by every insert and eviction: a
// Get of a VIN never stored answers without running a statement.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "fusebox/thread_annotations.h"
#include "service/cache.h"
#include "service/key_filter.h"
#include "storage/sqlite.h"

namespace fusebox::gateway {
namespace {

// The cache's schema, unchanged since the first version: a file that holds exactly this and no
// application id was made by a gateway from before the id (and is stamped at open).
constexpr const char* kSchema =
    "CREATE TABLE decodes ("
    "  key TEXT PRIMARY KEY NOT NULL,"
    "  payload TEXT NOT NULL,"
    "  fetched_at_ms INTEGER NOT NULL,"
    "  used INTEGER NOT NULL);"
    "CREATE INDEX decodes_by_use ON decodes(used);";

class SqliteCache final : public ImmediateCache {
 public:
  SqliteCache(std::string path, std::uint64_t max_entries, SqliteCacheOptions options)
      : path_(std::move(path)),
        max_entries_(max_entries == 0 ? 1 : max_entries),
        options_(options),
        keys_(max_entries_) {
    fusebox::Locked lock(mu_);
    OpenLocked(kOpenBusyTimeoutMs);
  }
  SqliteCache(const SqliteCache&) = delete;
  SqliteCache& operator=(const SqliteCache&) = delete;
  ~SqliteCache() override {
    fusebox::Locked lock(mu_);
    CloseLocked();
  }

  std::optional<CacheEntry> GetNow(std::string_view key) override {
    fusebox::Locked lock(mu_);
    ++gets_;
    RelockIfDueLocked();
    if (!db_.is_open() || !keys_.MayContain(key)) {
      return std::nullopt;
    }
    sqlite3_stmt* s = get_.get();
    sqlite3_reset(s);
    sqlite3_bind_text(s, 1, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
    const int rc = sqlite3_step(s);
    if (rc == SQLITE_DONE) {
      return std::nullopt;
    }
    if (rc != SQLITE_ROW) {
      FailLocked(rc, "get");
      return std::nullopt;
    }
    const sqlite::Row row = get_.row();
    CacheEntry entry;
    entry.payload.assign(row.Text(0));
    entry.fetched_at = WallTime(
        std::chrono::duration_cast<WallTime::duration>(std::chrono::milliseconds(row.Int64(1))));
    const std::int64_t used = row.Int64(2);
    sqlite3_reset(s);
    ++hits_;
    if (sequence_ - used >= refresh_gap_) {
      sqlite3_stmt* t = touch_.get();
      sqlite3_reset(t);
      sqlite3_bind_int64(t, 1, ++sequence_);
      sqlite3_bind_text(t, 2, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
      if (const int trc = sqlite3_step(t); trc != SQLITE_DONE) {
        FailLocked(trc, "touch");
      }
      sqlite3_reset(t);
    }
    return entry;
  }

  void PutNow(std::string_view key, const CacheEntry& entry) override {
    fusebox::Locked lock(mu_);
    ++puts_;
    RelockIfDueLocked();
    if (!db_.is_open()) {
      return;
    }
    const sqlite3_int64 fetched_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(entry.fetched_at.time_since_epoch())
            .count();
    sqlite3_stmt* u = update_.get();
    sqlite3_reset(u);
    sqlite3_bind_text(u, 1, entry.payload.data(), static_cast<int>(entry.payload.size()),
                      SQLITE_TRANSIENT);
    sqlite3_bind_int64(u, 2, fetched_ms);
    sqlite3_bind_int64(u, 3, ++sequence_);
    sqlite3_bind_text(u, 4, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
    int rc = sqlite3_step(u);
    sqlite3_reset(u);
    if (rc != SQLITE_DONE) {
      FailLocked(rc, "update");
      return;
    }
    if (sqlite3_changes(db_.get()) > 0) {
      return;
    }
    sqlite3_stmt* i = insert_.get();
    sqlite3_reset(i);
    sqlite3_bind_text(i, 1, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
    sqlite3_bind_text(i, 2, entry.payload.data(), static_cast<int>(entry.payload.size()),
                      SQLITE_TRANSIENT);
    sqlite3_bind_int64(i, 3, fetched_ms);
    sqlite3_bind_int64(i, 4, sequence_);
    rc = sqlite3_step(i);
    sqlite3_reset(i);
    if (rc != SQLITE_DONE) {
      FailLocked(rc, "insert");
      return;
    }
    ++entries_;
    keys_.Add(key);
    if (entries_ > max_entries_) {
      sqlite3_stmt* e = evict_.get();
      sqlite3_reset(e);
      sqlite3_bind_int64(e, 1, static_cast<sqlite3_int64>(entries_ - max_entries_));
      std::uint64_t removed = 0;
      while ((rc = sqlite3_step(e)) == SQLITE_ROW) {  // one row per evicted key
        keys_.Remove(evict_.row().Text(0));
        ++removed;
      }
      sqlite3_reset(e);
      entries_ -= std::min(entries_, removed);
      evictions_ += removed;
      if (rc != SQLITE_DONE) {
        // The statement's changes are undone, but the keys it returned left the filter: read
        // them again from the file if it stays open (a transient error), so none is missed.
        FailLocked(rc, "evict");
        if (db_.is_open()) {
          LoadKeysLocked();
        }
        return;
      }
    }
  }

  CacheStats Stats() const override {
    fusebox::Locked lock(mu_);
    CacheStats s;
    s.backend = "sqlite";
    s.location = path_;
    s.healthy = healthy_;
    s.error = error_;
    s.entries = entries_;
    s.max_entries = max_entries_;
    s.gets = gets_;
    s.hits = hits_;
    s.puts = puts_;
    s.evictions = evictions_;
    s.errors = errors_;
    return s;
  }

 private:
  // At start the gateway may wait a moment for the file; a retry runs on an I/O thread and never
  // waits.
  static constexpr int kOpenBusyTimeoutMs = 1000;

  void RelockIfDueLocked() FUSEBOX_REQUIRES(mu_) {
    if (!locked_out_ || std::chrono::steady_clock::now() < next_relock_) {
      return;
    }
    locked_out_ = false;
    healthy_ = true;
    error_.clear();
    OpenLocked(0);
  }

  // What a file is found to be before anything writes to it.
  enum class FileKind : std::uint8_t {
    kEmpty,      // a new file or an empty database (no schema, no other application's id)
    kCache,      // stamped with kSqliteCacheApplicationId, with the cache's schema
    kUnstamped,  // the cache's schema without an id: made by a gateway before the id existed
  };
  struct Identity {
    int rc = SQLITE_OK;  // of the reads; SQLITE_BUSY: another process holds the file
    FileKind kind = FileKind::kEmpty;
    std::string refusal;  // when the file is readable but not a cache: why
  };

  void OpenLocked(int busy_timeout_ms) FUSEBOX_REQUIRES(mu_) {
    refresh_gap_ = static_cast<sqlite3_int64>(std::max<std::uint64_t>(1, max_entries_ / 16));
    // No error names the file or its directory: the error is shown on the public routes
    // (/status, /readyz); the log line that reports it adds the location.
    const std::filesystem::path file(path_);
    if (file.has_parent_path()) {
      std::error_code ec;
      std::filesystem::create_directories(file.parent_path(), ec);
      if (ec) {
        BreakLocked(fmt::format("cannot create the cache file's directory: {}", ec.message()));
        return;
      }
    }
    // A write-ahead log already there belongs to whoever wrote the file last. Until the file is
    // known to be a cache, closing must not checkpoint that log into it, as SQLite does by
    // default: a file that is not a cache is left exactly as it was found.
    std::error_code wal_ec;
    const bool had_wal = std::filesystem::exists(path_ + "-wal", wal_ec);
    int rc = db_.Open(path_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX);
    if (rc != SQLITE_OK) {
      BreakLocked(fmt::format("cannot open the cache file: {}", db_.ErrorMessage(rc)));
      return;
    }
    sqlite3_db_config(db_.get(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, had_wal ? 1 : 0, nullptr);
    sqlite3_busy_timeout(db_.get(), busy_timeout_ms);
    // EXCLUSIVE before the file's first read (and so before WAL mode): the WAL index then lives
    // in this process's memory, not in a -shm file, and every lock taken is kept until close.
    // Setting the mode reads and writes nothing.
    rc = sqlite3_exec(db_.get(), "PRAGMA locking_mode=EXCLUSIVE", nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) {
      BreakLocked(fmt::format("cannot open the cache file: {}", sqlite3_errmsg(db_.get())));
      return;
    }
    // Only reads until the file is known to be a cache: another application's database given
    // as the cache is reported and left untouched, not converted.
    const Identity identity = IdentifyLocked();
    if (identity.rc == SQLITE_BUSY) {
      LockedOutLocked();
      return;
    }
    if (identity.rc == SQLITE_NOTADB) {
      BreakLocked(fmt::format("not a vin-gateway cache: {}", sqlite3_errstr(identity.rc)));
      return;
    }
    if (identity.rc != SQLITE_OK) {
      BreakLocked(fmt::format("cannot read the cache file: {}", sqlite3_errmsg(db_.get())));
      return;
    }
    if (!identity.refusal.empty()) {
      BreakLocked(fmt::format("not a vin-gateway cache: {}", identity.refusal));
      return;
    }
    sqlite3_db_config(db_.get(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0, nullptr);
    // WAL mode cannot change inside a transaction; the stamp and the schema go in one, so that a
    // file is never stamped without its tables. The transaction also takes the write lock now
    // (kept: EXCLUSIVE mode never releases it), not at the first Put, so that a second process
    // is refused at its open rather than breaking this one later.
    std::string setup = "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; BEGIN EXCLUSIVE;";
    if (identity.kind != FileKind::kCache) {
      setup += fmt::format("PRAGMA application_id={};", kSqliteCacheApplicationId);
    }
    if (identity.kind == FileKind::kEmpty) {
      setup += kSchema;
    }
    setup += "COMMIT;";
    char* message = nullptr;
    rc = sqlite3_exec(db_.get(), setup.c_str(), nullptr, nullptr, &message);
    if (rc == SQLITE_BUSY) {
      sqlite3_free(message);
      LockedOutLocked();
      return;
    }
    if (rc != SQLITE_OK) {
      std::string why = message != nullptr ? message : sqlite3_errstr(rc);
      sqlite3_free(message);
      BreakLocked(fmt::format("not a usable cache: {}", why));
      return;
    }
    if (!PrepareLocked(get_, "SELECT payload, fetched_at_ms, used FROM decodes WHERE key = ?1") ||
        !PrepareLocked(touch_, "UPDATE decodes SET used = ?1 WHERE key = ?2") ||
        !PrepareLocked(update_,
                       "UPDATE decodes SET payload = ?1, fetched_at_ms = ?2, used = ?3 "
                       "WHERE key = ?4") ||
        !PrepareLocked(insert_,
                       "INSERT INTO decodes (key, payload, fetched_at_ms, used) "
                       "VALUES (?1, ?2, ?3, ?4)") ||
        !PrepareLocked(evict_,
                       "DELETE FROM decodes WHERE key IN "
                       "(SELECT key FROM decodes ORDER BY used LIMIT ?1) RETURNING key")) {
      return;
    }
    sqlite::Statement stats;
    if (!PrepareLocked(stats, "SELECT COUNT(*), COALESCE(MAX(used), 0) FROM decodes")) {
      return;
    }
    rc = sqlite3_step(stats.get());
    if (rc != SQLITE_ROW) {
      BreakLocked(fmt::format("not a usable cache: {}", sqlite3_errmsg(db_.get())));
      return;
    }
    entries_ = static_cast<std::uint64_t>(stats.row().Int64(0));
    sequence_ = stats.row().Int64(1);
    if (!LoadKeysLocked()) {
      return;
    }
    // Queries on a file this process holds never need to wait for a lock.
    sqlite3_busy_timeout(db_.get(), 0);
  }

  // Another process holds the file: broken until a later Get or Put finds it free.
  void LockedOutLocked() FUSEBOX_REQUIRES(mu_) {
    BreakLocked(fmt::format(
        "in use by another process (one gateway per cache file); trying again every {} ms",
        options_.relock_interval.count()));
    locked_out_ = true;
    next_relock_ = std::chrono::steady_clock::now() + options_.relock_interval;
  }

  // What the open file is, from its application id and its schema. Reads only: nothing is
  // written before the answer says the file is a cache (or an empty database to make one).
  Identity IdentifyLocked() FUSEBOX_REQUIRES(mu_) {
    Identity identity;
    sqlite3_int64 application_id = 0;
    identity.rc =
        EachRowLocked("PRAGMA application_id", [&](sqlite::Row s) { application_id = s.Int64(0); });
    if (identity.rc != SQLITE_OK) {
      return identity;
    }
    bool table = false;
    bool key_index = false;  // the primary key's
    bool use_index = false;
    std::vector<std::string> others;
    identity.rc =
        EachRowLocked("SELECT type, name, tbl_name FROM sqlite_master", [&](sqlite::Row s) {
          const std::string_view type = s.Text(0);
          const std::string_view name = s.Text(1);
          const bool on_decodes = s.Text(2) == "decodes";
          if (type == "table" && name == "decodes") {
            table = true;
          } else if (type == "index" && on_decodes && name == "sqlite_autoindex_decodes_1") {
            key_index = true;
          } else if (type == "index" && on_decodes && name == "decodes_by_use") {
            use_index = true;
          } else {
            others.push_back(type == "table" ? std::string(name)
                                             : fmt::format("{} {}", type, name));
          }
        });
    if (identity.rc != SQLITE_OK) {
      return identity;
    }
    if (application_id != 0 && application_id != kSqliteCacheApplicationId) {
      identity.refusal = fmt::format("it carries another application's id ({:#010x})",
                                     static_cast<std::uint32_t>(application_id));
      return identity;
    }
    if (!others.empty()) {
      identity.refusal = fmt::format("it holds other tables ({})", NameList(others));
      return identity;
    }
    if (!table) {  // (an index cannot outlive its table)
      identity.kind = FileKind::kEmpty;
      return identity;
    }
    // The columns, as kSchema declares them: name, type, NOT NULL, primary key.
    std::vector<std::string> columns;
    identity.rc = EachRowLocked("PRAGMA table_info(decodes)", [&](sqlite::Row s) {
      columns.push_back(fmt::format("{} {}{}{}", s.Text(1), s.Text(2),
                                    s.Int(5) != 0 ? " PRIMARY KEY" : "",
                                    s.Int(3) != 0 ? " NOT NULL" : ""));
    });
    if (identity.rc != SQLITE_OK) {
      return identity;
    }
    if (columns !=
        std::vector<std::string>{"key TEXT PRIMARY KEY NOT NULL", "payload TEXT NOT NULL",
                                 "fetched_at_ms INTEGER NOT NULL", "used INTEGER NOT NULL"}) {
      identity.refusal = fmt::format("its decodes table has other columns ({})", NameList(columns));
      return identity;
    }
    std::string indexed;
    identity.rc = EachRowLocked("PRAGMA index_info(decodes_by_use)", [&](sqlite::Row s) {
      indexed += indexed.empty() ? "" : ",";
      indexed += s.Text(2);
    });
    if (identity.rc != SQLITE_OK) {
      return identity;
    }
    if (!key_index || !use_index || indexed != "used") {
      identity.refusal = "its decodes table lacks the cache's indexes";
      return identity;
    }
    identity.kind =
        application_id == kSqliteCacheApplicationId ? FileKind::kCache : FileKind::kUnstamped;
    return identity;
  }

  // Runs `sql`, handing each row to `row`. SQLITE_OK when every row was read.
  template <typename RowFn>
  int EachRowLocked(const char* sql, RowFn&& row) FUSEBOX_REQUIRES(mu_) {
    return sqlite::EachRow(db_.get(), sql, std::forward<RowFn>(row)).rc;
  }

  // The first few of a foreign file's names, each cut short: they are the file's words, not the
  // gateway's, and end up on the public routes.
  static std::string NameList(const std::vector<std::string>& names) {
    constexpr std::size_t kShown = 3;
    constexpr std::size_t kMaxBytes = 40;
    std::string list;
    for (std::size_t i = 0; i < names.size() && i < kShown; ++i) {
      list += i == 0 ? "" : ", ";
      list += names[i].size() <= kMaxBytes ? names[i] : names[i].substr(0, kMaxBytes) + "...";
    }
    if (names.size() > kShown) {
      list += fmt::format(" and {} more", names.size() - kShown);
    }
    return list;
  }

  // The filter, from the keys in the file (at open: the file may hold entries of an earlier run,
  // or of a process that held it while this one was locked out).
  bool LoadKeysLocked() FUSEBOX_REQUIRES(mu_) {
    keys_.Clear();
    sqlite::Statement all;
    if (!PrepareLocked(all, "SELECT key FROM decodes")) {
      return false;
    }
    int rc = SQLITE_ROW;
    while ((rc = sqlite3_step(all.get())) == SQLITE_ROW) {
      keys_.Add(all.row().Text(0));
    }
    if (rc != SQLITE_DONE) {
      BreakLocked(fmt::format("not a usable cache: {}", sqlite3_errmsg(db_.get())));
      return false;
    }
    return true;
  }

  bool PrepareLocked(sqlite::Statement& statement, const char* sql) FUSEBOX_REQUIRES(mu_) {
    if (statement.Prepare(db_.get(), sql) != SQLITE_OK) {
      BreakLocked(fmt::format("not a usable cache: {}", sqlite3_errmsg(db_.get())));
      return false;
    }
    return true;
  }

  // An operation failed. Busy/locked is taken as transient (this connection holds the file's
  // lock from open on, so it should not happen); anything else means the file cannot be
  // trusted: stop using it.
  void FailLocked(int rc, const char* what) FUSEBOX_REQUIRES(mu_) {
    ++errors_;
    error_ = fmt::format("failed during {}: {}", what, sqlite3_errstr(rc));
    if (rc != SQLITE_BUSY && rc != SQLITE_LOCKED) {
      healthy_ = false;
      CloseLocked();
    }
  }

  void BreakLocked(std::string why) FUSEBOX_REQUIRES(mu_) {
    ++errors_;
    healthy_ = false;
    error_ = std::move(why);
    CloseLocked();
  }

  void CloseLocked() FUSEBOX_REQUIRES(mu_) {
    for (sqlite::Statement* s : {&get_, &touch_, &update_, &insert_, &evict_}) {
      s->Finalize();
    }
    db_.Close();
  }

  const std::string path_;
  const std::uint64_t max_entries_;
  const SqliteCacheOptions options_;
  mutable fusebox::Mutex mu_;
  KeyFilter keys_ FUSEBOX_GUARDED_BY(mu_);       // The keys in the file (service/key_filter.h).
  sqlite::Database db_ FUSEBOX_GUARDED_BY(mu_);  // Closed when broken.
  sqlite::Statement get_ FUSEBOX_GUARDED_BY(mu_);
  sqlite::Statement touch_ FUSEBOX_GUARDED_BY(mu_);
  sqlite::Statement update_ FUSEBOX_GUARDED_BY(mu_);
  sqlite::Statement insert_ FUSEBOX_GUARDED_BY(mu_);
  sqlite::Statement evict_ FUSEBOX_GUARDED_BY(mu_);
  sqlite3_int64 sequence_ FUSEBOX_GUARDED_BY(mu_) = 0;
  sqlite3_int64 refresh_gap_ FUSEBOX_GUARDED_BY(mu_) = 1;
  bool healthy_ FUSEBOX_GUARDED_BY(mu_) = true;
  std::string error_ FUSEBOX_GUARDED_BY(mu_);
  // Another process held the file at the last attempt.
  bool locked_out_ FUSEBOX_GUARDED_BY(mu_) = false;
  std::chrono::steady_clock::time_point next_relock_ FUSEBOX_GUARDED_BY(mu_){};
  std::uint64_t entries_ FUSEBOX_GUARDED_BY(mu_) = 0;
  std::uint64_t gets_ FUSEBOX_GUARDED_BY(mu_) = 0;
  std::uint64_t hits_ FUSEBOX_GUARDED_BY(mu_) = 0;
  std::uint64_t puts_ FUSEBOX_GUARDED_BY(mu_) = 0;
  std::uint64_t evictions_ FUSEBOX_GUARDED_BY(mu_) = 0;
  std::uint64_t errors_ FUSEBOX_GUARDED_BY(mu_) = 0;
};

}  // namespace

std::unique_ptr<ImmediateCache> MakeSqliteCache(const std::string& path, std::uint64_t max_entries,
                                                SqliteCacheOptions options) {
  return std::make_unique<SqliteCache>(path, max_entries, options);
}

}  // namespace fusebox::gateway

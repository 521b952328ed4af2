// vin-gateway/storage/sqlite.h
//
// The gateway's one wrapper of SQLite's C API, for the cache (service/sqlite_cache.cc) and the
// offline snapshot (offline/vpic_snapshot.cc): a connection and a prepared statement that close
// themselves, a column read as a string_view, and a loop over a query's rows. Only ownership and
// the repeated few lines: every other call is SQLite's own, on get().
//
// Thread safety: none of its own; a Database is used as SQLite's flags for it allow (the gateway
// opens with SQLITE_OPEN_NOMUTEX and one owner at a time). Time: none.
//
// Example:
//   sqlite::Database db;
//   if (db.Open(path, SQLITE_OPEN_READONLY) != SQLITE_OK) return Fail(db.ErrorMessage());
//   const sqlite::RowsRead read = sqlite::EachRow(db.get(), "SELECT Id, Name FROM Make",
//       [&](sqlite::Row row) { makes.emplace(row.Int(0), row.Text(1)); });
//   if (!read.ok()) return Fail(db.ErrorMessage());
#pragma once

#include <sqlite3.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace fusebox::gateway::sqlite {

// One connection; closed (sqlite3_close_v2) by Close() or the destructor.
class Database {
 public:
  Database() = default;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database() { Close(); }

  // sqlite3_open_v2's result. On failure the connection is kept (when SQLite made one) so that
  // ErrorMessage() says why; Close() releases it.
  int Open(const std::string& path, int flags) {
    Close();
    return sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  }
  void Close() noexcept {
    if (db_ != nullptr) {
      sqlite3_close_v2(db_);
      db_ = nullptr;
    }
  }
  bool is_open() const noexcept { return db_ != nullptr; }
  sqlite3* get() const noexcept { return db_; }
  // The last error's text, or `fallback_rc`'s when there is no connection.
  std::string_view ErrorMessage(int fallback_rc = SQLITE_ERROR) const {
    return db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(fallback_rc);
  }

 private:
  sqlite3* db_ = nullptr;
};

// The columns of the row a statement is on.
class Row {
 public:
  explicit Row(sqlite3_stmt* statement) noexcept : s_(statement) {}
  int Int(int column) const { return sqlite3_column_int(s_, column); }
  std::int64_t Int64(int column) const { return sqlite3_column_int64(s_, column); }
  bool IsNull(int column) const { return sqlite3_column_type(s_, column) == SQLITE_NULL; }
  // The column as text, valid until the statement steps again; empty for NULL.
  std::string_view Text(int column) const {
    const auto* text = sqlite3_column_text(s_, column);
    if (text == nullptr) {
      return {};
    }
    return {reinterpret_cast<const char*>(text),
            static_cast<std::size_t>(sqlite3_column_bytes(s_, column))};
  }

 private:
  sqlite3_stmt* s_;
};

// One prepared statement; finalized by Finalize() or the destructor.
class Statement {
 public:
  Statement() = default;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement() { Finalize(); }

  // sqlite3_prepare_v2's result.
  int Prepare(sqlite3* db, const char* sql) {
    Finalize();
    return sqlite3_prepare_v2(db, sql, -1, &s_, nullptr);
  }
  void Finalize() noexcept {
    sqlite3_finalize(s_);
    s_ = nullptr;
  }
  sqlite3_stmt* get() const noexcept { return s_; }
  Row row() const noexcept { return Row(s_); }

 private:
  sqlite3_stmt* s_ = nullptr;
};

// What EachRow did: SQLITE_OK when every row was read, else the failing call's code, and
// whether that call was the statement's preparation (a missing table or column) or a step.
struct RowsRead {
  int rc = SQLITE_OK;
  bool prepare_failed = false;
  bool ok() const noexcept { return rc == SQLITE_OK; }
};

// Runs `sql` on `db`, calling `row(Row)` for each result row.
template <typename RowFn>
RowsRead EachRow(sqlite3* db, const char* sql, RowFn&& row) {
  Statement statement;
  if (const int rc = statement.Prepare(db, sql); rc != SQLITE_OK || statement.get() == nullptr) {
    return RowsRead{rc == SQLITE_OK ? SQLITE_ERROR : rc, true};
  }
  int rc = SQLITE_OK;
  while ((rc = sqlite3_step(statement.get())) == SQLITE_ROW) {
    row(statement.row());
  }
  return RowsRead{rc == SQLITE_DONE ? SQLITE_OK : rc, false};
}

}  // namespace fusebox::gateway::sqlite

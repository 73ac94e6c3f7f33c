// Thin RAII helpers over the SQLite C API, private to the SQLite store backend: a connection
// handle, a prepared statement, and the mapping of SQLite result codes to gf::Error.
//
// A SqliteStatement is owned by one connection and, like the store, used by one thread at a
// time. Statements must be destroyed before their connection (SqliteStore orders its members
// so). No function here throws.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <sqlite3.h>

#include "core/result.h"
#include "store/row_io.h"

namespace gf {

// Closes the connection (sqlite3_close_v2) when it goes out of scope.
struct SqliteCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using SqliteHandle = std::unique_ptr<sqlite3, SqliteCloser>;

// An Error for SQLite result code `rc` on `db` (may be null): the code class picked from what
// a caller can do about it, the message "<operation>: <sqlite message>".
// BUSY/LOCKED -> kUnavailable (another process holds the lock; retry), CONSTRAINT ->
// kInvalidArgument (the batch breaks a rule of the schema), CANTOPEN/IOERR/FULL/READONLY/PERM/
// NOTADB/CORRUPT -> kIo (the file or the disk), anything else -> kInternal (a bug).
Error SqliteError(sqlite3* db, int rc, std::string_view operation);

// Runs one or more SQL statements that return no rows of interest.
Status SqliteExec(sqlite3* db, const std::string& sql, std::string_view operation);

// Creates `file` with mode 0600 if it does not exist (an existing file is left as it is). SQLite
// would create it with 0644 (less the umask), and it holds every job's command line and
// environment. SQLite gives the -wal and -shm files the mode of the database file.
// Errors: kIo with errno's text.
Status CreatePrivateFile(const std::filesystem::path& file);

// Final, so never a base: C.35 asks nothing of its public destructor (ParamSink's and
// RowSource's are protected). `make lint`'s checker flags a final class all the same; later
// versions of it skip them.
// NOLINTNEXTLINE(cppcoreguidelines-virtual-class-destructor): a false positive, as above.
class SqliteStatement final : public ParamSink, public RowSource {
 public:
  // Prepares `sql`; `persistent` hints SQLite that the statement will be reused for long
  // (cached statements).
  static Result<SqliteStatement> Prepare(sqlite3* db, std::string_view sql, bool persistent);

  SqliteStatement(SqliteStatement&& other) noexcept;
  SqliteStatement& operator=(SqliteStatement&& other) noexcept;
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;
  ~SqliteStatement();

  // Parameter indexes start at 1, as in SQL (?1, ?2, ...). Text is copied by SQLite.
  void BindInt64(int index, std::int64_t value) override;
  // SQLite stores a NaN as NULL: callers check that values are finite first.
  void BindDouble(int index, double value) override;
  void BindText(int index, std::string_view value) override;
  void BindNull(int index) override;
  // The index of a named parameter (":name"), 0 if the statement has none by that name.
  int ParameterIndex(const char* name) const { return sqlite3_bind_parameter_index(stmt_, name); }

  // Steps once: true if a row is ready, false when done. Errors name `operation`.
  Result<bool> Step(std::string_view operation);
  // Steps to the end, for statements that return no rows.
  Status Run(std::string_view operation);

  // Column indexes start at 0.
  bool IsNull(int column) const override;
  std::int64_t Int64(int column) const override;
  double Double(int column) const override;
  std::string Text(int column) const override;  // all bytes, embedded NULs included

  // Makes the statement ready for reuse and drops its bindings (and the copies of bound text).
  void Reset();

 private:
  SqliteStatement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}

  sqlite3* db_ = nullptr;         // not owned
  sqlite3_stmt* stmt_ = nullptr;  // owned
};

// Resets a cached statement when the scope that uses it ends, however it ends, so that no
// statement is left mid-step (which would hold a read snapshot open).
class ScopedReset {
 public:
  explicit ScopedReset(SqliteStatement& stmt) : stmt_(stmt) {}
  ~ScopedReset() { stmt_.Reset(); }
  ScopedReset(const ScopedReset&) = delete;
  ScopedReset& operator=(const ScopedReset&) = delete;

 private:
  SqliteStatement& stmt_;
};

}  // namespace gf

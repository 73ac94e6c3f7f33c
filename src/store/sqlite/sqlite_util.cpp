#include "store/sqlite/sqlite_util.h"

#include <cerrno>
#include <cstdint>
#include <utility>

#include <fcntl.h>
#include <unistd.h>

namespace gf {
namespace {

// SQLITE_TRANSIENT is an old-style cast in a macro; this is the same value, spelled so that
// -Wold-style-cast stays quiet. It makes SQLite copy bound text.
const sqlite3_destructor_type kTransient =
    reinterpret_cast<sqlite3_destructor_type>(  // NOLINT(performance-no-int-to-ptr): SQLite's ABI
        static_cast<std::intptr_t>(-1));

ErrorCode CodeFor(int rc) {
  switch (rc & 0xFF) {  // the primary code of an extended one
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return ErrorCode::kUnavailable;
    case SQLITE_CONSTRAINT:
      return ErrorCode::kInvalidArgument;
    case SQLITE_CANTOPEN:
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      return ErrorCode::kIo;
    default:
      return ErrorCode::kInternal;
  }
}

}  // namespace

Error SqliteError(sqlite3* db, int rc, std::string_view operation) {
  // sqlite3_errmsg is the detailed message of the last call on db ("UNIQUE constraint failed:
  // jobs.id"); sqlite3_errstr is the generic text of the code, used when there is no db.
  std::string detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  return MakeError(CodeFor(rc), std::string(operation) + ": " + detail);
}

Status SqliteExec(sqlite3* db, const std::string& sql, std::string_view operation) {
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) {
    return SqliteError(db, rc, operation);
  }
  return OkStatus();
}

Result<SqliteStatement> SqliteStatement::Prepare(sqlite3* db,
                                                 std::string_view sql,
                                                 bool persistent) {
  sqlite3_stmt* stmt = nullptr;
  unsigned int flags = persistent ? SQLITE_PREPARE_PERSISTENT : 0;
  int rc = sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()), flags, &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return SqliteError(db, rc, "prepare '" + std::string(sql.substr(0, 60)) + "'");
  }
  return SqliteStatement(db, stmt);
}

SqliteStatement::SqliteStatement(SqliteStatement&& other) noexcept
    : db_(other.db_), stmt_(std::exchange(other.stmt_, nullptr)) {}

SqliteStatement& SqliteStatement::operator=(SqliteStatement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    db_ = other.db_;
    stmt_ = std::exchange(other.stmt_, nullptr);
  }
  return *this;
}

SqliteStatement::~SqliteStatement() {
  sqlite3_finalize(stmt_);
}

void SqliteStatement::BindInt64(int index, std::int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
}

void SqliteStatement::BindDouble(int index, double value) {
  sqlite3_bind_double(stmt_, index, value);
}

void SqliteStatement::BindText(int index, std::string_view value) {
  sqlite3_bind_text64(stmt_, index, value.data(), value.size(), kTransient, SQLITE_UTF8);
}

void SqliteStatement::BindNull(int index) {
  sqlite3_bind_null(stmt_, index);
}

Result<bool> SqliteStatement::Step(std::string_view operation) {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) {
    return true;
  }
  if (rc == SQLITE_DONE) {
    return false;
  }
  return SqliteError(db_, rc, operation);
}

Status SqliteStatement::Run(std::string_view operation) {
  while (true) {
    GF_ASSIGN_OR_RETURN(bool row, Step(operation));
    if (!row) {
      return OkStatus();
    }
  }
}

bool SqliteStatement::IsNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

std::int64_t SqliteStatement::Int64(int column) const {
  return sqlite3_column_int64(stmt_, column);
}

double SqliteStatement::Double(int column) const {
  return sqlite3_column_double(stmt_, column);
}

std::string SqliteStatement::Text(int column) const {
  // column_text before column_bytes: the documented order to get the byte count of the text.
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  int bytes = sqlite3_column_bytes(stmt_, column);
  if (text == nullptr) {
    return {};
  }
  return std::string(reinterpret_cast<const char*>(text), static_cast<std::size_t>(bytes));
}

void SqliteStatement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

Status CreatePrivateFile(const std::filesystem::path& file) {
  const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0) {
    ::close(fd);
    return OkStatus();
  }
  if (errno == EEXIST) {
    return OkStatus();
  }
  const int err = errno;
  return IoError(std::string("create file: ") + ErrnoText(err));
}

}  // namespace gf

#include "store/sqlite/sqlite_backup.h"

#include <cerrno>
#include <string>
#include <system_error>

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include "store/schema_steps.h"
#include "store/sqlite/migrations.h"
#include "store/sqlite/sqlite_util.h"

namespace gf {
namespace {

// How long a read waits for a writer that holds an exclusive lock (a daemon recovering a WAL
// after a crash): long enough for that, short enough for a person at a terminal.
constexpr int kBusyTimeoutMs = 5000;

// `error` with "'FILE': " in front, so that every message names the file it is about.
Error AboutFile(const std::filesystem::path& file, const Error& error) {
  return Error{error.code, "'" + file.string() + "': " + error.message};
}

Result<SqliteHandle> OpenFile(const std::filesystem::path& file, int flags) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(file.c_str(), &raw, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  SqliteHandle db(raw);  // closed on every path, even when the open failed
  if (rc != SQLITE_OK) {
    return SqliteError(db.get(), rc, "open");
  }
  sqlite3_extended_result_codes(db.get(), 1);
  sqlite3_busy_timeout(db.get(), kBusyTimeoutMs);
  return db;
}

Result<std::string> QueryText(sqlite3* db, const std::string& sql, std::string_view operation) {
  GF_ASSIGN_OR_RETURN(SqliteStatement stmt, SqliteStatement::Prepare(db, sql, false));
  GF_ASSIGN_OR_RETURN(bool row, stmt.Step(operation));
  return row ? stmt.Text(0) : std::string();
}

// The schema version, whether the file is whole, and its jobs; refuses a database this build
// cannot open.
Result<SqliteStoreInfo> Describe(sqlite3* db, const std::filesystem::path& file) {
  SqliteStoreInfo info;
  GF_ASSIGN_OR_RETURN(info.schema_version, ReadSchemaVersion(db));
  if (info.schema_version == 0) {
    return FailedPrecondition("an empty database, with no gpufleet schema in it");
  }
  if (info.schema_version > LatestSchemaVersion()) {
    return FailedPrecondition(NewerSchemaMessage(info.schema_version, LatestSchemaVersion()));
  }
  GF_ASSIGN_OR_RETURN(const std::string check, QueryText(db, "PRAGMA quick_check", "check"));
  if (check != "ok") {
    return IoError("damaged (PRAGMA quick_check: " + check + ")");
  }
  GF_ASSIGN_OR_RETURN(const std::string jobs,
                      QueryText(db, "SELECT count(*) FROM jobs", "count jobs"));
  info.jobs = std::stoll(jobs);
  std::error_code ec;
  info.bytes = std::filesystem::file_size(file, ec);
  return info;
}

Status MustExist(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) {
    return NotFound("no such file");
  }
  return OkStatus();
}

// Makes the renames in `folder` durable.
Status SyncFolder(const std::filesystem::path& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    const int err = errno;
    if (fd >= 0) {
      ::close(fd);
    }
    return IoError("sync folder '" + folder.string() + "': " + ErrnoText(err));
  }
  ::close(fd);
  return OkStatus();
}

Status Rename(const std::filesystem::path& from, const std::filesystem::path& to) {
  std::error_code ec;
  std::filesystem::rename(from, to, ec);
  if (ec) {
    return IoError("rename '" + from.string() + "' to '" + to.string() + "': " + ec.message());
  }
  return OkStatus();
}

// Copies every page of `from` into a new file `to` (mode 0600) in one backup step, so in one
// read transaction of `from`, then makes `to` a rollback-journal database: one file that needs
// no -wal beside it. SQLite syncs the copy's commit.
Status CopyPages(sqlite3* from, const std::filesystem::path& to) {
  GF_TRY(CreatePrivateFile(to));
  GF_ASSIGN_OR_RETURN(SqliteHandle dest, OpenFile(to, SQLITE_OPEN_READWRITE));
  sqlite3_backup* backup = sqlite3_backup_init(dest.get(), "main", from, "main");
  if (backup == nullptr) {
    return SqliteError(dest.get(), sqlite3_errcode(dest.get()), "start the copy");
  }
  const int step = sqlite3_backup_step(backup, -1);
  // The step's error, if any, is also finish's, and finish leaves its message on `dest`.
  const int finish = sqlite3_backup_finish(backup);
  if (step != SQLITE_DONE || finish != SQLITE_OK) {
    return SqliteError(dest.get(), finish != SQLITE_OK ? finish : step, "copy");
  }
  GF_ASSIGN_OR_RETURN(const std::string mode,
                      QueryText(dest.get(), "PRAGMA journal_mode = DELETE", "leave WAL"));
  if (mode != "delete") {
    return Internal("the copy kept journal mode '" + mode + "'");
  }
  return OkStatus();
}

// CopyPages into `to`, which is removed first (what an interrupted run left) and on error.
Status CopyInto(sqlite3* from, const std::filesystem::path& to) {
  std::error_code ec;
  std::filesystem::remove(to, ec);
  Status copied = CopyPages(from, to);
  if (!copied.ok()) {
    std::filesystem::remove(to, ec);
  }
  return copied;
}

// `file` + `suffix`, beside it.
std::filesystem::path Suffixed(const std::filesystem::path& file, std::string_view suffix) {
  return std::filesystem::path(file.string() + std::string(suffix));
}

// Opens `file` read-only once it is known to exist.
Result<SqliteHandle> OpenExisting(const std::filesystem::path& file) {
  GF_TRY(MustExist(file));
  return OpenFile(file, SQLITE_OPEN_READONLY);
}

Result<SqliteStoreInfo> DescribeFile(const std::filesystem::path& file) {
  GF_ASSIGN_OR_RETURN(SqliteHandle db, OpenExisting(file));
  return Describe(db.get(), file);
}

}  // namespace

Result<SqliteStoreInfo> BackupSqliteStore(const std::filesystem::path& db,
                                          const std::filesystem::path& output) {
  Result<SqliteHandle> from = OpenExisting(db);
  if (!from.ok()) {
    return AboutFile(db, from.error());
  }
  // The source is checked before and the copy after: the copy is what a restore will read.
  if (Result<SqliteStoreInfo> source = Describe(from->get(), db); !source.ok()) {
    return AboutFile(db, source.error());
  }
  const std::filesystem::path partial = Suffixed(output, ".partial");
  if (Status s = CopyInto(from->get(), partial); !s.ok()) {
    return AboutFile(output, s.error());
  }
  Result<SqliteStoreInfo> copied = DescribeFile(partial);
  if (!copied.ok()) {
    std::error_code ec;
    std::filesystem::remove(partial, ec);
    return AboutFile(output, copied.error());
  }
  const std::filesystem::path folder = output.has_parent_path() ? output.parent_path() : ".";
  if (Status s = Rename(partial, output); !s.ok()) {
    return s.error();
  }
  GF_TRY(SyncFolder(folder));
  return copied;
}

Result<SqliteStoreInfo> InspectSqliteBackup(const std::filesystem::path& file) {
  Result<SqliteStoreInfo> info = DescribeFile(file);
  if (!info.ok()) {
    return AboutFile(file, info.error());
  }
  return info;
}

Result<RestoredSqliteStore> RestoreSqliteStore(const std::filesystem::path& backup,
                                               const std::filesystem::path& db,
                                               std::string_view aside_suffix) {
  RestoredSqliteStore result;
  GF_ASSIGN_OR_RETURN(result.restored, InspectSqliteBackup(backup));
  Result<SqliteHandle> from = OpenExisting(backup);
  if (!from.ok()) {
    return AboutFile(backup, from.error());
  }
  const std::filesystem::path partial = Suffixed(db, ".restoring");
  if (Status s = CopyInto(from->get(), partial); !s.ok()) {
    return AboutFile(db, s.error());
  }
  std::error_code ec;
  if (std::filesystem::exists(db, ec)) {
    result.replaced = Suffixed(db, aside_suffix);
    GF_TRY(Rename(db, result.replaced));
    if (const auto wal = Suffixed(db, "-wal"); std::filesystem::exists(wal, ec)) {
      GF_TRY(Rename(wal, Suffixed(result.replaced, "-wal")));
    }
    std::filesystem::remove(Suffixed(db, "-shm"), ec);
  }
  GF_TRY(Rename(partial, db));
  GF_TRY(SyncFolder(db.has_parent_path() ? db.parent_path() : "."));
  return result;
}

}  // namespace gf

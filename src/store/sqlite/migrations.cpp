#include "store/sqlite/migrations.h"

#include <array>
#include <string>

#include "store/schema_steps.h"
#include "store/sqlite/sqlite_util.h"

namespace gf {
namespace {

constexpr std::string_view kCreateVersionTable = R"sql(
CREATE TABLE IF NOT EXISTS schema_version (
  version     INTEGER PRIMARY KEY,
  description TEXT    NOT NULL,
  applied_ms  INTEGER NOT NULL
))sql";

Result<std::int64_t> QueryInt(sqlite3* db, std::string_view sql, std::string_view operation) {
  GF_ASSIGN_OR_RETURN(SqliteStatement stmt, SqliteStatement::Prepare(db, sql, false));
  GF_ASSIGN_OR_RETURN(bool row, stmt.Step(operation));
  if (!row) {
    return Internal(std::string(operation) + ": no row");
  }
  return stmt.Int64(0);
}

Status RecordVersion(sqlite3* db, const Migration& m, std::string_view operation) {
  GF_ASSIGN_OR_RETURN(
      SqliteStatement stmt,
      SqliteStatement::Prepare(db,
                               "INSERT INTO schema_version (version, description, applied_ms) "
                               "VALUES (?1, ?2, CAST((julianday('now') - 2440587.5) * 86400000 "
                               "AS INTEGER))",
                               false));
  stmt.BindInt64(1, m.version);
  stmt.BindText(2, m.description);
  return stmt.Run(operation);
}

// One step in one transaction. The version is read again inside the transaction: another
// process opening the same file may have applied the step since we looked.
Status ApplyOne(sqlite3* db, const Migration& m) {
  const std::string operation =
      "schema migration " + std::to_string(m.version) + " (" + std::string(m.description) + ")";
  GF_TRY(SqliteExec(db, "BEGIN IMMEDIATE", operation));
  Status status = [&]() -> Status {
    GF_TRY(SqliteExec(db, std::string(kCreateVersionTable), operation));
    GF_ASSIGN_OR_RETURN(int current, ReadSchemaVersion(db));
    if (current < m.version) {
      GF_TRY(SqliteExec(db, std::string(m.sql), operation));
      GF_TRY(RecordVersion(db, m, operation));
    }
    return SqliteExec(db, "COMMIT", operation);
  }();
  if (!status.ok() && sqlite3_get_autocommit(db) == 0) {
    // The step's own error is the one to report; a failed rollback adds nothing actionable.
    static_cast<void>(SqliteExec(db, "ROLLBACK", operation));
  }
  return status;
}

}  // namespace

std::span<const Migration> SqliteMigrations() {
  return SchemaSteps(SqlDialect::kSqlite);
}

int LatestSqliteSchemaVersion() {
  return SqliteMigrations().back().version;
}

Result<int> ReadSchemaVersion(sqlite3* db) {
  GF_ASSIGN_OR_RETURN(std::int64_t has_table,
                      QueryInt(db,
                               "SELECT count(*) FROM sqlite_master "
                               "WHERE type = 'table' AND name = 'schema_version'",
                               "read schema version"));
  if (has_table == 0) {
    GF_ASSIGN_OR_RETURN(std::int64_t objects,
                        QueryInt(db, "SELECT count(*) FROM sqlite_master", "read schema version"));
    if (objects > 0) {
      return FailedPrecondition(
          "the database has tables but no schema_version table: it is not a gpufleet "
          "database; point gpufleet at a new file");
    }
    return 0;
  }
  GF_ASSIGN_OR_RETURN(
      std::int64_t version,
      QueryInt(db, "SELECT COALESCE(MAX(version), 0) FROM schema_version", "read schema version"));
  return static_cast<int>(version);
}

Status ApplyMigrations(sqlite3* db, std::span<const Migration> migrations) {
  GF_CHECK(!migrations.empty());
  for (std::size_t i = 0; i < migrations.size(); ++i) {
    GF_CHECK(migrations[i].version == static_cast<int>(i) + 1);  // 1..N, no gaps
  }
  const int latest = migrations.back().version;
  GF_ASSIGN_OR_RETURN(int current, ReadSchemaVersion(db));
  if (current > latest) {
    return FailedPrecondition(NewerSchemaMessage(current, latest));
  }
  for (const Migration& m : migrations) {
    if (m.version > current) {
      GF_TRY(ApplyOne(db, m));
    }
  }
  return OkStatus();
}

}  // namespace gf

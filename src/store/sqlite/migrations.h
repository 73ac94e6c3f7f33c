// Schema migrations of the SQLite store: an ordered list of versioned SQL steps. Each step runs
// in its own transaction and is recorded in the schema_version table, so a crash between steps
// leaves the database at a known version and the next open carries on from there.
//
// To change the schema, append a step with the next version; never edit a released step.
//
// Functions take a connection that the caller owns and uses from one thread.
#pragma once

#include <span>
#include <string_view>

#include <sqlite3.h>

#include "core/result.h"
#include "store/migration.h"

namespace gf {

// The steps this build of gpufleet knows, oldest first.
std::span<const Migration> SqliteMigrations();

// The version of the newest step in SqliteMigrations().
int LatestSqliteSchemaVersion();

// The version recorded in `db`: 0 for an empty database.
// Errors: kFailedPrecondition if the database has tables but no schema_version (it belongs to
// another program).
Result<int> ReadSchemaVersion(sqlite3* db);

// Brings `db` to the newest version of `migrations` (oldest first, versions 1..N without gaps).
// Messages do not name the file; the caller adds that.
// Errors: kFailedPrecondition if the database is newer than the newest step ("database schema
// version N is newer than this gpufleet (M): ...", NewerSchemaMessage) or belongs to another
// program; the SQLite error of a failing step, naming its version (the step is rolled back; the
// ones before it stay applied).
Status ApplyMigrations(sqlite3* db, std::span<const Migration> migrations);

}  // namespace gf

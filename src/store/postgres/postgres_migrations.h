// Schema migrations of the PostgreSQL store: the same versions as the SQLite store's
// (sqlite/migrations.h; a version means the same tables and columns in both backends),
// written in PostgreSQL's dialect, recorded in a schema_version table of the store's schema.
//
// Two servers may start at once on one database: every step runs in its own transaction that
// first takes a transaction-level advisory lock on the schema and reads the version again, so
// each step is applied exactly once and a crash between steps leaves a known version.
//
// Functions take a connection that the caller owns and uses from one thread; they throw
// libpqxx exceptions for database errors (the caller maps them), and return Errors for the
// states a person must act on.
#pragma once

#include <span>
#include <string>

#include <pqxx/pqxx>

#include "core/result.h"
#include "store/migration.h"

namespace gf {

// The steps this build of gpufleet knows, oldest first.
std::span<const Migration> PostgresMigrations();

// The version recorded in `schema`: 0 when it has no tables (or does not exist).
// Errors: kFailedPrecondition when the schema has tables but no schema_version (it belongs to
// another program).
Result<int> ReadPostgresSchemaVersion(pqxx::connection& conn, const std::string& schema);

// Creates `schema` if needed and brings it to the newest version of `migrations` (versions
// 1..N without gaps). `schema` must be a plain name (ParsePostgresUrl checks it).
// Errors: kFailedPrecondition when the schema is newer than the newest step ("database schema
// version N is newer than this gpufleet (M): ...", NewerSchemaMessage) or belongs to another
// program.
Status ApplyPostgresMigrations(pqxx::connection& conn,
                               const std::string& schema,
                               std::span<const Migration> migrations);

}  // namespace gf

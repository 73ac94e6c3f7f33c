// The store's schema, one list of versioned steps for both backends (issue #21: it was written
// twice, once per SQL dialect). Each step is kept in SQLite's SQL with placeholders where the
// dialects differ (types, literals of byte strings), rendered for the backend that applies it
// (sqlite/migrations.h, postgres/postgres_migrations.h); what only PostgreSQL needs (its
// counters table) comes with the step. The store conformance suite runs against both.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "store/migration.h"

namespace gf {

enum class SqlDialect { kSqlite, kPostgres };

// The steps in `dialect`, oldest first (versions 1..N without gaps). Rendered once; the views
// stay valid for the life of the process. Thread-safe.
std::span<const Migration> SchemaSteps(SqlDialect dialect);

// The version of the newest step: the schema this build writes (`gpufleet --version` shows it).
int LatestSchemaVersion();

// Why a database at schema `found` is refused by this build, whose newest step is `latest`
// (found > latest: a newer gpufleet wrote it, and this one is older). Both backends say it in
// these words: the versions, and what an admin can do (a downgrade cannot read a newer schema:
// go back to the newer gpufleet, or restore a backup taken before the upgrade).
std::string NewerSchemaMessage(int found, int latest);

// `neutral` with each placeholder ({INT}, {TEXT}, {FLAG}, {REAL}, {SEQ}, {WITHOUT_ROWID},
// {EMPTY}, {EMPTY_OBJECT}, {EMPTY_ARRAY}) written in `dialect`. A placeholder left over (a
// misspelt one) is a programming error (GF_CHECK).
std::string RenderSchemaSql(std::string_view neutral, SqlDialect dialect);

}  // namespace gf

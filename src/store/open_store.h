// OpenStore: the Store a `--db` value names, for the commands that keep state (`gpufleet up`,
// `gpufleet server`). One place parses the value, so every command accepts the same forms.
//
// Thread-safe (no shared state); the Store it returns is owned by the caller's thread.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>

#include "core/result.h"
#include "store/store.h"

namespace gf {

// What `db` names:
//   ""                                   SQLite at `default_sqlite_path`
//   "sqlite:PATH", or a plain PATH       SQLite at PATH
//   "postgresql://..." / "postgres://..." PostgreSQL (postgres/postgres_store.h; `?schema=`)
// Errors: kInvalidArgument naming --db and the accepted forms for anything else (another URL
// scheme, "sqlite:" with no path); otherwise those of OpenSqliteStore / OpenPostgresStore.
Result<std::unique_ptr<Store>> OpenStore(std::string_view db,
                                         const std::filesystem::path& default_sqlite_path);

// The SQLite file `db` names, as OpenStore reads it (`gpufleet backup` and `restore` work on
// the file); nullopt when `db` is a URL: PostgreSQL's (IsPostgresStore) or one not supported.
std::optional<std::filesystem::path> SqliteStoreFile(
    std::string_view db, const std::filesystem::path& default_sqlite_path);

// Whether `db` names a PostgreSQL store ("postgresql://..." or "postgres://...").
bool IsPostgresStore(std::string_view db);

// Where `db` keeps its data, for logs and `gpufleet up`'s banner: the SQLite file, or the
// PostgreSQL URL without its password.
std::string DescribeStore(std::string_view db, const std::filesystem::path& default_sqlite_path);

}  // namespace gf

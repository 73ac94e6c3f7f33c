// SqliteStore: the embedded, default Store backend (DESIGN.md §3): one SQLite file in WAL mode
// with synchronous=FULL, so a Commit that returned OK survives a crash or power loss.
//
// The returned Store owns its connection and its cached prepared statements. Like every Store
// it is used by one thread (the controller's); it is not thread-safe. Several processes may
// open the same file (a CLI reading it, say); writers wait up to busy_timeout for each other.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>

#include "core/result.h"
#include "store/store.h"

namespace gf {

struct SqliteStoreOptions {
  // How long a Commit (or the open-time migration) waits for another process's write lock
  // before failing with kUnavailable.
  std::chrono::milliseconds busy_timeout{5000};
};

// Opens (creating if absent) the store at `db_file`: missing parent folders are created with
// mode 0700 and a new file with mode 0600 (the jobs' commands and environments are private);
// the schema is migrated to this build's version.
// Errors, each naming the path: kIo when the folder or file cannot be created or opened, or
// the file is not a SQLite database; kFailedPrecondition when the database's schema is newer
// than this build (NewerSchemaMessage) or it belongs to another program; kUnavailable when
// another process holds it locked past busy_timeout.
Result<std::unique_ptr<Store>> OpenSqliteStore(const std::filesystem::path& db_file,
                                               const SqliteStoreOptions& options = {});

}  // namespace gf

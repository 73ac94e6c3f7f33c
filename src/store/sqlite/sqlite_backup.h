// Backup and restore of the SQLite store's file (`gpufleet backup`, `gpufleet restore`;
// docs/install.md, decision 0010): SQLite's online backup API from a read-only connection, so a
// backup is taken while the daemon runs (WAL: its commits are not held up) and is one
// consistent, self-contained file.
//
// Free functions over paths, no shared state: thread-safe. They know nothing of daemons; a
// restore's caller makes sure none has the database open (apps/gpufleet/backup.cpp takes the
// data dir's lock).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>

#include "core/result.h"

namespace gf {

// What a gpufleet SQLite file holds, as `backup` and `restore` report it.
struct SqliteStoreInfo {
  int schema_version = 0;  // 1 .. LatestSchemaVersion()
  std::int64_t jobs = 0;   // rows of the jobs table, finished ones included
  std::uintmax_t bytes = 0;
};

// Copies the gpufleet database `db` to `output`, whether or not a daemon has it open: one
// backup step reads every page inside one read transaction, so the copy is the database as one
// commit left it. The copy is written to a temporary file beside `output` (mode 0600: it holds
// every job's command and environment), switched from WAL to a rollback journal (a single file
// with no -wal beside it), checked with `PRAGMA quick_check`, and then renamed over `output`.
// Errors: kNotFound when `db` does not exist; kFailedPrecondition when it is not a gpufleet
// database; kUnavailable when SQLite reports it busy (a daemon in the middle of recovery: try
// again); kIo for the file system (naming the path). On error `output` is left as it was.
Result<SqliteStoreInfo> BackupSqliteStore(const std::filesystem::path& db,
                                          const std::filesystem::path& output);

// Whether `file` is a gpufleet database this build can open (schema 1 .. LatestSchemaVersion(),
// older ones being migrated when a daemon next opens it) and whole (`PRAGMA quick_check`).
// Opens it read-only and changes nothing.
// Errors, each naming the file: kNotFound; kIo when it is not a SQLite file or is damaged;
// kFailedPrecondition when it belongs to another program, holds no schema, or was written by a
// newer gpufleet (NewerSchemaMessage).
Result<SqliteStoreInfo> InspectSqliteBackup(const std::filesystem::path& file);

// Where RestoreSqliteStore put the database it replaced; empty when there was none.
struct RestoredSqliteStore {
  SqliteStoreInfo restored;
  std::filesystem::path replaced;
};

// Makes `db` a copy of `backup` (checked first with InspectSqliteBackup). A database already at
// `db` is not deleted: it and its -wal are renamed to `db` + `aside_suffix` (and + "-wal", so
// SQLite opens the pair together); its -shm, rebuilt on open, is removed. The copy is written
// beside `db` first and renamed into place, so `db` is never half written.
// REQUIRES: no process has `db` open (a daemon's WAL would outlive the file it belongs to).
// Errors: those of InspectSqliteBackup, naming the backup; kIo for the file system.
Result<RestoredSqliteStore> RestoreSqliteStore(const std::filesystem::path& backup,
                                               const std::filesystem::path& db,
                                               std::string_view aside_suffix);

}  // namespace gf

#include "backup.h"

#include <ctime>
#include <filesystem>
#include <iostream>
#include <optional>

#include <unistd.h>

#include "config/config.h"
#include "store/open_store.h"
#include "store/schema_steps.h"
#include "store/sqlite/sqlite_backup.h"

#include "daemon.h"

namespace gf {
namespace {

// What PostgreSQL's own tools do better than a copy through gpufleet: a consistent dump of a
// live database, taken and restored where the database is administered.
constexpr std::string_view kPostgresBackupHelp =
    "back it up with PostgreSQL's tools: pg_dump --format=custom --file FILE 'URL' (consistent "
    "while gpufleet runs), and restore with pg_restore --clean --dbname 'URL' FILE while every "
    "gpufleet server is stopped (docs/install.md#postgresql)";

// The store the daemon of this machine uses: the flags, else the settings file's [up] keys (as
// `gpufleet up` reads them), else the defaults.
struct StoreLocation {
  std::filesystem::path data_dir;
  std::string db;  // as --db takes it; "" = DATA_DIR/state.db
  std::filesystem::path DefaultFile() const { return data_dir / "state.db"; }
};

Result<StoreLocation> Locate(const StoreFileOptions& options) {
  std::string data_dir = options.data_dir;
  std::string db = options.db;
  if (const std::string path = SettingsFile(options.config); !path.empty()) {
    GF_ASSIGN_OR_RETURN(const Config config, LoadConfig(path));
    if (data_dir.empty() && config.up.data_dir) {
      data_dir = config.up.data_dir->value;
    }
    if (db.empty() && config.up.db) {
      db = config.up.db->value;
    }
  }
  return StoreLocation{data_dir.empty() ? DefaultDataDir() : std::filesystem::path(data_dir), db};
}

// The store `options` name, as a SQLite file; a PostgreSQL store is refused with what to do
// instead.
struct SqliteTarget {
  std::filesystem::path data_dir;  // whose lock a running daemon holds
  std::filesystem::path file;
};

Result<SqliteTarget> FindSqliteStore(const StoreFileOptions& options, std::string_view command) {
  GF_ASSIGN_OR_RETURN(const StoreLocation store, Locate(options));
  if (IsPostgresStore(store.db)) {
    return FailedPrecondition("the store is PostgreSQL (" +
                              DescribeStore(store.db, store.DefaultFile()) + "): gpufleet " +
                              std::string(command) + " copies SQLite stores only; " +
                              std::string(kPostgresBackupHelp));
  }
  std::optional<std::filesystem::path> file = SqliteStoreFile(store.db, store.DefaultFile());
  if (!file) {
    return InvalidArgument("--db '" + DescribeStore(store.db, store.DefaultFile()) +
                           "' names no SQLite file; use a file path or sqlite:PATH");
  }
  return SqliteTarget{store.data_dir, *file};
}

// ".replaced-20261206T201500Z": what the database a restore replaced is renamed with.
std::string ReplacedSuffix() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32] = {};
  std::strftime(text, sizeof(text), ".replaced-%Y%m%dT%H%M%SZ", &utc);
  return text;
}

std::string Describe(const SqliteStoreInfo& info) {
  return "schema " + std::to_string(info.schema_version) + ", " + std::to_string(info.jobs) +
         (info.jobs == 1 ? " job, " : " jobs, ") + std::to_string(info.bytes) + " bytes";
}

bool SameFile(const std::filesystem::path& a, const std::filesystem::path& b) {
  std::error_code ec;
  return std::filesystem::weakly_canonical(a, ec) == std::filesystem::weakly_canonical(b, ec);
}

}  // namespace

int RunBackup(const StoreFileOptions& options) {
  constexpr std::string_view kCommand = "backup";
  Result<SqliteTarget> store = FindSqliteStore(options, kCommand);
  if (!store.ok()) {
    return Die(kCommand, store.error());
  }
  const std::filesystem::path& db = store->file;
  if (SameFile(db, options.file)) {
    return Die(kCommand,
               InvalidArgument("--output " + options.file +
                               " is the database itself; write the backup to another file"));
  }
  // Straight from the file, through SQLite's online backup, whether a daemon runs or not
  // (decision 0010): no lock is taken, and the daemon's commits go on while it copies.
  Result<SqliteStoreInfo> info = BackupSqliteStore(db, options.file);
  if (!info.ok()) {
    return Die(kCommand, info.error());
  }
  std::cout << "gpufleet backup: " << options.file << ": " << Describe(*info) << ", from "
            << db.string() << "\n"
            << "Restore with: gpufleet restore --input " << options.file
            << " (with the daemon stopped)" << std::endl;
  return 0;
}

int RunRestore(const StoreFileOptions& options) {
  constexpr std::string_view kCommand = "restore";
  Result<SqliteTarget> store = FindSqliteStore(options, kCommand);
  if (!store.ok()) {
    return Die(kCommand, store.error());
  }
  const std::filesystem::path& db = store->file;
  // The backup is checked before anything is taken or moved.
  if (Result<SqliteStoreInfo> checked = InspectSqliteBackup(options.file); !checked.ok()) {
    return Die(kCommand, checked.error());
  }
  // The daemon's lock: held, it is running on this database, whose WAL and cached state would
  // outlive a file swapped under it.
  Result<int> lock = LockDataDir(store->data_dir, kCommand);
  if (!lock.ok()) {
    if (lock.error().code == ErrorCode::kFailedPrecondition) {
      return Die(kCommand,
                 FailedPrecondition("a gpufleet daemon is running on " + store->data_dir.string() +
                                    "; stop it first (systemctl stop gpufleet, or "
                                    "gpufleet-server), then restore"));
    }
    return Die(kCommand, lock.error());
  }
  Result<RestoredSqliteStore> restored = RestoreSqliteStore(options.file, db, ReplacedSuffix());
  close(*lock);
  if (!restored.ok()) {
    return Die(kCommand, restored.error());
  }
  std::cout << "gpufleet restore: " << db.string() << " is now the backup " << options.file << " ("
            << Describe(restored->restored) << ")\n";
  if (!restored->replaced.empty()) {
    std::cout << "  the database it replaced: " << restored->replaced.string() << "\n";
  }
  if (restored->restored.schema_version < LatestSchemaVersion()) {
    std::cout << "  the next start upgrades it to schema " << LatestSchemaVersion() << "\n";
  }
  std::cout << "Start gpufleet again: it reconciles the restored jobs with what runs on the "
               "nodes (jobs the backup does not know are stopped)."
            << std::endl;
  return 0;
}

}  // namespace gf

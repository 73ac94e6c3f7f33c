#include "store/open_store.h"

#include <string>

#include "store/postgres/postgres_store.h"
#include "store/postgres/postgres_util.h"
#include "store/sqlite/sqlite_store.h"

namespace gf {
namespace {

constexpr std::string_view kSqlitePrefix = "sqlite:";
constexpr std::string_view kAcceptedForms =
    "use a file path, sqlite:PATH, or postgresql://USER@HOST:PORT/DB";

// A value with "scheme://" that is not PostgreSQL's: a typo (postgresq://) or a database
// gpufleet does not support (mysql://). Taking it for a relative file path would create a
// folder named "mysql:" and hide the mistake.
bool IsOtherUrl(std::string_view db) {
  return db.find("://") != std::string_view::npos;
}

}  // namespace

bool IsPostgresStore(std::string_view db) {
  return db.starts_with("postgresql://") || db.starts_with("postgres://");
}

std::optional<std::filesystem::path> SqliteStoreFile(
    std::string_view db, const std::filesystem::path& default_sqlite_path) {
  if (db.empty()) {
    return default_sqlite_path;
  }
  if (db.starts_with(kSqlitePrefix)) {
    const std::string_view path = db.substr(kSqlitePrefix.size());
    return path.empty() ? std::nullopt : std::optional(std::filesystem::path(path));
  }
  if (IsOtherUrl(db)) {
    return std::nullopt;
  }
  return std::filesystem::path(db);
}

Result<std::unique_ptr<Store>> OpenStore(std::string_view db,
                                         const std::filesystem::path& default_sqlite_path) {
  if (IsPostgresStore(db)) {
    return OpenPostgresStore(db);
  }
  if (db == kSqlitePrefix) {
    return InvalidArgument("--db 'sqlite:' names no file; " + std::string(kAcceptedForms));
  }
  const std::optional<std::filesystem::path> file = SqliteStoreFile(db, default_sqlite_path);
  if (!file) {
    return InvalidArgument("--db '" + DescribeStore(db, default_sqlite_path) +
                           "' is not a database gpufleet can use; " + std::string(kAcceptedForms));
  }
  return OpenSqliteStore(*file);
}

std::string DescribeStore(std::string_view db, const std::filesystem::path& default_sqlite_path) {
  if (db.empty()) {
    return default_sqlite_path.string();
  }
  if (db.starts_with(kSqlitePrefix)) {
    return std::string(db.substr(kSqlitePrefix.size()));
  }
  if (IsOtherUrl(db)) {  // PostgreSQL's or not, a password must not reach a log
    return UrlWithoutPassword(db);
  }
  return std::string(db);
}

}  // namespace gf

#include "store/sqlite/sqlite_test_util.h"

#include <gtest/gtest.h>

namespace gf::testing {

SqliteHandle RawOpen(const std::filesystem::path& file) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(file.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  SqliteHandle db(raw);
  EXPECT_EQ(rc, SQLITE_OK) << sqlite3_errstr(rc);
  sqlite3_busy_timeout(db.get(), 5000);
  return db;
}

void MustExec(sqlite3* db, const std::string& sql) {
  Status status = SqliteExec(db, sql, sql);
  ASSERT_TRUE(status.ok()) << status.error().ToString();
}

std::string QueryText(sqlite3* db, const std::string& sql) {
  auto stmt = SqliteStatement::Prepare(db, sql, false);
  EXPECT_TRUE(stmt.ok()) << stmt.error().ToString();
  if (!stmt.ok()) {
    return "";
  }
  auto row = stmt->Step(sql);
  EXPECT_TRUE(row.ok() && *row) << sql;
  return row.ok() && *row ? stmt->Text(0) : "";
}

}  // namespace gf::testing

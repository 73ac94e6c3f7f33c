// What the SQLite backend's tests share to look behind a Store's back: a raw connection to its
// file, statements that must succeed, a query's first value as text. Test-only; one thread.
#pragma once

#include <filesystem>
#include <string>

#include <sqlite3.h>

#include "store/sqlite/sqlite_util.h"

namespace gf::testing {

// A second, raw connection to `file` (created if absent), busy timeout 5 s.
SqliteHandle RawOpen(const std::filesystem::path& file);

// Runs `sql` (one or more statements); a failure fails the test.
void MustExec(sqlite3* db, const std::string& sql);

// The first column of the first row of `sql` as text; "" (and a failed test) without a row.
std::string QueryText(sqlite3* db, const std::string& sql);

}  // namespace gf::testing

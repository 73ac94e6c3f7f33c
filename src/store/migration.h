// Migration: one versioned step of a store's schema, shared by the backends (each keeps its own
// ordered list in its own SQL dialect: sqlite/migrations.cpp, postgres/postgres_migrations.cpp).
// Plain value type.
#pragma once

#include <string_view>

namespace gf {

struct Migration {
  int version;                   // 1, 2, 3, ... without gaps
  std::string_view description;  // recorded with the version, for people reading the database
  std::string_view sql;          // one or more statements
};

}  // namespace gf

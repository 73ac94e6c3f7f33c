// Migration: one versioned step of a store's schema in one SQL dialect, as a backend applies it
// (the one list of steps, rendered per dialect, is schema_steps.h).
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

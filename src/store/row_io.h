// ParamSink and RowSource: what the shared row mapping (store/rows.h) needs from a backend's
// statement: setting numbered parameters and reading numbered columns. The SQLite backend's
// SqliteStatement is both; the PostgreSQL backend has PgParams and PgRow. Keeping the mapping
// of Job, Event, Node, ... to columns in one place means both backends store and read every
// field alike, and a new field is added once.
//
// Interfaces only; implementations are used by one thread at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gf {

// Parameter indexes start at 1, as in SQL (?1 / $1). Strings are bytes, not necessarily UTF-8.
class ParamSink {
 public:
  virtual void BindInt64(int index, std::int64_t value) = 0;
  // Callers check that values are finite first (SQLite stores a NaN as NULL).
  virtual void BindDouble(int index, double value) = 0;
  virtual void BindText(int index, std::string_view value) = 0;
  virtual void BindNull(int index) = 0;

  void BindOptionalInt64(int index, const std::optional<std::int64_t>& value) {
    value.has_value() ? BindInt64(index, *value) : BindNull(index);
  }
  void BindOptionalText(int index, const std::optional<std::string>& value) {
    value.has_value() ? BindText(index, *value) : BindNull(index);
  }

 protected:
  ~ParamSink() = default;  // not owned through this interface
};

// Column indexes start at 0. Reading a NULL column as a value gives 0 or "".
class RowSource {
 public:
  virtual bool IsNull(int column) const = 0;
  virtual std::int64_t Int64(int column) const = 0;
  virtual double Double(int column) const = 0;
  virtual std::string Text(int column) const = 0;  // all bytes, embedded NULs included

  std::optional<std::int64_t> OptionalInt64(int column) const {
    return IsNull(column) ? std::nullopt : std::optional<std::int64_t>(Int64(column));
  }
  std::optional<std::string> OptionalText(int column) const {
    return IsNull(column) ? std::nullopt : std::optional<std::string>(Text(column));
  }

 protected:
  ~RowSource() = default;  // not owned through this interface
};

}  // namespace gf

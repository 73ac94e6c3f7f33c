// Helpers of the PostgreSQL store backend, private to it: the connection URL (with the
// gpufleet-only `schema` parameter taken out, and a form safe to print), the mapping of
// libpqxx exceptions to gf::Error, and the ParamSink / RowSource (store/row_io.h) over libpq's
// text format that let the shared row mapping (store/rows.h) bind and read PostgreSQL rows.
//
// Every string column of the PostgreSQL schema is BYTEA: strings are bytes (argv and names come
// from a user's shell and need not be UTF-8, which TEXT would refuse), and BYTEA compares byte
// by byte, as SQLite's TEXT does, so both backends list rows in the same order.
//
// Values are used by one thread at a time. No function here throws, except the RowSource
// accessors, which throw pqxx::conversion_error on a value this build cannot parse (the store
// catches it at its boundary and reports kInternal).
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <pqxx/pqxx>

#include "core/result.h"
#include "store/row_io.h"

namespace gf {

struct PostgresUrl {
  std::string conninfo;  // what libpq gets: the URL without `schema`, plus our defaults
  std::string schema;    // where the tables live; "public" unless the URL or options say
  std::string display;   // the URL without its password, for messages and logs
};

// Splits a "postgresql://" or "postgres://" URL. `schema_option` (when not empty) wins over
// the URL's `schema` query parameter. Adds connect_timeout=10 and application_name=gpufleet
// unless the URL sets them.
// Errors: kInvalidArgument naming the URL (without its password) when it does not start with
// one of the two prefixes, or the schema is not 1-63 of [a-z0-9_] starting with a letter or _.
Result<PostgresUrl> ParsePostgresUrl(std::string_view url, std::string_view schema_option);

// `url` with the password of its user-info part (scheme://user:PASSWORD@host) replaced by ***.
std::string UrlWithoutPassword(std::string_view url);

// An Error for a libpqxx (or other) exception thrown during `operation`. What a caller can do
// decides the code: a lost or refused connection, a serialization failure or a server shutting
// down -> kUnavailable (retry); a constraint -> kInvalidArgument (the batch breaks a rule of the
// schema); disk full or out of resources -> kIo; anything else -> kInternal.
Error PostgresError(const std::exception& e, std::string_view operation);

// "\x" followed by two lowercase hex digits per byte: BYTEA's input and output form.
std::string ToByteaHex(std::string_view bytes);

// Parameters of one statement in libpq's text format, by number ($1 = index 1).
// Final, so never a base: C.35 asks nothing of its public destructor (ParamSink's is protected).
// `make lint`'s checker flags a final class all the same; later versions of it skip them.
// NOLINTNEXTLINE(cppcoreguidelines-virtual-class-destructor): a false positive, as above.
class PgParams final : public ParamSink {
 public:
  void BindInt64(int index, std::int64_t value) override;
  void BindDouble(int index, double value) override;  // shortest text that reads back exactly
  void BindText(int index, std::string_view value) override;  // as BYTEA
  void BindNull(int index) override;

  // The values for exec_prepared: $1.. in order, nullopt for NULL (and for numbers never set).
  const std::vector<std::optional<std::string>>& Values() const { return values_; }
  void Clear() { values_.clear(); }

 private:
  std::optional<std::string>& Slot(int index);
  std::vector<std::optional<std::string>> values_;
};

// One row of a result in text format. Text() decodes a BYTEA column.
// NOLINTNEXTLINE(cppcoreguidelines-virtual-class-destructor): final, a false positive as PgParams.
class PgRow final : public RowSource {
 public:
  explicit PgRow(const pqxx::row& row) : row_(row) {}
  bool IsNull(int column) const override;
  std::int64_t Int64(int column) const override;
  double Double(int column) const override;
  std::string Text(int column) const override;

 private:
  std::string_view Raw(int column) const;
  pqxx::row row_;
};

}  // namespace gf

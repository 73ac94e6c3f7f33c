#include "store/postgres/postgres_util.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <system_error>
#include <utility>

#include "core/hex.h"

namespace gf {
namespace {

bool IsSchemaChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

Status ValidateSchemaName(std::string_view schema) {
  constexpr std::size_t kMaxIdentifier = 63;  // PostgreSQL's NAMEDATALEN - 1
  const bool ok = !schema.empty() && schema.size() <= kMaxIdentifier &&
                  !(schema[0] >= '0' && schema[0] <= '9') &&
                  std::all_of(schema.begin(), schema.end(), IsSchemaChar);
  if (!ok) {
    return InvalidArgument("schema '" + std::string(schema) +
                           "' is not a plain name; use 1 to 63 of a-z, 0-9 and _, starting "
                           "with a letter or _");
  }
  return OkStatus();
}

}  // namespace

std::string UrlWithoutPassword(std::string_view url) {
  const std::size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) {
    return std::string(url);
  }
  const std::size_t authority = scheme_end + 3;
  const std::size_t at = url.find('@', authority);
  const std::size_t slash = url.find('/', authority);
  if (at == std::string_view::npos || (slash != std::string_view::npos && slash < at)) {
    return std::string(url);
  }
  const std::size_t colon = url.find(':', authority);
  if (colon == std::string_view::npos || colon > at) {
    return std::string(url);
  }
  return std::string(url.substr(0, colon)) + ":***" + std::string(url.substr(at));
}

namespace {

// The two-letter class of a SQLSTATE ("23" integrity, "40" rollback, ...).
ErrorCode CodeOfSqlState(std::string_view state) {
  const std::string_view cls = state.substr(0, 2);
  if (cls == "23" || cls == "22") {  // integrity constraint, data exception
    return ErrorCode::kInvalidArgument;
  }
  if (cls == "40" || cls == "08" || cls == "57") {  // rollback, connection, shutdown
    return ErrorCode::kUnavailable;
  }
  if (cls == "53" || cls == "58") {  // insufficient resources (disk full), system error
    return ErrorCode::kIo;
  }
  return ErrorCode::kInternal;
}

// libpq messages end with a newline and may span lines; one line reads better in a log.
std::string OneLine(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\n' || c == '\t') {
      if (!out.empty() && out.back() != ' ') {
        out += ' ';
      }
    } else {
      out += c;
    }
  }
  while (!out.empty() && out.back() == ' ') {
    out.pop_back();
  }
  return out;
}

}  // namespace

Result<PostgresUrl> ParsePostgresUrl(std::string_view url, std::string_view schema_option) {
  PostgresUrl parsed{.conninfo = "", .schema = "public", .display = UrlWithoutPassword(url)};
  if (!url.starts_with("postgresql://") && !url.starts_with("postgres://")) {
    return InvalidArgument("database URL '" + parsed.display +
                           "' is not a PostgreSQL URL; use postgresql://USER@HOST:PORT/DB");
  }
  // Take `schema` out of the query (libpq refuses parameters it does not know).
  const std::size_t question = url.find('?');
  std::string base(url.substr(0, question));
  std::vector<std::string> params;
  if (question != std::string_view::npos) {
    std::string_view query = url.substr(question + 1);
    while (!query.empty()) {
      const std::size_t amp = query.find('&');
      std::string_view param = query.substr(0, amp);
      if (param.starts_with("schema=")) {
        parsed.schema = std::string(param.substr(7));
      } else if (!param.empty()) {
        params.emplace_back(param);
      }
      query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    }
  }
  if (!schema_option.empty()) {
    parsed.schema = std::string(schema_option);
  }
  if (Status valid = ValidateSchemaName(parsed.schema); !valid.ok()) {
    return InvalidArgument("database URL '" + parsed.display + "': " + valid.error().message);
  }
  auto has = [&params](std::string_view key) {
    return std::any_of(params.begin(), params.end(), [key](const std::string& p) {
      return p.starts_with(std::string(key) + "=");
    });
  };
  // A server that does not answer must not hang `gpufleet up` forever.
  if (!has("connect_timeout")) {
    params.emplace_back("connect_timeout=10");
  }
  if (!has("application_name")) {
    params.emplace_back("application_name=gpufleet");
  }
  parsed.conninfo = base;
  for (std::size_t i = 0; i < params.size(); ++i) {
    parsed.conninfo += (i == 0 ? "?" : "&") + params[i];
  }
  return parsed;
}

Error PostgresError(const std::exception& e, std::string_view operation) {
  const std::string op(operation);
  if (dynamic_cast<const pqxx::broken_connection*>(&e) != nullptr) {
    return Unavailable(op + ": no connection to PostgreSQL: " + OneLine(e.what()));
  }
  if (dynamic_cast<const pqxx::in_doubt_error*>(&e) != nullptr) {
    return Unavailable(op +
                       ": the connection broke during COMMIT; whether it was applied is "
                       "unknown: " +
                       OneLine(e.what()));
  }
  if (const auto* sql = dynamic_cast<const pqxx::sql_error*>(&e)) {
    return MakeError(CodeOfSqlState(sql->sqlstate()),
                     op + ": " + OneLine(e.what()) + " (SQLSTATE " + sql->sqlstate() + ")");
  }
  return Internal(op + ": " + OneLine(e.what()));
}

std::string ToByteaHex(std::string_view bytes) {
  return "\\x" + HexEncode(bytes);
}

std::optional<std::string>& PgParams::Slot(int index) {
  const auto at = static_cast<std::size_t>(index - 1);
  if (values_.size() <= at) {
    values_.resize(at + 1);
  }
  return values_[at];
}

void PgParams::BindInt64(int index, std::int64_t value) {
  Slot(index) = std::to_string(value);
}

void PgParams::BindDouble(int index, double value) {
  std::array<char, 32> buf{};
  // Shortest form that reads back as the same double: PostgreSQL's float8in is exact.
  auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), value);
  Slot(index) = std::string(buf.data(), ec == std::errc() ? end : buf.data());
}

void PgParams::BindText(int index, std::string_view value) {
  Slot(index) = ToByteaHex(value);
}

void PgParams::BindNull(int index) {
  Slot(index).reset();
}

std::string_view PgRow::Raw(int column) const {
  const pqxx::field f = row_[column];
  return std::string_view(f.c_str(), f.size());
}

bool PgRow::IsNull(int column) const {
  return row_[column].is_null();
}

std::int64_t PgRow::Int64(int column) const {
  const std::string_view raw = Raw(column);
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(raw.data(), raw.data() + raw.size(), value);
  if (!raw.empty() && (ec != std::errc() || end != raw.data() + raw.size())) {
    throw pqxx::conversion_error("column " + std::to_string(column) + ": '" + std::string(raw) +
                                 "' is not a 64-bit integer");
  }
  return value;
}

double PgRow::Double(int column) const {
  const std::string_view raw = Raw(column);
  double value = 0;
  auto [end, ec] = std::from_chars(raw.data(), raw.data() + raw.size(), value);
  if (!raw.empty() && (ec != std::errc() || end != raw.data() + raw.size())) {
    throw pqxx::conversion_error("column " + std::to_string(column) + ": '" + std::string(raw) +
                                 "' is not a number");
  }
  return value;
}

std::string PgRow::Text(int column) const {
  const std::string_view raw = Raw(column);
  if (!raw.starts_with("\\x")) {  // a TEXT column, or a NULL read as ""
    return std::string(raw);
  }
  std::optional<std::string> bytes = HexDecode(raw.substr(2));
  if (!bytes) {
    throw pqxx::conversion_error("column " + std::to_string(column) + ": bad BYTEA hex");
  }
  return *bytes;
}

}  // namespace gf

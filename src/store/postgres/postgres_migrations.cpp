#include "store/postgres/postgres_migrations.h"

#include <array>
#include <cstdint>
#include <string>

#include "core/check.h"
#include "store/schema_steps.h"

namespace gf {
namespace {

// The advisory lock that orders migrations: a constant class ('gflt') and the schema's hash,
// so that stores in different schemas of one database do not wait for each other.
constexpr int kMigrationLockClass = 0x67666c74;

std::string Quoted(const std::string& schema) {
  return "\"" + schema + "\"";
}

// Takes the migration lock (held until the transaction ends), creates the schema and the
// version table if they are missing, and points the transaction at the schema.
void EnterSchema(pqxx::work& txn, const std::string& schema) {
  txn.exec_params("SELECT pg_advisory_xact_lock($1, hashtext($2))", kMigrationLockClass, schema);
  // Not CREATE SCHEMA IF NOT EXISTS: that needs CREATE on the database even when the schema
  // exists, which a role given only a schema (or public) may not have.
  if (txn.exec_params("SELECT 1 FROM pg_namespace WHERE nspname = $1", schema).empty()) {
    txn.exec("CREATE SCHEMA " + Quoted(schema));
  }
  txn.exec("SET LOCAL search_path TO " + Quoted(schema));
}

Result<int> ReadVersion(pqxx::transaction_base& txn, const std::string& schema) {
  const pqxx::row counts = txn.exec_params1(
      "SELECT count(*) FILTER (WHERE table_name = 'schema_version'), count(*) "
      "FROM information_schema.tables WHERE table_schema = $1",
      schema);
  if (counts[0].as<std::int64_t>() == 0) {
    if (counts[1].as<std::int64_t>() > 0) {
      return FailedPrecondition("schema '" + schema +
                                "' has tables but no schema_version table: it is not a "
                                "gpufleet store; give gpufleet its own schema (?schema=NAME)");
    }
    return 0;
  }
  const pqxx::row version =
      txn.exec1("SELECT COALESCE(MAX(version), 0) FROM " + Quoted(schema) + ".schema_version");
  return static_cast<int>(version[0].as<std::int64_t>());
}

constexpr std::string_view kCreateVersionTable = R"sql(
CREATE TABLE IF NOT EXISTS schema_version (
  version     BIGINT PRIMARY KEY,
  description TEXT   NOT NULL,
  applied_ms  BIGINT NOT NULL
))sql";

// One step in one transaction, under the lock; the version is read again inside: another
// server may have applied the step while this one waited for the lock.
Status ApplyOne(pqxx::connection& conn, const std::string& schema, const Migration& m) {
  pqxx::work txn(conn, "migration");
  EnterSchema(txn, schema);
  GF_ASSIGN_OR_RETURN(int current, ReadVersion(txn, schema));
  if (current < m.version) {
    txn.exec(std::string(kCreateVersionTable));
    txn.exec(std::string(m.sql));
    txn.exec_params(
        "INSERT INTO schema_version (version, description, applied_ms) "
        "VALUES ($1, $2, (extract(epoch FROM clock_timestamp()) * 1000)::bigint)",
        m.version,
        std::string(m.description));
  }
  txn.commit();
  return OkStatus();
}

}  // namespace

std::span<const Migration> PostgresMigrations() {
  return SchemaSteps(SqlDialect::kPostgres);
}

Result<int> ReadPostgresSchemaVersion(pqxx::connection& conn, const std::string& schema) {
  pqxx::read_transaction txn(conn);
  return ReadVersion(txn, schema);
}

Status ApplyPostgresMigrations(pqxx::connection& conn,
                               const std::string& schema,
                               std::span<const Migration> migrations) {
  GF_CHECK(!migrations.empty());
  for (std::size_t i = 0; i < migrations.size(); ++i) {
    GF_CHECK(migrations[i].version == static_cast<int>(i) + 1);  // 1..N, no gaps
  }
  const int latest = migrations.back().version;
  GF_ASSIGN_OR_RETURN(int current, ReadPostgresSchemaVersion(conn, schema));
  if (current > latest) {
    return FailedPrecondition(NewerSchemaMessage(current, latest));
  }
  for (const Migration& m : migrations) {
    if (m.version > current) {
      GF_TRY(ApplyOne(conn, schema, m));
    }
  }
  return OkStatus();
}

}  // namespace gf

#include "store/postgres/postgres_migrations.h"

#include <array>
#include <string>

#include "core/check.h"

namespace gf {
namespace {

// The schemas mirror sqlite/migrations.cpp step by step (see the comments there for why each
// table and index exists). What differs, and why:
// - Every string column is BYTEA (postgres_util.h): strings are bytes, and BYTEA sorts them
//   byte by byte as SQLite does. Read them in psql with convert_from(column, 'UTF8').
// - Integers are BIGINT, reals DOUBLE PRECISION, flags SMALLINT 0/1 as in SQLite.
// - Sequence numbers (event seq, usage record seq) and the largest job id ever stored come
//   from store_counters, updated in the Commit's own transaction: a rolled-back batch leaves
//   no gap (a PostgreSQL SEQUENCE would), and the row lock orders two writers' batches.

// Version 1: jobs, events, nodes.
constexpr std::string_view kSchemaV1 = R"sql(
CREATE TABLE jobs (
  id            BIGINT   PRIMARY KEY CHECK (id > 0),
  uid           BIGINT   NOT NULL,
  gid           BIGINT   NOT NULL,
  user_name     BYTEA    NOT NULL,
  name          BYTEA    NOT NULL,
  argv          BYTEA    NOT NULL,   -- JSON array of strings (store/codec.h)
  workdir       BYTEA    NOT NULL,
  env           BYTEA    NOT NULL,   -- JSON array of [name, value]
  gpus          BIGINT   NOT NULL,
  gpu_type      BYTEA,
  priority      BYTEA    NOT NULL,
  team          BYTEA    NOT NULL,
  time_limit_s  BIGINT,
  state         BYTEA    NOT NULL,
  terminal      SMALLINT NOT NULL CHECK (terminal IN (0, 1)),
  alloc_node    BYTEA,
  alloc_gpus    BYTEA,
  submit_ms     BIGINT   NOT NULL,
  start_ms      BIGINT,
  end_ms        BIGINT,
  exit_code     BIGINT,
  reason        BYTEA    NOT NULL,
  pid           BIGINT
);
CREATE INDEX jobs_by_uid ON jobs (uid, id);
CREATE INDEX jobs_active ON jobs (id) WHERE terminal = 0;

CREATE TABLE events (
  seq      BIGINT PRIMARY KEY,
  time_ms  BIGINT NOT NULL,
  job_id   BIGINT REFERENCES jobs (id),
  kind     BYTEA  NOT NULL,
  actor    BYTEA  NOT NULL,
  message  BYTEA  NOT NULL
);
CREATE INDEX events_by_job ON events (job_id, seq);

CREATE TABLE nodes (
  name          BYTEA  PRIMARY KEY,
  cpus          BIGINT NOT NULL,
  memory_mib    BIGINT NOT NULL,
  state         BYTEA  NOT NULL,
  gpu_backend   BYTEA  NOT NULL,
  last_seen_ms  BIGINT NOT NULL,
  gpus          BYTEA  NOT NULL,
  labels        BYTEA  NOT NULL
);

CREATE TABLE store_counters (
  name   TEXT   PRIMARY KEY,
  value  BIGINT NOT NULL
);
INSERT INTO store_counters (name, value) VALUES ('max_job_id', 0), ('event_seq', 0);
)sql";

// Version 2: job usage, gpu minutes.
constexpr std::string_view kSchemaV2 = R"sql(
ALTER TABLE jobs ADD COLUMN usage_samples         BIGINT CHECK (usage_samples >= 0);
ALTER TABLE jobs ADD COLUMN usage_mean_util_pct   DOUBLE PRECISION;
ALTER TABLE jobs ADD COLUMN usage_peak_util_pct   BIGINT;
ALTER TABLE jobs ADD COLUMN usage_peak_memory_mib BIGINT;
ALTER TABLE jobs ADD COLUMN usage_energy_mj       BIGINT;

CREATE TABLE gpu_minutes (
  minute_ms           BIGINT NOT NULL CHECK (minute_ms % 60000 = 0),
  node                BYTEA  NOT NULL CHECK (node <> ''::bytea),
  uuid                BYTEA  NOT NULL CHECK (uuid <> ''::bytea),
  job_id              BIGINT,
  user_name           BYTEA  NOT NULL,
  team                BYTEA  NOT NULL,
  samples             BIGINT NOT NULL CHECK (samples >= 0),
  util_mean_pct       DOUBLE PRECISION NOT NULL,
  util_max_pct        BIGINT NOT NULL,
  memory_used_max_mib BIGINT NOT NULL,
  power_mean_w        DOUBLE PRECISION NOT NULL,
  energy_mj           BIGINT NOT NULL,
  health              BYTEA  NOT NULL,
  PRIMARY KEY (minute_ms, node, uuid)
);
CREATE UNIQUE INDEX gpu_minutes_by_gpu ON gpu_minutes (uuid, minute_ms);
)sql";

// Version 3: job checkpoint signal, preemptible.
constexpr std::string_view kSchemaV3 = R"sql(
ALTER TABLE jobs ADD COLUMN checkpoint_signal BIGINT NOT NULL DEFAULT 15
  CHECK (checkpoint_signal > 0 AND checkpoint_signal < 65);
ALTER TABLE jobs ADD COLUMN preemptible SMALLINT NOT NULL DEFAULT 0 CHECK (preemptible IN (0, 1));
)sql";

// Version 4: job constraints, dependencies, arrays, approval, checkpoint; usage records.
constexpr std::string_view kSchemaV4 = R"sql(
ALTER TABLE jobs ADD COLUMN node_labels BYTEA NOT NULL DEFAULT convert_to('{}', 'UTF8');
ALTER TABLE jobs ADD COLUMN after_deps BYTEA NOT NULL DEFAULT convert_to('[]', 'UTF8');
ALTER TABLE jobs ADD COLUMN array_job BIGINT CHECK (array_job > 0);
ALTER TABLE jobs ADD COLUMN array_index BIGINT CHECK (array_index >= 0);
ALTER TABLE jobs ADD COLUMN array_max_running BIGINT CHECK (array_max_running > 0);
ALTER TABLE jobs ADD COLUMN budget_approved SMALLINT NOT NULL DEFAULT 0
  CHECK (budget_approved IN (0, 1));
ALTER TABLE jobs ADD COLUMN last_checkpoint_ms BIGINT;
CREATE INDEX jobs_by_array ON jobs (array_job, array_index) WHERE array_job IS NOT NULL;

CREATE TABLE usage_records (
  seq         BIGINT PRIMARY KEY,
  job_id      BIGINT NOT NULL CHECK (job_id > 0),
  start_ms    BIGINT NOT NULL,
  end_ms      BIGINT NOT NULL CHECK (end_ms >= start_ms),
  team        BYTEA  NOT NULL,
  user_name   BYTEA  NOT NULL,
  priority    BYTEA  NOT NULL,
  gpus        BIGINT NOT NULL CHECK (gpus >= 0),
  gpu_models  BYTEA  NOT NULL,
  gpu_seconds DOUBLE PRECISION NOT NULL CHECK (gpu_seconds >= 0),
  energy_mj   BIGINT NOT NULL
);
CREATE INDEX usage_by_end ON usage_records (end_ms);
INSERT INTO store_counters (name, value) VALUES ('usage_seq', 0);
)sql";

// Version 5: api and node tokens; node state reason.
constexpr std::string_view kSchemaV5 = R"sql(
ALTER TABLE nodes ADD COLUMN state_reason BYTEA NOT NULL DEFAULT ''::bytea;

CREATE TABLE tokens (
  id           BYTEA  PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 32),
  secret_hash  BYTEA  NOT NULL CHECK (length(secret_hash) = 64),
  kind         BYTEA  NOT NULL,
  subject      BYTEA  NOT NULL,
  uid          BIGINT NOT NULL,
  gid          BIGINT NOT NULL,
  role         BYTEA  NOT NULL,
  description  BYTEA  NOT NULL,
  created_ms   BIGINT NOT NULL,
  expires_ms   BIGINT,
  revoked_ms   BIGINT
);
)sql";

// Version 6: the controller lease (see sqlite/migrations.cpp).
constexpr std::string_view kSchemaV6 = R"sql(
CREATE TABLE leader (
  id          BIGINT PRIMARY KEY CHECK (id = 1),
  holder      BYTEA  NOT NULL,
  epoch       BIGINT NOT NULL CHECK (epoch > 0),
  expires_ms  BIGINT NOT NULL
);
)sql";

// Version 7: job requeue (see sqlite/migrations.cpp).
constexpr std::string_view kSchemaV7 = R"sql(
ALTER TABLE jobs ADD COLUMN requeue SMALLINT NOT NULL DEFAULT 1 CHECK (requeue IN (0, 1));
)sql";

// Version 8: job interactive and idle_reap; subscriptions (see sqlite/migrations.cpp).
constexpr std::string_view kSchemaV8 = R"sql(
ALTER TABLE jobs ADD COLUMN interactive SMALLINT NOT NULL DEFAULT 0 CHECK (interactive IN (0, 1));
ALTER TABLE jobs ADD COLUMN idle_reap SMALLINT NOT NULL DEFAULT 1 CHECK (idle_reap IN (0, 1));
CREATE TABLE subscriptions (
  id          BYTEA    PRIMARY KEY,
  owner       BYTEA    NOT NULL,
  scope       BYTEA    NOT NULL,
  team        BYTEA    NOT NULL,
  channel     BYTEA    NOT NULL,
  target      BYTEA    NOT NULL,
  kinds       BYTEA    NOT NULL,
  created_ms  BIGINT NOT NULL
);
)sql";

// Version 9: multi-node jobs (see sqlite/migrations.cpp).
constexpr std::string_view kSchemaV9 = R"sql(
ALTER TABLE jobs ADD COLUMN gang_job BIGINT CHECK (gang_job > 0);
ALTER TABLE jobs ADD COLUMN gang_rank INTEGER CHECK (gang_rank >= 0);
ALTER TABLE jobs ADD COLUMN gang_size INTEGER CHECK (gang_size > 1);
)sql";

// Version 10: GPU sharing (see sqlite/migrations.cpp).
constexpr std::string_view kSchemaV10 = R"sql(
ALTER TABLE jobs ADD COLUMN gpu_milli INTEGER NOT NULL DEFAULT 0
  CHECK (gpu_milli BETWEEN 0 AND 1000);
ALTER TABLE jobs ADD COLUMN gpu_memory_mib BIGINT NOT NULL DEFAULT 0 CHECK (gpu_memory_mib >= 0);
ALTER TABLE jobs ADD COLUMN alloc_gpu_milli INTEGER NOT NULL DEFAULT 1000
  CHECK (alloc_gpu_milli BETWEEN 1 AND 1000);
ALTER TABLE jobs ADD COLUMN alloc_gpu_memory_mib BIGINT NOT NULL DEFAULT 0
  CHECK (alloc_gpu_memory_mib >= 0);
)sql";

// Version 11: MIG (see sqlite/migrations.cpp).
constexpr std::string_view kSchemaV11 = R"sql(
ALTER TABLE jobs ADD COLUMN mig_profile BYTEA NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN alloc_mig BYTEA NOT NULL DEFAULT '';
)sql";

// Versions and descriptions as in sqlite/migrations.cpp.
constexpr std::array<Migration, 11> kMigrations = {{
    {1, "jobs, events, nodes", kSchemaV1},
    {2, "job usage, gpu minutes", kSchemaV2},
    {3, "job checkpoint signal, preemptible", kSchemaV3},
    {4, "job constraints, dependencies, arrays, approval, checkpoint; usage records", kSchemaV4},
    {5, "api and node tokens; node state reason", kSchemaV5},
    {6, "controller lease", kSchemaV6},
    {7, "job requeue", kSchemaV7},
    {8, "job interactive, idle reap; notification subscriptions", kSchemaV8},
    {9, "multi-node jobs", kSchemaV9},
    {10, "fractional gpu requests and allocations", kSchemaV10},
    {11, "mig requests and allocations", kSchemaV11},
}};

// The advisory lock that orders migrations: a constant class ('gflt') and the schema's hash,
// so that stores in different schemas of one database do not wait for each other.
constexpr int kMigrationLockClass = 0x67666c74;

std::string Quoted(const std::string& schema) { return "\"" + schema + "\""; }

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
  if (counts[0].as<long long>() == 0) {
    if (counts[1].as<long long>() > 0) {
      return FailedPrecondition("schema '" + schema +
                                "' has tables but no schema_version table: it is not a "
                                "gpufleet store; give gpufleet its own schema (?schema=NAME)");
    }
    return 0;
  }
  const pqxx::row version = txn.exec1("SELECT COALESCE(MAX(version), 0) FROM " +
                                      Quoted(schema) + ".schema_version");
  return static_cast<int>(version[0].as<long long>());
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
        m.version, std::string(m.description));
  }
  txn.commit();
  return OkStatus();
}

}  // namespace

std::span<const Migration> PostgresMigrations() { return kMigrations; }

Result<int> ReadPostgresSchemaVersion(pqxx::connection& conn, const std::string& schema) {
  pqxx::read_transaction txn(conn);
  return ReadVersion(txn, schema);
}

Status ApplyPostgresMigrations(pqxx::connection& conn, const std::string& schema,
                               std::span<const Migration> migrations) {
  GF_CHECK(!migrations.empty());
  for (std::size_t i = 0; i < migrations.size(); ++i) {
    GF_CHECK(migrations[i].version == static_cast<int>(i) + 1);  // 1..N, no gaps
  }
  const int latest = migrations.back().version;
  GF_ASSIGN_OR_RETURN(int current, ReadPostgresSchemaVersion(conn, schema));
  if (current > latest) {
    return FailedPrecondition("database schema version " + std::to_string(current) +
                              " is newer than this gpufleet (" + std::to_string(latest) +
                              "); upgrade gpufleet");
  }
  for (const Migration& m : migrations) {
    if (m.version > current) {
      GF_TRY(ApplyOne(conn, schema, m));
    }
  }
  return OkStatus();
}

}  // namespace gf

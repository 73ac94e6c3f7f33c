#include "store/sqlite/migrations.h"

#include <array>
#include <string>

#include "store/sqlite/sqlite_util.h"

namespace gf {
namespace {

// Version 1: jobs, events, nodes.
//
// Real columns hold what queries filter or sort on; lists are JSON text (store/codec.h).
// Column names avoid words that PostgreSQL reserves (user), so the PostgreSQL backend can
// keep the same names.
constexpr std::string_view kSchemaV1 = R"sql(
CREATE TABLE jobs (
  -- Job ids are positive (core/ids.h). AUTOINCREMENT although ids come from the controller:
  -- it makes sqlite_sequence remember the largest id ever stored, so MaxJobId never goes
  -- back (ids are never reused) even if old jobs are one day pruned.
  id            INTEGER PRIMARY KEY AUTOINCREMENT CHECK (id > 0),
  uid           INTEGER NOT NULL,
  gid           INTEGER NOT NULL,
  user_name     TEXT    NOT NULL,
  name          TEXT    NOT NULL,
  argv          TEXT    NOT NULL,   -- JSON array of strings
  workdir       TEXT    NOT NULL,
  env           TEXT    NOT NULL,   -- JSON array of [name, value]
  gpus          INTEGER NOT NULL,
  gpu_type      TEXT,               -- NULL: any type
  priority      TEXT    NOT NULL,   -- high | normal | low
  team          TEXT    NOT NULL,
  time_limit_s  INTEGER,            -- NULL: no limit
  state         TEXT    NOT NULL,   -- PENDING, RUNNING, ... (model/job.h)
  terminal      INTEGER NOT NULL CHECK (terminal IN (0, 1)),  -- IsTerminal(state)
  alloc_node    TEXT,               -- NULL: no allocation
  alloc_gpus    TEXT,               -- JSON array of GPU UUIDs; NULL when alloc_node is
  submit_ms     INTEGER NOT NULL,   -- unix milliseconds
  start_ms      INTEGER,
  end_ms        INTEGER,
  exit_code     INTEGER,
  reason        TEXT    NOT NULL,
  pid           INTEGER
);
-- ListJobs: by owner, newest first.
CREATE INDEX jobs_by_uid ON jobs (uid, id);
-- ListJobs(active_only): the few live jobs among the many finished ones.
CREATE INDEX jobs_active ON jobs (id) WHERE terminal = 0;

CREATE TABLE events (
  -- AUTOINCREMENT: a seq is never reused, even after old events are pruned, so a watcher
  -- resuming after_seq never misses one.
  seq      INTEGER PRIMARY KEY AUTOINCREMENT,
  time_ms  INTEGER NOT NULL,
  -- An event about a job needs the job stored (earlier, or in the same batch).
  job_id   INTEGER REFERENCES jobs (id),
  kind     TEXT    NOT NULL,
  actor    TEXT    NOT NULL,
  message  TEXT    NOT NULL
);
-- ListEvents(job): one job's history in order.
CREATE INDEX events_by_job ON events (job_id, seq);

CREATE TABLE nodes (
  name          TEXT    PRIMARY KEY,
  cpus          INTEGER NOT NULL,
  memory_mib    INTEGER NOT NULL,
  state         TEXT    NOT NULL,   -- up | draining | drained | down
  gpu_backend   TEXT    NOT NULL,
  last_seen_ms  INTEGER NOT NULL,
  gpus          TEXT    NOT NULL,   -- JSON array of GPU objects
  labels        TEXT    NOT NULL    -- JSON object
);
)sql";

// Version 2 (issue #3): what a job's GPUs did, and per-minute GPU rollups for reports.
//
// Usage is five real columns rather than JSON so that reports can sum and average them in SQL.
// They are all NULL or all set (usage_samples decides; the decoder refuses a half-set row):
// NULL for jobs that have not ended and for every job stored before this version.
//
// gpu_minutes is keyed by (minute_ms, node, uuid), the order ListGpuMinutes returns, so that a
// month's range read (43,200 minutes x every GPU) is one ordered scan of the table's own b-tree
// with no sort and no second lookup per row (WITHOUT ROWID: the rows live in that b-tree). The
// unique index on (uuid, minute_ms) is the identity a batch replaces rows by. job_id has no
// foreign key on purpose: a rollup is history and carries its own user and team, so it stays
// valid (and reportable) after its job is pruned.
constexpr std::string_view kSchemaV2 = R"sql(
ALTER TABLE jobs ADD COLUMN usage_samples         INTEGER CHECK (usage_samples >= 0);
ALTER TABLE jobs ADD COLUMN usage_mean_util_pct   REAL;
ALTER TABLE jobs ADD COLUMN usage_peak_util_pct   INTEGER;
ALTER TABLE jobs ADD COLUMN usage_peak_memory_mib INTEGER;
ALTER TABLE jobs ADD COLUMN usage_energy_mj       INTEGER;

CREATE TABLE gpu_minutes (
  minute_ms           INTEGER NOT NULL CHECK (minute_ms % 60000 = 0),  -- start, unix ms
  node                TEXT    NOT NULL CHECK (node <> ''),
  uuid                TEXT    NOT NULL CHECK (uuid <> ''),
  job_id              INTEGER,            -- NULL: nobody held the GPU
  user_name           TEXT    NOT NULL,   -- '' when unallocated
  team                TEXT    NOT NULL,
  samples             INTEGER NOT NULL CHECK (samples >= 0),
  util_mean_pct       REAL    NOT NULL,
  util_max_pct        INTEGER NOT NULL,
  memory_used_max_mib INTEGER NOT NULL,
  power_mean_w        REAL    NOT NULL,
  energy_mj           INTEGER NOT NULL,
  health              TEXT    NOT NULL,   -- ok | degraded | failed
  PRIMARY KEY (minute_ms, node, uuid)
) WITHOUT ROWID;
CREATE UNIQUE INDEX gpu_minutes_by_gpu ON gpu_minutes (uuid, minute_ms);
)sql";

// Version 3 (issue #4): what preemption needs to survive a restart: the signal a job is
// stopped with first (its checkpoint signal) and whether it runs on borrowed GPUs. Jobs stored
// before keep SIGTERM (15) and not borrowed, which is what they were.
constexpr std::string_view kSchemaV3 = R"sql(
ALTER TABLE jobs ADD COLUMN checkpoint_signal INTEGER NOT NULL DEFAULT 15
  CHECK (checkpoint_signal > 0 AND checkpoint_signal < 65);
ALTER TABLE jobs ADD COLUMN preemptible INTEGER NOT NULL DEFAULT 0 CHECK (preemptible IN (0, 1));
)sql";

// Version 4 (issue #4): the rest of a job's scheduling fields, and GPU-time per run.
//
// Jobs: node-label constraints (JSON object) and dependencies (JSON array of {job, kind}) are
// text, as the other lists; an array task's array id, index and %N are real columns, with an
// index so that the tasks of one array can be listed (and counted for %N) without a scan.
// Jobs stored before read back with no constraints, no dependencies, not in an array, not
// approved and no checkpoint, which is what they were.
//
// usage_records: one row per ended run (controller/accounting.h). Like gpu_minutes it is
// history that carries its own team and user, so job_id has no foreign key. Budgets sum the
// runs that overlap a period (end_ms > period start): the index on end_ms serves that, and the
// fair-share seed at start-up (runs that ended in the last few half-lives).
constexpr std::string_view kSchemaV4 = R"sql(
ALTER TABLE jobs ADD COLUMN node_labels TEXT NOT NULL DEFAULT '{}';
ALTER TABLE jobs ADD COLUMN after_deps TEXT NOT NULL DEFAULT '[]';
ALTER TABLE jobs ADD COLUMN array_job INTEGER CHECK (array_job > 0);
ALTER TABLE jobs ADD COLUMN array_index INTEGER CHECK (array_index >= 0);
ALTER TABLE jobs ADD COLUMN array_max_running INTEGER CHECK (array_max_running > 0);
ALTER TABLE jobs ADD COLUMN budget_approved INTEGER NOT NULL DEFAULT 0
  CHECK (budget_approved IN (0, 1));
ALTER TABLE jobs ADD COLUMN last_checkpoint_ms INTEGER;
CREATE INDEX jobs_by_array ON jobs (array_job, array_index) WHERE array_job IS NOT NULL;

CREATE TABLE usage_records (
  seq         INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id      INTEGER NOT NULL CHECK (job_id > 0),
  start_ms    INTEGER NOT NULL,
  end_ms      INTEGER NOT NULL CHECK (end_ms >= start_ms),
  team        TEXT    NOT NULL,
  user_name   TEXT    NOT NULL,
  priority    TEXT    NOT NULL,   -- the class name at the time
  gpus        INTEGER NOT NULL CHECK (gpus >= 0),
  gpu_models  TEXT    NOT NULL,   -- JSON array of model names
  gpu_seconds REAL    NOT NULL CHECK (gpu_seconds >= 0),
  energy_mj   INTEGER NOT NULL
);
CREATE INDEX usage_by_end ON usage_records (end_ms);
)sql";

// Version 5 (issue #6): API and node tokens, and why a node is not up.
//
// Only a hash of a token's secret is kept (the secret is shown once, when the token is
// created). kind, role and the times are what `gpufleet token list` shows and what the API's
// authentication judges; a token is never deleted, only revoked, so that the audit trail can
// still name it. A node's state_reason (a drain's reason, what took it down) survives a restart
// of the server; nodes stored before have none.
constexpr std::string_view kSchemaV5 = R"sql(
ALTER TABLE nodes ADD COLUMN state_reason TEXT NOT NULL DEFAULT '';

CREATE TABLE tokens (
  id           TEXT    PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 32),
  secret_hash  TEXT    NOT NULL CHECK (length(secret_hash) = 64),  -- lowercase hex SHA-256
  kind         TEXT    NOT NULL,   -- user | node
  subject      TEXT    NOT NULL,   -- login name (user token), node name or '' (node token)
  uid          INTEGER NOT NULL,
  gid          INTEGER NOT NULL,
  role         TEXT    NOT NULL,   -- user | operator | admin
  description  TEXT    NOT NULL,
  created_ms   INTEGER NOT NULL,
  expires_ms   INTEGER,            -- NULL: does not expire
  revoked_ms   INTEGER             -- NULL: not revoked
);
)sql";

// Version 6 (issue #6): the controller lease. One row at most (id 1): who leads, with which
// epoch, until when. Epochs only grow, so a deposed leader's epoch never comes back.
constexpr std::string_view kSchemaV6 = R"sql(
CREATE TABLE leader (
  id          INTEGER PRIMARY KEY CHECK (id = 1),
  holder      TEXT    NOT NULL,
  epoch       INTEGER NOT NULL CHECK (epoch > 0),
  expires_ms  INTEGER NOT NULL
);
)sql";

// Version 7 (issue #6): whether a job goes back to the queue when it is preempted or loses its
// node (`--no-requeue` stores 0). Jobs stored before were all requeued, so they keep 1.
constexpr std::string_view kSchemaV7 = R"sql(
ALTER TABLE jobs ADD COLUMN requeue INTEGER NOT NULL DEFAULT 1 CHECK (requeue IN (0, 1));
)sql";

// Version 8 (issue #8): interactive sessions and the idle reaper's opt-out on jobs (older jobs
// read back as before: not interactive, reapable), and notification subscriptions. A
// subscription's kinds are their names joined by commas, "" for every kind.
constexpr std::string_view kSchemaV8 = R"sql(
ALTER TABLE jobs ADD COLUMN interactive INTEGER NOT NULL DEFAULT 0 CHECK (interactive IN (0, 1));
ALTER TABLE jobs ADD COLUMN idle_reap INTEGER NOT NULL DEFAULT 1 CHECK (idle_reap IN (0, 1));
CREATE TABLE subscriptions (
  id          TEXT    PRIMARY KEY,
  owner       TEXT    NOT NULL,
  scope       TEXT    NOT NULL,
  team        TEXT    NOT NULL,
  channel     TEXT    NOT NULL,
  target      TEXT    NOT NULL,
  kinds       TEXT    NOT NULL,
  created_ms  INTEGER NOT NULL
);
)sql";

// Version 9 (issue #4): multi-node jobs. Each member of a gang is a job with its gang's id
// (rank 0's), its rank and the gang's size; NULL for every other job (and every older one).
constexpr std::string_view kSchemaV9 = R"sql(
ALTER TABLE jobs ADD COLUMN gang_job INTEGER CHECK (gang_job > 0);
ALTER TABLE jobs ADD COLUMN gang_rank INTEGER CHECK (gang_rank >= 0);
ALTER TABLE jobs ADD COLUMN gang_size INTEGER CHECK (gang_size > 1);
)sql";

// Version 10 (issue #7): GPU sharing. A job's request for a part of one GPU (milli-GPU of
// compute, MiB of its memory; 0 = not asked) and what its allocation holds of each GPU (1000 and
// 0 = the whole GPU). Older jobs read back as whole-GPU jobs. A GPU's sharing mode is in the
// nodes' GPU JSON (store/codec.cpp), which needs no column.
constexpr std::string_view kSchemaV10 = R"sql(
ALTER TABLE jobs ADD COLUMN gpu_milli INTEGER NOT NULL DEFAULT 0
  CHECK (gpu_milli BETWEEN 0 AND 1000);
ALTER TABLE jobs ADD COLUMN gpu_memory_mib INTEGER NOT NULL DEFAULT 0 CHECK (gpu_memory_mib >= 0);
ALTER TABLE jobs ADD COLUMN alloc_gpu_milli INTEGER NOT NULL DEFAULT 1000
  CHECK (alloc_gpu_milli BETWEEN 1 AND 1000);
ALTER TABLE jobs ADD COLUMN alloc_gpu_memory_mib INTEGER NOT NULL DEFAULT 0
  CHECK (alloc_gpu_memory_mib >= 0);
)sql";

// Version 11 (issue #7): MIG. A job's request for a MIG device of a profile ("" = none) and the
// MIG device its allocation holds ("" = none). A GPU's MIG state and waiting layout are in the
// nodes' GPU JSON.
constexpr std::string_view kSchemaV11 = R"sql(
ALTER TABLE jobs ADD COLUMN mig_profile TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN alloc_mig TEXT NOT NULL DEFAULT '';
)sql";

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

constexpr std::string_view kCreateVersionTable = R"sql(
CREATE TABLE IF NOT EXISTS schema_version (
  version     INTEGER PRIMARY KEY,
  description TEXT    NOT NULL,
  applied_ms  INTEGER NOT NULL
))sql";

Result<std::int64_t> QueryInt(sqlite3* db, std::string_view sql, std::string_view operation) {
  GF_ASSIGN_OR_RETURN(SqliteStatement stmt, SqliteStatement::Prepare(db, sql, false));
  GF_ASSIGN_OR_RETURN(bool row, stmt.Step(operation));
  if (!row) {
    return Internal(std::string(operation) + ": no row");
  }
  return stmt.Int64(0);
}

Status RecordVersion(sqlite3* db, const Migration& m, std::string_view operation) {
  GF_ASSIGN_OR_RETURN(
      SqliteStatement stmt,
      SqliteStatement::Prepare(db,
                               "INSERT INTO schema_version (version, description, applied_ms) "
                               "VALUES (?1, ?2, CAST((julianday('now') - 2440587.5) * 86400000 "
                               "AS INTEGER))",
                               false));
  stmt.BindInt64(1, m.version);
  stmt.BindText(2, m.description);
  return stmt.Run(operation);
}

// One step in one transaction. The version is read again inside the transaction: another
// process opening the same file may have applied the step since we looked.
Status ApplyOne(sqlite3* db, const Migration& m) {
  const std::string operation = "schema migration " + std::to_string(m.version) + " (" +
                                std::string(m.description) + ")";
  GF_TRY(SqliteExec(db, "BEGIN IMMEDIATE", operation));
  Status status = [&]() -> Status {
    GF_TRY(SqliteExec(db, std::string(kCreateVersionTable), operation));
    GF_ASSIGN_OR_RETURN(int current, ReadSchemaVersion(db));
    if (current < m.version) {
      GF_TRY(SqliteExec(db, std::string(m.sql), operation));
      GF_TRY(RecordVersion(db, m, operation));
    }
    return SqliteExec(db, "COMMIT", operation);
  }();
  if (!status.ok() && sqlite3_get_autocommit(db) == 0) {
    // The step's own error is the one to report; a failed rollback adds nothing actionable.
    static_cast<void>(SqliteExec(db, "ROLLBACK", operation));
  }
  return status;
}

}  // namespace

std::span<const Migration> SqliteMigrations() { return kMigrations; }

int LatestSqliteSchemaVersion() { return kMigrations.back().version; }

Result<int> ReadSchemaVersion(sqlite3* db) {
  GF_ASSIGN_OR_RETURN(std::int64_t has_table,
                      QueryInt(db,
                               "SELECT count(*) FROM sqlite_master "
                               "WHERE type = 'table' AND name = 'schema_version'",
                               "read schema version"));
  if (has_table == 0) {
    GF_ASSIGN_OR_RETURN(std::int64_t objects, QueryInt(db, "SELECT count(*) FROM sqlite_master",
                                                       "read schema version"));
    if (objects > 0) {
      return FailedPrecondition(
          "the database has tables but no schema_version table: it is not a gpufleet "
          "database; point gpufleet at a new file");
    }
    return 0;
  }
  GF_ASSIGN_OR_RETURN(std::int64_t version,
                      QueryInt(db, "SELECT COALESCE(MAX(version), 0) FROM schema_version",
                               "read schema version"));
  return static_cast<int>(version);
}

Status ApplyMigrations(sqlite3* db, std::span<const Migration> migrations) {
  GF_CHECK(!migrations.empty());
  for (std::size_t i = 0; i < migrations.size(); ++i) {
    GF_CHECK(migrations[i].version == static_cast<int>(i) + 1);  // 1..N, no gaps
  }
  const int latest = migrations.back().version;
  GF_ASSIGN_OR_RETURN(int current, ReadSchemaVersion(db));
  if (current > latest) {
    return FailedPrecondition("database schema version " +
                              std::to_string(current) + " is newer than this gpufleet (" +
                              std::to_string(latest) + "); upgrade gpufleet");
  }
  for (const Migration& m : migrations) {
    if (m.version > current) {
      GF_TRY(ApplyOne(db, m));
    }
  }
  return OkStatus();
}

}  // namespace gf

#include "store/schema_steps.h"

#include <array>
#include <regex>
#include <string>
#include <utility>

#include "core/check.h"

namespace gf {
namespace {

// The steps are written once, in SQLite's SQL with placeholders where the dialects differ
// (RenderSchemaSql); what PostgreSQL alone needs comes with the step (postgres_only). Why the
// dialects differ:
// - PostgreSQL's string columns are BYTEA (postgres/postgres_util.h): strings are bytes, and
//   BYTEA sorts them byte by byte as SQLite does. Read them in psql with convert_from(column,
//   'UTF8').
// - Integers are BIGINT there, reals DOUBLE PRECISION, flags SMALLINT 0/1 as in SQLite.
// - Sequence numbers (event seq, usage record seq) and the largest job id ever stored come from
//   PostgreSQL's store_counters, updated in the Commit's own transaction: a rolled-back batch
//   leaves no gap (a PostgreSQL SEQUENCE would), and the row lock orders two writers' batches.
//   SQLite's AUTOINCREMENT does the same there.
//
// To change the schema, append a step with the next version; never edit a released step (a
// database that has it applied keeps what it got).

// Version 1: jobs, events, nodes.
//
// Real columns hold what queries filter or sort on; lists are JSON text (codec/codec.h).
// Column names avoid words that PostgreSQL reserves (user), so the PostgreSQL backend can
// keep the same names.
constexpr std::string_view kStepV1 = R"sql(
CREATE TABLE jobs (
  -- Job ids are positive (core/ids.h). AUTOINCREMENT although ids come from the controller:
  -- it makes sqlite_sequence remember the largest id ever stored, so MaxJobId never goes
  -- back (ids are never reused) even if old jobs are one day pruned.
  id            {SEQ} CHECK (id > 0),
  uid           {INT} NOT NULL,
  gid           {INT} NOT NULL,
  user_name     {TEXT}    NOT NULL,
  name          {TEXT}    NOT NULL,
  argv          {TEXT}    NOT NULL,   -- JSON array of strings
  workdir       {TEXT}    NOT NULL,
  env           {TEXT}    NOT NULL,   -- JSON array of [name, value]
  gpus          {INT} NOT NULL,
  gpu_type      {TEXT},               -- NULL: any type
  priority      {TEXT}    NOT NULL,   -- high | normal | low
  team          {TEXT}    NOT NULL,
  time_limit_s  {INT},            -- NULL: no limit
  state         {TEXT}    NOT NULL,   -- PENDING, RUNNING, ... (model/job.h)
  terminal      {FLAG} NOT NULL CHECK (terminal IN (0, 1)),  -- IsTerminal(state)
  alloc_node    {TEXT},               -- NULL: no allocation
  alloc_gpus    {TEXT},               -- JSON array of GPU UUIDs; NULL when alloc_node is
  submit_ms     {INT} NOT NULL,   -- unix milliseconds
  start_ms      {INT},
  end_ms        {INT},
  exit_code     {INT},
  reason        {TEXT}    NOT NULL,
  pid           {INT}
);
-- ListJobs: by owner, newest first.
CREATE INDEX jobs_by_uid ON jobs (uid, id);
-- ListJobs(active_only): the few live jobs among the many finished ones.
CREATE INDEX jobs_active ON jobs (id) WHERE terminal = 0;

CREATE TABLE events (
  -- AUTOINCREMENT: a seq is never reused, even after old events are pruned, so a watcher
  -- resuming after_seq never misses one.
  seq      {SEQ},
  time_ms  {INT} NOT NULL,
  -- An event about a job needs the job stored (earlier, or in the same batch).
  job_id   {INT} REFERENCES jobs (id),
  kind     {TEXT}    NOT NULL,
  actor    {TEXT}    NOT NULL,
  message  {TEXT}    NOT NULL
);
-- ListEvents(job): one job's history in order.
CREATE INDEX events_by_job ON events (job_id, seq);

CREATE TABLE nodes (
  name          {TEXT}    PRIMARY KEY,
  cpus          {INT} NOT NULL,
  memory_mib    {INT} NOT NULL,
  state         {TEXT}    NOT NULL,   -- up | draining | drained | down
  gpu_backend   {TEXT}    NOT NULL,
  last_seen_ms  {INT} NOT NULL,
  gpus          {TEXT}    NOT NULL,   -- JSON array of GPU objects
  labels        {TEXT}    NOT NULL    -- JSON object
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
constexpr std::string_view kStepV2 = R"sql(
ALTER TABLE jobs ADD COLUMN usage_samples         {INT} CHECK (usage_samples >= 0);
ALTER TABLE jobs ADD COLUMN usage_mean_util_pct   {REAL};
ALTER TABLE jobs ADD COLUMN usage_peak_util_pct   {INT};
ALTER TABLE jobs ADD COLUMN usage_peak_memory_mib {INT};
ALTER TABLE jobs ADD COLUMN usage_energy_mj       {INT};

CREATE TABLE gpu_minutes (
  minute_ms           {INT} NOT NULL CHECK (minute_ms % 60000 = 0),  -- start, unix ms
  node                {TEXT}    NOT NULL CHECK (node <> {EMPTY}),
  uuid                {TEXT}    NOT NULL CHECK (uuid <> {EMPTY}),
  job_id              {INT},            -- NULL: nobody held the GPU
  user_name           {TEXT}    NOT NULL,   -- '' when unallocated
  team                {TEXT}    NOT NULL,
  samples             {INT} NOT NULL CHECK (samples >= 0),
  util_mean_pct       {REAL}    NOT NULL,
  util_max_pct        {INT} NOT NULL,
  memory_used_max_mib {INT} NOT NULL,
  power_mean_w        {REAL}    NOT NULL,
  energy_mj           {INT} NOT NULL,
  health              {TEXT}    NOT NULL,   -- ok | degraded | failed
  PRIMARY KEY (minute_ms, node, uuid)
) {WITHOUT_ROWID};
CREATE UNIQUE INDEX gpu_minutes_by_gpu ON gpu_minutes (uuid, minute_ms);
)sql";

// Version 3 (issue #4): what preemption needs to survive a restart: the signal a job is
// stopped with first (its checkpoint signal) and whether it runs on borrowed GPUs. Jobs stored
// before keep SIGTERM (15) and not borrowed, which is what they were.
constexpr std::string_view kStepV3 = R"sql(
ALTER TABLE jobs ADD COLUMN checkpoint_signal {INT} NOT NULL DEFAULT 15
  CHECK (checkpoint_signal > 0 AND checkpoint_signal < 65);
ALTER TABLE jobs ADD COLUMN preemptible {FLAG} NOT NULL DEFAULT 0 CHECK (preemptible IN (0, 1));
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
constexpr std::string_view kStepV4 = R"sql(
ALTER TABLE jobs ADD COLUMN node_labels {TEXT} NOT NULL DEFAULT {EMPTY_OBJECT};
ALTER TABLE jobs ADD COLUMN after_deps {TEXT} NOT NULL DEFAULT {EMPTY_ARRAY};
ALTER TABLE jobs ADD COLUMN array_job {INT} CHECK (array_job > 0);
ALTER TABLE jobs ADD COLUMN array_index {INT} CHECK (array_index >= 0);
ALTER TABLE jobs ADD COLUMN array_max_running {INT} CHECK (array_max_running > 0);
ALTER TABLE jobs ADD COLUMN budget_approved {FLAG} NOT NULL DEFAULT 0
  CHECK (budget_approved IN (0, 1));
ALTER TABLE jobs ADD COLUMN last_checkpoint_ms {INT};
CREATE INDEX jobs_by_array ON jobs (array_job, array_index) WHERE array_job IS NOT NULL;

CREATE TABLE usage_records (
  seq         {SEQ},
  job_id      {INT} NOT NULL CHECK (job_id > 0),
  start_ms    {INT} NOT NULL,
  end_ms      {INT} NOT NULL CHECK (end_ms >= start_ms),
  team        {TEXT}    NOT NULL,
  user_name   {TEXT}    NOT NULL,
  priority    {TEXT}    NOT NULL,   -- the class name at the time
  gpus        {INT} NOT NULL CHECK (gpus >= 0),
  gpu_models  {TEXT}    NOT NULL,   -- JSON array of model names
  gpu_seconds {REAL}    NOT NULL CHECK (gpu_seconds >= 0),
  energy_mj   {INT} NOT NULL
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
constexpr std::string_view kStepV5 = R"sql(
ALTER TABLE nodes ADD COLUMN state_reason {TEXT} NOT NULL DEFAULT {EMPTY};

CREATE TABLE tokens (
  id           {TEXT}    PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 32),
  secret_hash  {TEXT}    NOT NULL CHECK (length(secret_hash) = 64),  -- lowercase hex SHA-256
  kind         {TEXT}    NOT NULL,   -- user | node
  subject      {TEXT}    NOT NULL,   -- login name (user token), node name or '' (node token)
  uid          {INT} NOT NULL,
  gid          {INT} NOT NULL,
  role         {TEXT}    NOT NULL,   -- user | operator | admin
  description  {TEXT}    NOT NULL,
  created_ms   {INT} NOT NULL,
  expires_ms   {INT},            -- NULL: does not expire
  revoked_ms   {INT}             -- NULL: not revoked
);
)sql";

// Version 6 (issue #6): the controller lease. One row at most (id 1): who leads, with which
// epoch, until when. Epochs only grow, so a deposed leader's epoch never comes back.
constexpr std::string_view kStepV6 = R"sql(
CREATE TABLE leader (
  id          {INT} PRIMARY KEY CHECK (id = 1),
  holder      {TEXT}    NOT NULL,
  epoch       {INT} NOT NULL CHECK (epoch > 0),
  expires_ms  {INT} NOT NULL
);
)sql";

// Version 7 (issue #6): whether a job goes back to the queue when it is preempted or loses its
// node (`--no-requeue` stores 0). Jobs stored before were all requeued, so they keep 1.
constexpr std::string_view kStepV7 = R"sql(
ALTER TABLE jobs ADD COLUMN requeue {FLAG} NOT NULL DEFAULT 1 CHECK (requeue IN (0, 1));
)sql";

// Version 8 (issue #8): interactive sessions and the idle reaper's opt-out on jobs (older jobs
// read back as before: not interactive, reapable), and notification subscriptions. A
// subscription's kinds are their names joined by commas, "" for every kind.
constexpr std::string_view kStepV8 = R"sql(
ALTER TABLE jobs ADD COLUMN interactive {FLAG} NOT NULL DEFAULT 0 CHECK (interactive IN (0, 1));
ALTER TABLE jobs ADD COLUMN idle_reap {FLAG} NOT NULL DEFAULT 1 CHECK (idle_reap IN (0, 1));
CREATE TABLE subscriptions (
  id          {TEXT}    PRIMARY KEY,
  owner       {TEXT}    NOT NULL,
  scope       {TEXT}    NOT NULL,
  team        {TEXT}    NOT NULL,
  channel     {TEXT}    NOT NULL,
  target      {TEXT}    NOT NULL,
  kinds       {TEXT}    NOT NULL,
  created_ms  {INT} NOT NULL
);
)sql";

// Version 9 (issue #4): multi-node jobs. Each member of a gang is a job with its gang's id
// (rank 0's), its rank and the gang's size; NULL for every other job (and every older one).
constexpr std::string_view kStepV9 = R"sql(
ALTER TABLE jobs ADD COLUMN gang_job {INT} CHECK (gang_job > 0);
ALTER TABLE jobs ADD COLUMN gang_rank INTEGER CHECK (gang_rank >= 0);
ALTER TABLE jobs ADD COLUMN gang_size INTEGER CHECK (gang_size > 1);
)sql";

// Version 10 (issue #7): GPU sharing. A job's request for a part of one GPU (milli-GPU of
// compute, MiB of its memory; 0 = not asked) and what its allocation holds of each GPU (1000 and
// 0 = the whole GPU). Older jobs read back as whole-GPU jobs. A GPU's sharing mode is in the
// nodes' GPU JSON (codec/codec.cpp), which needs no column.
constexpr std::string_view kStepV10 = R"sql(
ALTER TABLE jobs ADD COLUMN gpu_milli INTEGER NOT NULL DEFAULT 0
  CHECK (gpu_milli BETWEEN 0 AND 1000);
ALTER TABLE jobs ADD COLUMN gpu_memory_mib {INT} NOT NULL DEFAULT 0 CHECK (gpu_memory_mib >= 0);
ALTER TABLE jobs ADD COLUMN alloc_gpu_milli INTEGER NOT NULL DEFAULT 1000
  CHECK (alloc_gpu_milli BETWEEN 1 AND 1000);
ALTER TABLE jobs ADD COLUMN alloc_gpu_memory_mib {INT} NOT NULL DEFAULT 0
  CHECK (alloc_gpu_memory_mib >= 0);
)sql";

// Version 11 (issue #7): MIG. A job's request for a MIG device of a profile ("" = none) and the
// MIG device its allocation holds ("" = none). A GPU's MIG state and waiting layout are in the
// nodes' GPU JSON.
constexpr std::string_view kStepV11 = R"sql(
ALTER TABLE jobs ADD COLUMN mig_profile {TEXT} NOT NULL DEFAULT {EMPTY};
ALTER TABLE jobs ADD COLUMN alloc_mig {TEXT} NOT NULL DEFAULT {EMPTY};
)sql";

// Version 12 (issue #24): who holds a pending job (`gpufleet hold`, Job::held_by; "" = not
// held), so that a hold outlives a restart. Older jobs read back as not held.
constexpr std::string_view kStepV12 = R"sql(
ALTER TABLE jobs ADD COLUMN held_by {TEXT} NOT NULL DEFAULT {EMPTY};
)sql";

// Host CPUs and memory per node (issue #24): the request; an allocation holds its request's.
constexpr std::string_view kStepV13 = R"sql(
ALTER TABLE jobs ADD COLUMN cpus {INT} NOT NULL DEFAULT 0 CHECK (cpus >= 0);
ALTER TABLE jobs ADD COLUMN memory_mib {INT} NOT NULL DEFAULT 0 CHECK (memory_mib >= 0);
)sql";

// Version 14 (issue #24): what a job's processes used of their host, measured by its supervisor
// at the end of each run (model/job.h HostUsage): CPU time and the memory high-water mark. Both
// NULL or both set (host_cpu_ms decides): NULL for a job that never ran and for every job
// stored before this version.
constexpr std::string_view kStepV14 = R"sql(
ALTER TABLE jobs ADD COLUMN host_cpu_ms {INT} CHECK (host_cpu_ms >= 0);
ALTER TABLE jobs ADD COLUMN host_peak_memory_kib {INT} CHECK (host_peak_memory_kib >= 0);
)sql";

// Version 15 (issue #23, `#SBATCH --mail-type`): a subscription to one job or array; NULL for
// every other subscription (and every older one).
constexpr std::string_view kStepV15 = R"sql(
ALTER TABLE subscriptions ADD COLUMN job_id {INT} CHECK (job_id > 0);
)sql";

// Version 16 (reports): how much of a GPU minute a job held the GPU, so that a job starting or
// ending within a minute counts for its part of it. NULL in older rows, which counted the
// holder of the minute's last sample for the whole minute (store/rows.cpp).
constexpr std::string_view kStepV16 = R"sql(
ALTER TABLE gpu_minutes ADD COLUMN allocated_ms {INT} CHECK (allocated_ms BETWEEN 0 AND 60000);
)sql";

// PostgreSQL's counters (see above): created with the tables that draw on them.
constexpr std::string_view kPostgresCountersV1 = R"sql(
CREATE TABLE store_counters (
  name   TEXT   PRIMARY KEY,
  value  BIGINT NOT NULL
);
INSERT INTO store_counters (name, value) VALUES ('max_job_id', 0), ('event_seq', 0);
)sql";
constexpr std::string_view kPostgresCountersV4 = R"sql(
INSERT INTO store_counters (name, value) VALUES ('usage_seq', 0);
)sql";

struct Step {
  int version;
  std::string_view description;
  std::string_view sql;            // with placeholders
  std::string_view postgres_only;  // plain PostgreSQL, run after `sql`
};

constexpr std::array<Step, 16> kSteps = {{
    {1, "jobs, events, nodes", kStepV1, kPostgresCountersV1},
    {2, "job usage, gpu minutes", kStepV2, ""},
    {3, "job checkpoint signal, preemptible", kStepV3, ""},
    {4,
     "job constraints, dependencies, arrays, approval, checkpoint; usage records",
     kStepV4,
     kPostgresCountersV4},
    {5, "api and node tokens; node state reason", kStepV5, ""},
    {6, "controller lease", kStepV6, ""},
    {7, "job requeue", kStepV7, ""},
    {8, "job interactive, idle reap; notification subscriptions", kStepV8, ""},
    {9, "multi-node jobs", kStepV9, ""},
    {10, "fractional gpu requests and allocations", kStepV10, ""},
    {11, "mig requests and allocations", kStepV11, ""},
    {12, "job hold", kStepV12, ""},
    {13, "job host cpus and memory", kStepV13, ""},
    {14, "job host cpu time and peak memory", kStepV14, ""},
    {15, "subscriptions to one job", kStepV15, ""},
    {16, "held time of gpu minutes", kStepV16, ""},
}};

struct Placeholder {
  std::string_view name;
  std::string_view sqlite;
  std::string_view postgres;
};

// INTEGER and plain words other than these mean the same in both dialects.
constexpr std::array<Placeholder, 9> kPlaceholders = {{
    {"{SEQ}", "INTEGER PRIMARY KEY AUTOINCREMENT", "BIGINT PRIMARY KEY"},
    {"{INT}", "INTEGER", "BIGINT"},
    {"{FLAG}", "INTEGER", "SMALLINT"},
    {"{TEXT}", "TEXT", "BYTEA"},
    {"{REAL}", "REAL", "DOUBLE PRECISION"},
    {"{WITHOUT_ROWID}", "WITHOUT ROWID", ""},
    {"{EMPTY}", "''", "''::bytea"},
    {"{EMPTY_OBJECT}", "'{}'", "'{}'::bytea"},
    {"{EMPTY_ARRAY}", "'[]'", "'[]'::bytea"},
}};

// The steps of one dialect, rendered once and kept for the life of the process (Migration holds
// views into them).
struct Rendered {
  std::array<std::string, kSteps.size()> sql;
  std::array<Migration, kSteps.size()> steps;

  explicit Rendered(SqlDialect dialect) {
    for (std::size_t i = 0; i < kSteps.size(); ++i) {
      sql[i] = RenderSchemaSql(kSteps[i].sql, dialect);
      if (dialect == SqlDialect::kPostgres) {
        sql[i] += kSteps[i].postgres_only;
      }
      steps[i] = Migration{kSteps[i].version, kSteps[i].description, sql[i]};
    }
  }
};

}  // namespace

std::string RenderSchemaSql(std::string_view neutral, SqlDialect dialect) {
  std::string out(neutral);
  for (const Placeholder& p : kPlaceholders) {
    const std::string_view with = dialect == SqlDialect::kSqlite ? p.sqlite : p.postgres;
    for (std::size_t at = out.find(p.name); at != std::string::npos;
         at = out.find(p.name, at + with.size())) {
      out.replace(at, p.name.size(), with);
    }
  }
  // A placeholder misspelt would reach the database as SQL; say so here instead.
  static const std::regex leftover(R"(\{[A-Z_]+\})");
  GF_CHECK(!std::regex_search(out, leftover));
  return out;
}

int LatestSchemaVersion() {
  return kSteps.back().version;
}

std::string NewerSchemaMessage(int found, int latest) {
  return "database schema version " + std::to_string(found) + " is newer than this gpufleet (" +
         std::to_string(latest) +
         "): a newer gpufleet wrote it, and an older one cannot read it (no downgrade). "
         "Upgrade gpufleet to the release that wrote it, or restore a backup taken before the "
         "upgrade (gpufleet restore --input FILE)";
}

std::span<const Migration> SchemaSteps(SqlDialect dialect) {
  static const Rendered sqlite(SqlDialect::kSqlite);
  static const Rendered postgres(SqlDialect::kPostgres);
  return dialect == SqlDialect::kSqlite ? sqlite.steps : postgres.steps;
}

}  // namespace gf

#include "store/sqlite/sqlite_rows.h"

#include <string>

namespace gf {

// An upsert, not INSERT OR REPLACE: REPLACE deletes the old row first, which the foreign key
// from events would have to reason about; an update in place keeps the row's identity.
const std::string_view kUpsertJobSql = R"sql(
INSERT INTO jobs (id, uid, gid, user_name, name, argv, workdir, env, gpus, gpu_type, priority,
                  team, time_limit_s, state, terminal, alloc_node, alloc_gpus, submit_ms,
                  start_ms, end_ms, exit_code, reason, pid, usage_samples, usage_mean_util_pct,
                  usage_peak_util_pct, usage_peak_memory_mib, usage_energy_mj,
                  checkpoint_signal, preemptible, node_labels, after_deps, array_job,
                  array_index, array_max_running, budget_approved, last_checkpoint_ms,
                  requeue, interactive, idle_reap, gang_job, gang_rank, gang_size, gpu_milli,
                  gpu_memory_mib, alloc_gpu_milli, alloc_gpu_memory_mib, mig_profile, alloc_mig,
                  held_by, cpus, memory_mib, host_cpu_ms, host_peak_memory_kib)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19,
        ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, ?34, ?35, ?36,
        ?37, ?38, ?39, ?40, ?41, ?42, ?43, ?44, ?45, ?46, ?47, ?48, ?49, ?50, ?51, ?52, ?53, ?54)
ON CONFLICT (id) DO UPDATE SET
  uid = excluded.uid, gid = excluded.gid, user_name = excluded.user_name,
  name = excluded.name, argv = excluded.argv, workdir = excluded.workdir, env = excluded.env,
  gpus = excluded.gpus, gpu_type = excluded.gpu_type, priority = excluded.priority,
  team = excluded.team, time_limit_s = excluded.time_limit_s, state = excluded.state,
  terminal = excluded.terminal, alloc_node = excluded.alloc_node,
  alloc_gpus = excluded.alloc_gpus, submit_ms = excluded.submit_ms,
  start_ms = excluded.start_ms, end_ms = excluded.end_ms, exit_code = excluded.exit_code,
  reason = excluded.reason, pid = excluded.pid, usage_samples = excluded.usage_samples,
  usage_mean_util_pct = excluded.usage_mean_util_pct,
  usage_peak_util_pct = excluded.usage_peak_util_pct,
  usage_peak_memory_mib = excluded.usage_peak_memory_mib,
  usage_energy_mj = excluded.usage_energy_mj,
  checkpoint_signal = excluded.checkpoint_signal, preemptible = excluded.preemptible,
  node_labels = excluded.node_labels, after_deps = excluded.after_deps,
  array_job = excluded.array_job, array_index = excluded.array_index,
  array_max_running = excluded.array_max_running, budget_approved = excluded.budget_approved,
  last_checkpoint_ms = excluded.last_checkpoint_ms, requeue = excluded.requeue,
  interactive = excluded.interactive, idle_reap = excluded.idle_reap,
  gang_job = excluded.gang_job, gang_rank = excluded.gang_rank, gang_size = excluded.gang_size,
  gpu_milli = excluded.gpu_milli, gpu_memory_mib = excluded.gpu_memory_mib,
  alloc_gpu_milli = excluded.alloc_gpu_milli, alloc_gpu_memory_mib = excluded.alloc_gpu_memory_mib,
  mig_profile = excluded.mig_profile, alloc_mig = excluded.alloc_mig, held_by = excluded.held_by,
  cpus = excluded.cpus, memory_mib = excluded.memory_mib, host_cpu_ms = excluded.host_cpu_ms,
  host_peak_memory_kib = excluded.host_peak_memory_kib
)sql";

const std::string_view kInsertUsageSql =
    "INSERT INTO usage_records (job_id, start_ms, end_ms, team, user_name, priority, gpus, "
    "gpu_models, gpu_seconds, energy_mj) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)";

// ?1 from, ?2 to (unix ms). A run's part inside [from, to) is its share of the time: its
// gpu_seconds times the overlap over its length. A zero-length run inside the range counts
// whole (it has no length to share). end_ms > ?1 is what index usage_by_end serves.
const std::string_view kSumUsageSql = R"sql(
SELECT team, user_name,
       SUM(CASE WHEN end_ms = start_ms THEN gpu_seconds
                ELSE gpu_seconds * (MIN(end_ms, ?2) - MAX(start_ms, ?1)) / (end_ms - start_ms)
           END),
       SUM(CASE WHEN end_ms = start_ms THEN CAST(energy_mj AS REAL)
                ELSE CAST(energy_mj AS REAL) * (MIN(end_ms, ?2) - MAX(start_ms, ?1)) /
                     (end_ms - start_ms)
           END)
FROM usage_records
WHERE start_ms < ?2 AND (end_ms > ?1 OR (end_ms = start_ms AND start_ms >= ?1))
GROUP BY team, user_name
ORDER BY team, user_name
)sql";

std::string ListUsageSql() {
  return "SELECT " + std::string(kUsageColumns) +
         " FROM usage_records WHERE end_ms > ?1 AND seq > ?2 ORDER BY seq LIMIT ?3";
}

// Replaced in place by id (revoking a token rewrites it with revoked_ms set).
const std::string_view kUpsertTokenSql = R"sql(
INSERT INTO tokens (id, secret_hash, kind, subject, uid, gid, role, description, created_ms,
                    expires_ms, revoked_ms)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
ON CONFLICT (id) DO UPDATE SET
  secret_hash = excluded.secret_hash, kind = excluded.kind, subject = excluded.subject,
  uid = excluded.uid, gid = excluded.gid, role = excluded.role,
  description = excluded.description, created_ms = excluded.created_ms,
  expires_ms = excluded.expires_ms, revoked_ms = excluded.revoked_ms
)sql";

// Replaced whole by id (schema v8).
const std::string_view kUpsertSubscriptionSql = R"sql(
INSERT INTO subscriptions (id, owner, scope, team, channel, target, kinds, created_ms, job_id)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
ON CONFLICT (id) DO UPDATE SET
  owner = excluded.owner, scope = excluded.scope, team = excluded.team,
  channel = excluded.channel, target = excluded.target, kinds = excluded.kinds,
  created_ms = excluded.created_ms, job_id = excluded.job_id
)sql";

const std::string_view kDeleteSubscriptionSql = "DELETE FROM subscriptions WHERE id = ?1";

const std::string_view kInsertEventSql =
    "INSERT INTO events (time_ms, job_id, kind, actor, message) VALUES (?1, ?2, ?3, ?4, ?5)";

const std::string_view kUpsertNodeSql = R"sql(
INSERT INTO nodes (name, cpus, memory_mib, state, gpu_backend, last_seen_ms, gpus, labels,
                   state_reason)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
ON CONFLICT (name) DO UPDATE SET
  cpus = excluded.cpus, memory_mib = excluded.memory_mib, state = excluded.state,
  gpu_backend = excluded.gpu_backend, last_seen_ms = excluded.last_seen_ms,
  gpus = excluded.gpus, labels = excluded.labels, state_reason = excluded.state_reason
)sql";

// The ORDER BY is the primary key of gpu_minutes (schema v2): a range scan of the table's
// b-tree in key order, with no sort, however many rows the range holds.
std::string ListGpuMinutesSql() {
  return "SELECT " + std::string(kGpuMinuteColumns) +
         " FROM gpu_minutes WHERE minute_ms >= ?1 AND minute_ms < ?2 "
         "ORDER BY minute_ms, node, uuid LIMIT ?3";
}

// The unique index gpu_minutes_by_gpu (uuid, minute_ms) gives the range in order.
std::string ListGpuMinutesOfSql() {
  return "SELECT " + std::string(kGpuMinuteColumns) +
         " FROM gpu_minutes WHERE uuid = ?1 AND minute_ms >= ?2 AND minute_ms < ?3 "
         "ORDER BY minute_ms LIMIT ?4";
}

// REPLACE is safe here, unlike for jobs: no foreign key points at gpu_minutes. It deletes the
// row with the same (uuid, minute) even when the GPU is now reported under another node name
// (which changes the primary key), so a GPU never has two rows for one minute.
const std::string_view kUpsertGpuMinuteSql =
    "INSERT OR REPLACE INTO gpu_minutes (minute_ms, node, uuid, job_id, user_name, team, "
    "samples, util_mean_pct, util_max_pct, memory_used_max_mib, power_mean_w, energy_mj, health, "
    "allocated_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)";

}  // namespace gf

#include "store/sqlite/sqlite_rows.h"

#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "store/codec.h"

namespace gf {

const std::string_view kJobColumns =
    "id, uid, gid, user_name, name, argv, workdir, env, gpus, gpu_type, priority, team, "
    "time_limit_s, state, alloc_node, alloc_gpus, submit_ms, start_ms, end_ms, exit_code, "
    "reason, pid";
const std::string_view kEventColumns = "seq, time_ms, job_id, kind, actor, message";
const std::string_view kNodeColumns =
    "name, cpus, memory_mib, state, gpu_backend, last_seen_ms, gpus, labels";

// An upsert, not INSERT OR REPLACE: REPLACE deletes the old row first, which the foreign key
// from events would have to reason about; an update in place keeps the row's identity.
const std::string_view kUpsertJobSql = R"sql(
INSERT INTO jobs (id, uid, gid, user_name, name, argv, workdir, env, gpus, gpu_type, priority,
                  team, time_limit_s, state, terminal, alloc_node, alloc_gpus, submit_ms,
                  start_ms, end_ms, exit_code, reason, pid)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19,
        ?20, ?21, ?22, ?23)
ON CONFLICT (id) DO UPDATE SET
  uid = excluded.uid, gid = excluded.gid, user_name = excluded.user_name,
  name = excluded.name, argv = excluded.argv, workdir = excluded.workdir, env = excluded.env,
  gpus = excluded.gpus, gpu_type = excluded.gpu_type, priority = excluded.priority,
  team = excluded.team, time_limit_s = excluded.time_limit_s, state = excluded.state,
  terminal = excluded.terminal, alloc_node = excluded.alloc_node,
  alloc_gpus = excluded.alloc_gpus, submit_ms = excluded.submit_ms,
  start_ms = excluded.start_ms, end_ms = excluded.end_ms, exit_code = excluded.exit_code,
  reason = excluded.reason, pid = excluded.pid
)sql";

const std::string_view kInsertEventSql =
    "INSERT INTO events (time_ms, job_id, kind, actor, message) VALUES (?1, ?2, ?3, ?4, ?5)";

const std::string_view kUpsertNodeSql = R"sql(
INSERT INTO nodes (name, cpus, memory_mib, state, gpu_backend, last_seen_ms, gpus, labels)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
ON CONFLICT (name) DO UPDATE SET
  cpus = excluded.cpus, memory_mib = excluded.memory_mib, state = excluded.state,
  gpu_backend = excluded.gpu_backend, last_seen_ms = excluded.last_seen_ms,
  gpus = excluded.gpus, labels = excluded.labels
)sql";

namespace {

// Column positions in kJobColumns.
struct JobCol {
  static constexpr int kId = 0, kUid = 1, kGid = 2, kUser = 3, kName = 4, kArgv = 5,
                       kWorkdir = 6, kEnv = 7, kGpus = 8, kGpuType = 9, kPriority = 10,
                       kTeam = 11, kTimeLimit = 12, kState = 13, kAllocNode = 14,
                       kAllocGpus = 15, kSubmit = 16, kStart = 17, kEnd = 18, kExitCode = 19,
                       kReason = 20, kPid = 21;
};

std::optional<std::int64_t> OptionalMillis(const std::optional<Time>& t) {
  if (!t.has_value()) {
    return std::nullopt;
  }
  return ToUnixMillis(*t);
}

std::optional<Time> OptionalTime(const std::optional<std::int64_t>& ms) {
  if (!ms.has_value()) {
    return std::nullopt;
  }
  return FromUnixMillis(*ms);
}

// A stored integer as a narrower type; out of range means the row was not written by us.
template <typename T>
Result<T> Narrow(std::int64_t v, const std::string& row, std::string_view field) {
  if (v < static_cast<std::int64_t>(std::numeric_limits<T>::min()) ||
      v > static_cast<std::int64_t>(std::numeric_limits<T>::max())) {
    return Internal(row + ": " + std::string(field) + " " + std::to_string(v) +
                    " is out of range");
  }
  return static_cast<T>(v);
}

// A Parse* error of the model (kInvalidArgument, user-facing) restated as damage in a row.
template <typename T>
Result<T> FromRow(Result<T> parsed, const std::string& row) {
  if (!parsed.ok()) {
    return Internal(row + ": " + parsed.error().message);
  }
  return parsed;
}

Result<JobSpec> DecodeSpec(const SqliteStatement& row, const std::string& what) {
  JobSpec spec;
  spec.name = row.Text(JobCol::kName);
  GF_ASSIGN_OR_RETURN(spec.argv, DecodeStrings(row.Text(JobCol::kArgv), what + " argv"));
  spec.workdir = row.Text(JobCol::kWorkdir);
  GF_ASSIGN_OR_RETURN(spec.env, DecodeEnv(row.Text(JobCol::kEnv), what + " env"));
  GF_ASSIGN_OR_RETURN(spec.request.gpus, Narrow<int>(row.Int64(JobCol::kGpus), what, "gpus"));
  spec.request.gpu_type = row.OptionalText(JobCol::kGpuType);
  GF_ASSIGN_OR_RETURN(spec.priority,
                      FromRow(ParsePriorityClass(row.Text(JobCol::kPriority)), what));
  spec.team = row.Text(JobCol::kTeam);
  if (auto limit = row.OptionalInt64(JobCol::kTimeLimit)) {
    spec.time_limit = std::chrono::seconds(*limit);
  }
  return spec;
}

}  // namespace

Status BindJob(SqliteStatement& stmt, const Job& job) {
  const JobSpec& spec = job.spec;
  GF_ASSIGN_OR_RETURN(std::string argv, EncodeStrings(spec.argv));
  GF_ASSIGN_OR_RETURN(std::string env, EncodeEnv(spec.env));
  std::optional<std::string> alloc_node;
  std::optional<std::string> alloc_gpus;
  if (job.allocation.has_value()) {
    alloc_node = job.allocation->node.value();
    GF_ASSIGN_OR_RETURN(alloc_gpus, EncodeGpuUuids(job.allocation->gpus));
  }
  std::optional<std::int64_t> time_limit;
  if (spec.time_limit.has_value()) {
    time_limit = spec.time_limit->count();
  }
  stmt.BindInt64(1, job.id.value());
  stmt.BindInt64(2, job.owner.uid);
  stmt.BindInt64(3, job.owner.gid);
  stmt.BindText(4, job.owner.user);
  stmt.BindText(5, spec.name);
  stmt.BindText(6, argv);
  stmt.BindText(7, spec.workdir);
  stmt.BindText(8, env);
  stmt.BindInt64(9, spec.request.gpus);
  stmt.BindOptionalText(10, spec.request.gpu_type);
  stmt.BindText(11, ToString(spec.priority));
  stmt.BindText(12, spec.team);
  stmt.BindOptionalInt64(13, time_limit);
  stmt.BindText(14, ToString(job.state));
  stmt.BindInt64(15, IsTerminal(job.state) ? 1 : 0);
  stmt.BindOptionalText(16, alloc_node);
  stmt.BindOptionalText(17, alloc_gpus);
  stmt.BindInt64(18, ToUnixMillis(job.submit_time));
  stmt.BindOptionalInt64(19, OptionalMillis(job.start_time));
  stmt.BindOptionalInt64(20, OptionalMillis(job.end_time));
  stmt.BindOptionalInt64(21, job.exit_code);
  stmt.BindText(22, job.reason);
  stmt.BindOptionalInt64(23, job.pid);
  return OkStatus();
}

Result<Job> DecodeJob(const SqliteStatement& row) {
  Job job;
  job.id = JobId(row.Int64(JobCol::kId));
  const std::string what = "job " + std::to_string(job.id.value());
  GF_ASSIGN_OR_RETURN(job.owner.uid, Narrow<std::uint32_t>(row.Int64(JobCol::kUid), what, "uid"));
  GF_ASSIGN_OR_RETURN(job.owner.gid, Narrow<std::uint32_t>(row.Int64(JobCol::kGid), what, "gid"));
  job.owner.user = row.Text(JobCol::kUser);
  GF_ASSIGN_OR_RETURN(job.spec, DecodeSpec(row, what));
  GF_ASSIGN_OR_RETURN(job.state, FromRow(ParseJobState(row.Text(JobCol::kState)), what));
  if (auto node = row.OptionalText(JobCol::kAllocNode)) {
    Allocation allocation;
    allocation.node = NodeId(std::move(*node));
    GF_ASSIGN_OR_RETURN(allocation.gpus,
                        DecodeGpuUuids(row.OptionalText(JobCol::kAllocGpus).value_or("[]"),
                                       what + " allocation"));
    job.allocation = std::move(allocation);
  }
  job.submit_time = FromUnixMillis(row.Int64(JobCol::kSubmit));
  job.start_time = OptionalTime(row.OptionalInt64(JobCol::kStart));
  job.end_time = OptionalTime(row.OptionalInt64(JobCol::kEnd));
  if (auto code = row.OptionalInt64(JobCol::kExitCode)) {
    GF_ASSIGN_OR_RETURN(job.exit_code, Narrow<int>(*code, what, "exit_code"));
  }
  job.reason = row.Text(JobCol::kReason);
  job.pid = row.OptionalInt64(JobCol::kPid);
  return job;
}

void BindEvent(SqliteStatement& stmt, const Event& event) {
  stmt.BindInt64(1, ToUnixMillis(event.time));
  if (event.job.has_value()) {
    stmt.BindInt64(2, event.job->value());
  } else {
    stmt.BindNull(2);
  }
  stmt.BindText(3, event.kind);
  stmt.BindText(4, event.actor);
  stmt.BindText(5, event.message);
}

Event DecodeEvent(const SqliteStatement& row) {
  Event event;
  event.seq = row.Int64(0);
  event.time = FromUnixMillis(row.Int64(1));
  if (auto job = row.OptionalInt64(2)) {
    event.job = JobId(*job);
  }
  event.kind = row.Text(3);
  event.actor = row.Text(4);
  event.message = row.Text(5);
  return event;
}

Status BindNode(SqliteStatement& stmt, const Node& node) {
  GF_ASSIGN_OR_RETURN(std::string gpus, EncodeGpus(node.gpus));
  auto labels = EncodeLabels(node.labels);
  if (!labels.ok()) {
    return InvalidArgument("node '" + node.name.value() + "': " + labels.error().message);
  }
  stmt.BindText(1, node.name.value());
  stmt.BindInt64(2, node.cpus);
  stmt.BindInt64(3, node.memory_mib);
  stmt.BindText(4, ToString(node.state));
  stmt.BindText(5, node.gpu_backend);
  stmt.BindInt64(6, ToUnixMillis(node.last_seen));
  stmt.BindText(7, gpus);
  stmt.BindText(8, *labels);
  return OkStatus();
}

Result<Node> DecodeNode(const SqliteStatement& row) {
  Node node;
  node.name = NodeId(row.Text(0));
  const std::string what = "node '" + node.name.value() + "'";
  GF_ASSIGN_OR_RETURN(node.cpus, Narrow<int>(row.Int64(1), what, "cpus"));
  node.memory_mib = row.Int64(2);
  GF_ASSIGN_OR_RETURN(node.state, FromRow(ParseNodeState(row.Text(3)), what));
  node.gpu_backend = row.Text(4);
  node.last_seen = FromUnixMillis(row.Int64(5));
  GF_ASSIGN_OR_RETURN(node.gpus, DecodeGpus(row.Text(6), what + " gpus"));
  GF_ASSIGN_OR_RETURN(node.labels, DecodeLabels(row.Text(7), what + " labels"));
  return node;
}

}  // namespace gf

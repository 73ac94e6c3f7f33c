#include "store/rows.h"

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "codec/codec.h"
#include "store/validation.h"

namespace gf {

const std::string_view kJobColumns =
    "id, uid, gid, user_name, name, argv, workdir, env, gpus, gpu_type, priority, team, "
    "time_limit_s, state, alloc_node, alloc_gpus, submit_ms, start_ms, end_ms, exit_code, "
    "reason, pid, usage_samples, usage_mean_util_pct, usage_peak_util_pct, "
    "usage_peak_memory_mib, usage_energy_mj, checkpoint_signal, preemptible, node_labels, "
    "after_deps, array_job, array_index, array_max_running, budget_approved, last_checkpoint_ms, "
    "requeue, interactive, idle_reap, gang_job, gang_rank, gang_size, gpu_milli, gpu_memory_mib, "
    "alloc_gpu_milli, alloc_gpu_memory_mib, mig_profile, alloc_mig, held_by, cpus, memory_mib, "
    "host_cpu_ms, host_peak_memory_kib";
const std::string_view kEventColumns = "seq, time_ms, job_id, kind, actor, message";
const std::string_view kNodeColumns =
    "name, cpus, memory_mib, state, gpu_backend, last_seen_ms, gpus, labels, state_reason";
const std::string_view kGpuMinuteColumns =
    "minute_ms, node, uuid, job_id, user_name, team, samples, util_mean_pct, util_max_pct, "
    "memory_used_max_mib, power_mean_w, energy_mj, health, allocated_ms";

const std::string_view kUsageColumns =
    "seq, job_id, start_ms, end_ms, team, user_name, priority, gpus, gpu_models, gpu_seconds, "
    "energy_mj";

const std::string_view kTokenColumns =
    "id, secret_hash, kind, subject, uid, gid, role, description, created_ms, expires_ms, "
    "revoked_ms";

const std::string_view kSubscriptionColumns =
    "id, owner, scope, team, channel, target, kinds, created_ms, job_id";

namespace {

// Column positions in kJobColumns.
struct JobCol {
  static constexpr int kId = 0, kUid = 1, kGid = 2, kUser = 3, kName = 4, kArgv = 5, kWorkdir = 6,
                       kEnv = 7, kGpus = 8, kGpuType = 9, kPriority = 10, kTeam = 11,
                       kTimeLimit = 12, kState = 13, kAllocNode = 14, kAllocGpus = 15, kSubmit = 16,
                       kStart = 17, kEnd = 18, kExitCode = 19, kReason = 20, kPid = 21,
                       kUsageSamples = 22, kUsageMeanUtil = 23, kUsagePeakUtil = 24,
                       kUsagePeakMemory = 25, kUsageEnergy = 26, kCheckpointSignal = 27,
                       kPreemptible = 28, kNodeLabels = 29, kAfter = 30, kArrayJob = 31,
                       kArrayIndex = 32, kArrayMaxRunning = 33, kBudgetApproved = 34,
                       kLastCheckpoint = 35, kRequeue = 36, kInteractive = 37, kIdleReap = 38,
                       kGangJob = 39, kGangRank = 40, kGangSize = 41, kGpuMilli = 42,
                       kGpuMemory = 43, kAllocGpuMilli = 44, kAllocGpuMemory = 45, kMigProfile = 46,
                       kAllocMig = 47, kHeldBy = 48, kCpus = 49, kMemory = 50, kHostCpu = 51,
                       kHostPeakMemory = 52;
};

// Column positions in kUsageColumns.
struct UsageCol {
  static constexpr int kSeq = 0, kJob = 1, kStart = 2, kEnd = 3, kTeam = 4, kUser = 5,
                       kPriority = 6, kGpus = 7, kModels = 8, kGpuSeconds = 9, kEnergy = 10;
};

// Column positions in kGpuMinuteColumns.
struct MinuteCol {
  static constexpr int kMinute = 0, kNode = 1, kUuid = 2, kJob = 3, kUser = 4, kTeam = 5,
                       kSamples = 6, kUtilMean = 7, kUtilMax = 8, kMemoryMax = 9, kPowerMean = 10,
                       kEnergy = 11, kHealth = 12, kAllocatedSamples = 13;
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
    return Internal(row + ": " + std::string(field) + " " + std::to_string(v) + " is out of range");
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

// gang_job decides whether the job is a member of a multi-node job; rank and size must then be
// set too. The request's node count is the gang's size.
Result<std::optional<GangMember>> DecodeGang(const RowSource& row, const std::string& what) {
  const std::optional<std::int64_t> gang_job = row.OptionalInt64(JobCol::kGangJob);
  if (!gang_job.has_value()) {
    return std::optional<GangMember>();
  }
  const std::optional<std::int64_t> rank = row.OptionalInt64(JobCol::kGangRank);
  const std::optional<std::int64_t> size = row.OptionalInt64(JobCol::kGangSize);
  if (!rank.has_value() || !size.has_value()) {
    return Internal(what + ": gang_job is set but gang_rank or gang_size is NULL");
  }
  GangMember gang{.gang_job = JobId(*gang_job)};
  GF_ASSIGN_OR_RETURN(gang.rank, Narrow<int>(*rank, what, "gang_rank"));
  GF_ASSIGN_OR_RETURN(gang.size, Narrow<int>(*size, what, "gang_size"));
  return std::optional<GangMember>(gang);
}

// array_job decides whether the job is an array task; its index must then be set too.
Result<std::optional<ArrayTask>> DecodeArrayTask(const RowSource& row, const std::string& what) {
  const std::optional<std::int64_t> array_job = row.OptionalInt64(JobCol::kArrayJob);
  if (!array_job.has_value()) {
    return std::optional<ArrayTask>();
  }
  const std::optional<std::int64_t> index = row.OptionalInt64(JobCol::kArrayIndex);
  if (!index.has_value()) {
    return Internal(what + ": array_job is set but array_index is NULL");
  }
  ArrayTask task{.array_job = JobId(*array_job)};
  GF_ASSIGN_OR_RETURN(task.index, Narrow<int>(*index, what, "array_index"));
  if (auto max_running = row.OptionalInt64(JobCol::kArrayMaxRunning)) {
    GF_ASSIGN_OR_RETURN(task.max_running, Narrow<int>(*max_running, what, "array_max_running"));
  }
  return std::optional<ArrayTask>(task);
}

// Parameters ?31..?50 of kUpsertJobSql: what schema v4 added, v7's requeue, v8's
// interactive and idle_reap, v9's gang, v10's GPU fraction (request and allocation), v11's MIG,
// v12's hold.
Status BindV4Fields(ParamSink& stmt, const Job& job) {
  const JobSpec& spec = job.spec;
  auto labels = EncodeLabels(spec.request.node_labels);
  if (!labels.ok()) {
    return InvalidArgument("job " + std::to_string(job.id.value()) +
                           " node_labels: " + labels.error().message);
  }
  GF_ASSIGN_OR_RETURN(std::string after, EncodeDependencies(spec.after));
  stmt.BindText(31, *labels);
  stmt.BindText(32, after);
  if (spec.array.has_value()) {
    stmt.BindInt64(33, spec.array->array_job.value());
    stmt.BindInt64(34, spec.array->index);
    stmt.BindOptionalInt64(35, spec.array->max_running);
  } else {
    for (int index = 33; index <= 35; ++index) {
      stmt.BindNull(index);
    }
  }
  stmt.BindInt64(36, job.budget_approved ? 1 : 0);
  stmt.BindOptionalInt64(37, OptionalMillis(job.last_checkpoint));
  stmt.BindInt64(38, spec.requeue ? 1 : 0);      // schema v7
  stmt.BindInt64(39, spec.interactive ? 1 : 0);  // schema v8
  stmt.BindInt64(40, spec.idle_reap ? 1 : 0);
  if (spec.gang.has_value()) {  // schema v9
    stmt.BindInt64(41, spec.gang->gang_job.value());
    stmt.BindInt64(42, spec.gang->rank);
    stmt.BindInt64(43, spec.gang->size);
  } else {
    for (int index = 41; index <= 43; ++index) {
      stmt.BindNull(index);
    }
  }
  stmt.BindInt64(44, spec.request.gpu_milli);  // schema v10
  stmt.BindInt64(45, spec.request.gpu_memory_mib);
  // A job without an allocation stores the column defaults (the whole GPU).
  const Allocation whole;
  const Allocation& held = job.allocation.has_value() ? *job.allocation : whole;
  stmt.BindInt64(46, held.gpu_milli);
  stmt.BindInt64(47, held.gpu_memory_mib);
  stmt.BindText(48, spec.request.mig_profile);  // schema v11
  stmt.BindText(49, held.mig.value());
  stmt.BindText(50, job.held_by);         // schema v12
  stmt.BindInt64(51, spec.request.cpus);  // schema v13
  stmt.BindInt64(52, spec.request.memory_mib);
  if (job.host_usage) {  // schema v14: both or neither
    stmt.BindInt64(53, job.host_usage->cpu_ms);
    stmt.BindInt64(54, job.host_usage->peak_memory_kib);
  } else {
    stmt.BindNull(53);
    stmt.BindNull(54);
  }
  return OkStatus();
}

Result<JobSpec> DecodeSpec(const RowSource& row, const std::string& what) {
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
  GF_ASSIGN_OR_RETURN(spec.checkpoint_signal,
                      Narrow<int>(row.Int64(JobCol::kCheckpointSignal), what, "checkpoint_signal"));
  GF_ASSIGN_OR_RETURN(spec.request.node_labels,
                      DecodeLabels(row.Text(JobCol::kNodeLabels), what + " node_labels"));
  GF_ASSIGN_OR_RETURN(spec.after, DecodeDependencies(row.Text(JobCol::kAfter), what + " after"));
  GF_ASSIGN_OR_RETURN(spec.array, DecodeArrayTask(row, what));
  spec.requeue = row.Int64(JobCol::kRequeue) != 0;
  spec.interactive = row.Int64(JobCol::kInteractive) != 0;
  spec.idle_reap = row.Int64(JobCol::kIdleReap) != 0;
  GF_ASSIGN_OR_RETURN(spec.gang, DecodeGang(row, what));
  spec.request.nodes = spec.gang.has_value() ? spec.gang->size : 1;
  GF_ASSIGN_OR_RETURN(spec.request.gpu_milli,
                      Narrow<int>(row.Int64(JobCol::kGpuMilli), what, "gpu_milli"));
  spec.request.gpu_memory_mib = row.Int64(JobCol::kGpuMemory);
  spec.request.mig_profile = row.Text(JobCol::kMigProfile);
  GF_ASSIGN_OR_RETURN(spec.request.cpus, Narrow<int>(row.Int64(JobCol::kCpus), what, "cpus"));
  spec.request.memory_mib = row.Int64(JobCol::kMemory);
  return spec;
}

// Parameters ?24..?28 of kUpsertJobSql: all NULL when the job has no usage.
void BindUsage(ParamSink& stmt, const std::optional<JobUsage>& usage) {
  if (!usage.has_value()) {
    for (int index = 24; index <= 28; ++index) {
      stmt.BindNull(index);
    }
    return;
  }
  stmt.BindInt64(24, usage->samples);
  stmt.BindDouble(25, usage->mean_util_pct);
  stmt.BindInt64(26, usage->peak_util_pct);
  stmt.BindInt64(27, usage->peak_memory_mib);
  stmt.BindInt64(28, usage->energy_mj);
}

// usage_samples decides whether the job has usage; the other columns must then be set too
// (BindUsage writes them together), or the row was not written by us.
Result<std::optional<JobUsage>> DecodeUsage(const RowSource& row, const std::string& what) {
  if (row.IsNull(JobCol::kUsageSamples)) {
    return std::optional<JobUsage>();
  }
  struct NamedColumn {
    int index;
    std::string_view name;
  };
  constexpr std::array<NamedColumn, 4> kRest = {{
      {JobCol::kUsageMeanUtil, "usage_mean_util_pct"},
      {JobCol::kUsagePeakUtil, "usage_peak_util_pct"},
      {JobCol::kUsagePeakMemory, "usage_peak_memory_mib"},
      {JobCol::kUsageEnergy, "usage_energy_mj"},
  }};
  for (const NamedColumn& column : kRest) {
    if (row.IsNull(column.index)) {
      return Internal(what + ": usage_samples is set but " + std::string(column.name) + " is NULL");
    }
  }
  JobUsage usage;
  usage.samples = row.Int64(JobCol::kUsageSamples);
  usage.mean_util_pct = row.Double(JobCol::kUsageMeanUtil);
  GF_ASSIGN_OR_RETURN(usage.peak_util_pct,
                      Narrow<int>(row.Int64(JobCol::kUsagePeakUtil), what, "usage_peak_util_pct"));
  usage.peak_memory_mib = row.Int64(JobCol::kUsagePeakMemory);
  usage.energy_mj = row.Int64(JobCol::kUsageEnergy);
  return std::optional<JobUsage>(usage);
}

}  // namespace

Status BindJob(ParamSink& stmt, const Job& job) {
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
  BindUsage(stmt, job.usage);
  stmt.BindInt64(29, spec.checkpoint_signal);
  stmt.BindInt64(30, job.preemptible ? 1 : 0);
  return BindV4Fields(stmt, job);
}

Result<Job> DecodeJob(const RowSource& row) {
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
    GF_ASSIGN_OR_RETURN(
        allocation.gpus,
        DecodeGpuUuids(row.OptionalText(JobCol::kAllocGpus).value_or("[]"), what + " allocation"));
    GF_ASSIGN_OR_RETURN(allocation.gpu_milli,
                        Narrow<int>(row.Int64(JobCol::kAllocGpuMilli), what, "alloc_gpu_milli"));
    allocation.gpu_memory_mib = row.Int64(JobCol::kAllocGpuMemory);
    allocation.mig = GpuUuid(row.Text(JobCol::kAllocMig));
    // An allocation holds its request's host CPUs and memory (the schema keeps them once).
    allocation.cpus = job.spec.request.cpus;
    allocation.memory_mib = job.spec.request.memory_mib;
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
  job.preemptible = row.Int64(JobCol::kPreemptible) != 0;
  job.budget_approved = row.Int64(JobCol::kBudgetApproved) != 0;
  job.held_by = row.Text(JobCol::kHeldBy);
  job.last_checkpoint = OptionalTime(row.OptionalInt64(JobCol::kLastCheckpoint));
  GF_ASSIGN_OR_RETURN(job.usage, DecodeUsage(row, what));
  if (const std::optional<std::int64_t> cpu_ms = row.OptionalInt64(JobCol::kHostCpu)) {
    const std::optional<std::int64_t> peak = row.OptionalInt64(JobCol::kHostPeakMemory);
    if (!peak) {
      return Internal(what + ": host_cpu_ms is set but host_peak_memory_kib is NULL");
    }
    job.host_usage = HostUsage{.cpu_ms = *cpu_ms, .peak_memory_kib = *peak};
  }
  return job;
}

void BindEvent(ParamSink& stmt, const Event& event) {
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

Event DecodeEvent(const RowSource& row) {
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

Status BindNode(ParamSink& stmt, const Node& node) {
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
  stmt.BindText(9, node.state_reason);
  return OkStatus();
}

Result<Node> DecodeNode(const RowSource& row) {
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
  node.state_reason = row.Text(8);
  return node;
}

void BindGpuMinute(ParamSink& stmt, const GpuMinute& row) {
  stmt.BindInt64(1, ToUnixMillis(row.minute));
  stmt.BindText(2, row.node.value());
  stmt.BindText(3, row.uuid.value());
  if (row.job.has_value()) {
    stmt.BindInt64(4, row.job->value());
  } else {
    stmt.BindNull(4);
  }
  stmt.BindText(5, row.user);
  stmt.BindText(6, row.team);
  stmt.BindInt64(7, row.samples);
  stmt.BindDouble(8, row.util_mean_pct);
  stmt.BindInt64(9, row.util_max_pct);
  stmt.BindInt64(10, row.memory_used_max_mib);
  stmt.BindDouble(11, row.power_mean_w);
  stmt.BindInt64(12, row.energy_mj);
  stmt.BindText(13, ToString(row.health));
  stmt.BindInt64(14, row.allocated_ms);
}

Result<GpuMinute> DecodeGpuMinute(const RowSource& row) {
  GpuMinute minute;
  minute.minute = FromUnixMillis(row.Int64(MinuteCol::kMinute));
  minute.node = NodeId(row.Text(MinuteCol::kNode));
  minute.uuid = GpuUuid(row.Text(MinuteCol::kUuid));
  const std::string what = "gpu minute (GPU '" + minute.uuid.value() + "', minute " +
                           std::to_string(ToUnixMillis(minute.minute)) + " ms)";
  if (auto job = row.OptionalInt64(MinuteCol::kJob)) {
    minute.job = JobId(*job);
  }
  minute.user = row.Text(MinuteCol::kUser);
  minute.team = row.Text(MinuteCol::kTeam);
  GF_ASSIGN_OR_RETURN(minute.samples, Narrow<int>(row.Int64(MinuteCol::kSamples), what, "samples"));
  minute.util_mean_pct = row.Double(MinuteCol::kUtilMean);
  GF_ASSIGN_OR_RETURN(minute.util_max_pct,
                      Narrow<int>(row.Int64(MinuteCol::kUtilMax), what, "util_max_pct"));
  minute.memory_used_max_mib = row.Int64(MinuteCol::kMemoryMax);
  minute.power_mean_w = row.Double(MinuteCol::kPowerMean);
  minute.energy_mj = row.Int64(MinuteCol::kEnergy);
  GF_ASSIGN_OR_RETURN(minute.health, FromRow(ParseGpuHealth(row.Text(MinuteCol::kHealth)), what));
  // A row from before schema 16 has none: its holder was counted for the whole minute.
  const std::optional<std::int64_t> allocated = row.OptionalInt64(MinuteCol::kAllocatedSamples);
  GF_ASSIGN_OR_RETURN(
      minute.allocated_ms,
      Narrow<int>(
          allocated.value_or(minute.job ? kGpuMinuteLength.count() : 0), what, "allocated_ms"));
  return minute;
}

Status BindUsageRecord(ParamSink& stmt, const UsageRecord& record) {
  GF_ASSIGN_OR_RETURN(std::string models, EncodeStrings(record.gpu_models));
  stmt.BindInt64(1, record.job.value());
  stmt.BindInt64(2, ToUnixMillis(record.start));
  stmt.BindInt64(3, ToUnixMillis(record.end));
  stmt.BindText(4, record.team);
  stmt.BindText(5, record.user);
  stmt.BindText(6, record.priority);
  stmt.BindInt64(7, record.gpus);
  stmt.BindText(8, models);
  stmt.BindDouble(9, record.gpu_seconds);
  stmt.BindInt64(10, record.energy_mj);
  return OkStatus();
}

Result<UsageRecord> DecodeUsageRecord(const RowSource& row) {
  UsageRecord record;
  record.seq = row.Int64(UsageCol::kSeq);
  const std::string what = "usage record " + std::to_string(record.seq);
  record.job = JobId(row.Int64(UsageCol::kJob));
  record.start = FromUnixMillis(row.Int64(UsageCol::kStart));
  record.end = FromUnixMillis(row.Int64(UsageCol::kEnd));
  record.team = row.Text(UsageCol::kTeam);
  record.user = row.Text(UsageCol::kUser);
  record.priority = row.Text(UsageCol::kPriority);
  GF_ASSIGN_OR_RETURN(record.gpus, Narrow<int>(row.Int64(UsageCol::kGpus), what, "gpus"));
  GF_ASSIGN_OR_RETURN(record.gpu_models,
                      DecodeStrings(row.Text(UsageCol::kModels), what + " gpu_models"));
  record.gpu_seconds = row.Double(UsageCol::kGpuSeconds);
  record.energy_mj = row.Int64(UsageCol::kEnergy);
  return record;
}

void BindToken(ParamSink& stmt, const ApiToken& token) {
  stmt.BindText(1, token.id);
  stmt.BindText(2, token.secret_hash);
  stmt.BindText(3, ToString(token.kind));
  stmt.BindText(4, token.subject);
  stmt.BindInt64(5, token.uid);
  stmt.BindInt64(6, token.gid);
  stmt.BindText(7, ToString(token.role));
  stmt.BindText(8, token.description);
  stmt.BindInt64(9, ToUnixMillis(token.created));
  stmt.BindOptionalInt64(10, OptionalMillis(token.expires));
  stmt.BindOptionalInt64(11, OptionalMillis(token.revoked));
}

Result<ApiToken> DecodeToken(const RowSource& row) {
  ApiToken token;
  token.id = row.Text(0);
  const std::string what = "token '" + token.id + "'";
  token.secret_hash = row.Text(1);
  GF_ASSIGN_OR_RETURN(token.kind, FromRow(ParseTokenKind(row.Text(2)), what));
  token.subject = row.Text(3);
  GF_ASSIGN_OR_RETURN(token.uid, Narrow<std::uint32_t>(row.Int64(4), what, "uid"));
  GF_ASSIGN_OR_RETURN(token.gid, Narrow<std::uint32_t>(row.Int64(5), what, "gid"));
  GF_ASSIGN_OR_RETURN(token.role, FromRow(ParseRole(row.Text(6)), what));
  token.description = row.Text(7);
  token.created = FromUnixMillis(row.Int64(8));
  token.expires = OptionalTime(row.OptionalInt64(9));
  token.revoked = OptionalTime(row.OptionalInt64(10));
  return token;
}

void BindSubscription(ParamSink& stmt, const Subscription& sub) {
  stmt.BindText(1, sub.id);
  stmt.BindText(2, sub.owner);
  stmt.BindText(3, std::string(ToString(sub.scope)));
  stmt.BindText(4, sub.team);
  stmt.BindText(5, std::string(ToString(sub.channel)));
  stmt.BindText(6, sub.target);
  stmt.BindText(7, JoinNotifyKinds(sub.kinds));  // "" = every kind
  stmt.BindInt64(8, ToUnixMillis(sub.created));
  stmt.BindOptionalInt64(
      9, sub.job ? std::optional<std::int64_t>(sub.job->value()) : std::optional<std::int64_t>());
}

Result<Subscription> DecodeSubscription(const RowSource& row) {
  Subscription sub;
  sub.id = row.Text(0);
  const std::string what = "subscription '" + sub.id + "'";
  sub.owner = row.Text(1);
  GF_ASSIGN_OR_RETURN(sub.scope, FromRow(ParseSubscriptionScope(row.Text(2)), what));
  sub.team = row.Text(3);
  GF_ASSIGN_OR_RETURN(sub.channel, FromRow(ParseNotifyChannel(row.Text(4)), what));
  sub.target = row.Text(5);
  GF_ASSIGN_OR_RETURN(sub.kinds, FromRow(ParseNotifyKinds(row.Text(6)), what));
  sub.created = FromUnixMillis(row.Int64(7));
  if (const std::optional<std::int64_t> job = row.OptionalInt64(8)) {
    sub.job = JobId(*job);
  }
  return sub;
}

namespace {

// One condition of ListJobHistory's WHERE: its SQL with a bare '?' for each parameter, and a
// binder per parameter, in order.
struct HistoryTerm {
  std::string sql;
  std::vector<std::function<void(ParamSink&, int)>> binds;
};

// The terms of the filters of `query` that are set, in one order, so that JobHistorySql numbers
// the parameters as BindJobHistory sets them.
std::vector<HistoryTerm> HistoryTerms(const JobHistoryQuery& query) {
  std::vector<HistoryTerm> terms;
  if (query.uid) {
    terms.push_back({"uid = ?", {[&](ParamSink& s, int i) {
                       s.BindInt64(i, *query.uid);
                     }}});
  }
  if (query.user) {
    terms.push_back({"user_name = ?", {[&](ParamSink& s, int i) {
                       s.BindText(i, *query.user);
                     }}});
  }
  if (query.team) {
    terms.push_back({"team = ?", {[&](ParamSink& s, int i) {
                       s.BindText(i, *query.team);
                     }}});
  }
  if (!query.states.empty()) {
    HistoryTerm in{.sql = "state IN (", .binds = {}};
    for (const JobState state : query.states) {
      in.sql += in.binds.empty() ? "?" : ", ?";
      in.binds.emplace_back([state](ParamSink& s, int i) { s.BindText(i, ToString(state)); });
    }
    in.sql += ")";
    terms.push_back(std::move(in));
  }
  if (query.since) {
    terms.push_back({"(end_ms IS NULL OR end_ms >= ?)", {[&](ParamSink& s, int i) {
                       s.BindInt64(i, ToUnixMillis(*query.since));
                     }}});
  }
  if (query.until) {
    terms.push_back({"submit_ms < ?", {[&](ParamSink& s, int i) {
                       s.BindInt64(i, ToUnixMillis(*query.until));
                     }}});
  }
  if (query.before) {
    terms.push_back({"id < ?", {[&](ParamSink& s, int i) {
                       s.BindInt64(i, query.before->value());
                     }}});
  }
  return terms;
}

}  // namespace

std::string JobHistorySql(const JobHistoryQuery& query) {
  std::string sql = "SELECT " + std::string(kJobColumns) + " FROM jobs";
  int index = 1;
  for (const HistoryTerm& term : HistoryTerms(query)) {
    sql += index == 1 ? " WHERE " : " AND ";
    for (const char c : term.sql) {
      sql += c;
      if (c == '?') {
        sql += std::to_string(index++);
      }
    }
  }
  return sql + " ORDER BY id DESC LIMIT ?" + std::to_string(index);
}

void BindJobHistory(ParamSink& stmt, const JobHistoryQuery& query) {
  int index = 1;
  for (const HistoryTerm& term : HistoryTerms(query)) {
    for (const auto& bind : term.binds) {
      bind(stmt, index++);
    }
  }
  stmt.BindInt64(index, query.limit);
}

Status ValidateJobHistoryQuery(const JobHistoryQuery& query) {
  if (query.limit <= 0) {
    return InvalidArgument("job history: limit must be positive, got " +
                           std::to_string(query.limit));
  }
  if (query.since && query.until && *query.until < *query.since) {
    return InvalidArgument("job history: until is before since");
  }
  return OkStatus();
}

}  // namespace gf

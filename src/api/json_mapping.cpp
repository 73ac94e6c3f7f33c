#include "api/json_mapping.h"

#include <array>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

#include "core/duration.h"
#include "json/json_text.h"

namespace gf {
namespace {

using nlohmann::json;

struct CodeName {
  ErrorCode code;
  std::string_view name;
};
constexpr std::array<CodeName, 9> kCodeNames = {{
    {ErrorCode::kInvalidArgument, "invalid_argument"},
    {ErrorCode::kNotFound, "not_found"},
    {ErrorCode::kAlreadyExists, "already_exists"},
    {ErrorCode::kPermissionDenied, "permission_denied"},
    {ErrorCode::kFailedPrecondition, "failed_precondition"},
    {ErrorCode::kResourceExhausted, "resource_exhausted"},
    {ErrorCode::kUnavailable, "unavailable"},
    {ErrorCode::kIo, "io"},
    {ErrorCode::kInternal, "internal"},
}};

json OptionalTime(const std::optional<Time>& t) {
  return t ? json(FormatRfc3339(*t)) : json();
}
json OptionalMillis(const std::optional<Time>& t) {
  return t ? json(ToUnixMillis(*t)) : json();
}
template <typename T>
json OptionalValue(const std::optional<T>& v) {
  return v ? json(*v) : json();
}

json OptionalId(const std::optional<JobId>& id) {
  return id ? json(id->value()) : json();
}

// Milli-GPUs as GPUs: an integer when whole (2000 → 2), else a number (250 → 0.25).
json GpuAmountJson(std::int64_t milli) {
  return milli % kWholeGpuMilli == 0 ? json(milli / kWholeGpuMilli)
                                     : json(static_cast<double>(milli) / kWholeGpuMilli);
}

// A request's share of one GPU (issue #7): null when not asked (0), else as GpuAmountJson.
json GpuShareJson(int milli) {
  return milli > 0 ? GpuAmountJson(milli) : json();
}
// GPU memory in MiB: null when not asked or not limited (0: the whole GPU's).
json GpuMemJson(std::int64_t mib) {
  return mib > 0 ? json(mib) : json();
}

constexpr double kMillijoulesPerJoule = 1000.0;
constexpr double kJoulesPerKwh = 3.6e6;

json XidsToJson(const std::vector<XidEvent>& xids) {
  json out = json::array();
  for (const auto& x : xids) {
    out.push_back(
        json{{"xid", x.xid}, {"time", FormatRfc3339(x.time)}, {"time_ms", ToUnixMillis(x.time)}});
  }
  return out;
}

json EccToJson(const EccCounters& ecc) {
  return json{{"volatile_corrected", OptionalValue(ecc.volatile_corrected)},
              {"volatile_uncorrected", OptionalValue(ecc.volatile_uncorrected)},
              {"aggregate_corrected", OptionalValue(ecc.aggregate_corrected)},
              {"aggregate_uncorrected", OptionalValue(ecc.aggregate_uncorrected)}};
}

json RemappedRowsToJson(const RemappedRows& rows) {
  return json{{"correctable", rows.correctable},
              {"uncorrectable", rows.uncorrectable},
              {"pending", rows.pending},
              {"failure", rows.failure}};
}

json MigInstanceToJson(const MigInstance& m) {
  return json{{"profile", m.profile},
              {"uuid", m.uuid.value()},
              {"gpu_instance_id", m.gpu_instance_id},
              {"compute_instance_id", m.compute_instance_id},
              {"slices", m.slices},
              {"memory_mib", m.memory_mib}};
}

json ProcessesToJson(const std::vector<GpuProcessSample>& processes) {
  json out = json::array();
  for (const auto& p : processes) {
    out.push_back(
        json{{"pid", p.pid},
             {"used_memory_mib", OptionalValue(p.used_memory_mib)},
             {"sm_util_pct", OptionalValue(p.sm_util_pct)},
             {"mem_util_pct", OptionalValue(p.mem_util_pct)},
             {"job", OptionalId(p.job)},
             {"uid", OptionalValue(p.uid)},
             {"user", p.user},
             {"unmanaged", p.unmanaged},
             {"mig_uuid", p.mig_uuid.value().empty() ? json() : json(p.mig_uuid.value())}});
  }
  return out;
}

// The offending value as the user sent it, shortened so that a huge body cannot make a huge
// error message. A bounded preview (json/json_text.h), never a whole dump(): the value may be a
// 1 MiB array, and only its first 60 bytes are shown. Cut at a UTF-8 character boundary: half
// a character would make the error message itself invalid JSON text
// (tests/fuzz/regressions/job_spec).
std::string Shown(const json& value) {
  return JsonPreview(value, 60);
}

Error FieldError(std::string_view field, std::string_view must, const json& got) {
  return InvalidArgument(std::string(field) + ": must be " + std::string(must) + ", got " +
                         Shown(got));
}

Result<std::string> StringField(std::string_view field, const json& v) {
  if (!v.is_string()) {
    return FieldError(field, "a string", v);
  }
  GF_TRY(NoNulByte(field, v.get_ref<const std::string&>()));
  return v.get<std::string>();
}

// A boolean only: "false" or 0 from a script that meant something else would silently flip
// what happens to the job. `must` says what the values mean.
Result<bool> BoolField(std::string_view field, const json& v, std::string_view must) {
  if (!v.is_boolean()) {
    return FieldError(field, must, v);
  }
  return v.get<bool>();
}

Result<std::vector<std::string>> CommandField(const json& v) {
  constexpr std::string_view kMust = "a non-empty array of strings (the argv)";
  if (!v.is_array() || v.empty()) {
    return FieldError("command", kMust, v);
  }
  std::vector<std::string> argv;
  for (std::size_t i = 0; i < v.size(); ++i) {
    GF_ASSIGN_OR_RETURN(std::string arg, StringField("command[" + std::to_string(i) + "]", v[i]));
    argv.push_back(std::move(arg));
  }
  return argv;
}

Result<std::vector<std::pair<std::string, std::string>>> EnvField(const json& v) {
  if (!v.is_object()) {
    return FieldError("env", "an object of strings, e.g. {\"NCCL_DEBUG\": \"INFO\"}", v);
  }
  std::vector<std::pair<std::string, std::string>> env;
  for (const auto& [key, value] : v.items()) {
    GF_TRY(NoNulByte("env: the name \"" + key + "\"", key));
    GF_ASSIGN_OR_RETURN(std::string text, StringField("env." + key, value));
    env.emplace_back(key, std::move(text));
  }
  return env;
}

// A whole JSON number as int64, or nullopt (fractions, strings, values beyond int64). Parsed
// text gives unsigned numbers, json built in C++ signed ones: accept both.
std::optional<std::int64_t> WholeNumber(const json& v) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    return u <= static_cast<std::uint64_t>(INT64_MAX)
               ? std::optional<std::int64_t>(static_cast<std::int64_t>(u))
               : std::nullopt;
  }
  if (v.is_number_integer()) {
    return v.get<std::int64_t>();
  }
  return std::nullopt;
}

Result<int> GpusField(const json& v) {
  const auto n = WholeNumber(v);
  if (!n || *n < 0) {
    return FieldError("gpus", "a whole number ≥ 0", v);
  }
  if (*n > 1'000'000) {
    return FieldError("gpus", "at most 1000000", v);
  }
  return static_cast<int>(*n);
}

Result<int> NodesField(const json& v) {
  const auto n = WholeNumber(v);
  if (!n || *n < 1 || *n > 1024) {
    return FieldError("nodes", "a whole number from 1 to 1024 (nodes, each with `gpus` GPUs)", v);
  }
  return static_cast<int>(*n);
}

Result<std::chrono::seconds> TimeLimitField(const json& v) {
  constexpr std::string_view kMust = "a duration like \"2h\" or \"1-12:00:00\", or seconds > 0";
  if (v.is_string()) {
    auto parsed = ParseDuration(v.get<std::string>());
    if (!parsed.ok()) {
      return InvalidArgument("time_limit: " + parsed.error().message);
    }
    return *parsed;
  }
  constexpr std::int64_t kMaxSeconds = 100LL * 365 * 24 * 3600;
  const auto n = WholeNumber(v);
  if (!n || *n <= 0 || *n > kMaxSeconds) {
    return FieldError("time_limit", kMust, v);
  }
  return std::chrono::seconds(*n);
}

// "USR1", "SIGUSR1" or 10.
Result<int> CheckpointSignalField(const json& v) {
  std::optional<Result<int>> parsed;
  if (v.is_string()) {
    parsed = ParseCheckpointSignal(v.get<std::string>());
  } else if (const auto n = WholeNumber(v); n && *n <= INT32_MAX) {
    parsed = ParseCheckpointSignal(std::to_string(*n));
  }
  if (!parsed || !parsed->ok()) {
    return FieldError("checkpoint_signal",
                      "a catchable signal name or number: HUP, INT, QUIT, USR1, USR2, ALRM, TERM",
                      v);
  }
  return **parsed;
}

// [{"job": 12, "kind": "ok"}, {"job": 13}]: kind "any" (the default) or "ok".
Result<std::vector<Dependency>> AfterField(const json& v) {
  constexpr std::string_view kMust = "an array of {\"job\": ID, \"kind\": \"any\" | \"ok\"}";
  if (!v.is_array()) {
    return FieldError("after", kMust, v);
  }
  std::vector<Dependency> after;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string field = "after[" + std::to_string(i) + "]";
    const json& item = v[i];
    if (!item.is_object() || !item.contains("job")) {
      return FieldError(field, "an object with a \"job\" id", item);
    }
    Dependency d;
    for (const auto& [key, value] : item.items()) {
      if (key == "job") {
        const auto id = WholeNumber(value);
        if (!id || *id <= 0) {
          return FieldError(field + ".job", "a job id (a whole number > 0)", value);
        }
        d.job = JobId(*id);
      } else if (key == "kind") {
        if (value != "any" && value != "ok") {
          return FieldError(field + ".kind",
                            "\"any\" (ends in any way) or \"ok\" (completes "
                            "with exit code 0)",
                            value);
        }
        d.kind = value == "ok" ? DependencyKind::kOk : DependencyKind::kAny;
      } else {
        return InvalidArgument("unknown field \"" + key + "\" in " + field +
                               "; known fields: job, kind");
      }
    }
    after.push_back(d);
  }
  return after;
}

// {"indices": [0, 1, 2], "max_running": 4 | null}. Ranges and counts are the service's
// (ValidateArrayRequest); here only the shape, with a bound so that a huge body fails fast.
Result<ArrayRequest> ArrayField(const json& v) {
  if (!v.is_object() || !v.contains("indices")) {
    return FieldError("array", "an object {\"indices\": [0, 1, ...], \"max_running\": N}", v);
  }
  ArrayRequest array;
  for (const auto& [key, value] : v.items()) {
    if (key == "indices") {
      if (!value.is_array() || value.size() > static_cast<std::size_t>(kMaxArrayTasks)) {
        return FieldError("array.indices", "an array of at most 10000 task indices", value);
      }
      for (const json& index : value) {
        const auto n = WholeNumber(index);
        if (!n || *n < 0 || *n > kMaxArrayIndex) {
          return FieldError("array.indices", "whole numbers from 0 to 9999999", index);
        }
        array.indices.push_back(static_cast<int>(*n));
      }
    } else if (key == "max_running") {
      if (!value.is_null()) {
        const auto n = WholeNumber(value);
        if (!n || *n < 1 || *n > kMaxArrayTasks) {
          return FieldError("array.max_running", "null or a whole number from 1 to 10000", value);
        }
        array.max_running = static_cast<int>(*n);
      }
    } else {
      return InvalidArgument("unknown field \"" + key +
                             "\" in array; known fields: indices, max_running");
    }
  }
  return array;
}

// {"rack": "a", "zone": "x"}: the node labels a job needs (strings; checked by ValidateSpec).
Result<std::map<std::string, std::string>> NodeLabelsField(const json& v) {
  constexpr std::string_view kMust = "an object of label strings, e.g. {\"rack\": \"a\"}";
  if (!v.is_object()) {
    return FieldError("node_labels", kMust, v);
  }
  std::map<std::string, std::string> labels;
  for (const auto& [key, value] : v.items()) {
    if (!value.is_string()) {
      return FieldError("node_labels." + key, "a string", value);
    }
    labels[key] = value.get<std::string>();
  }
  return labels;
}

// -1 (unknown) as null.
json KnownOrNull(int value) {
  return value >= 0 ? json(value) : json();
}

// "gpu_share": 0.25 or "0.25" (a part of one GPU, issue #7); null = not asked. A number is read
// through its JSON text so that both forms take ParseGpuShare's exact decimal rules (at most
// three decimals: 0.1 is 100 milli, never 99 from a binary fraction).
Result<int> GpuShareField(const json& v) {
  if (v.is_null()) {
    return 0;
  }
  if (!v.is_number() && !v.is_string()) {
    return FieldError("gpu_share", "a number from 0.001 to 1 (e.g. 0.25) or its text", v);
  }
  auto milli = ParseGpuShare(v.is_string() ? v.get<std::string>() : v.dump(), "gpu_share");
  if (!milli.ok()) {
    return milli.error();
  }
  return *milli;
}

// "gpu_mem": "20G" (binary units, MiB when none), or "gpu_mem_mib": 20480; null = not asked.
Result<std::int64_t> GpuMemField(const std::string& key, const json& v) {
  if (v.is_null()) {
    return 0;
  }
  if (key == "gpu_mem_mib") {
    const auto n = WholeNumber(v);
    if (!n || *n <= 0) {
      return FieldError(key, "a whole number of MiB > 0 (or \"gpu_mem\": \"20G\")", v);
    }
    return *n;
  }
  if (!v.is_string()) {
    return FieldError(key, "a memory size like \"20G\" or \"512M\" (or \"gpu_mem_mib\": 20480)", v);
  }
  auto mib = ParseMemoryMib(v.get<std::string>(), key);
  if (!mib.ok()) {
    return mib.error();
  }
  return *mib;
}

// Applies one field of a submission body to `spec`.
Status ApplySpecField(const std::string& key, const json& v, JobSpec& spec) {
  if (key == "command") {
    GF_ASSIGN_OR_RETURN(spec.argv, CommandField(v));
  } else if (key == "name") {
    GF_ASSIGN_OR_RETURN(spec.name, StringField(key, v));
  } else if (key == "workdir") {
    GF_ASSIGN_OR_RETURN(spec.workdir, StringField(key, v));
  } else if (key == "team") {
    GF_ASSIGN_OR_RETURN(spec.team, StringField(key, v));
  } else if (key == "env") {
    GF_ASSIGN_OR_RETURN(spec.env, EnvField(v));
  } else if (key == "gpus") {
    GF_ASSIGN_OR_RETURN(spec.request.gpus, GpusField(v));
  } else if (key == "nodes") {
    GF_ASSIGN_OR_RETURN(spec.request.nodes, NodesField(v));
  } else if (key == "gpu_share") {
    GF_ASSIGN_OR_RETURN(spec.request.gpu_milli, GpuShareField(v));
  } else if (key == "gpu_mem" || key == "gpu_mem_mib") {
    GF_ASSIGN_OR_RETURN(spec.request.gpu_memory_mib, GpuMemField(key, v));
  } else if (key == "mig") {
    if (!v.is_null()) {
      GF_ASSIGN_OR_RETURN(spec.request.mig_profile, StringField(key, v));
    }
  } else if (key == "gpu_type") {
    if (!v.is_null()) {
      GF_ASSIGN_OR_RETURN(spec.request.gpu_type, StringField(key, v));
    }
  } else if (key == "priority") {
    // The name's syntax only: which classes exist is the server's config (the service checks).
    auto parsed = v.is_string() ? ParsePriorityClass(v.get<std::string>())
                                : Result<PriorityClass>(InvalidArgument(""));
    if (!parsed.ok()) {
      return FieldError(key,
                        "a class name (1 to 32 lower-case letters, digits, '-' or '_', e.g. "
                        "\"high\")",
                        v);
    }
    spec.priority = *parsed;
  } else if (key == "time_limit") {
    GF_ASSIGN_OR_RETURN(spec.time_limit, TimeLimitField(v));
  } else if (key == "checkpoint_signal") {
    GF_ASSIGN_OR_RETURN(spec.checkpoint_signal, CheckpointSignalField(v));
  } else if (key == "after") {
    GF_ASSIGN_OR_RETURN(spec.after, AfterField(v));
  } else if (key == "node_labels") {
    GF_ASSIGN_OR_RETURN(spec.request.node_labels, NodeLabelsField(v));
  } else if (key == "requeue") {
    // "false" or 0 from a script that meant true would be a job run twice.
    GF_ASSIGN_OR_RETURN(spec.requeue,
                        BoolField(key,
                                  v,
                                  "true (back to the queue when preempted or its node fails) or "
                                  "false (it ends instead; gpufleet submit --no-requeue)"));
  } else if (key == "interactive") {
    GF_ASSIGN_OR_RETURN(spec.interactive,
                        BoolField(key, v, "true (gpufleet submit --interactive) or false"));
  } else if (key == "idle_reap") {
    GF_ASSIGN_OR_RETURN(spec.idle_reap,
                        BoolField(key, v, "false (gpufleet submit --no-reap) or true"));
  } else {
    return InvalidArgument("unknown field \"" + key +
                           "\" in job spec; known fields: command, name, workdir, env, gpus, "
                           "nodes, gpu_share, gpu_mem, gpu_mem_mib, mig, gpu_type, node_labels, "
                           "priority, team, time_limit, checkpoint_signal, after, "
                           "requeue, interactive, idle_reap, array");
  }
  return OkStatus();
}

}  // namespace

// The strings of a job spec become C strings (exec's argv, the environment, chdir's path, names
// in logs), and so do an admin body's (a subscription's e-mail address on sendmail's command
// line, a drain reason in the log): a NUL byte inside one would silently cut it there, and the
// daemon would act on something other than what was sent. JSON can carry one ("\u0000").
Status NoNulByte(std::string_view field, std::string_view text) {
  if (text.find('\0') != std::string_view::npos) {
    return InvalidArgument(std::string(field) +
                           ": contains a NUL byte (\\u0000), which would cut it short where it "
                           "becomes a C string (exec, environment, path); remove it");
  }
  return OkStatus();
}

std::string_view ErrorCodeName(ErrorCode code) {
  for (const auto& entry : kCodeNames) {
    if (entry.code == code) {
      return entry.name;
    }
  }
  return "internal";
}

std::optional<ErrorCode> ParseErrorCodeName(std::string_view name) {
  for (const auto& entry : kCodeNames) {
    if (entry.name == name) {
      return entry.code;
    }
  }
  return std::nullopt;
}

json DependenciesToJson(const std::vector<Dependency>& after) {
  json out = json::array();
  for (const Dependency& d : after) {
    out.push_back(json{{"job", d.job.value()}, {"kind", ToString(d.kind)}});
  }
  return out;
}

json JobToJson(const Job& job) {
  const std::optional<ArrayTask>& task = job.spec.array;
  const std::optional<GangMember>& gang = job.spec.gang;
  json env = json::object();
  for (const auto& [key, value] : job.spec.env) {
    env[key] = value;
  }
  json uuids = json::array();
  if (job.allocation) {
    for (const auto& uuid : job.allocation->gpus) {
      uuids.push_back(uuid.value());
    }
  }
  return json{
      {"id", job.id.value()},
      {"name", job.spec.name},
      {"user", job.owner.user},
      {"uid", job.owner.uid},
      {"gid", job.owner.gid},
      {"team", job.spec.team},
      {"state", ToString(job.state)},
      {"priority", ToString(job.spec.priority)},
      {"gpus", job.spec.request.gpus},
      {"nodes", job.spec.request.nodes},
      {"gpu_share", GpuShareJson(job.spec.request.gpu_milli)},
      {"gpu_mem_mib", GpuMemJson(job.spec.request.gpu_memory_mib)},
      {"mig", IsMig(job.spec.request) ? json(job.spec.request.mig_profile) : json()},
      {"gpu_type", OptionalValue(job.spec.request.gpu_type)},
      {"node_labels", job.spec.request.node_labels},
      {"command", job.spec.argv},
      {"workdir", job.spec.workdir},
      {"env", std::move(env)},
      {"time_limit_s", job.spec.time_limit ? json(job.spec.time_limit->count()) : json()},
      {"checkpoint_signal", CheckpointSignalName(job.spec.checkpoint_signal)},
      {"requeue", job.spec.requeue},
      {"interactive", job.spec.interactive},
      {"idle_reap", job.spec.idle_reap},
      {"after", DependenciesToJson(job.spec.after)},
      {"array_job", task ? json(task->array_job.value()) : json()},
      {"array_index", task ? json(task->index) : json()},
      {"array_max_running", task ? OptionalValue(task->max_running) : json()},
      {"gang_job", gang ? json(gang->gang_job.value()) : json()},
      {"gang_rank", gang ? json(gang->rank) : json()},
      {"preemptible", job.preemptible},
      {"budget_approved", job.budget_approved},
      {"last_checkpoint", OptionalTime(job.last_checkpoint)},
      {"last_checkpoint_ms", OptionalMillis(job.last_checkpoint)},
      {"estimated_start", OptionalTime(job.estimated_start)},
      {"estimated_start_ms", OptionalMillis(job.estimated_start)},
      {"node", job.allocation ? json(job.allocation->node.value()) : json()},
      {"gpu_uuids", std::move(uuids)},
      {"alloc_gpu_share", job.allocation ? GpuAmountJson(job.allocation->gpu_milli) : json()},
      {"alloc_gpu_mem_mib", job.allocation ? GpuMemJson(job.allocation->gpu_memory_mib) : json()},
      {"alloc_mig",
       job.allocation && !job.allocation->mig.value().empty() ? json(job.allocation->mig.value())
                                                              : json()},
      {"submit_time", FormatRfc3339(job.submit_time)},
      {"submit_time_ms", ToUnixMillis(job.submit_time)},
      {"start_time", OptionalTime(job.start_time)},
      {"start_time_ms", OptionalMillis(job.start_time)},
      {"end_time", OptionalTime(job.end_time)},
      {"end_time_ms", OptionalMillis(job.end_time)},
      {"exit_code", OptionalValue(job.exit_code)},
      {"reason", job.reason},
      {"usage", job.usage ? JobUsageToJson(*job.usage) : json()},
      {"energy", job.energy_charge ? EnergyChargeToJson(*job.energy_charge) : json()},
  };
}

json QuotaToJson(const QuotaReport& report) {
  json teams = json::array();
  for (const TeamQuota& t : report.teams) {
    teams.push_back(json{{"team", t.team},
                         {"listed", t.listed},
                         {"guaranteed_gpus", t.guaranteed_gpus},
                         {"max_gpus", OptionalValue(t.max_gpus)},
                         {"gpus_held", GpuAmountJson(t.held_milli)},
                         {"gpus_borrowed", GpuAmountJson(t.borrowed_milli)},
                         {"budget_gpu_hours", OptionalValue(t.budget_gpu_hours)},
                         {"used_gpu_hours", t.used_gpu_hours},
                         {"left_gpu_hours", OptionalValue(t.left_gpu_hours)},
                         {"over_budget", t.over_budget},
                         {"energy", EnergyChargeToJson(t.energy)}});
  }
  json users = json::array();
  for (const UserQuota& u : report.users) {
    users.push_back(json{{"team", u.team},
                         {"user", u.user},
                         {"used_gpu_hours", u.used_gpu_hours},
                         {"energy", EnergyChargeToJson(u.energy)}});
  }
  return json{{"period_start", FormatRfc3339(report.period_start)},
              {"period_start_ms", ToUnixMillis(report.period_start)},
              {"period_end", FormatRfc3339(report.period_end)},
              {"period_end_ms", ToUnixMillis(report.period_end)},
              {"quotas_on", report.quotas_on},
              {"teams", std::move(teams)},
              {"users", std::move(users)}};
}

json GpuToJson(const Gpu& gpu) {
  json out{{"index", gpu.index},
           {"uuid", gpu.uuid.value()},
           {"model", gpu.model},
           {"memory_mib", gpu.memory_mib},
           {"health", ToString(gpu.health)},
           {"health_cause", gpu.health_cause},
           {"numa_node", KnownOrNull(gpu.numa_node)},
           {"pcie_switch", KnownOrNull(gpu.pcie_switch)},
           {"nvlink_peers", gpu.nvlink_peers},
           {"sharing", ToString(gpu.sharing)},
           {"sharing_next", gpu.sharing_next ? json(ToString(*gpu.sharing_next)) : json()}};
  out["mig_enabled"] = gpu.mig_enabled;
  out["mig_instances"] = json::array();
  for (const MigInstance& m : gpu.mig_instances) {
    out["mig_instances"].push_back(MigInstanceToJson(m));
  }
  out["mig_profiles"] = gpu.mig_profiles;
  out["mig_layout_next"] = gpu.mig_layout_next ? json(*gpu.mig_layout_next) : json();
  return out;
}

json NodeToJson(const Node& node) {
  json gpus = json::array();
  for (const auto& gpu : node.gpus) {
    gpus.push_back(GpuToJson(gpu));
  }
  json labels = json::object();
  for (const auto& [key, value] : node.labels) {
    labels[key] = value;
  }
  return json{{"name", node.name.value()},
              {"state", ToString(node.state)},
              {"state_reason", node.state_reason},
              {"cpus", node.cpus},
              {"memory_mib", node.memory_mib},
              {"labels", std::move(labels)},
              {"gpu_backend", node.gpu_backend},
              {"containment", node.containment},
              {"last_seen", FormatRfc3339(node.last_seen)},
              {"last_seen_ms", ToUnixMillis(node.last_seen)},
              {"gpus", std::move(gpus)}};
}

json GpuSampleToJson(const GpuSample& sample) {
  json out{{"uuid", sample.uuid.value()},
           {"time", FormatRfc3339(sample.time)},
           {"time_ms", ToUnixMillis(sample.time)},
           {"lost", sample.lost},
           {"health", ToString(sample.health)},
           {"health_cause", sample.health_cause},
           {"xids", XidsToJson(sample.xids)}};
  // A lost GPU answers nothing: its zeros are not readings, so they go out as null like every
  // other counter the driver could not give.
  const auto reading = [&](std::int64_t v) {
    return sample.lost ? json() : json(v);
  };
  out["memory_total_mib"] = reading(sample.memory_total_mib);
  out["memory_used_mib"] = reading(sample.memory_used_mib);
  out["memory_free_mib"] = reading(sample.memory_free_mib);
  out["util_gpu_pct"] = OptionalValue(sample.util_gpu_pct);
  out["util_memory_pct"] = OptionalValue(sample.util_memory_pct);
  out["temperature_c"] = OptionalValue(sample.temperature_c);
  out["memory_temperature_c"] = OptionalValue(sample.memory_temperature_c);
  out["power_mw"] = OptionalValue(sample.power_mw);
  out["power_limit_mw"] = OptionalValue(sample.power_limit_mw);
  out["energy_mj"] = OptionalValue(sample.energy_mj);
  out["sm_clock_mhz"] = OptionalValue(sample.sm_clock_mhz);
  out["mem_clock_mhz"] = OptionalValue(sample.mem_clock_mhz);
  out["pcie_tx_kbps"] = OptionalValue(sample.pcie_tx_kbps);
  out["pcie_rx_kbps"] = OptionalValue(sample.pcie_rx_kbps);
  out["pcie_replay_count"] = OptionalValue(sample.pcie_replay_count);
  out["ecc"] = EccToJson(sample.ecc);
  out["remapped_rows"] = sample.remapped_rows ? RemappedRowsToJson(*sample.remapped_rows) : json();
  out["throttle_reasons"] = OptionalValue(sample.throttle_reasons);
  out["throttle_reason_names"] =
      sample.throttle_reasons ? json(ThrottleReasonNames(*sample.throttle_reasons)) : json();
  out["fan_speed_pct"] = OptionalValue(sample.fan_speed_pct);
  out["pstate"] = OptionalValue(sample.pstate);
  out["processes"] = ProcessesToJson(sample.processes);
  out["mig_enabled"] = sample.mig_enabled;
  out["mig"] = json::array();
  for (const MigSample& m : sample.mig) {
    json entry = MigInstanceToJson(m.instance);
    entry["memory_used_mib"] = OptionalValue(m.memory_used_mib);
    entry["memory_total_mib"] = OptionalValue(m.memory_total_mib);
    out["mig"].push_back(std::move(entry));
  }
  out["mig_layout_error"] = sample.mig_layout_error;
  return out;
}

json GpuStatusToJson(const GpuStatus& status) {
  json out = GpuToJson(status.gpu);
  out["node"] = status.node.value();
  out["job"] = OptionalId(status.job);
  out["user"] = status.user;
  out["team"] = status.team;
  json holders = json::array();
  for (const GpuHolder& h : status.holders) {
    holders.push_back(json{{"job", h.job.value()},
                           {"user", h.user},
                           {"team", h.team},
                           {"share_milli", h.share_milli},
                           {"memory_limit_mib", h.memory_limit_mib}});
  }
  out["holders"] = std::move(holders);
  out["conditions"] = status.conditions;
  out["sample"] = status.sample ? GpuSampleToJson(*status.sample) : json();
  return out;
}

json JobUsageToJson(const JobUsage& usage) {
  const double joules = static_cast<double>(usage.energy_mj) / kMillijoulesPerJoule;
  return json{{"samples", usage.samples},
              {"mean_util_pct", usage.mean_util_pct},
              {"peak_util_pct", usage.peak_util_pct},
              {"peak_memory_mib", usage.peak_memory_mib},
              {"energy_mj", usage.energy_mj},
              {"energy_j", joules},
              {"energy_kwh", joules / kJoulesPerKwh}};
}

json EnergyChargeToJson(const EnergyCharge& charge) {
  return json{{"energy_mj", charge.energy_mj},
              {"energy_kwh", charge.kwh},
              {"cost", OptionalValue(charge.cost)},
              {"currency", charge.cost ? json(charge.currency) : json()},
              {"co2_kg", OptionalValue(charge.co2_kg)}};
}

json EventToJson(const Event& event) {
  return json{{"seq", event.seq},
              {"time", FormatRfc3339(event.time)},
              {"time_ms", ToUnixMillis(event.time)},
              {"job", OptionalId(event.job)},
              {"kind", event.kind},
              {"actor", event.actor},
              {"message", event.message}};
}

// ---- GET /jobs/{id}/explain (model/explanation.h) ----

namespace {

// A time as both fields of the API's convention: "<name>" (RFC 3339) and "<name>_ms".
void PutTime(json& out, const std::string& name, const std::optional<Time>& t) {
  out[name] = OptionalTime(t);
  out[name + "_ms"] = OptionalMillis(t);
}

json AllocationToJson(const std::optional<Allocation>& allocation) {
  if (!allocation) {
    return json();
  }
  json uuids = json::array();
  for (const GpuUuid& uuid : allocation->gpus) {
    uuids.push_back(uuid.value());
  }
  return json{{"node", allocation->node.value()},
              {"gpu_uuids", std::move(uuids)},
              {"gpu_share", GpuAmountJson(allocation->gpu_milli)},
              {"gpu_mem_mib", GpuMemJson(allocation->gpu_memory_mib)},
              {"mig", allocation->mig.value().empty() ? json() : json(allocation->mig.value())}};
}

json JobsAheadToJson(const std::vector<JobAhead>& ahead) {
  json out = json::array();
  for (const JobAhead& a : ahead) {
    json nodes = json::array();
    for (const NodeId& node : a.nodes) {
      nodes.push_back(node.value());
    }
    json entry{{"id", OptionalId(a.id)},
               {"other_user", !a.id.has_value()},
               {"position", a.position},
               {"priority", a.priority},
               {"team", a.team},
               {"gpus", a.gpus},
               {"action", a.action},
               {"nodes", std::move(nodes)},
               {"more_nodes", a.more_nodes}};
    PutTime(entry, "from", a.from);
    out.push_back(std::move(entry));
  }
  return out;
}

json PriorityFactorsToJson(const std::optional<PriorityFactors>& p) {
  if (!p) {
    return json();
  }
  json out{{"priority", p->priority},
           {"class_rank", p->class_rank},
           {"team", p->team},
           {"quotas_on", p->quotas_on},
           {"team_below_guarantee", p->team_below_guarantee},
           {"team_usage_gpu_seconds", p->team_usage_gpu_seconds},
           {"team_weight", p->team_weight},
           {"team_share", p->team_share},
           {"team_rank", p->team_rank},
           {"teams_waiting", p->teams_waiting},
           {"user", p->user},
           {"user_usage_gpu_seconds", p->user_usage_gpu_seconds},
           {"user_weight", p->user_weight},
           {"user_share", p->user_share},
           {"user_rank", p->user_rank},
           {"users_waiting", p->users_waiting},
           {"waited_s", p->waited.count() / 1000}};
  PutTime(out, "submit_time", p->submit_time);
  return out;
}

json QuotaToJson(const std::optional<QuotaExplanation>& q) {
  if (!q) {
    return json();
  }
  return json{{"may_start", q->may_start},
              {"borrowed", q->borrowed},
              {"guarantee_right", q->guarantee_right},
              {"reason", q->reason},
              {"class_allowed_users", q->class_allowed_users},
              {"class_max_gpus_per_user", OptionalValue(q->class_max_gpus_per_user)},
              {"quotas_on", q->quotas_on},
              {"team_held_gpus", GpuAmountJson(q->team_held_milli)},
              {"team_guaranteed_gpus", q->team_guaranteed_gpus},
              {"team_max_gpus", OptionalValue(q->team_max_gpus)},
              {"team_budget_gpu_hours", OptionalValue(q->team_budget_gpu_hours)},
              {"team_period_gpu_hours", q->team_period_gpu_hours},
              {"over_budget", q->over_budget},
              {"budget_approved", q->budget_approved}};
}

json NodeExplanationToJson(const NodeExplanation& node) {
  json held = json::array();
  for (const GpuHold& hold : node.held) {
    json entry{{"index", hold.index},
               {"kind", hold.kind},
               {"job", OptionalId(hold.job)},
               {"other_user", hold.other_user},
               {"then_for", OptionalId(hold.then_for)},
               {"then_for_other_user", hold.then_for_other_user}};
    PutTime(entry, "until", hold.until);
    PutTime(entry, "then_from", hold.then_from);
    held.push_back(std::move(entry));
  }
  json victims = json::array();
  for (const VictimCandidate& v : node.victims) {
    victims.push_back(json{{"job", OptionalId(v.job)},
                           {"other_user", !v.job.has_value()},
                           {"priority", v.priority},
                           {"borrowed", v.borrowed},
                           {"may_preempt", v.may_preempt},
                           {"chosen", v.chosen},
                           {"why", v.why}});
  }
  return json{{"node", node.node.value()},
              {"state", node.state},
              {"verdict", node.verdict},
              {"detail", node.detail},
              {"gpus", node.gpus},
              {"failed", node.failed},
              {"degraded", node.degraded},
              {"matching", node.matching},
              {"free", node.free},
              {"givable", node.givable},
              {"models", node.models},
              {"held", std::move(held)},
              {"victims", std::move(victims)}};
}

json RunningExplanationToJson(const std::optional<RunningExplanation>& r) {
  if (!r) {
    return json();
  }
  json out{{"placement", AllocationToJson(r->allocation)},
           {"gpu_indexes", r->gpu_indexes},
           {"preemptible", r->preemptible},
           {"stopping", r->stopping},
           {"preempted_by", r->preempted_by}};
  PutTime(out, "since", r->since);
  PutTime(out, "expected_end", r->expected_end);
  PutTime(out, "protected_until", r->protected_until);
  return out;
}

}  // namespace

json ExplanationToJson(const Explanation& e) {
  json preempts = json::array();
  for (const JobId& victim : e.preempts) {
    preempts.push_back(victim.value());
  }
  json nodes = json::array();
  for (const NodeExplanation& node : e.nodes) {
    nodes.push_back(NodeExplanationToJson(node));
  }
  json out{{"job", e.job.value()},
           {"state", e.state},
           {"outcome", e.outcome},
           {"reason", e.reason},
           {"placement", AllocationToJson(e.placement)},
           {"preempts", std::move(preempts)},
           {"preempts_other_users", e.preempts_other_users},
           {"position", e.position},
           {"waiting", e.waiting},
           {"ahead", JobsAheadToJson(e.ahead)},
           {"ahead_omitted", e.ahead_omitted},
           {"priority", PriorityFactorsToJson(e.priority)},
           {"quota", QuotaToJson(e.quota)},
           {"time_limit_s", e.time_limit ? json(e.time_limit->count()) : json()},
           {"time_limit_source", e.time_limit_source},
           {"nodes", std::move(nodes)},
           {"nodes_omitted", e.nodes_omitted},
           {"nodes_by_verdict", e.nodes_by_verdict},
           {"running", RunningExplanationToJson(e.running)}};
  PutTime(out, "estimated_start", e.estimated_start);
  return out;
}

Result<Submission> SubmissionFromJson(const json& body) {
  if (!body.is_object()) {
    return InvalidArgument("job spec must be a JSON object, got " + Shown(body));
  }
  Submission submission;
  // No "priority": an empty class, which the service replaces with the config's default class
  // (PolicyConfig::default_class), so that a cluster with its own classes needs no "normal".
  submission.spec.priority = PriorityClass{};
  for (const auto& [key, value] : body.items()) {
    if (key == "array") {
      GF_ASSIGN_OR_RETURN(submission.array, ArrayField(value));
    } else {
      GF_TRY(ApplySpecField(key, value, submission.spec));
    }
  }
  if (!body.contains("command")) {
    return InvalidArgument("command: required (the argv to run, e.g. [\"python\", \"train.py\"])");
  }
  return submission;
}

Result<JobSpec> JobSpecFromJson(const json& body) {
  GF_ASSIGN_OR_RETURN(Submission submission, SubmissionFromJson(body));
  if (submission.array) {
    return InvalidArgument("array: a job array is not a single job spec");
  }
  return std::move(submission.spec);
}

json ErrorToJson(const Error& error) {
  return ErrorToJson(ErrorCodeName(error.code), error.message);
}

json ErrorToJson(std::string_view code_name, std::string_view message) {
  return json{{"error", json{{"code", code_name}, {"message", message}}}};
}

std::optional<ErrorBody> ErrorFromJson(const json& body) {
  if (!body.is_object() || !body.contains("error") || !body["error"].is_object()) {
    return std::nullopt;
  }
  const json& e = body["error"];
  if (!e.contains("code") || !e["code"].is_string() || !e.contains("message") ||
      !e["message"].is_string()) {
    return std::nullopt;
  }
  ErrorBody out;
  out.code_name = e["code"].get<std::string>();
  out.code = ParseErrorCodeName(out.code_name);
  out.message = e["message"].get<std::string>();
  return out;
}

}  // namespace gf

// JSON of jobs (with their usage, quota, dependencies), events and errors, and the helpers the
// other parts of the mapping share (json_mapping_internal.h). Nodes and GPUs: gpu_json.cpp;
// strict job specs from JSON: job_spec_json.cpp; explanations: explanation_json.cpp.
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

#include "api/json_mapping_internal.h"
#include "core/duration.h"
#include "json/json_text.h"
#include "model/kube_pod.h"

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

}  // namespace

json OptionalTime(const std::optional<Time>& t) {
  return t ? json(FormatRfc3339(*t)) : json();
}
json OptionalMillis(const std::optional<Time>& t) {
  return t ? json(ToUnixMillis(*t)) : json();
}

json OptionalId(const std::optional<JobId>& id) {
  return id ? json(id->value()) : json();
}

json GpuAmountJson(std::int64_t milli) {
  return milli % kWholeGpuMilli == 0 ? json(milli / kWholeGpuMilli)
                                     : json(static_cast<double>(milli) / kWholeGpuMilli);
}

json GpuMemJson(std::int64_t mib) {
  return mib > 0 ? json(mib) : json();
}

namespace {

// A request's share of one GPU (issue #7): null when not asked (0), else as GpuAmountJson.
json GpuShareJson(int milli) {
  return milli > 0 ? GpuAmountJson(milli) : json();
}

constexpr double kMillijoulesPerJoule = 1000.0;
constexpr double kJoulesPerKwh = 3.6e6;

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

json JobPredictionToJson(const JobPrediction& p) {
  return json{{"expected_s", std::chrono::duration<double>(p.expected).count()},
              {"high_s", std::chrono::duration<double>(p.high).count()},
              {"basis", p.basis},
              {"explanation", p.explanation},
              {"error",
               p.error_median ? json{{"median_relative", *p.error_median}, {"runs", p.error_runs}}
                              : json()}};
}

json StartEstimateJson(const std::optional<StartEstimate>& start) {
  if (!start) {
    return json();
  }
  return json{{"basis", ToString(start->basis)},
              {"earliest", FormatRfc3339(start->earliest)},
              {"earliest_ms", ToUnixMillis(start->earliest)},
              {"latest", FormatRfc3339(start->latest)},
              {"latest_ms", ToUnixMillis(start->latest)}};
}

namespace {

// Kubernetes mode: the pod a job is (model/kube_pod.h); null for any other job.
json PodOfJobJson(const Job& job) {
  const std::optional<KubePod> pod = KubePodOfJobEnv(job.spec.env);
  if (!pod) {
    return json();
  }
  json containers = json::array();
  for (const KubePodContainer& c : pod->containers) {
    json gpus = json::array();
    for (const GpuUuid& gpu : c.gpus) {
      gpus.push_back(gpu.value());
    }
    containers.push_back(json{{"name", c.name}, {"gpus", std::move(gpus)}});
  }
  return json{{"uid", pod->uid},
              {"namespace", pod->pod_namespace},
              {"name", pod->name},
              {"containers", std::move(containers)}};
}

}  // namespace

json JobRowToJson(const Job& job) {
  const std::optional<ArrayTask>& task = job.spec.array;
  const std::optional<GangMember>& gang = job.spec.gang;
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
      {"pod", PodOfJobJson(job)},
      {"state", ToString(job.state)},
      {"priority", ToString(job.spec.priority)},
      {"gpus", job.spec.request.gpus},
      {"nodes", job.spec.request.nodes},
      {"gpu_share", GpuShareJson(job.spec.request.gpu_milli)},
      {"gpu_mem_mib", GpuMemJson(job.spec.request.gpu_memory_mib)},
      {"mig", IsMig(job.spec.request) ? json(job.spec.request.mig_profile) : json()},
      {"cpus", job.spec.request.cpus},
      {"mem_mib", job.spec.request.memory_mib},
      {"gpu_type", OptionalValue(job.spec.request.gpu_type)},
      {"node_labels", job.spec.request.node_labels},
      {"command", job.spec.argv},
      {"workdir", job.spec.workdir},
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
      {"held_by", job.held_by.empty() ? json() : json(job.held_by)},
      {"last_checkpoint", OptionalTime(job.last_checkpoint)},
      {"last_checkpoint_ms", OptionalMillis(job.last_checkpoint)},
      {"estimated_start", OptionalTime(job.estimated_start)},
      {"estimated_start_ms", OptionalMillis(job.estimated_start)},
      {"start_estimate", StartEstimateJson(job.start_estimate)},
      {"node", job.allocation ? json(job.allocation->node.value()) : json()},
      {"gpu_uuids", std::move(uuids)},
      {"alloc_gpu_share", job.allocation ? GpuAmountJson(job.allocation->gpu_milli) : json()},
      {"alloc_gpu_mem_mib", job.allocation ? GpuMemJson(job.allocation->gpu_memory_mib) : json()},
      {"alloc_mig",
       job.allocation && !job.allocation->mig.value().empty() ? json(job.allocation->mig.value())
                                                              : json()},
      {"alloc_cpus", job.allocation ? json(job.allocation->cpus) : json()},
      {"alloc_mem_mib", job.allocation ? json(job.allocation->memory_mib) : json()},
      {"submit_time", FormatRfc3339(job.submit_time)},
      {"submit_time_ms", ToUnixMillis(job.submit_time)},
      {"start_time", OptionalTime(job.start_time)},
      {"start_time_ms", OptionalMillis(job.start_time)},
      {"end_time", OptionalTime(job.end_time)},
      {"end_time_ms", OptionalMillis(job.end_time)},
      {"exit_code", OptionalValue(job.exit_code)},
      {"reason", job.reason},
      {"reason_code", job.pending_reason ? json(ToString(job.pending_reason->code)) : json()},
      {"reason_stage", job.pending_reason ? json(ToString(job.pending_reason->stage)) : json()},
      {"usage", job.usage ? JobUsageToJson(*job.usage) : json()},
      {"host_usage",
       job.host_usage ? json{{"cpu_ms", job.host_usage->cpu_ms},
                             {"peak_memory_kib", job.host_usage->peak_memory_kib}}
                      : json()},
      {"energy", job.energy_charge ? EnergyChargeToJson(*job.energy_charge) : json()},
      {"prediction", job.prediction ? JobPredictionToJson(*job.prediction) : json()},
  };
}

json JobToJson(const Job& job) {
  json out = JobRowToJson(job);
  json env = json::object();
  for (const auto& [key, value] : job.spec.env) {
    env[key] = value;
  }
  out["env"] = std::move(env);
  return out;
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
                         {"out_of_budget", t.out_of_budget},
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

json JobRunToJson(const JobRun& run) {
  json gpus = json::array();
  for (const RunGpu& gpu : run.gpus) {
    gpus.push_back(
        json{{"index", gpu.index}, {"uuid", gpu.uuid ? json(gpu.uuid->value()) : json()}});
  }
  return json{{"run", run.number},
              {"node", run.node ? json(run.node->value()) : json()},
              {"gpus", std::move(gpus)},
              {"placed_time", FormatRfc3339(run.placed)},
              {"placed_time_ms", ToUnixMillis(run.placed)},
              {"start_time", OptionalTime(run.start)},
              {"start_time_ms", OptionalMillis(run.start)},
              {"end_time", OptionalTime(run.end)},
              {"end_time_ms", OptionalMillis(run.end)},
              {"end_state", run.end_state ? json(ToString(*run.end_state)) : json()},
              {"end_cause", run.end_cause}};
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

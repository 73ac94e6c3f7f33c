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

json OptionalTime(const std::optional<Time>& t) { return t ? json(FormatRfc3339(*t)) : json(); }
json OptionalMillis(const std::optional<Time>& t) { return t ? json(ToUnixMillis(*t)) : json(); }
template <typename T>
json OptionalValue(const std::optional<T>& v) {
  return v ? json(*v) : json();
}

json OptionalId(const std::optional<JobId>& id) { return id ? json(id->value()) : json(); }

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

json ProcessesToJson(const std::vector<GpuProcessSample>& processes) {
  json out = json::array();
  for (const auto& p : processes) {
    out.push_back(json{{"pid", p.pid},
                       {"used_memory_mib", OptionalValue(p.used_memory_mib)},
                       {"sm_util_pct", OptionalValue(p.sm_util_pct)},
                       {"mem_util_pct", OptionalValue(p.mem_util_pct)},
                       {"job", OptionalId(p.job)},
                       {"uid", OptionalValue(p.uid)},
                       {"user", p.user},
                       {"unmanaged", p.unmanaged}});
  }
  return out;
}

// The offending value as the user sent it, shortened so that a huge body cannot make a huge
// error message.
std::string Shown(const json& value) {
  std::string text = value.dump();
  constexpr std::size_t kMax = 60;
  if (text.size() > kMax) {
    // Cut at a UTF-8 character boundary: half a character would make the error message
    // itself invalid JSON text (tests/fuzz/regressions/job_spec).
    std::size_t cut = kMax;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0U) == 0x80U) {
      --cut;
    }
    text.resize(cut);
    text += "...";
  }
  return text;
}

Error FieldError(std::string_view field, std::string_view must, const json& got) {
  return InvalidArgument(std::string(field) + ": must be " + std::string(must) + ", got " +
                         Shown(got));
}

Result<std::string> StringField(std::string_view field, const json& v) {
  if (!v.is_string()) {
    return FieldError(field, "a string", v);
  }
  return v.get<std::string>();
}

Result<std::vector<std::string>> CommandField(const json& v) {
  constexpr std::string_view kMust = "a non-empty array of strings (the argv)";
  if (!v.is_array() || v.empty()) {
    return FieldError("command", kMust, v);
  }
  std::vector<std::string> argv;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) {
      return FieldError("command[" + std::to_string(i) + "]", "a string", v[i]);
    }
    argv.push_back(v[i].get<std::string>());
  }
  return argv;
}

Result<std::vector<std::pair<std::string, std::string>>> EnvField(const json& v) {
  if (!v.is_object()) {
    return FieldError("env", "an object of strings, e.g. {\"NCCL_DEBUG\": \"INFO\"}", v);
  }
  std::vector<std::pair<std::string, std::string>> env;
  for (const auto& [key, value] : v.items()) {
    if (!value.is_string()) {
      return FieldError("env." + key, "a string", value);
    }
    env.emplace_back(key, value.get<std::string>());
  }
  return env;
}

// A whole JSON number as int64, or nullopt (fractions, strings, values beyond int64). Parsed
// text gives unsigned numbers, json built in C++ signed ones: accept both.
std::optional<std::int64_t> WholeNumber(const json& v) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    return u <= static_cast<std::uint64_t>(INT64_MAX) ? std::optional<std::int64_t>(
                                                            static_cast<std::int64_t>(u))
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
  } else if (key == "gpu_type") {
    if (!v.is_null()) {
      GF_ASSIGN_OR_RETURN(spec.request.gpu_type, StringField(key, v));
    }
  } else if (key == "priority") {
    auto parsed = v.is_string() ? ParsePriorityClass(v.get<std::string>())
                                : Result<PriorityClass>(InvalidArgument(""));
    if (!parsed.ok()) {
      return FieldError(key, "one of \"high\", \"normal\", \"low\"", v);
    }
    spec.priority = *parsed;
  } else if (key == "time_limit") {
    GF_ASSIGN_OR_RETURN(spec.time_limit, TimeLimitField(v));
  } else if (key == "checkpoint_signal") {
    GF_ASSIGN_OR_RETURN(spec.checkpoint_signal, CheckpointSignalField(v));
  } else {
    return InvalidArgument("unknown field \"" + key +
                           "\" in job spec; known fields: command, name, workdir, env, gpus, "
                           "gpu_type, priority, team, time_limit, checkpoint_signal");
  }
  return OkStatus();
}

}  // namespace

std::string FormatRfc3339(Time t) {
  const std::int64_t ms = ToUnixMillis(t);
  // Floor division so that times before 1970 still print correctly.
  std::int64_t secs = ms / 1000;
  std::int64_t frac = ms % 1000;
  if (frac < 0) {
    frac += 1000;
    secs -= 1;
  }
  const std::time_t tt = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  std::array<char, 40> buf{};
  std::snprintf(buf.data(), buf.size(), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(frac));
  return buf.data();
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


json JobToJson(const Job& job) {
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
      {"gpu_type", OptionalValue(job.spec.request.gpu_type)},
      {"command", job.spec.argv},
      {"workdir", job.spec.workdir},
      {"env", std::move(env)},
      {"time_limit_s", job.spec.time_limit ? json(job.spec.time_limit->count()) : json()},
      {"checkpoint_signal", CheckpointSignalName(job.spec.checkpoint_signal)},
      {"preemptible", job.preemptible},
      {"estimated_start", OptionalTime(job.estimated_start)},
      {"estimated_start_ms", OptionalMillis(job.estimated_start)},
      {"node", job.allocation ? json(job.allocation->node.value()) : json()},
      {"gpu_uuids", std::move(uuids)},
      {"submit_time", FormatRfc3339(job.submit_time)},
      {"submit_time_ms", ToUnixMillis(job.submit_time)},
      {"start_time", OptionalTime(job.start_time)},
      {"start_time_ms", OptionalMillis(job.start_time)},
      {"end_time", OptionalTime(job.end_time)},
      {"end_time_ms", OptionalMillis(job.end_time)},
      {"exit_code", OptionalValue(job.exit_code)},
      {"reason", job.reason},
      {"usage", job.usage ? JobUsageToJson(*job.usage) : json()},
  };
}

json GpuToJson(const Gpu& gpu) {
  return json{{"index", gpu.index},
              {"uuid", gpu.uuid.value()},
              {"model", gpu.model},
              {"memory_mib", gpu.memory_mib},
              {"health", ToString(gpu.health)},
              {"health_cause", gpu.health_cause}};
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
              {"cpus", node.cpus},
              {"memory_mib", node.memory_mib},
              {"labels", std::move(labels)},
              {"gpu_backend", node.gpu_backend},
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
  const auto reading = [&](std::int64_t v) { return sample.lost ? json() : json(v); };
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
  return out;
}

json GpuStatusToJson(const GpuStatus& status) {
  json out = GpuToJson(status.gpu);
  out["node"] = status.node.value();
  out["job"] = OptionalId(status.job);
  out["user"] = status.user;
  out["team"] = status.team;
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

json EventToJson(const Event& event) {
  return json{{"seq", event.seq},
              {"time", FormatRfc3339(event.time)},
              {"time_ms", ToUnixMillis(event.time)},
              {"job", OptionalId(event.job)},
              {"kind", event.kind},
              {"actor", event.actor},
              {"message", event.message}};
}

Result<JobSpec> JobSpecFromJson(const json& body) {
  if (!body.is_object()) {
    return InvalidArgument("job spec must be a JSON object, got " + Shown(body));
  }
  JobSpec spec;
  for (const auto& [key, value] : body.items()) {
    GF_TRY(ApplySpecField(key, value, spec));
  }
  if (!body.contains("command")) {
    return InvalidArgument(
        "command: required (the argv to run, e.g. [\"python\", \"train.py\"])");
  }
  return spec;
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

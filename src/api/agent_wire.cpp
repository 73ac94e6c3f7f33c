#include "api/agent_wire.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "api/json_mapping.h"
#include "codec/codec.h"
#include "core/base64.h"
#include "json/json_text.h"

namespace gf {
namespace {

using json = nlohmann::json;

// Reads the fields of one JSON object, each checked for its type; the first error names the
// field's path. `Get*` of an absent or null field gives the default (optional fields);
// `Need*` fails instead.
class Fields {
 public:
  Fields(const json& object, std::string where) : object_(object), where_(std::move(where)) {}

  Status Check() const {
    if (!object_.is_object()) {
      return InvalidArgument(where_ + ": expected a JSON object");
    }
    return OkStatus();
  }
  std::string Path(std::string_view field) const { return where_ + "." + std::string(field); }

  const json* Find(std::string_view field) const {
    auto it = object_.find(field);
    return it == object_.end() || it->is_null() ? nullptr : &*it;
  }
  Result<const json*> Need(std::string_view field) const {
    const json* v = Find(field);
    if (v == nullptr) {
      return InvalidArgument(Path(field) + ": missing");
    }
    return v;
  }

  template <typename T>
  Result<std::optional<T>> Optional(std::string_view field) const {
    const json* v = Find(field);
    if (v == nullptr) {
      return std::optional<T>();
    }
    GF_ASSIGN_OR_RETURN(T value, As<T>(*v, Path(field)));
    return std::optional<T>(std::move(value));
  }
  template <typename T>
  Result<T> Get(std::string_view field, T fallback = T{}) const {
    GF_ASSIGN_OR_RETURN(std::optional<T> v, Optional<T>(field));
    return v ? std::move(*v) : std::move(fallback);
  }
  template <typename T>
  Result<T> Required(std::string_view field) const {
    GF_ASSIGN_OR_RETURN(const json* v, Need(field));
    return As<T>(*v, Path(field));
  }

  template <typename T>
  static Result<T> As(const json& v, const std::string& path) {
    if constexpr (std::is_same_v<T, bool>) {
      if (!v.is_boolean()) {
        return InvalidArgument(path + ": expected true or false");
      }
      return v.get<bool>();
    } else if constexpr (std::is_integral_v<T>) {
      if (!v.is_number_integer()) {
        return InvalidArgument(path + ": expected an integer");
      }
      if (v.is_number_unsigned()) {
        const auto u = v.get<std::uint64_t>();
        if (u > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) {
          return InvalidArgument(path + ": out of range");
        }
        return static_cast<T>(u);
      }
      const auto i = v.get<std::int64_t>();
      if (i < static_cast<std::int64_t>(std::numeric_limits<T>::min()) ||
          (i > 0 && static_cast<std::uint64_t>(i) >
                        static_cast<std::uint64_t>(std::numeric_limits<T>::max()))) {
        return InvalidArgument(path + ": out of range");
      }
      return static_cast<T>(i);
    } else if constexpr (std::is_floating_point_v<T>) {
      if (!v.is_number()) {
        return InvalidArgument(path + ": expected a number");
      }
      return v.get<T>();
    } else {
      static_assert(std::is_same_v<T, std::string>);
      if (!v.is_string()) {
        return InvalidArgument(path + ": expected a string");
      }
      return v.get<std::string>();
    }
  }

  // Each element of an array field through `read(element, path)`.
  template <typename T, typename Read>
  Result<std::vector<T>> List(std::string_view field, Read read) const {
    std::vector<T> out;
    const json* v = Find(field);
    if (v == nullptr) {
      return out;
    }
    if (!v->is_array()) {
      return InvalidArgument(Path(field) + ": expected an array");
    }
    for (std::size_t i = 0; i < v->size(); ++i) {
      GF_ASSIGN_OR_RETURN(T item, read((*v)[i], Path(field) + "[" + std::to_string(i) + "]"));
      out.push_back(std::move(item));
    }
    return out;
  }

 private:
  const json& object_;
  std::string where_;
};

Result<Time> TimeOf(const Fields& f, std::string_view field_ms) {
  GF_ASSIGN_OR_RETURN(std::int64_t ms, f.Required<std::int64_t>(field_ms));
  return FromUnixMillis(ms);
}

// Bytes in the store codec's form: a JSON string, or {"hex": ...} for what is not UTF-8.
Result<json> ByteStrings(const std::vector<std::string>& strings) {
  GF_ASSIGN_OR_RETURN(std::string text, EncodeStrings(strings));
  return ParseJsonText(text, "byte strings");
}

Result<MigInstance> MigInstanceFromJson(const Fields& f) {
  MigInstance m;
  GF_ASSIGN_OR_RETURN(m.profile, f.Required<std::string>("profile"));
  GF_ASSIGN_OR_RETURN(std::string uuid, f.Required<std::string>("uuid"));
  m.uuid = GpuUuid(std::move(uuid));
  GF_ASSIGN_OR_RETURN(m.gpu_instance_id, f.Get<int>("gpu_instance_id", -1));
  GF_ASSIGN_OR_RETURN(m.compute_instance_id, f.Get<int>("compute_instance_id", -1));
  GF_ASSIGN_OR_RETURN(m.slices, f.Get<int>("slices"));
  GF_ASSIGN_OR_RETURN(m.memory_mib, f.Get<std::int64_t>("memory_mib"));
  return m;
}

Result<Gpu> GpuFromJson(const json& body, const std::string& where) {
  Fields f(body, where);
  GF_TRY(f.Check());
  Gpu gpu;
  GF_ASSIGN_OR_RETURN(gpu.index, f.Required<int>("index"));
  GF_ASSIGN_OR_RETURN(std::string uuid, f.Required<std::string>("uuid"));
  gpu.uuid = GpuUuid(std::move(uuid));
  GF_ASSIGN_OR_RETURN(gpu.model, f.Get<std::string>("model"));
  GF_ASSIGN_OR_RETURN(gpu.memory_mib, f.Get<std::int64_t>("memory_mib"));
  GF_ASSIGN_OR_RETURN(std::string health, f.Get<std::string>("health", "ok"));
  GF_ASSIGN_OR_RETURN(gpu.health, ParseGpuHealth(health));
  GF_ASSIGN_OR_RETURN(gpu.health_cause, f.Get<std::string>("health_cause"));
  GF_ASSIGN_OR_RETURN(gpu.numa_node, f.Get<int>("numa_node", -1));
  GF_ASSIGN_OR_RETURN(gpu.pcie_switch, f.Get<int>("pcie_switch", -1));
  GF_ASSIGN_OR_RETURN(gpu.nvlink_peers,
                      f.List<int>("nvlink_peers", [](const json& v, const std::string& p) {
                        return Fields::As<int>(v, p);
                      }));
  GF_ASSIGN_OR_RETURN(gpu.mig_enabled, f.Get<bool>("mig_enabled"));
  GF_ASSIGN_OR_RETURN(
      gpu.mig_instances,
      f.List<MigInstance>("mig_instances",
                          [](const json& v, const std::string& p) -> Result<MigInstance> {
                            Fields m(v, p);
                            GF_TRY(m.Check());
                            return MigInstanceFromJson(m);
                          }));
  GF_ASSIGN_OR_RETURN(gpu.mig_profiles,
                      f.List<std::string>("mig_profiles", [](const json& v, const std::string& p) {
                        return Fields::As<std::string>(v, p);
                      }));
  return gpu;
}

Result<std::map<std::string, std::string>> LabelsFromJson(const Fields& f) {
  std::map<std::string, std::string> labels;
  const json* v = f.Find("labels");
  if (v == nullptr) {
    return labels;
  }
  if (!v->is_object()) {
    return InvalidArgument(f.Path("labels") + ": expected an object of strings");
  }
  for (const auto& [key, value] : v->items()) {
    GF_ASSIGN_OR_RETURN(labels[key], Fields::As<std::string>(value, f.Path("labels." + key)));
  }
  return labels;
}

Result<JobExitReport> ExitFromJson(const json& body, const std::string& where) {
  Fields f(body, where);
  GF_TRY(f.Check());
  JobExitReport e;
  GF_ASSIGN_OR_RETURN(std::int64_t job, f.Required<std::int64_t>("job"));
  e.job = JobId(job);
  GF_ASSIGN_OR_RETURN(e.exit_code, f.Required<int>("exit_code"));
  GF_ASSIGN_OR_RETURN(e.signal, f.Optional<int>("signal"));
  GF_ASSIGN_OR_RETURN(e.end_time, TimeOf(f, "end_time_ms"));
  GF_ASSIGN_OR_RETURN(e.cause, f.Get<std::string>("cause"));
  GF_ASSIGN_OR_RETURN(
      e.leftover_pids,
      f.List<std::int64_t>("leftover_pids", [](const json& v, const std::string& p) {
        return Fields::As<std::int64_t>(v, p);
      }));
  // Both or neither (an older agent sends neither): a half-measured run is no measure.
  GF_ASSIGN_OR_RETURN(const std::optional<std::int64_t> cpu_ms, f.Optional<std::int64_t>("cpu_ms"));
  GF_ASSIGN_OR_RETURN(const std::optional<std::int64_t> peak,
                      f.Optional<std::int64_t>("peak_memory_kib"));
  if (cpu_ms.has_value() != peak.has_value() || (cpu_ms && (*cpu_ms < 0 || *peak < 0))) {
    return InvalidArgument(f.Path("cpu_ms") +
                           ": give cpu_ms and peak_memory_kib together, each 0 or more, or "
                           "neither");
  }
  if (cpu_ms) {
    e.host_usage = HostUsage{.cpu_ms = *cpu_ms, .peak_memory_kib = *peak};
  }
  return e;
}

json ExitToJson(const JobExitReport& e) {
  return json{{"job", e.job.value()},
              {"exit_code", e.exit_code},
              {"signal", e.signal ? json(*e.signal) : json()},
              {"end_time_ms", ToUnixMillis(e.end_time)},
              {"cause", e.cause},
              {"leftover_pids", e.leftover_pids},
              {"cpu_ms", e.host_usage ? json(e.host_usage->cpu_ms) : json()},
              {"peak_memory_kib", e.host_usage ? json(e.host_usage->peak_memory_kib) : json()}};
}

Result<GpuProcessSample> ProcessFromJson(const json& body, const std::string& where) {
  Fields f(body, where);
  GF_TRY(f.Check());
  GpuProcessSample p;
  GF_ASSIGN_OR_RETURN(p.pid, f.Required<std::uint32_t>("pid"));
  GF_ASSIGN_OR_RETURN(p.used_memory_mib, f.Optional<std::int64_t>("used_memory_mib"));
  GF_ASSIGN_OR_RETURN(p.sm_util_pct, f.Optional<int>("sm_util_pct"));
  GF_ASSIGN_OR_RETURN(p.mem_util_pct, f.Optional<int>("mem_util_pct"));
  GF_ASSIGN_OR_RETURN(std::optional<std::int64_t> job, f.Optional<std::int64_t>("job"));
  if (job) {
    p.job = JobId(*job);
  }
  GF_ASSIGN_OR_RETURN(p.uid, f.Optional<std::uint32_t>("uid"));
  GF_ASSIGN_OR_RETURN(p.user, f.Get<std::string>("user"));
  GF_ASSIGN_OR_RETURN(p.unmanaged, f.Get<bool>("unmanaged"));
  GF_ASSIGN_OR_RETURN(p.pod, f.Get<std::string>("pod"));
  GF_ASSIGN_OR_RETURN(p.container, f.Get<std::string>("container"));
  GF_ASSIGN_OR_RETURN(std::string mig_uuid, f.Get<std::string>("mig_uuid"));
  p.mig_uuid = GpuUuid(std::move(mig_uuid));
  GF_ASSIGN_OR_RETURN(p.cpu_pct, f.Optional<double>("cpu_pct"));
  GF_ASSIGN_OR_RETURN(p.host_memory_mib, f.Optional<std::int64_t>("host_memory_mib"));
  GF_ASSIGN_OR_RETURN(p.command, f.Get<std::string>("command"));
  if (p.command.size() > kProcessCommandMaxBytes) {
    p.command.resize(kProcessCommandMaxBytes);  // the agent cuts it; a longer one is not kept
  }
  return p;
}

Result<EccCounters> EccFromJson(const Fields& parent) {
  EccCounters ecc;
  const json* v = parent.Find("ecc");
  if (v == nullptr) {
    return ecc;
  }
  Fields f(*v, parent.Path("ecc"));
  GF_TRY(f.Check());
  GF_ASSIGN_OR_RETURN(ecc.volatile_corrected, f.Optional<std::int64_t>("volatile_corrected"));
  GF_ASSIGN_OR_RETURN(ecc.volatile_uncorrected, f.Optional<std::int64_t>("volatile_uncorrected"));
  GF_ASSIGN_OR_RETURN(ecc.aggregate_corrected, f.Optional<std::int64_t>("aggregate_corrected"));
  GF_ASSIGN_OR_RETURN(ecc.aggregate_uncorrected, f.Optional<std::int64_t>("aggregate_uncorrected"));
  return ecc;
}

Result<std::optional<RemappedRows>> RemappedFromJson(const Fields& parent) {
  const json* v = parent.Find("remapped_rows");
  if (v == nullptr) {
    return std::optional<RemappedRows>();
  }
  Fields f(*v, parent.Path("remapped_rows"));
  GF_TRY(f.Check());
  RemappedRows rows;
  GF_ASSIGN_OR_RETURN(rows.correctable, f.Get<std::int64_t>("correctable"));
  GF_ASSIGN_OR_RETURN(rows.uncorrectable, f.Get<std::int64_t>("uncorrectable"));
  GF_ASSIGN_OR_RETURN(rows.pending, f.Get<bool>("pending"));
  GF_ASSIGN_OR_RETURN(rows.failure, f.Get<bool>("failure"));
  return std::optional<RemappedRows>(rows);
}

// The part of a Job a launch needs (LocalAgent::Launch → Executor::Launch): who, what, where.
json LaunchJobToJson(const Job& job) {
  json argv = ByteStrings(job.spec.argv).value_or(json());
  json workdir = ByteStrings({job.spec.workdir}).value_or(json());
  json env = ParseJsonText(EncodeEnv(job.spec.env).value_or("[]"), "env").value_or(json());
  json out{{"id", job.id.value()},
           {"uid", job.owner.uid},
           {"gid", job.owner.gid},
           {"user", job.owner.user},
           {"name", job.spec.name},
           {"team", job.spec.team},
           {"argv", std::move(argv)},
           {"workdir", std::move(workdir)},
           {"env", std::move(env)},
           {"node", job.allocation ? json(job.allocation->node.value()) : json()},
           {"gpus", json::array()},
           {"array", json()}};
  if (job.allocation) {
    for (const GpuUuid& uuid : job.allocation->gpus) {
      out["gpus"].push_back(uuid.value());
    }
    // Host limits (issue #24): absent = none. An older agent ignores them (its jobs then run
    // without limits, as before); a newer agent reads their absence from an older controller
    // the same way.
    if (job.allocation->cpus > 0) {
      out["cpus"] = job.allocation->cpus;
    }
    if (job.allocation->memory_mib > 0) {
      out["memory_mib"] = job.allocation->memory_mib;
    }
  }
  if (job.spec.array) {
    out["array"] =
        json{{"job", job.spec.array->array_job.value()}, {"index", job.spec.array->index}};
  }
  return out;
}

Result<Job> LaunchJobFromJson(const json& body, const std::string& where) {
  Fields f(body, where);
  GF_TRY(f.Check());
  Job job;
  GF_ASSIGN_OR_RETURN(std::int64_t id, f.Required<std::int64_t>("id"));
  job.id = JobId(id);
  GF_ASSIGN_OR_RETURN(job.owner.uid, f.Required<std::uint32_t>("uid"));
  GF_ASSIGN_OR_RETURN(job.owner.gid, f.Required<std::uint32_t>("gid"));
  GF_ASSIGN_OR_RETURN(job.owner.user, f.Get<std::string>("user"));
  GF_ASSIGN_OR_RETURN(job.spec.name, f.Get<std::string>("name"));
  GF_ASSIGN_OR_RETURN(job.spec.team, f.Get<std::string>("team"));
  GF_ASSIGN_OR_RETURN(const json* argv, f.Need("argv"));
  GF_ASSIGN_OR_RETURN(job.spec.argv, DecodeStrings(argv->dump(), f.Path("argv")));
  GF_ASSIGN_OR_RETURN(const json* workdir, f.Need("workdir"));
  GF_ASSIGN_OR_RETURN(std::vector<std::string> dirs,
                      DecodeStrings(workdir->dump(), f.Path("workdir")));
  if (dirs.size() != 1) {
    return InvalidArgument(f.Path("workdir") + ": expected one path");
  }
  job.spec.workdir = std::move(dirs[0]);
  if (const json* env = f.Find("env")) {
    GF_ASSIGN_OR_RETURN(job.spec.env, DecodeEnv(env->dump(), f.Path("env")));
  }
  GF_ASSIGN_OR_RETURN(std::string node, f.Required<std::string>("node"));
  GF_ASSIGN_OR_RETURN(std::vector<std::string> gpus,
                      f.List<std::string>("gpus", [](const json& v, const std::string& p) {
                        return Fields::As<std::string>(v, p);
                      }));
  Allocation allocation{.node = NodeId(std::move(node)), .gpus = {}};
  for (std::string& uuid : gpus) {
    allocation.gpus.emplace_back(std::move(uuid));
  }
  GF_ASSIGN_OR_RETURN(allocation.cpus, f.Get<int>("cpus"));
  GF_ASSIGN_OR_RETURN(allocation.memory_mib, f.Get<std::int64_t>("memory_mib"));
  if (allocation.cpus < 0 || allocation.memory_mib < 0) {
    return InvalidArgument(f.Path("cpus") + ": host limits must be 0 or more");
  }
  job.spec.request.cpus = allocation.cpus;
  job.spec.request.memory_mib = allocation.memory_mib;
  job.allocation = std::move(allocation);
  if (const json* array = f.Find("array")) {
    Fields a(*array, f.Path("array"));
    GF_TRY(a.Check());
    GF_ASSIGN_OR_RETURN(std::int64_t array_job, a.Required<std::int64_t>("job"));
    GF_ASSIGN_OR_RETURN(int index, a.Required<int>("index"));
    job.spec.array = ArrayTask{.array_job = JobId(array_job), .index = index};
  }
  job.state = JobState::kStarting;
  return job;
}

constexpr std::string_view kLaunch = "launch";
constexpr std::string_view kKill = "kill";
constexpr std::string_view kAck = "ack";
constexpr std::string_view kReadLog = "read_log";
constexpr std::string_view kResetGpuHealth = "reset_gpu_health";
constexpr std::string_view kKillProcess = "kill_process";
constexpr std::string_view kApplyMigLayout = "apply_mig_layout";
constexpr std::string_view kKeepGpusReady = "keep_gpus_ready";
constexpr std::string_view kTerminal = "terminal";
constexpr std::string_view kSignal = "signal";

}  // namespace

json TerminalInputToJson(const TerminalInput& input) {
  json out{{"input_base64", Base64Encode(input.data)}};
  if (input.size) {
    out["rows"] = input.size->rows;
    out["cols"] = input.size->cols;
  }
  return out;
}

Result<TerminalInput> TerminalInputFromJson(const json& body, const std::string& where) {
  Fields f(body, where);
  GF_TRY(f.Check());
  TerminalInput input;
  GF_ASSIGN_OR_RETURN(const std::string text, f.Get<std::string>("input_base64"));
  GF_ASSIGN_OR_RETURN(input.data, Base64Decode(text, f.Path("input_base64")));
  if (input.data.size() > kMaxTerminalInputBytes) {
    return InvalidArgument(f.Path("input_base64") + ": " + std::to_string(input.data.size()) +
                           " bytes; at most " + std::to_string(kMaxTerminalInputBytes) +
                           " per message (send a paste in several)");
  }
  GF_ASSIGN_OR_RETURN(const std::optional<std::int64_t> rows, f.Optional<std::int64_t>("rows"));
  GF_ASSIGN_OR_RETURN(const std::optional<std::int64_t> cols, f.Optional<std::int64_t>("cols"));
  if (rows.has_value() != cols.has_value()) {
    return InvalidArgument(f.Path(rows ? "cols" : "rows") +
                           ": missing; a window size gives both rows and cols");
  }
  if (rows) {
    GF_TRY(ValidateTerminalSide(*rows, f.Path("rows")));
    GF_TRY(ValidateTerminalSide(*cols, f.Path("cols")));
    input.size = TerminalSize{static_cast<int>(*rows), static_cast<int>(*cols)};
  }
  return input;
}

namespace {

// The read of a read_log command: stream, offset and limit, each checked.
Result<LogRequest> ReadLogFromJson(const Fields& f, JobId job) {
  LogRequest log{.job = job};
  GF_ASSIGN_OR_RETURN(std::string stream, f.Required<std::string>("stream"));
  if (stream != ToString(LogStream::kStdout) && stream != ToString(LogStream::kStderr)) {
    return InvalidArgument(f.Path("stream") + ": expected stdout or stderr, got '" + stream + "'");
  }
  log.stream = stream == ToString(LogStream::kStdout) ? LogStream::kStdout : LogStream::kStderr;
  GF_ASSIGN_OR_RETURN(log.offset, f.Required<std::int64_t>("offset"));
  GF_ASSIGN_OR_RETURN(log.limit, f.Required<std::int64_t>("limit"));
  if (log.offset < 0 || log.limit < 0) {
    return InvalidArgument(f.Path(log.offset < 0 ? "offset" : "limit") + ": must be >= 0");
  }
  return log;
}

}  // namespace

std::string WireDump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<Node> NodeFromJson(const json& body, const std::string& where) {
  Fields f(body, where);
  GF_TRY(f.Check());
  Node node;
  GF_ASSIGN_OR_RETURN(std::string name, f.Required<std::string>("name"));
  node.name = NodeId(std::move(name));
  GF_ASSIGN_OR_RETURN(std::string state, f.Get<std::string>("state", "up"));
  GF_ASSIGN_OR_RETURN(node.state, ParseNodeState(state));
  GF_ASSIGN_OR_RETURN(node.state_reason, f.Get<std::string>("state_reason"));
  GF_ASSIGN_OR_RETURN(node.cpus, f.Get<int>("cpus"));
  GF_ASSIGN_OR_RETURN(node.memory_mib, f.Get<std::int64_t>("memory_mib"));
  GF_ASSIGN_OR_RETURN(node.labels, LabelsFromJson(f));
  GF_ASSIGN_OR_RETURN(node.gpu_backend, f.Get<std::string>("gpu_backend"));
  GF_ASSIGN_OR_RETURN(node.containment, f.Get<std::string>("containment"));  // "": older agent
  GF_ASSIGN_OR_RETURN(std::int64_t seen, f.Get<std::int64_t>("last_seen_ms"));
  node.last_seen = FromUnixMillis(seen);
  GF_ASSIGN_OR_RETURN(node.gpus, f.List<Gpu>("gpus", GpuFromJson));
  return node;
}

Result<GpuSample> GpuSampleFromJson(const json& body, const std::string& where) {
  Fields f(body, where);
  GF_TRY(f.Check());
  GpuSample s;
  GF_ASSIGN_OR_RETURN(std::string uuid, f.Required<std::string>("uuid"));
  s.uuid = GpuUuid(std::move(uuid));
  GF_ASSIGN_OR_RETURN(s.time, TimeOf(f, "time_ms"));
  GF_ASSIGN_OR_RETURN(s.lost, f.Get<bool>("lost"));
  GF_ASSIGN_OR_RETURN(std::string health, f.Get<std::string>("health", "ok"));
  GF_ASSIGN_OR_RETURN(s.health, ParseGpuHealth(health));
  GF_ASSIGN_OR_RETURN(s.health_cause, f.Get<std::string>("health_cause"));
  GF_ASSIGN_OR_RETURN(s.memory_total_mib, f.Get<std::int64_t>("memory_total_mib"));
  GF_ASSIGN_OR_RETURN(s.memory_used_mib, f.Get<std::int64_t>("memory_used_mib"));
  GF_ASSIGN_OR_RETURN(s.memory_free_mib, f.Get<std::int64_t>("memory_free_mib"));
  GF_ASSIGN_OR_RETURN(s.util_gpu_pct, f.Optional<int>("util_gpu_pct"));
  GF_ASSIGN_OR_RETURN(s.util_memory_pct, f.Optional<int>("util_memory_pct"));
  GF_ASSIGN_OR_RETURN(s.temperature_c, f.Optional<int>("temperature_c"));
  GF_ASSIGN_OR_RETURN(s.memory_temperature_c, f.Optional<int>("memory_temperature_c"));
  GF_ASSIGN_OR_RETURN(s.power_mw, f.Optional<std::int64_t>("power_mw"));
  GF_ASSIGN_OR_RETURN(s.power_limit_mw, f.Optional<std::int64_t>("power_limit_mw"));
  GF_ASSIGN_OR_RETURN(s.energy_mj, f.Optional<std::int64_t>("energy_mj"));
  GF_ASSIGN_OR_RETURN(s.sm_clock_mhz, f.Optional<int>("sm_clock_mhz"));
  GF_ASSIGN_OR_RETURN(s.mem_clock_mhz, f.Optional<int>("mem_clock_mhz"));
  GF_ASSIGN_OR_RETURN(s.pcie_tx_kbps, f.Optional<std::int64_t>("pcie_tx_kbps"));
  GF_ASSIGN_OR_RETURN(s.pcie_rx_kbps, f.Optional<std::int64_t>("pcie_rx_kbps"));
  GF_ASSIGN_OR_RETURN(s.pcie_replay_count, f.Optional<std::int64_t>("pcie_replay_count"));
  GF_ASSIGN_OR_RETURN(s.ecc, EccFromJson(f));
  GF_ASSIGN_OR_RETURN(s.remapped_rows, RemappedFromJson(f));
  GF_ASSIGN_OR_RETURN(s.throttle_reasons, f.Optional<std::uint64_t>("throttle_reasons"));
  GF_ASSIGN_OR_RETURN(s.fan_speed_pct, f.Optional<int>("fan_speed_pct"));
  GF_ASSIGN_OR_RETURN(s.pstate, f.Optional<int>("pstate"));
  GF_ASSIGN_OR_RETURN(
      s.xids, f.List<XidEvent>("xids", [](const json& v, const std::string& p) -> Result<XidEvent> {
        Fields x(v, p);
        GF_TRY(x.Check());
        XidEvent e;
        GF_ASSIGN_OR_RETURN(e.xid, x.Required<int>("xid"));
        GF_ASSIGN_OR_RETURN(e.time, TimeOf(x, "time_ms"));
        return e;
      }));
  GF_ASSIGN_OR_RETURN(s.processes, f.List<GpuProcessSample>("processes", ProcessFromJson));
  GF_ASSIGN_OR_RETURN(s.mig_enabled, f.Get<bool>("mig_enabled"));
  GF_ASSIGN_OR_RETURN(
      s.mig, f.List<MigSample>("mig", [](const json& v, const std::string& p) -> Result<MigSample> {
        Fields m(v, p);
        GF_TRY(m.Check());
        MigSample out;
        GF_ASSIGN_OR_RETURN(out.instance, MigInstanceFromJson(m));
        GF_ASSIGN_OR_RETURN(out.memory_used_mib, m.Optional<std::int64_t>("memory_used_mib"));
        GF_ASSIGN_OR_RETURN(out.memory_total_mib, m.Optional<std::int64_t>("memory_total_mib"));
        return out;
      }));
  GF_ASSIGN_OR_RETURN(s.mig_layout_error, f.Get<std::string>("mig_layout_error"));
  return s;
}

json AgentHelloToJson(const AgentHello& hello) {
  json running = json::array();
  for (JobId id : hello.running) {
    running.push_back(id.value());
  }
  json ended = json::array();
  for (const JobExitReport& e : hello.ended) {
    ended.push_back(ExitToJson(e));
  }
  return json{{"node", NodeToJson(hello.node)},
              {"run_dir", hello.run_dir},
              {"jobs_from", hello.jobs_from},
              {"running", std::move(running)},
              {"ended", std::move(ended)}};
}

Result<AgentHello> AgentHelloFromJson(const json& body) {
  Fields f(body, "hello");
  GF_TRY(f.Check());
  AgentHello hello;
  GF_ASSIGN_OR_RETURN(const json* node, f.Need("node"));
  GF_ASSIGN_OR_RETURN(hello.node, NodeFromJson(*node, f.Path("node")));
  GF_ASSIGN_OR_RETURN(hello.run_dir, f.Get<std::string>("run_dir"));
  GF_ASSIGN_OR_RETURN(hello.jobs_from, f.Get<std::string>("jobs_from"));
  GF_ASSIGN_OR_RETURN(std::vector<std::int64_t> running,
                      f.List<std::int64_t>("running", [](const json& v, const std::string& p) {
                        return Fields::As<std::int64_t>(v, p);
                      }));
  for (std::int64_t id : running) {
    hello.running.emplace_back(id);
  }
  GF_ASSIGN_OR_RETURN(hello.ended, f.List<JobExitReport>("ended", ExitFromJson));
  return hello;
}

json AgentSessionToJson(const AgentSession& session) {
  return json{{"session", session.session},
              {"heartbeat_ms", session.heartbeat.count()},
              {"node_timeout_ms", session.node_timeout.count()}};
}

Result<AgentSession> AgentSessionFromJson(const json& body) {
  Fields f(body, "session");
  GF_TRY(f.Check());
  AgentSession s;
  GF_ASSIGN_OR_RETURN(s.session, f.Required<std::int64_t>("session"));
  GF_ASSIGN_OR_RETURN(std::int64_t heartbeat, f.Required<std::int64_t>("heartbeat_ms"));
  GF_ASSIGN_OR_RETURN(std::int64_t timeout, f.Required<std::int64_t>("node_timeout_ms"));
  s.heartbeat = std::chrono::milliseconds(heartbeat);
  s.node_timeout = std::chrono::milliseconds(timeout);
  return s;
}

namespace {

// A pod as the report carries it: {"uid", "namespace", "name", "containers": [{"name",
// "gpus": ["GPU-…"]}]}.
json KubePodsToJson(const std::vector<KubePod>& pods) {
  json out = json::array();
  for (const KubePod& pod : pods) {
    json containers = json::array();
    for (const KubePodContainer& c : pod.containers) {
      json gpus = json::array();
      for (const GpuUuid& gpu : c.gpus) {
        gpus.push_back(gpu.value());
      }
      containers.push_back(json{{"name", c.name}, {"gpus", std::move(gpus)}});
    }
    out.push_back(json{{"uid", pod.uid},
                       {"namespace", pod.pod_namespace},
                       {"name", pod.name},
                       {"containers", std::move(containers)}});
  }
  return out;
}

Result<KubePod> KubePodFromJson(const json& v, const std::string& path) {
  Fields f(v, path);
  GF_TRY(f.Check());
  KubePod pod;
  GF_ASSIGN_OR_RETURN(pod.uid, f.Required<std::string>("uid"));
  GF_ASSIGN_OR_RETURN(pod.pod_namespace, f.Required<std::string>("namespace"));
  GF_ASSIGN_OR_RETURN(pod.name, f.Required<std::string>("name"));
  GF_ASSIGN_OR_RETURN(
      pod.containers,
      f.List<KubePodContainer>(
          "containers", [](const json& cv, const std::string& cp) -> Result<KubePodContainer> {
            Fields c(cv, cp);
            GF_TRY(c.Check());
            KubePodContainer container;
            GF_ASSIGN_OR_RETURN(container.name, c.Required<std::string>("name"));
            GF_ASSIGN_OR_RETURN(
                std::vector<std::string> gpus,
                c.List<std::string>("gpus", [](const json& g, const std::string& gp) {
                  return Fields::As<std::string>(g, gp);
                }));
            for (std::string& gpu : gpus) {
              container.gpus.emplace_back(std::move(gpu));
            }
            return container;
          }));
  return pod;
}

}  // namespace

json AgentReportBatchToJson(const AgentReportBatch& batch) {
  json started = json::array();
  for (const JobStartReport& s : batch.started) {
    started.push_back(json{
        {"job", s.job.value()}, {"pid", s.pid}, {"start_time_ms", ToUnixMillis(s.start_time)}});
  }
  json exited = json::array();
  for (const JobExitReport& e : batch.exited) {
    exited.push_back(ExitToJson(e));
  }
  json samples = json::array();
  for (const GpuSample& s : batch.samples) {
    samples.push_back(GpuSampleToJson(s));
  }
  json out{{"started", std::move(started)},
           {"exited", std::move(exited)},
           {"samples", std::move(samples)},
           {"done_seq", batch.done_seq}};
  if (batch.pods) {
    out["pods"] = KubePodsToJson(*batch.pods);
  }
  return out;
}

Result<AgentReportBatch> AgentReportBatchFromJson(const json& body) {
  Fields f(body, "reports");
  GF_TRY(f.Check());
  AgentReportBatch batch;
  GF_ASSIGN_OR_RETURN(
      batch.started,
      f.List<JobStartReport>(
          "started", [](const json& v, const std::string& p) -> Result<JobStartReport> {
            Fields s(v, p);
            GF_TRY(s.Check());
            JobStartReport r;
            GF_ASSIGN_OR_RETURN(std::int64_t job, s.Required<std::int64_t>("job"));
            r.job = JobId(job);
            GF_ASSIGN_OR_RETURN(r.pid, s.Required<std::int64_t>("pid"));
            GF_ASSIGN_OR_RETURN(r.start_time, TimeOf(s, "start_time_ms"));
            return r;
          }));
  GF_ASSIGN_OR_RETURN(batch.exited, f.List<JobExitReport>("exited", ExitFromJson));
  GF_ASSIGN_OR_RETURN(batch.samples, f.List<GpuSample>("samples", GpuSampleFromJson));
  // Absent from agents that are not in Kubernetes mode and from older ones: no reading.
  if (body.contains("pods")) {
    GF_ASSIGN_OR_RETURN(batch.pods, f.List<KubePod>("pods", KubePodFromJson));
  }
  GF_ASSIGN_OR_RETURN(batch.done_seq, f.Get<std::int64_t>("done_seq"));
  return batch;
}

json AgentCommandToJson(const AgentCommand& c) {
  json out{{"seq", c.seq}, {"job", c.job_id.value()}};
  switch (c.kind) {
    case AgentCommand::Kind::kLaunch:
      out["kind"] = kLaunch;
      out["launch"] = c.job ? LaunchJobToJson(*c.job) : json();
      break;
    case AgentCommand::Kind::kKill:
      out["kind"] = kKill;
      out["grace_s"] = c.grace.count();
      out["cause"] = c.cause;
      out["signal"] = c.first_signal;
      break;
    case AgentCommand::Kind::kSignal:
      out["kind"] = kSignal;
      out["signal"] = c.signal;
      break;
    case AgentCommand::Kind::kAcknowledgeExit:
      out["kind"] = kAck;
      break;
    case AgentCommand::Kind::kReadLog:
      out["kind"] = kReadLog;
      out["request"] = c.request;
      out["stream"] = ToString(c.log.stream);
      out["offset"] = c.log.offset;
      out["limit"] = c.log.limit;
      break;
    case AgentCommand::Kind::kResetGpuHealth:
      out["kind"] = kResetGpuHealth;
      out["gpu"] = c.gpu.value();
      break;
    case AgentCommand::Kind::kKillProcess:
      out["kind"] = kKillProcess;
      out["pid"] = c.pid;
      out["cause"] = c.cause;
      break;
    case AgentCommand::Kind::kApplyMigLayout:
      out["kind"] = kApplyMigLayout;
      out["gpu"] = c.gpu.value();
      out["profiles"] = c.mig_profiles;
      break;
    case AgentCommand::Kind::kKeepGpusReady:
      out["kind"] = kKeepGpusReady;
      out["gpus"] = c.ready_gpus ? json(*c.ready_gpus) : json(nullptr);
      break;
    case AgentCommand::Kind::kTerminal:
      out["kind"] = kTerminal;
      out.update(TerminalInputToJson(c.terminal));
      break;
  }
  return out;
}

Result<AgentCommand> AgentCommandFromJson(const json& body) {
  Fields f(body, "command");
  GF_TRY(f.Check());
  AgentCommand c;
  GF_ASSIGN_OR_RETURN(c.seq, f.Required<std::int64_t>("seq"));
  GF_ASSIGN_OR_RETURN(std::int64_t job, f.Required<std::int64_t>("job"));
  c.job_id = JobId(job);
  GF_ASSIGN_OR_RETURN(std::string kind, f.Required<std::string>("kind"));
  if (kind == kLaunch) {
    c.kind = AgentCommand::Kind::kLaunch;
    GF_ASSIGN_OR_RETURN(const json* launch, f.Need("launch"));
    Result<Job> j = LaunchJobFromJson(*launch, f.Path("launch"));
    if (!j.ok()) {
      return InvalidArgument(j.error().message);
    }
    c.job = std::move(*j);
  } else if (kind == kKill) {
    c.kind = AgentCommand::Kind::kKill;
    GF_ASSIGN_OR_RETURN(std::int64_t grace, f.Get<std::int64_t>("grace_s"));
    c.grace = std::chrono::seconds(grace);
    GF_ASSIGN_OR_RETURN(c.cause, f.Get<std::string>("cause"));
    GF_ASSIGN_OR_RETURN(c.first_signal, f.Get<int>("signal", kSigTerm));
  } else if (kind == kSignal) {
    c.kind = AgentCommand::Kind::kSignal;
    GF_ASSIGN_OR_RETURN(c.signal, f.Required<int>("signal"));
    // The agent delivers what it is sent: only what `gpufleet cancel --signal` accepts.
    if (c.signal < 1 || c.signal > kMaxJobSignal || c.signal == kSigKill) {
      return InvalidArgument(f.Path("signal") + ": " + std::to_string(c.signal) +
                             " is not a signal a job may be sent; expected 1 to " +
                             std::to_string(kMaxJobSignal) + ", not 9 (KILL)");
    }
  } else if (kind == kAck) {
    c.kind = AgentCommand::Kind::kAcknowledgeExit;
  } else if (kind == kReadLog) {
    c.kind = AgentCommand::Kind::kReadLog;
    GF_ASSIGN_OR_RETURN(c.log, ReadLogFromJson(f, c.job_id));
    GF_ASSIGN_OR_RETURN(c.request, f.Required<std::int64_t>("request"));
  } else if (kind == kResetGpuHealth) {
    c.kind = AgentCommand::Kind::kResetGpuHealth;
    GF_ASSIGN_OR_RETURN(std::string gpu, f.Required<std::string>("gpu"));
    c.gpu = GpuUuid(gpu);
  } else if (kind == kKillProcess) {
    c.kind = AgentCommand::Kind::kKillProcess;
    GF_ASSIGN_OR_RETURN(const std::int64_t pid, f.Required<std::int64_t>("pid"));
    if (pid <= 0 || pid > std::numeric_limits<std::uint32_t>::max()) {
      return InvalidArgument(f.Path("pid") + ": " + std::to_string(pid) + " is not a process id");
    }
    c.pid = static_cast<std::uint32_t>(pid);
    GF_ASSIGN_OR_RETURN(c.cause, f.Get<std::string>("cause"));
  } else if (kind == kApplyMigLayout) {
    c.kind = AgentCommand::Kind::kApplyMigLayout;
    GF_ASSIGN_OR_RETURN(std::string gpu, f.Required<std::string>("gpu"));
    c.gpu = GpuUuid(gpu);
    GF_TRY(f.Need("profiles"));  // an empty list is a layout (no instances); a missing one is not
    GF_ASSIGN_OR_RETURN(c.mig_profiles,
                        f.List<std::string>("profiles", [](const json& v, const std::string& p) {
                          return Fields::As<std::string>(v, p);
                        }));
  } else if (kind == kKeepGpusReady) {
    c.kind = AgentCommand::Kind::kKeepGpusReady;
    GF_ASSIGN_OR_RETURN(c.ready_gpus, f.Optional<int>("gpus"));  // null: no forecast
    if (c.ready_gpus && *c.ready_gpus < 0) {
      return InvalidArgument(f.Path("gpus") + ": " + std::to_string(*c.ready_gpus) +
                             " GPUs; expected 0 or more, or null");
    }
  } else if (kind == kTerminal) {
    c.kind = AgentCommand::Kind::kTerminal;
    GF_ASSIGN_OR_RETURN(c.terminal, TerminalInputFromJson(body, "command"));
  } else {
    return InvalidArgument(f.Path("kind") + ": unknown command '" + kind +
                           "'; expected launch, kill, signal, ack, read_log, reset_gpu_health, "
                           "kill_process, apply_mig_layout, keep_gpus_ready or terminal");
  }
  return c;
}

json AgentLogReplyToJson(const AgentLogReply& reply) {
  if (!reply.chunk.ok()) {
    json out = ErrorToJson(reply.chunk.error());
    out["request"] = reply.request;
    return out;
  }
  return json{{"request", reply.request},
              {"data_base64", Base64Encode(reply.chunk->data)},
              {"size", reply.chunk->size},
              {"next_offset", reply.chunk->next_offset}};
}

Result<AgentLogReply> AgentLogReplyFromJson(const json& body) {
  Fields f(body, "log_reply");
  GF_TRY(f.Check());
  AgentLogReply reply;
  GF_ASSIGN_OR_RETURN(reply.request, f.Required<std::int64_t>("request"));
  if (f.Find("error") != nullptr) {
    std::optional<ErrorBody> error = ErrorFromJson(body);
    if (!error) {
      return InvalidArgument(f.Path("error") + ": expected {\"code\", \"message\"}");
    }
    // A code this server does not know (a newer agent) still fails the read, as an I/O error.
    reply.chunk = Error{error->code.value_or(ErrorCode::kIo), error->message};
    return reply;
  }
  GF_ASSIGN_OR_RETURN(std::string text, f.Required<std::string>("data_base64"));
  LogChunk chunk;
  GF_ASSIGN_OR_RETURN(chunk.data, Base64Decode(text, f.Path("data_base64")));
  GF_ASSIGN_OR_RETURN(chunk.size, f.Required<std::int64_t>("size"));
  GF_ASSIGN_OR_RETURN(chunk.next_offset, f.Required<std::int64_t>("next_offset"));
  reply.chunk = std::move(chunk);
  return reply;
}

}  // namespace gf

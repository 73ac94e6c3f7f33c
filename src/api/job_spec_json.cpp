// Strict JobSpec (and Submission) from a request body: every field checked, an unknown one
// refused, a message naming the field and showing (a bounded preview of) what was sent. Apart
// from the output mapping (json_mapping.cpp): it reads untrusted input.
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/json_mapping.h"
#include "json/json_text.h"

namespace gf {
namespace {

using nlohmann::json;

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
        std::string message = "unknown field \"" + key;
        message.append("\" in ").append(field).append("; known fields: job, kind");
        return InvalidArgument(message);
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

// "cpus": 8 (host CPUs per node, Slurm's --cpus-per-task); null or 0 = none reserved.
Result<int> CpusField(const json& v) {
  if (v.is_null()) {
    return 0;
  }
  const auto n = WholeNumber(v);
  if (!n || *n < 0 || *n > kMaxJobCpus) {
    return FieldError(
        "cpus",
        "a whole number of host CPUs from 0 (none reserved) to " + std::to_string(kMaxJobCpus),
        v);
  }
  return static_cast<int>(*n);
}

// "mem": "64G" (binary units, MiB when none), or "mem_mib": 65536: host memory per node (Slurm's
// --mem); null or 0 = none reserved.
Result<std::int64_t> HostMemField(const std::string& key, const json& v) {
  if (v.is_null()) {
    return 0;
  }
  if (key == "mem_mib") {
    const auto n = WholeNumber(v);
    if (!n || *n < 0 || *n > kMaxJobMemoryMib) {
      return FieldError(key, "a whole number of MiB ≥ 0 (or \"mem\": \"64G\")", v);
    }
    return *n;
  }
  if (!v.is_string()) {
    return FieldError(key, "a memory size like \"64G\" or \"512M\" (or \"mem_mib\": 65536)", v);
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
  } else if (key == "cpus") {
    GF_ASSIGN_OR_RETURN(spec.request.cpus, CpusField(v));
  } else if (key == "mem" || key == "mem_mib") {
    GF_ASSIGN_OR_RETURN(spec.request.memory_mib, HostMemField(key, v));
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
    return InvalidArgument(
        "unknown field \"" + key +
        "\" in job spec; known fields: command, name, workdir, env, gpus, "
        "nodes, gpu_share, gpu_mem, gpu_mem_mib, mig, cpus, mem, mem_mib, gpu_type, "
        "node_labels, "
        "priority, team, time_limit, checkpoint_signal, after, "
        "requeue, interactive, idle_reap, array");
  }
  return OkStatus();
}

// {"jobs": [SPEC, ...]}: each SPEC read as one job's body, its errors naming its index.
Result<std::vector<JobSpec>> BatchFromJson(const json& body) {
  if (body.size() != 1) {
    return InvalidArgument(
        "jobs: a multi-job submission has no other field; put each job's fields in its spec "
        "inside \"jobs\"");
  }
  const json& jobs = body.at("jobs");
  if (!jobs.is_array() || jobs.empty()) {
    return InvalidArgument("jobs: must be a non-empty array of job specs, got " + Shown(jobs));
  }
  std::vector<JobSpec> specs;
  specs.reserve(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    Result<JobSpec> spec = JobSpecFromJson(jobs[i]);
    if (!spec.ok()) {
      return InvalidArgument("jobs[" + std::to_string(i) + "]: " + spec.error().message);
    }
    specs.push_back(std::move(*spec));
  }
  return specs;
}

}  // namespace

Result<Submission> SubmissionFromJson(const json& body) {
  if (!body.is_object()) {
    return InvalidArgument("job spec must be a JSON object, got " + Shown(body));
  }
  Submission submission;
  if (body.contains("jobs")) {
    GF_ASSIGN_OR_RETURN(submission.batch, BatchFromJson(body));
    return submission;
  }
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

Result<JobUpdate> JobUpdateFromJson(const json& body) {
  if (!body.is_object()) {
    return InvalidArgument("update must be a JSON object, got " + Shown(body));
  }
  // Each field is read into a spec as a submission's is, then taken from it.
  JobSpec spec;
  JobUpdate update;
  for (const auto& [key, value] : body.items()) {
    if (key != "gpus" && key != "time_limit" && key != "priority" && key != "team" &&
        key != "name" && key != "cpus" && key != "mem" && key != "mem_mib") {
      return InvalidArgument("unknown field \"" + key +
                             "\" in a job update; known fields: gpus, cpus, mem, mem_mib, "
                             "time_limit, priority, team, name");
    }
    GF_TRY(ApplySpecField(key, value, spec));
  }
  if (body.contains("gpus")) {
    update.gpus = spec.request.gpus;
  }
  if (body.contains("time_limit")) {
    update.time_limit = spec.time_limit;
  }
  if (body.contains("priority")) {
    update.priority = spec.priority;
  }
  if (body.contains("team")) {
    update.team = spec.team;
  }
  if (body.contains("name")) {
    update.name = spec.name;
  }
  if (body.contains("cpus")) {
    update.cpus = spec.request.cpus;
  }
  if (body.contains("mem") || body.contains("mem_mib")) {
    update.memory_mib = spec.request.memory_mib;
  }
  return update;
}

Result<JobSelector> JobSelectorFromJson(const json& body) {
  if (!body.is_object()) {
    return InvalidArgument("cancel filter must be a JSON object, got " + Shown(body));
  }
  JobSelector selector;
  for (const auto& [key, value] : body.items()) {
    GF_ASSIGN_OR_RETURN(std::string text, StringField(key, value));
    if (key == "user") {
      selector.user = std::move(text);
    } else if (key == "state") {
      auto state = ParseJobState(text);
      if (!state.ok()) {
        return InvalidArgument("state: " + state.error().message);
      }
      selector.state = *state;
    } else if (key == "name") {
      selector.name = std::move(text);
    } else if (key == "team") {
      selector.team = std::move(text);
    } else {
      return InvalidArgument("unknown field \"" + key +
                             "\" in a cancel filter; known fields: user, state, name, team");
    }
  }
  return selector;
}

Result<SignalRequest> SignalRequestFromJson(const json& body) {
  if (!body.is_object() || !body.contains("signal")) {
    return InvalidArgument(
        "signal: missing; give {\"signal\": \"USR1\"} (a name such as USR1, USR2, HUP, INT, "
        "TERM, CONT, or a number)");
  }
  const json& value = body.at("signal");
  SignalRequest request;
  if (value.is_number_integer()) {
    GF_ASSIGN_OR_RETURN(request.signal, ParseJobSignal(value.dump()));
  } else if (value.is_string()) {
    GF_ASSIGN_OR_RETURN(request.signal, ParseJobSignal(value.get<std::string>()));
  } else {
    return InvalidArgument("signal: expected a name (\"USR1\") or a number, got " + Shown(value));
  }
  json rest = body;
  rest.erase("signal");
  GF_ASSIGN_OR_RETURN(request.selector, JobSelectorFromJson(rest));
  return request;
}

Result<JobSpec> JobSpecFromJson(const json& body) {
  GF_ASSIGN_OR_RETURN(Submission submission, SubmissionFromJson(body));
  if (submission.array) {
    return InvalidArgument("array: a job array is not a single job spec");
  }
  if (!submission.batch.empty()) {
    return InvalidArgument("jobs: a list of jobs is not a single job spec");
  }
  return std::move(submission.spec);
}

}  // namespace gf

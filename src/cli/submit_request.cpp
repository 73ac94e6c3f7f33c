#include "cli/submit_request.h"

#include <charconv>
#include <set>
#include <tuple>

#include <sys/stat.h>
#include <unistd.h>

#include "core/duration.h"
#include "model/job.h"
#include "model/node.h"
#include "model/output_pattern.h"

namespace gf {
namespace {

// Variables the job must get from gpufleet, never from the submitter's shell. GPUFLEET_SOCKET
// is not one: it is the client's own setting, and a job that runs gpufleet itself (`gpufleet
// checkpoint`) must reach the daemon its submitter reached.
bool Reserved(const std::string& name) {
  return (name.rfind("GPUFLEET_", 0) == 0 && name != "GPUFLEET_SOCKET") ||
         name == "CUDA_VISIBLE_DEVICES" || name == "NVIDIA_VISIBLE_DEVICES";
}

bool ValidName(const std::string& name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) {
    return false;
  }
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_')) {
      return false;
    }
  }
  return true;
}

// `text` as a whole number in [min, max], or nullopt.
std::optional<std::int64_t> WholeIn(std::string_view text, std::int64_t min, std::int64_t max) {
  std::int64_t n = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || n < min || n > max) {
    return std::nullopt;
  }
  return n;
}

Result<int> ParseNodes(const std::string& text) {
  const auto n = WholeIn(text, 1, 1024);
  if (!n) {
    return InvalidArgument("--nodes: '" + text +
                           "' is not a node count; use a whole number from 1 to 1024 (e.g. "
                           "--nodes 2 --gpus 8: 8 GPUs on each of 2 nodes)");
  }
  return static_cast<int>(*n);
}

Result<int> ParseGpus(const std::string& text) {
  const auto n = WholeIn(text, 0, INT32_MAX);
  if (!n) {
    return InvalidArgument("--gpus: '" + text +
                           "' is not a GPU count; use a whole number of GPUs, 0 or more "
                           "(e.g. --gpus 2)");
  }
  return static_cast<int>(*n);
}

std::vector<std::string_view> SplitOn(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(sep, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) {
      return parts;
    }
    start = end + 1;
  }
}

// One item of --after: "12", "12:ok" or "12:any".
Result<Dependency> ParseAfterItem(std::string_view item) {
  const std::size_t colon = item.find(':');
  const std::string_view kind = colon == std::string_view::npos ? "any" : item.substr(colon + 1);
  const auto id = WholeIn(item.substr(0, colon), 1, INT64_MAX);
  if (!id || (kind != "ok" && kind != "any")) {
    return InvalidArgument("--after: '" + std::string(item) +
                           "' is not JOB or JOB:ok; give the id shown by gpufleet submit, with "
                           ":ok to run only if that job completes with exit code 0 (e.g. "
                           "--after 12:ok)");
  }
  return Dependency{.job = JobId(*id),
                    .kind = kind == "ok" ? DependencyKind::kOk : DependencyKind::kAny};
}

// One item of --array: INDEX, FIRST-LAST or FIRST-LAST:STEP.
struct IndexRange {
  std::int64_t first = 0;
  std::int64_t last = 0;
  std::int64_t step = 1;
  std::int64_t Count() const { return (last - first) / step + 1; }
};

Result<IndexRange> ParseArrayItem(std::string_view item, const std::string& text) {
  const std::size_t colon = item.find(':');
  const std::string_view span = item.substr(0, colon);
  const std::size_t dash = span.find('-');
  IndexRange r;
  const auto first = WholeIn(span.substr(0, dash), 0, kMaxArrayIndex);
  const auto last =
      dash == std::string_view::npos ? first : WholeIn(span.substr(dash + 1), 0, kMaxArrayIndex);
  const auto step = colon == std::string_view::npos
                        ? std::optional<std::int64_t>(1)
                        : WholeIn(item.substr(colon + 1), 1, kMaxArrayIndex);
  if (!first || !last || !step || *last < *first ||
      (colon != std::string_view::npos && dash == std::string_view::npos)) {
    return InvalidArgument("--array: '" + std::string(item) + "' in '" + text +
                           "' is not INDEX, FIRST-LAST or FIRST-LAST:STEP with indices from 0 "
                           "to " +
                           std::to_string(kMaxArrayIndex) +
                           " (e.g. --array 0-99, 1,3,5-7, 0-15:4, 0-99%4)");
  }
  r.first = *first;
  r.last = *last;
  r.step = *step;
  return r;
}

bool IsExecutable(const std::string& path) {
  return access(path.c_str(), X_OK) == 0;
}

std::string Absolute(const std::string& path, const std::string& cwd) {
  return !path.empty() && path[0] == '/' ? path : cwd + "/" + path;
}

// --gpu-share, --gpu-mem and --mig (issue #7) as "gpu_share" (its text: the API reads it
// exactly), "gpu_mem_mib" and "mig". A fraction is of one GPU on one node: refused here with --gpus
// N>1 or
// --nodes, as the server would (ValidateFraction), so that the user learns before a round trip.
Status AddFraction(const SubmitOptions& options, nlohmann::json& body) {
  JobRequest request;
  request.gpus = body.value("gpus", 1);  // the server's default when not given
  request.nodes = body.value("nodes", 1);
  if (options.gpu_share) {
    GF_ASSIGN_OR_RETURN(request.gpu_milli, ParseGpuShare(*options.gpu_share, "--gpu-share"));
    body["gpu_share"] = *options.gpu_share;
  }
  if (options.gpu_mem) {
    GF_ASSIGN_OR_RETURN(request.gpu_memory_mib, ParseMemoryMib(*options.gpu_mem, "--gpu-mem"));
    body["gpu_mem_mib"] = request.gpu_memory_mib;
  }
  if (options.mig) {
    request.mig_profile = *options.mig;
    body["mig"] = *options.mig;
  }
  if (Status s = ValidateFraction(request); !s.ok()) {
    return InvalidArgument("--" + s.error().message);
  }
  return OkStatus();
}

// --cpus and --mem (issue #24) as "cpus" and "mem_mib", checked here so that a typo is named
// before a round trip: "--mem: '64X' is not a memory size; ...".
Status AddHost(const SubmitOptions& options, nlohmann::json& body) {
  if (options.cpus) {
    GF_ASSIGN_OR_RETURN(const int cpus, ParseCpuCount(*options.cpus, "--cpus"));
    body["cpus"] = cpus;
  }
  if (options.mem) {
    GF_ASSIGN_OR_RETURN(const std::int64_t mib, ParseMemoryMib(*options.mem, "--mem"));
    if (mib > kMaxJobMemoryMib) {
      return InvalidArgument("--mem: '" + *options.mem +
                             "' is more than any node has; use e.g. 64G");
    }
    body["mem_mib"] = mib;
  }
  return OkStatus();
}

// --output / --error as the job's GPUFLEET_OUTPUT / GPUFLEET_ERROR (model/output_pattern.h).
Status AddOutputFiles(const SubmitOptions& options, nlohmann::json& env) {
  for (const auto& [value, flag, variable] :
       {std::tuple{&options.output, "--output", kOutputVariable},
        std::tuple{&options.error, "--error", kErrorVariable}}) {
    if (*value) {
      GF_TRY(ValidateOutputPattern(**value, flag));
      env[std::string(variable)] = **value;
    }
  }
  return OkStatus();
}

}  // namespace

std::optional<std::string> ScriptPath(const SubmitOptions& options, const std::string& cwd) {
  if (options.command.empty()) {
    return std::nullopt;
  }
  const std::string& first = options.command[0];
  if (first.find('/') == std::string::npos && options.command_after_dashes) {
    return std::nullopt;
  }
  const std::string path = Absolute(first, cwd);
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return std::nullopt;
  }
  return path;
}

void FillUnset(SubmitOptions& into, const SubmitOptions& from) {
  for (auto field :
       {&SubmitOptions::gpus,       &SubmitOptions::nodes,      &SubmitOptions::gpu_type,
        &SubmitOptions::gpu_share,  &SubmitOptions::gpu_mem,    &SubmitOptions::mig,
        &SubmitOptions::cpus,       &SubmitOptions::mem,        &SubmitOptions::priority,
        &SubmitOptions::team,       &SubmitOptions::time,       &SubmitOptions::checkpoint_signal,
        &SubmitOptions::name,       &SubmitOptions::workdir,    &SubmitOptions::array,
        &SubmitOptions::export_env, &SubmitOptions::output,     &SubmitOptions::error,
        &SubmitOptions::mail_user,  &SubmitOptions::mail_events}) {
    if (!(into.*field)) {
      into.*field = from.*field;
    }
  }
  if (!into.terminal) {
    into.terminal = from.terminal;
  }
  for (auto field : {&SubmitOptions::requeue, &SubmitOptions::interactive, &SubmitOptions::reap}) {
    if (!(into.*field)) {
      into.*field = from.*field;
    }
  }
  for (auto field : {&SubmitOptions::after, &SubmitOptions::env, &SubmitOptions::constraints}) {
    std::vector<std::string> list = from.*field;
    list.insert(list.end(), (into.*field).begin(), (into.*field).end());
    into.*field = std::move(list);
  }
}

Result<ExportSpec> ParseExportSpec(const std::string& text) {
  ExportSpec spec;
  spec.all = false;
  bool first = true;
  for (std::string_view item : SplitOn(text, ',')) {
    if (first && (item == "ALL" || item == "NONE")) {
      spec.all = item == "ALL";
      first = false;
      continue;
    }
    first = false;
    const std::size_t eq = item.find('=');
    const std::string name(item.substr(0, eq));
    if (!ValidName(name)) {
      return InvalidArgument("--export: '" + std::string(item) + "' in '" + text +
                             "' is not NAME or NAME=VALUE; use ALL, NONE, or variables after "
                             "ALL or alone (e.g. ALL,OMP_NUM_THREADS=4 or HOME,LR=0.1)");
    }
    spec.variables.emplace_back(name,
                                eq == std::string_view::npos
                                    ? std::nullopt
                                    : std::optional(std::string(item.substr(eq + 1))));
  }
  return spec;
}

Result<std::vector<Dependency>> ParseAfter(const std::vector<std::string>& values) {
  std::vector<Dependency> after;
  for (const std::string& value : values) {
    for (std::string_view item : SplitOn(value, ',')) {
      GF_ASSIGN_OR_RETURN(Dependency d, ParseAfterItem(item));
      after.push_back(d);
    }
  }
  return after;
}

Result<ArrayRequest> ParseArraySpec(const std::string& text) {
  ArrayRequest array;
  const std::string_view view = text;
  const std::size_t percent = view.rfind('%');
  if (percent != std::string_view::npos) {
    const auto n = WholeIn(view.substr(percent + 1), 1, kMaxArrayTasks);
    if (!n) {
      return InvalidArgument("--array: '" + text.substr(percent) + "' is not %N with N from 1 to " +
                             std::to_string(kMaxArrayTasks) +
                             "; %N lets at most N tasks run at once (e.g. --array 0-99%4)");
    }
    array.max_running = static_cast<int>(*n);
  }
  std::vector<IndexRange> ranges;
  std::int64_t count = 0;
  for (std::string_view item : SplitOn(view.substr(0, percent), ',')) {
    GF_ASSIGN_OR_RETURN(IndexRange r, ParseArrayItem(item, text));
    count += r.Count();
    if (count > kMaxArrayTasks) {
      return InvalidArgument("--array: '" + text + "' makes more than " +
                             std::to_string(kMaxArrayTasks) +
                             " tasks, the most one array may have; split it into several "
                             "arrays");
    }
    ranges.push_back(r);
  }
  std::set<int> indices;  // sorted, each once: "1-3,2" is tasks 1, 2 and 3
  for (const IndexRange& r : ranges) {
    for (std::int64_t i = r.first; i <= r.last; i += r.step) {
      indices.insert(static_cast<int>(i));
    }
  }
  array.indices.assign(indices.begin(), indices.end());
  return array;
}

Result<nlohmann::json> BuildSubmitBody(const SubmitOptions& options,
                                       const std::string& cwd,
                                       const std::map<std::string, std::string>& environ_vars) {
  if (options.command.empty()) {
    return InvalidArgument(
        "command: nothing to run; give a command after '--' (gpufleet submit --gpus 1 -- "
        "python train.py) or a script file");
  }
  nlohmann::json body;
  std::vector<std::string> argv = options.command;
  // A script: by its absolute path (the job starts in --workdir, and a bare name would be looked
  // up on PATH), run by its own interpreter line, or with /bin/sh.
  if (std::optional<std::string> script = ScriptPath(options, cwd)) {
    argv[0] = *script;
    if (!IsExecutable(argv[0])) {
      argv.insert(argv.begin(), "/bin/sh");
    }
  }
  body["command"] = argv;
  if (options.nodes) {
    GF_ASSIGN_OR_RETURN(int nodes, ParseNodes(*options.nodes));
    body["nodes"] = nodes;
  }
  if (options.gpus) {
    GF_ASSIGN_OR_RETURN(int gpus, ParseGpus(*options.gpus));
    body["gpus"] = gpus;
  }
  if (options.gpu_type) {
    body["gpu_type"] = *options.gpu_type;
  }
  GF_TRY(AddFraction(options, body));
  GF_TRY(AddHost(options, body));
  if (options.priority) {
    auto p = ParsePriorityClass(*options.priority);
    if (!p.ok()) {
      return InvalidArgument("--" + p.error().message);
    }
    body["priority"] = *options.priority;
  }
  if (options.time) {
    auto t = ParseDuration(*options.time);
    if (!t.ok()) {
      return InvalidArgument("--time: " + t.error().message);
    }
    body["time_limit"] = t->count();
  }
  if (options.checkpoint_signal) {
    auto signal = ParseCheckpointSignal(*options.checkpoint_signal);
    if (!signal.ok()) {
      return InvalidArgument("--checkpoint-signal: " + signal.error().message);
    }
    body["checkpoint_signal"] = CheckpointSignalName(*signal);
  }
  if (options.requeue) {
    body["requeue"] = *options.requeue;
  }
  if (options.interactive) {
    body["interactive"] = *options.interactive;
  }
  if (options.reap) {
    body["idle_reap"] = *options.reap;
  }
  if (options.team) {
    body["team"] = *options.team;
  }
  if (!options.after.empty()) {
    GF_ASSIGN_OR_RETURN(std::vector<Dependency> after, ParseAfter(options.after));
    nlohmann::json list = nlohmann::json::array();
    for (const Dependency& d : after) {
      list.push_back({{"job", d.job.value()}, {"kind", ToString(d.kind)}});
    }
    body["after"] = list;
  }
  if (options.array) {
    GF_ASSIGN_OR_RETURN(ArrayRequest array, ParseArraySpec(*options.array));
    body["array"] = {
        {"indices", array.indices},
        {"max_running", array.max_running ? nlohmann::json(*array.max_running) : nlohmann::json()}};
  }
  if (!options.constraints.empty()) {
    nlohmann::json labels = nlohmann::json::object();
    for (const std::string& text : options.constraints) {
      GF_ASSIGN_OR_RETURN(const auto label, ParseLabel(text, "--constraint"));
      labels[label.first] = label.second;
    }
    body["node_labels"] = labels;
  }
  if (options.name) {
    body["name"] = *options.name;
  }
  body["workdir"] = Absolute(options.workdir.value_or(cwd), cwd);
  nlohmann::json env = nlohmann::json::object();
  GF_ASSIGN_OR_RETURN(const ExportSpec exported,
                      ParseExportSpec(options.export_env.value_or("ALL")));
  if (exported.all) {
    for (const auto& [k, v] : environ_vars) {
      if (ValidName(k) && !Reserved(k)) {
        env[k] = v;
      }
    }
  }
  for (const auto& [name, value] : exported.variables) {
    if (value) {
      env[name] = *value;
    } else if (const auto it = environ_vars.find(name); it != environ_vars.end()) {
      env[name] = it->second;
    }
  }
  GF_TRY(AddOutputFiles(options, env));
  if (options.terminal) {
    env[std::string(kTerminalVariable)] = FormatTerminalSize(*options.terminal);
  }
  if (options.workdir) {
    env["SLURM_SUBMIT_DIR"] = cwd;  // the job starts elsewhere: say where it was submitted
  }
  for (const auto& kv : options.env) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || !ValidName(kv.substr(0, eq))) {
      return InvalidArgument("--env: '" + kv +
                             "' is not KEY=VALUE with a name of letters, digits and '_'");
    }
    env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  body["env"] = env;
  return body;
}

}  // namespace gf

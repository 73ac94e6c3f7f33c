#include "cli/client_commands.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <thread>
#include <utility>

#include <CLI/CLI.hpp>
#include <unistd.h>

#include "api/api_client.h"
#include "api/socket_path.h"
#include "cli/explain_view.h"
#include "cli/history_command.h"
#include "cli/job_control_commands.h"
#include "cli/job_ref.h"
#include "cli/logs_command.h"
#include "cli/quota_view.h"
#include "cli/sbatch_script.h"
#include "cli/submit_request.h"
#include "cli/table.h"
#include "cli/views.h"
#include "core/duration.h"
#include "core/hex.h"
#include "model/notification.h"

// NOLINTNEXTLINE(cppcoreguidelines-avoid-non-const-global-variables): POSIX defines it so
extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX, not in a header

namespace gf {
namespace {

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

}  // namespace

int Fail(const Error& e) {
  std::cerr << "gpufleet: " << e.message << '\n';
  return e.code == ErrorCode::kInvalidArgument ? kExitUsage : kExitError;
}

namespace {

std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Age(const nlohmann::json& job) {
  auto it = job.find("submit_time_ms");
  if (it == job.end() || !it->is_number()) {
    return "-";
  }
  const auto secs = (NowMs() - it->get<std::int64_t>()) / 1000;
  return FormatDuration(std::chrono::seconds(std::max<std::int64_t>(secs, 0)));
}

void PrintJson(const nlohmann::json& j) {
  std::cout << j.dump(2) << '\n';
}

}  // namespace

std::map<std::string, std::string> CurrentEnvironment() {
  std::map<std::string, std::string> out;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) {
      out[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
  }
  return out;
}

// ---- submit ----

void AddSubmitOptions(CLI::App& cmd, SubmitOptions& o) {
  auto last = CLI::MultiOptionPolicy::TakeLast;  // command line overrides #GPUFLEET lines
  cmd.add_option("--gpus", o.gpus, "whole GPUs, all on one node (default 1); per node with --nodes")
      ->type_name("N")
      ->multi_option_policy(last);
  cmd.add_option("--nodes",
                 o.nodes,
                 "nodes (default 1): more makes a multi-node job, one member per node with --gpus "
                 "GPUs each, started together (GPUFLEET_NODE_RANK, GPUFLEET_NODELIST, "
                 "GPUFLEET_MASTER_ADDR)")
      ->type_name("N")
      ->multi_option_policy(last);
  cmd.add_option("--gpu-type", o.gpu_type, "GPU model, e.g. H100-80GB (default: any)")
      ->type_name("MODEL")
      ->multi_option_policy(last);
  cmd.add_option("--gpu-share",
                 o.gpu_share,
                 "a part of one GPU's compute, 0.001 to 1 (e.g. 0.25): the job runs on one GPU an "
                 "admin put in shared or mps mode, beside other jobs; not with --gpus N>1 or "
                 "--nodes")
      ->type_name("FRACTION")
      ->multi_option_policy(last);
  cmd.add_option("--gpu-mem",
                 o.gpu_mem,
                 "GPU memory for a part of one GPU: 20G, 512M (binary units; a bare number is "
                 "MiB); counts as its fraction of the GPU")
      ->type_name("SIZE")
      ->multi_option_policy(last);
  cmd.add_option("--mig",
                 o.mig,
                 "a MIG device of this profile, e.g. 3g.40gb or 1g.10gb, on a GPU with MIG on "
                 "(gpufleet gpus lists their devices); not with --gpus N>1, --nodes or a share")
      ->type_name("PROFILE")
      ->multi_option_policy(last);
  cmd.add_option("--cpus",
                 o.cpus,
                 "host CPUs on each node (Slurm's --cpus-per-task): reserved for the job and its "
                 "CPU quota (cgroup); default: none reserved, or the cluster's per-GPU default")
      ->type_name("N")
      ->multi_option_policy(last);
  cmd.add_option("--mem",
                 o.mem,
                 "host memory on each node (Slurm's --mem): 64G, 512M (binary units; a bare "
                 "number is MiB); reserved for the job and its memory limit, over which it is "
                 "killed (OUT_OF_MEMORY); default: none, or the cluster's per-GPU default")
      ->type_name("SIZE")
      ->multi_option_policy(last);
  cmd.add_option("--priority",
                 o.priority,
                 "priority class, as the cluster defines them (stock: high | normal | low; "
                 "default: the cluster's default class, stock normal)")
      ->type_name("CLASS")
      ->multi_option_policy(last);
  cmd.add_option("--team",
                 o.team,
                 "team to charge the job to: by default your own; another only for admins, and "
                 "only a configured one")
      ->type_name("TEAM")
      ->multi_option_policy(last);
  cmd.add_option("--time", o.time, "time limit: 90s, 30m, 2h, 1d, HH:MM:SS, D-HH:MM:SS")
      ->type_name("DURATION")
      ->multi_option_policy(last);
  cmd.add_option("--checkpoint-signal",
                 o.checkpoint_signal,
                 "signal sent first when the job is preempted, so it can checkpoint: TERM "
                 "(default), USR1, USR2, INT, HUP, QUIT, ALRM")
      ->type_name("SIGNAL")
      ->multi_option_policy(last);
  // A flag function rather than a flag on the optional: it leaves `requeue` unset when neither
  // is given, so that a #GPUFLEET line can still set it. The last one given wins.
  cmd.add_flag_function(
         "--requeue,!--no-requeue",
         [&o](std::int64_t count) { o.requeue = count > 0; },
         "--no-requeue: the job must not run twice; if it is preempted it ends CANCELLED, if "
         "its node fails it ends FAILED, instead of going back to the queue (default "
         "--requeue)")
      ->multi_option_policy(last);
  // Flag functions too, for the same reason: a #GPUFLEET line may set them.
  cmd.add_flag_function(
         "--interactive",
         [&o](std::int64_t count) { o.interactive = count > 0; },
         "an interactive session (notebook, shell): the idle reaper waits its class's longer "
         "interactive threshold before warning")
      ->multi_option_policy(last);
  cmd.add_flag_function(
         "--reap,!--no-reap",
         [&o](std::int64_t count) { o.reap = count > 0; },
         "--no-reap: the idle reaper leaves the job alone even when its GPUs stay idle; only "
         "in a class that allows it (idle_opt_out), else the submission is refused")
      ->multi_option_policy(last);
  cmd.add_option("--name", o.name, "job name (default: the command)")
      ->type_name("NAME")
      ->multi_option_policy(last);
  cmd.add_option("--workdir", o.workdir, "working directory (default: the current one)")
      ->type_name("DIR")
      ->multi_option_policy(last);
  cmd.add_option("--env", o.env, "extra environment variable KEY=VALUE (repeatable)")
      ->type_name("KEY=VALUE");
  cmd.add_option("--constraint",
                 o.constraints,
                 "KEY=VALUE: run only on a node with this label, e.g. rack=a (repeatable: "
                 "every one must hold)")
      ->type_name("KEY=VALUE");
  cmd.add_option("--after",
                 o.after,
                 "JOB[:ok]: start only after JOB ended (with :ok, only if it completed with exit "
                 "code 0; otherwise this job is cancelled). Repeatable, or JOB,JOB:ok")
      ->type_name("JOB[:ok]");
  cmd.add_option("--array",
                 o.array,
                 "a job array, one job per index: 0-99, 1,3,5-7, 0-15:4 (step); %N runs at "
                 "most N at once (0-99%4); at most 10000 tasks. Each task sees "
                 "GPUFLEET_ARRAY_JOB_ID and GPUFLEET_ARRAY_TASK_ID")
      ->type_name("INDICES")
      ->multi_option_policy(last);
  cmd.add_option("--export",
                 o.export_env,
                 "ALL: pass this shell's environment to the job (default, as sbatch); NONE; "
                 "or variables after ALL or alone: ALL,LR=0.1 or HOME,LR=0.1")
      ->type_name("ALL|NONE|[ALL,]VARS")
      ->multi_option_policy(last);
  cmd.add_option("--output",
                 o.output,
                 "write the job's stdout (and stderr, without --error) to this file in its "
                 "working directory instead of gpufleet's log: %j job id, %x name, %A/%a array "
                 "id/index, %u user, %N node (as sbatch)")
      ->type_name("PATTERN")
      ->multi_option_policy(last);
  cmd.add_option("--error", o.error, "write the job's stderr to this file (patterns as --output)")
      ->type_name("PATTERN")
      ->multi_option_policy(last);
}

Status TakeJobCommand(const ClientContext& ctx,
                      std::vector<std::string> rest,
                      std::string_view command,
                      SubmitOptions& o) {
  if (!rest.empty() && rest.front().rfind('-', 0) == 0) {
    return InvalidArgument("unknown option " + rest.front() + " (see gpufleet " +
                           std::string(command) + " --help)");
  }
  if (ctx.command_after_dashes) {
    if (!rest.empty()) {
      return InvalidArgument("command: '" + rest.front() +
                             "' before '--'; put the whole command after '--'");
    }
    rest = *ctx.command_after_dashes;
    o.command_after_dashes = true;
  }
  o.command = std::move(rest);
  return OkStatus();
}

namespace {

// `gpufleet submit --help`'s note for Slurm users (issue #23).
constexpr std::string_view kSlurmCompatNote =
    "Slurm compatibility: a script's #SBATCH lines are read as sbatch reads them: "
    "--gres=gpu[:TYPE]:N,\n"
    "--gpus, --gpus-per-node, --nodes, --time, --job-name, --output/--error (%j %x %A %a), "
    "--array,\n"
    "--dependency=afterok/afterany, --account (team), --qos/--partition (class, through the "
    "client\n"
    "file's [slurm] tables), --export, --chdir, --requeue/--no-requeue, --mail-type/--mail-user\n"
    "(a subscription to the job). #GPUFLEET lines and this command line win over them; a\n"
    "directive not honoured is named in one warning line. Jobs see\n"
    "SLURM_JOB_ID, SLURM_ARRAY_TASK_ID, SLURM_NTASKS, SLURM_PROCID, SLURM_JOB_NODELIST.\n"
    "Directive table and sbatch/squeue/scancel/sacct/sinfo/scontrol map: docs/slurm.md\n";

// `gpufleet submit --help`: its two forms in the usage line (CLI11 knows only "[OPTIONS]": the
// command is taken as unparsed words), and a flag with a negation as its two spellings (CLI11
// prints "--requeue,--no-requeue{false}").
class SubmitHelpFormatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App* /*app*/, std::string name) const override {
    const std::string indent(std::string("Usage: ").size(), ' ');
    return "Usage: " + name + " [OPTIONS] SCRIPT [ARGS...]   (its #GPUFLEET lines add options)\n" +
           indent + name + " [OPTIONS] -- CMD [ARGS...]\n";
  }
  std::string make_option_name(const CLI::Option* opt, bool is_positional) const override {
    std::string name = CLI::Formatter::make_option_name(opt, is_positional);
    for (std::size_t at = name.find("{false}"); at != std::string::npos;
         at = name.find("{false}")) {
      name.erase(at, std::string("{false}").size());
    }
    return name;
  }
};

}  // namespace

Result<std::string> ApplyScriptDirectives(SubmitOptions& o,
                                          const std::string& cwd,
                                          const std::function<Result<SlurmMapping>()>& mapping) {
  const std::optional<std::string> script = ScriptPath(o, cwd);
  if (!script) {
    return std::string();
  }
  GF_ASSIGN_OR_RETURN(ScriptDirectives directives, ReadScriptDirectives(*script));
  if (!directives.gpufleet.empty()) {
    SubmitOptions d;
    CLI::App parser("#GPUFLEET directives");
    AddSubmitOptions(parser, d);
    std::reverse(directives.gpufleet.begin(), directives.gpufleet.end());  // CLI11 parses it so
    try {
      parser.parse(directives.gpufleet);
    } catch (const CLI::ParseError& e) {
      return InvalidArgument("#GPUFLEET line in " + o.command[0] + ": " + e.what());
    }
    FillUnset(o, d);
  }
  if (directives.sbatch.empty()) {
    return std::string();
  }
  GF_ASSIGN_OR_RETURN(const SlurmMapping slurm, mapping());
  GF_ASSIGN_OR_RETURN(SbatchOptions s, ReadSbatchLines(directives.sbatch, o.command[0], slurm));
  FillUnset(o, s.options);  // after #GPUFLEET's: those win
  return NotHonouredWarning(o.command[0], s.not_honoured);
}

namespace {

int RunSubmit(const ClientContext& ctx, SubmitOptions options, bool json) {
  std::error_code ec;
  const std::string cwd = std::filesystem::current_path(ec).string();
  // The [slurm] tables of the client file, read only for a script with #SBATCH lines.
  const auto mapping = []() -> Result<SlurmMapping> {
    GF_ASSIGN_OR_RETURN(const ClientConfig config, ReadClientFile(CurrentClientEnv()));
    return config.slurm;
  };
  Result<std::string> warning = ApplyScriptDirectives(options, cwd, mapping);
  if (!warning.ok()) {
    return Fail(warning.error());
  }
  if (!warning->empty()) {
    std::cerr << "gpufleet: " << *warning << '\n';
  }
  Result<nlohmann::json> body = BuildSubmitBody(options, cwd, CurrentEnvironment());
  if (!body.ok()) {
    return Fail(body.error());
  }
  auto opened = OpenClient(ctx);
  if (!opened.ok()) {
    return Fail(opened.error());
  }
  ApiClient& client = **opened;
  Result<nlohmann::json> job = client.CallJson("POST", "/api/v1/jobs", *body);
  if (!job.ok()) {
    return Fail(job.error());
  }
  if (options.mail_user && options.mail_events && !options.mail_events->empty()) {
    // #SBATCH --mail-type: the job (an array's tasks, a multi-node job's first node) is
    // notified by e-mail until it ends. The job stands whatever happens here.
    const std::int64_t id = job->value("id", std::int64_t{0});
    nlohmann::json events = nlohmann::json::array();
    for (const NotifyKind kind : ParseNotifyKinds(*options.mail_events).value_or({})) {
      events.push_back(ToString(kind));
    }
    const nlohmann::json sub{{"scope", "job"},
                             {"job", id},
                             {"channel", "email"},
                             {"target", *options.mail_user},
                             {"events", std::move(events)}};
    if (Result<nlohmann::json> made = client.CallJson("POST", "/api/v1/subscriptions", sub);
        !made.ok()) {
      std::cerr << "gpufleet: warning: job " << id << " was submitted, but its mail ("
                << *options.mail_user << ") could not be set up: " << made.error().message
                << "; run gpufleet notify add --job " << id << " --email " << *options.mail_user
                << '\n';
    }
  }
  if (json) {
    PrintJson(*job);
  } else if (body->contains("array")) {
    // The tasks have consecutive ids from the first one's, in index order.
    const auto tasks = static_cast<std::int64_t>((*body)["array"]["indices"].size());
    const std::int64_t first = job->value("id", std::int64_t{0});
    std::cout << "Submitted array job " << first << " (" << tasks
              << (tasks == 1 ? " task: job " : " tasks: jobs ") << first
              << (tasks == 1 ? "" : "-" + std::to_string(first + tasks - 1)) << ")\n";
  } else if (const std::int64_t nodes = job->value("nodes", std::int64_t{1}); nodes > 1) {
    // The members have consecutive ids from rank 0's, which is the job's id.
    const std::int64_t first = job->value("id", std::int64_t{0});
    std::cout << "Submitted job " << first << " on " << nodes << " nodes (members: jobs " << first
              << "-" << first + nodes - 1 << ")\n";
  } else {
    std::cout << "Submitted job " << JsonText(*job, "id") << '\n';
  }
  return 0;
}

// ---- queue / show / cancel ----

// GETs `target`: prints the answer as JSON with --json, else through `render`. Returns the
// exit code. Every read command goes through here, so they fail and print alike.
}  // namespace

int RunRead(const ClientContext& ctx,
            const std::string& target,
            bool json,
            const std::function<void(const nlohmann::json&)>& render) {
  auto opened = OpenClient(ctx);
  if (!opened.ok()) {
    return Fail(opened.error());
  }
  ApiClient& client = **opened;
  Result<nlohmann::json> r = client.CallJson("GET", target, std::nullopt);
  if (!r.ok()) {
    return Fail(r.error());
  }
  if (json) {
    PrintJson(*r);
  } else {
    render(*r);
  }
  return 0;
}

namespace {

// As squeue lists them: the pending jobs in the order the scheduler considers them (their
// queue_position, 1 first, as `explain` and the dashboard's queue page number them), pending
// ones outside that order (held, waiting for a dependency) after them, then the rest as the API
// gave them.
std::vector<nlohmann::json> InQueueOrder(const nlohmann::json& jobs) {
  std::vector<nlohmann::json> out(jobs.begin(), jobs.end());
  const auto rank = [](const nlohmann::json& job) {
    const auto at = job.find("queue_position");
    if (at != job.end() && at->is_number_integer()) {
      return std::pair{0, at->get<std::int64_t>()};
    }
    return std::pair{JsonText(job, "state") == "PENDING" ? 1 : 2, std::int64_t{0}};
  };
  std::stable_sort(
      out.begin(), out.end(), [&rank](const auto& a, const auto& b) { return rank(a) < rank(b); });
  return out;
}

int RunQueue(const ClientContext& ctx, bool all, const std::string& user, bool json) {
  std::string target = "/api/v1/jobs?limit=100000";  // the API's maximum: show the whole queue
  if (all) {
    target += "&all=1";
  }
  if (!user.empty()) {
    target += "&user=" + PercentEncode(user);
  }
  return RunRead(ctx, target, json, [](const nlohmann::json& r) {
    // ARRAY ("40_3", after ID) only when the list holds a task of a job array.
    const bool arrays = std::any_of(r["jobs"].begin(), r["jobs"].end(), [](const auto& job) {
      return !ArrayTaskLabel(job).empty();
    });
    std::vector<std::string> header = {
        "ID", "NAME", "USER", "STATE", "POS", "GPUS", "NODE", "AGE", "EST. START", "REASON"};
    if (arrays) {
      header.insert(header.begin() + 1, "ARRAY");
    }
    Table table(std::move(header));
    for (const auto& job : InQueueOrder(r["jobs"])) {
      std::string reason = JsonText(job, "state") == "RUNNING" ? "" : JsonText(job, "reason", "");
      std::vector<std::string> row = {JsonText(job, "id"),
                                      JsonText(job, "name"),
                                      JsonText(job, "user"),
                                      JsonText(job, "state"),
                                      JsonText(job, "queue_position", ""),
                                      JobGpusText(job),
                                      JsonText(job, "node"),
                                      Age(job),
                                      EstimatedStartText(job, NowMs()),
                                      reason};
      if (arrays) {
        row.insert(row.begin() + 1, ArrayTaskLabel(job));
      }
      table.AddRow(std::move(row));
    }
    table.Print(std::cout);
  });
}

int RunExplain(const ClientContext& ctx, const std::string& id_text, bool json) {
  Result<std::int64_t> id = ResolveJobId(ctx, id_text);
  if (!id.ok()) {
    return Fail(id.error());
  }
  return RunRead(
      ctx, "/api/v1/jobs/" + std::to_string(*id) + "/explain", json, [](const nlohmann::json& e) {
        PrintExplanation(e, NowMs(), std::cout);
      });
}

// ---- quota / quota approve / checkpoint ----

int RunQuota(const ClientContext& ctx, bool json) {
  return RunRead(
      ctx, "/api/v1/quota", json, [](const nlohmann::json& q) { PrintQuota(q, std::cout); });
}

}  // namespace

int RunJobAction(const ClientContext& ctx,
                 const std::vector<std::string>& ids,
                 const std::string& action,
                 const std::string& done) {
  auto opened = OpenClient(ctx);
  if (!opened.ok()) {
    return Fail(opened.error());
  }
  ApiClient& client = **opened;
  int rc = 0;
  for (const auto& text : ids) {
    Result<std::int64_t> id = ResolveJobId(client, text);
    Result<nlohmann::json> job =
        id.ok() ? client.CallJson(
                      "POST", "/api/v1/jobs/" + std::to_string(*id) + "/" + action, std::nullopt)
                : Result<nlohmann::json>(id.error());
    if (!job.ok()) {
      rc = Fail(job.error());
      continue;
    }
    std::cout << "Job " << text << ": " << done << " (state " << JsonText(*job, "state") << ")\n";
  }
  return rc;
}

namespace {

// `gpufleet checkpoint [JOB]`: without JOB, the job this runs in (the shim sets
// GPUFLEET_JOB_ID), so a job's checkpoint handler can call it after saving.
int RunCheckpoint(const ClientContext& ctx, const std::string& id) {
  if (!id.empty()) {
    return RunJobAction(ctx, {id}, "checkpoint", "checkpoint recorded");
  }
  const std::map<std::string, std::string> env = CurrentEnvironment();
  const auto own = env.find("GPUFLEET_JOB_ID");
  if (own == env.end() || own->second.empty()) {
    return Fail(
        InvalidArgument("checkpoint: give a job id (gpufleet checkpoint JOB), or run it "
                        "inside a job, where GPUFLEET_JOB_ID is set"));
  }
  return RunJobAction(ctx, {own->second}, "checkpoint", "checkpoint recorded");
}

int RunShow(const ClientContext& ctx, const std::string& id_text, bool json) {
  Result<std::int64_t> id = ResolveJobId(ctx, id_text);
  if (!id.ok()) {
    return Fail(id.error());
  }
  const std::string target = "/api/v1/jobs/" + std::to_string(*id);
  const int rc = RunRead(
      ctx, target, json, [](const nlohmann::json& job) { PrintJob(job, NowMs(), std::cout); });
  if (rc != 0 || json) {
    return rc;  // --json keeps the job's object alone, as scripts read it
  }
  return RunRead(ctx, target + "/events", false, [](const nlohmann::json& body) {
    PrintJobEvents(body, std::cout);
  });
}

// `gpufleet cancel --array 40`: every unfinished task of each array.
int RunCancelArrays(const ClientContext& ctx, const std::vector<std::string>& ids) {
  auto opened = OpenClient(ctx);
  if (!opened.ok()) {
    return Fail(opened.error());
  }
  ApiClient& client = **opened;
  int rc = 0;
  for (const auto& text : ids) {
    Result<std::int64_t> id = ParseArrayId(text);
    Result<nlohmann::json> r =
        id.ok() ? client.CallJson(
                      "POST", "/api/v1/arrays/" + std::to_string(*id) + "/cancel", std::nullopt)
                : Result<nlohmann::json>(id.error());
    if (!r.ok()) {
      rc = Fail(r.error());
      continue;
    }
    const std::size_t tasks = r->value("jobs", nlohmann::json::array()).size();
    std::cout << "Cancel of array " << text << " requested (" << tasks
              << (tasks == 1 ? " task)\n" : " tasks)\n");
  }
  return rc;
}

int RunCancel(const ClientContext& ctx,
              const std::vector<std::string>& ids,
              bool arrays,
              const CancelFilter& filter,
              const std::optional<std::string>& signal) {
  if (signal) {
    return RunSignal(ctx, ids, arrays, filter, *signal);
  }
  if (ids.empty() || !filter.Empty()) {
    if (arrays || !ids.empty()) {
      return Fail(InvalidArgument(
          "cancel: give job ids or filters (--user, --state, --name, --team), not both"));
    }
    return RunCancelMatching(ctx, filter);
  }
  if (arrays) {
    return RunCancelArrays(ctx, ids);
  }
  auto opened = OpenClient(ctx);
  if (!opened.ok()) {
    return Fail(opened.error());
  }
  ApiClient& client = **opened;
  int rc = 0;
  for (const auto& text : ids) {
    Result<std::int64_t> id = ResolveJobId(client, text);
    Result<nlohmann::json> job =
        id.ok() ? client.CallJson(
                      "POST", "/api/v1/jobs/" + std::to_string(*id) + "/cancel", std::nullopt)
                : Result<nlohmann::json>(id.error());
    if (!job.ok()) {
      rc = Fail(job.error());
      continue;
    }
    std::cout << "Cancel of job " << text << " requested (state " << JsonText(*job, "state")
              << ")\n";
    if (JsonText(*job, "array_job") == JsonText(*job, "id")) {
      // Only this task: an array's id is also its first task's, and cancelling a whole array
      // must be asked for.
      std::cout << "  job " << text << " is task " << ArrayTaskLabel(*job)
                << " of an array; to cancel every task: gpufleet cancel --array "
                << JsonText(*job, "array_job") << '\n';
    }
  }
  return rc;
}

// ---- nodes / gpus ----

int RunNodes(const ClientContext& ctx, bool json) {
  return RunRead(
      ctx, "/api/v1/nodes", json, [](const nlohmann::json& r) { PrintNodes(r, std::cout); });
}

int RunGpus(const ClientContext& ctx, bool json, bool processes) {
  return RunRead(ctx, "/api/v1/gpus", json, [processes](const nlohmann::json& r) {
    PrintGpuTable(r, std::cout);
    if (processes) {
      std::cout << '\n';
      PrintGpuProcesses(r, std::cout);
    }
  });
}

}  // namespace

Result<ClientSettings> ResolveSettings(const ClientContext& ctx) {
  return ResolveClientSettings(ctx.flags, CurrentClientEnv());
}

Result<std::unique_ptr<ApiClient>> OpenClient(const ClientContext& ctx) {
  GF_ASSIGN_OR_RETURN(ClientSettings settings, ResolveSettings(ctx));
  return std::make_unique<ApiClient>(std::move(settings.endpoint), std::move(settings.options));
}

void AddClientCommands(CLI::App& app, ClientContext& ctx) {
  // Options end at the first word that is not one (or at '--'): the rest is the command and
  // its arguments, or a script and its arguments (whose #GPUFLEET lines add options).
  auto* submit = app.add_subcommand(
      "submit", "queue a job: gpufleet submit --gpus 2 -- CMD ARGS, or gpufleet submit SCRIPT");
  auto submit_options = std::make_shared<SubmitOptions>();
  auto submit_json = std::make_shared<bool>(false);
  AddSubmitOptions(*submit, *submit_options);
  submit->add_flag("--json", *submit_json, "print the accepted job as JSON");
  submit->formatter(std::make_shared<SubmitHelpFormatter>());
  submit->footer(std::string(kSlurmCompatNote));
  submit->prefix_command();
  submit->callback([&ctx, submit, submit_options, submit_json] {
    if (Status taken = TakeJobCommand(ctx, submit->remaining(), "submit", *submit_options);
        !taken.ok()) {
      ctx.exit_code = Fail(taken.error());
      return;
    }
    ctx.exit_code = RunSubmit(ctx, *submit_options, *submit_json);
  });

  auto* queue = app.add_subcommand("queue", "list jobs with their state and pending reason");
  auto q_all = std::make_shared<bool>(false);
  auto q_json = std::make_shared<bool>(false);
  auto q_user = std::make_shared<std::string>();
  queue->add_flag("-a,--all", *q_all, "include finished jobs");
  queue->add_option("-u,--user", *q_user, "only this user's jobs (root)");
  queue->add_flag("--json", *q_json, "JSON output");
  queue->callback(
      [&ctx, q_all, q_user, q_json] { ctx.exit_code = RunQueue(ctx, *q_all, *q_user, *q_json); });

  auto* show = app.add_subcommand("show", "one job in detail");
  auto s_id = std::make_shared<std::string>();
  auto s_json = std::make_shared<bool>(false);
  show->add_option("JOB", *s_id, "job id, or array task ID_INDEX (17_1)")->required();
  show->add_flag("--json", *s_json, "JSON output");
  show->callback([&ctx, s_id, s_json] { ctx.exit_code = RunShow(ctx, *s_id, *s_json); });

  auto* explain = app.add_subcommand(
      "explain", "why a job waits, starts or preempts: its priority factors, quota and each node");
  auto e_id = std::make_shared<std::string>();
  auto e_json = std::make_shared<bool>(false);
  explain->add_option("JOB", *e_id, "job id or array task ID_INDEX (pending or running)")
      ->required();
  explain->add_flag("--json", *e_json, "JSON output (every field)");
  explain->callback([&ctx, e_id, e_json] { ctx.exit_code = RunExplain(ctx, *e_id, *e_json); });

  auto* cancel = app.add_subcommand(
      "cancel",
      "cancel jobs (running ones get SIGTERM, then SIGKILL), or with --signal send running jobs "
      "a signal and let them run on");
  auto c_ids = std::make_shared<std::vector<std::string>>();
  auto c_array = std::make_shared<bool>(false);
  auto c_filter = std::make_shared<CancelFilter>();
  auto c_signal = std::make_shared<std::optional<std::string>>();
  cancel->add_option("JOB", *c_ids, "job ids or array tasks ID_INDEX (or filters, below)");
  cancel->add_flag(
      "--array", *c_array, "JOB is a job array's id: cancel every unfinished task of it");
  cancel->add_option("-s,--signal",
                     *c_signal,
                     "send this signal (USR1, SIGUSR1, HUP, INT, TERM, CONT, a number) to every "
                     "process of the running jobs instead of cancelling them, like scancel "
                     "--signal");
  AddCancelFilterOptions(*cancel, *c_filter);
  cancel->callback([&ctx, c_ids, c_array, c_filter, c_signal] {
    ctx.exit_code = RunCancel(ctx, *c_ids, *c_array, *c_filter, *c_signal);
  });

  auto* quota = app.add_subcommand(
      "quota", "teams' GPU guarantees, limits and GPU-hour budgets, and what is used of them");
  auto qt_json = std::make_shared<bool>(false);
  quota->add_flag("--json", *qt_json, "JSON output");
  quota->require_subcommand(0, 1);
  auto* approve = quota->add_subcommand(
      "approve", "let pending jobs run past their team's GPU-hour budget (root)");
  auto a_ids = std::make_shared<std::vector<std::string>>();
  approve->add_option("JOB", *a_ids, "job ids (pending)")->required();
  approve->callback([&ctx, a_ids] {
    ctx.exit_code = RunJobAction(ctx, *a_ids, "approve", "approved past its team's budget");
  });
  quota->callback([&ctx, quota, qt_json] {
    if (quota->get_subcommands().empty()) {  // plain `gpufleet quota`, not `quota approve`
      ctx.exit_code = RunQuota(ctx, *qt_json);
    }
  });

  auto* checkpoint =
      app.add_subcommand("checkpoint",
                         "record that a running job saved a checkpoint now (run inside the job, or "
                         "give JOB): a preemption then loses only the work since");
  auto k_id = std::make_shared<std::string>();
  checkpoint->add_option("JOB", *k_id, "job id (default: $GPUFLEET_JOB_ID, the job it runs in)");
  checkpoint->callback([&ctx, k_id] { ctx.exit_code = RunCheckpoint(ctx, *k_id); });

  AddJobControlCommands(app, ctx);
  AddHistoryCommands(app, ctx);

  auto* logs = app.add_subcommand(
      "logs", "a job's output: standard output, then standard error (--stdout, --stderr: one)");
  auto l_id = std::make_shared<std::string>();
  auto l_out = std::make_shared<bool>(false);
  auto l_err = std::make_shared<bool>(false);
  auto l_follow = std::make_shared<bool>(false);
  logs->add_option("JOB", *l_id, "job id, or array task ID_INDEX (17_1)")->required();
  auto* out_flag = logs->add_flag("--stdout", *l_out, "standard output only");
  logs->add_flag("-e,--stderr", *l_err, "standard error only")->excludes(out_flag);
  logs->add_flag("-f,--follow", *l_follow, "keep printing until the job ends");
  logs->callback([&ctx, l_id, l_out, l_err, l_follow] {
    const LogStreams which = *l_out   ? LogStreams::kStdout
                             : *l_err ? LogStreams::kStderr
                                      : LogStreams::kBoth;
    ctx.exit_code = RunLogs(ctx, *l_id, which, *l_follow);
  });

  auto* nodes = app.add_subcommand("nodes", "the nodes and their state");
  auto n_json = std::make_shared<bool>(false);
  nodes->add_flag("--json", *n_json, "JSON output");
  nodes->callback([&ctx, n_json] { ctx.exit_code = RunNodes(ctx, *n_json); });

  auto* gpus = app.add_subcommand("gpus", "every GPU: model, use, health, job and user");
  auto g_json = std::make_shared<bool>(false);
  auto g_processes = std::make_shared<bool>(false);
  gpus->add_flag("--json", *g_json, "JSON output (every field, full health causes)");
  gpus->add_flag("-p,--processes",
                 *g_processes,
                 "also list each GPU process: pid, user, job or unmanaged, memory, util");
  gpus->callback(
      [&ctx, g_json, g_processes] { ctx.exit_code = RunGpus(ctx, *g_json, *g_processes); });
}

}  // namespace gf

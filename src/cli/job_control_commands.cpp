#include "cli/job_control_commands.h"

#include <iostream>
#include <memory>
#include <vector>

#include <CLI/CLI.hpp>

#include "api/api_client.h"
#include "cli/job_ref.h"
#include "cli/views.h"
#include "core/duration.h"
#include "model/job.h"

namespace gf {
namespace {

// Slurm's short state names (squeue's ST column) are what a Slurm user types after -t.
std::string StateName(const std::string& text) {
  if (text == "PD" || text == "pd") {
    return "PENDING";
  }
  if (text == "R" || text == "r") {
    return "RUNNING";
  }
  return text;
}

// The job ids of the pending tasks of array `text` (`hold --array 17`), as the caller sees them.
Result<std::vector<std::string>> PendingTasks(const ClientContext& ctx, const std::string& text) {
  GF_ASSIGN_OR_RETURN(const std::int64_t array, ParseArrayId(text));
  GF_ASSIGN_OR_RETURN(std::unique_ptr<ApiClient> client, OpenClient(ctx));
  GF_ASSIGN_OR_RETURN(const nlohmann::json r,
                      client->CallJson("GET", "/api/v1/jobs?limit=100000", std::nullopt));
  std::vector<std::string> ids;
  for (const auto& job : r.value("jobs", nlohmann::json::array())) {
    if (JsonText(job, "array_job") == std::to_string(array) &&
        JsonText(job, "state") == "PENDING") {
      ids.push_back(JsonText(job, "id"));
    }
  }
  if (ids.empty()) {
    return FailedPrecondition("array " + text +
                              ": no pending task (gpufleet queue lists its tasks)");
  }
  return ids;
}

// hold / release: each job named, or with --array each pending task of each array named.
int RunHoldOrRelease(const ClientContext& ctx,
                     const std::vector<std::string>& named,
                     bool arrays,
                     const std::string& action,
                     const std::string& done) {
  if (!arrays) {
    return RunJobAction(ctx, named, action, done);
  }
  int rc = 0;
  for (const std::string& text : named) {
    Result<std::vector<std::string>> tasks = PendingTasks(ctx, text);
    const int one = tasks.ok() ? RunJobAction(ctx, *tasks, action, done) : Fail(tasks.error());
    rc = rc == 0 ? one : rc;
  }
  return rc;
}

struct UpdateOptions {
  std::string job;
  std::optional<int> gpus;
  std::string time;
  std::string priority;
  std::string team;
  std::string name;
  std::optional<std::string> cpus;  // "0": none reserved
  std::optional<std::string> mem;   // "0": none reserved
};

int RunUpdate(const ClientContext& ctx, const UpdateOptions& o) {
  nlohmann::json body = nlohmann::json::object();
  if (o.gpus) {
    body["gpus"] = *o.gpus;
  }
  if (!o.time.empty()) {
    body["time_limit"] = o.time;  // the server reads it as submit's --time
  }
  if (!o.priority.empty()) {
    body["priority"] = o.priority;
  }
  if (!o.team.empty()) {
    body["team"] = o.team;
  }
  if (!o.name.empty()) {
    body["name"] = o.name;
  }
  if (o.cpus) {
    if (*o.cpus == "0") {
      body["cpus"] = 0;
    } else {
      Result<int> cpus = ParseCpuCount(*o.cpus, "--cpus");
      if (!cpus.ok()) {
        return Fail(cpus.error());
      }
      body["cpus"] = *cpus;
    }
  }
  if (o.mem) {
    if (*o.mem == "0") {
      body["mem_mib"] = 0;
    } else {
      Result<std::int64_t> mib = ParseMemoryMib(*o.mem, "--mem");
      if (!mib.ok()) {
        return Fail(mib.error());
      }
      body["mem_mib"] = *mib;
    }
  }
  if (body.empty()) {
    return Fail(InvalidArgument(
        "update: nothing to change; give --gpus, --cpus, --mem, --time, --class, --team or "
        "--name"));
  }
  auto opened = OpenClient(ctx);
  if (!opened.ok()) {
    return Fail(opened.error());
  }
  ApiClient& client = **opened;
  Result<std::int64_t> id = ResolveJobId(client, o.job);
  Result<nlohmann::json> job =
      id.ok() ? client.CallJson("POST", "/api/v1/jobs/" + std::to_string(*id) + "/update", body)
              : Result<nlohmann::json>(id.error());
  if (!job.ok()) {
    return Fail(job.error());
  }
  const std::string limit =
      job->value("time_limit_s", nlohmann::json()).is_number_integer()
          ? FormatDuration(std::chrono::seconds(job->value("time_limit_s", std::int64_t{0})))
          : "none";
  std::cout << "Job " << o.job << " updated: name " << JsonText(*job, "name") << ", "
            << JsonText(*job, "gpus") << " GPUs, " << JsonText(*job, "cpus", "0") << " CPUs, "
            << (job->value("mem_mib", std::int64_t{0}) > 0
                    ? FormatMib(job->value("mem_mib", std::int64_t{0})) + " memory"
                    : std::string("no memory reserved"))
            << ", time limit " << limit << ", class " << JsonText(*job, "priority") << ", team "
            << JsonText(*job, "team", "(none)") << " (state " << JsonText(*job, "state") << ")\n";
  return 0;
}

}  // namespace

void AddCancelFilterOptions(CLI::App& cancel, CancelFilter& filter) {
  cancel.add_option("-u,--user", filter.user, "cancel the jobs of this user (yours, or root: any)");
  cancel.add_option(
      "-t,--state", filter.state, "only jobs in this state: PENDING (PD) or RUNNING (R)");
  cancel.add_option("-n,--name", filter.name, "only jobs of this name");
  cancel.add_option("-A,--team", filter.team, "only jobs of this team");
}

namespace {

// The filter as POST /api/v1/jobs/cancel and /api/v1/jobs/signal take it.
nlohmann::json FilterBody(const CancelFilter& filter) {
  nlohmann::json body = nlohmann::json::object();
  if (!filter.user.empty()) {
    body["user"] = filter.user;
  }
  if (!filter.state.empty()) {
    body["state"] = StateName(filter.state);
  }
  if (!filter.name.empty()) {
    body["name"] = filter.name;
  }
  if (filter.team) {
    body["team"] = *filter.team;
  }
  return body;
}

// "12, 13, 17": the ids of a list of jobs (the API's JSON).
std::string Ids(const nlohmann::json& jobs) {
  std::string ids;
  for (const auto& job : jobs) {
    ids += (ids.empty() ? "" : ", ") + JsonText(job, "id");
  }
  return ids;
}

std::string Jobs(std::size_t n) {
  return std::to_string(n) + (n == 1 ? " job" : " jobs");
}

// `cancel --signal SIG` with filters: the running jobs matched get it, the others are named.
int RunSignalMatching(const ClientContext& ctx, const CancelFilter& filter, int sig) {
  nlohmann::json body = FilterBody(filter);
  body["signal"] = sig;
  auto opened = OpenClient(ctx);
  if (!opened.ok()) {
    return Fail(opened.error());
  }
  Result<nlohmann::json> r = (*opened)->CallJson("POST", "/api/v1/jobs/signal", body);
  if (!r.ok()) {
    return Fail(r.error());
  }
  const nlohmann::json jobs = r->value("jobs", nlohmann::json::array());
  const nlohmann::json skipped = r->value("skipped", nlohmann::json::array());
  const std::string name = "SIG" + JobSignalName(sig);
  if (jobs.empty() && skipped.empty()) {
    std::cout << "No job matched: no signal sent\n";
    return 0;
  }
  if (!jobs.empty()) {
    std::cout << "Sent " << name << " to " << Jobs(jobs.size()) << ": " << Ids(jobs) << '\n';
  }
  if (!skipped.empty()) {
    std::string which;
    for (const auto& job : skipped) {
      which +=
          (which.empty() ? "" : ", ") + JsonText(job, "id") + " (" + JsonText(job, "state") + ")";
    }
    std::cout << "Skipped " << Jobs(skipped.size()) << " not running: " << which
              << " (--signal reaches running jobs only)\n";
  }
  return 0;
}

}  // namespace

int RunCancelMatching(const ClientContext& ctx, const CancelFilter& filter) {
  if (filter.Empty()) {
    return Fail(InvalidArgument(
        "cancel: no job named; give job ids, or filters (--user, --state, --name, --team)"));
  }
  auto opened = OpenClient(ctx);
  if (!opened.ok()) {
    return Fail(opened.error());
  }
  Result<nlohmann::json> r = (*opened)->CallJson("POST", "/api/v1/jobs/cancel", FilterBody(filter));
  if (!r.ok()) {
    return Fail(r.error());
  }
  const nlohmann::json jobs = r->value("jobs", nlohmann::json::array());
  if (jobs.empty()) {
    std::cout << "No job matched: nothing cancelled\n";
    return 0;
  }
  std::cout << "Cancelled " << Jobs(jobs.size()) << ": " << Ids(jobs) << '\n';
  return 0;
}

int RunSignal(const ClientContext& ctx,
              const std::vector<std::string>& ids,
              bool arrays,
              const CancelFilter& filter,
              const std::string& signal) {
  Result<int> sig = ParseJobSignal(signal, "--signal");
  if (!sig.ok()) {
    return Fail(sig.error());
  }
  if (arrays) {
    return Fail(InvalidArgument(
        "--signal: not with --array; name the tasks (ID_INDEX), or filter, e.g. gpufleet cancel "
        "--signal USR1 --name NAME"));
  }
  if (ids.empty() == filter.Empty()) {
    return Fail(InvalidArgument(
        "cancel --signal: give job ids or filters (--user, --state, --name, --team), one of the "
        "two"));
  }
  if (ids.empty()) {
    return RunSignalMatching(ctx, filter, *sig);
  }
  auto opened = OpenClient(ctx);
  if (!opened.ok()) {
    return Fail(opened.error());
  }
  ApiClient& client = **opened;
  const nlohmann::json body{{"signal", *sig}};
  int rc = 0;
  for (const auto& text : ids) {
    Result<std::int64_t> id = ResolveJobId(client, text);
    Result<nlohmann::json> job =
        id.ok() ? client.CallJson("POST", "/api/v1/jobs/" + std::to_string(*id) + "/signal", body)
                : Result<nlohmann::json>(id.error());
    if (!job.ok()) {
      rc = Fail(job.error());
      continue;
    }
    std::cout << "Sent SIG" << JobSignalName(*sig) << " to job " << text << " (state "
              << JsonText(*job, "state") << ")\n";
  }
  return rc;
}

void AddJobControlCommands(CLI::App& app, ClientContext& ctx) {
  auto* hold = app.add_subcommand(
      "hold", "keep pending jobs from starting until released (like scontrol hold)");
  auto h_ids = std::make_shared<std::vector<std::string>>();
  auto h_array = std::make_shared<bool>(false);
  hold->add_option("JOB", *h_ids, "job ids or array tasks ID_INDEX (pending)")->required();
  hold->add_flag("--array", *h_array, "JOB is a job array's id: hold every pending task of it");
  hold->callback([&ctx, h_ids, h_array] {
    ctx.exit_code = RunHoldOrRelease(ctx, *h_ids, *h_array, "hold", "held");
  });

  auto* release =
      app.add_subcommand("release", "let held jobs be scheduled again (like scontrol release)");
  auto r_ids = std::make_shared<std::vector<std::string>>();
  auto r_array = std::make_shared<bool>(false);
  release->add_option("JOB", *r_ids, "job ids or array tasks ID_INDEX (held)")->required();
  release->add_flag(
      "--array", *r_array, "JOB is a job array's id: release every pending task of it");
  release->callback([&ctx, r_ids, r_array] {
    ctx.exit_code = RunHoldOrRelease(ctx, *r_ids, *r_array, "release", "released");
  });

  auto* requeue = app.add_subcommand(
      "requeue",
      "stop running jobs and queue them again at their place (like scontrol requeue): the "
      "checkpoint signal, then SIGKILL after the kill grace");
  auto q_ids = std::make_shared<std::vector<std::string>>();
  requeue->add_option("JOB", *q_ids, "job ids or array tasks ID_INDEX (running)")->required();
  requeue->callback([&ctx, q_ids] {
    ctx.exit_code = RunJobAction(
        ctx, *q_ids, "requeue", "requeued: stopping it, then back in the queue at its place");
  });

  auto* update = app.add_subcommand(
      "update",
      "change a pending job's GPUs, CPUs, memory, time limit, class, team or name (like "
      "scontrol update)");
  auto u = std::make_shared<UpdateOptions>();
  update->add_option("JOB", u->job, "job id or array task ID_INDEX (pending)")->required();
  update->add_option("--gpus", u->gpus, "GPUs (on each node)");
  update->add_option("--cpus", u->cpus, "host CPUs on each node (0: none reserved)");
  update->add_option("--mem", u->mem, "host memory on each node: 64G, 512M (0: none reserved)");
  update->add_option("--time", u->time, "time limit: 90s, 30m, 2h, 1d, HH:MM:SS, D-HH:MM:SS");
  update->add_option("--class,--priority", u->priority, "priority class (one you may use)");
  update->add_option("--team", u->team, "team (one you belong to)");
  update->add_option("--name", u->name, "job name");
  update->callback([&ctx, u] { ctx.exit_code = RunUpdate(ctx, *u); });
}

}  // namespace gf

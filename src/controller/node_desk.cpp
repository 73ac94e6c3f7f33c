// NodeDesk (node_desk.h): the agents' reports and the nodes' state, on the state thread.
#include "controller/node_desk.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include <spdlog/spdlog.h>

#include "controller/accounting.h"
#include "controller/launch_env.h"
#include "model/kube_pod.h"
#include "scheduler/idle_policy.h"

namespace gf {

NodeDesk::NodeDesk(const NodeDeskOptions& options, NodeDeskParts parts)
    : policy_(options.policy),
      node_timeout_(options.node_timeout),
      liveness_clock_(options.liveness_clock),
      kill_grace_(options.kill_grace),
      jobs_from_(options.jobs_from),
      p_(parts) {}

void NodeDesk::JobStarted(JobId id, std::int64_t pid, Time start_time) {
  Job* job = p_.jobs.Find(id);
  if (job == nullptr || job->state != JobState::kStarting) {
    return;
  }
  p_.jobs.Started(*job, pid, start_time, "agent:" + job->allocation->node.value());
  // Its start time is known only now: waiting jobs may preempt it once it is old enough.
  if (policy_.preemption.enabled) {
    const Time old_enough = start_time + policy_.preemption.min_run_time;
    if (old_enough > p_.clock.Now()) {
      p_.scheduling.ArmAt(old_enough);
    }
  }
}

void NodeDesk::JobExited(const JobExitReport& report) {
  Job* job = p_.jobs.Find(report.job);
  const bool runs_there = job != nullptr && HoldsGpus(*job) &&
                          (report.node.value().empty() || job->allocation->node == report.node);
  if (runs_there) {
    Finish(*job, report);
    return;
  }
  // Already recorded (re-reported after a restart), or the exit of an orphan copy on a node
  // the job no longer runs on: nothing to do but let the reporting agent forget it.
  if (job != nullptr && report.node.value().empty()) {
    return;  // the job's own agent; its exit will be acknowledged when the job ends
  }
  for (const auto& [name, entry] : p_.nodes.Entries()) {
    if (entry.agent != nullptr && (report.node.value().empty() || name == report.node)) {
      entry.agent->AcknowledgeExit(report.job);
    }
  }
}

void NodeDesk::Heard(const NodeId& node) {
  p_.nodes.Heard(node, liveness_clock_());
}

// The distinct models of the job's GPUs, sorted (as its node reports them).
std::vector<RunningSpan> NodeDesk::RunningSpans(bool for_ledgers) const {
  const bool models = !for_ledgers || p_.usage.WeighsModels();
  std::vector<RunningSpan> out;
  out.reserve(p_.jobs.Holding().size());
  for (const JobId id : p_.jobs.Holding()) {
    const Job& job = p_.jobs.At(id);
    const std::optional<JobUsage> usage = for_ledgers ? std::nullopt : p_.telemetry.Usage(job.id);
    out.push_back(
        RunningSpan{.team = job.spec.team,
                    .user = job.owner.user,
                    .gpus = HeldGpus(*job.allocation),
                    .start = job.start_time.value_or(p_.clock.Now()),
                    .gpu_models = models ? GpuModelsOfJob(job) : std::vector<std::string>{},
                    .energy_mj = usage ? usage->energy_mj : 0,
                    .held_milli = HeldMilli(*job.allocation),
                    .borrowed = job.preemptible});
  }
  return out;
}

std::vector<std::string> NodeDesk::GpuModelsOfJob(const Job& job) const {
  const NodeEntry* entry = p_.nodes.Find(job.allocation->node);
  return GpuModelsOn(entry != nullptr ? &entry->node : nullptr, job);
}

namespace {

// A source's flag, how an agent of it runs, and where an agent of it belongs.
struct SourceWords {
  std::string_view flag;
  std::string_view agent_runs;
  std::string_view server_follows;
  std::string_view agent_place;
};

SourceWords WordsOf(JobSource source) {
  switch (source) {
    case JobSource::kSlurm:
      return {"--slurm", "beside Slurm", "Slurm", "beside slurmd"};
    case JobSource::kKubernetes:
      return {"--kubernetes", "on Kubernetes", "Kubernetes", "as a DaemonSet beside the kubelet"};
    case JobSource::kGpufleet:
      break;
  }
  return {"", "", "", ""};
}

// Why a node whose agent's jobs come from `agent` is drained under a server of `server`, with
// the fix: "its agent runs beside Slurm (--slurm) but this server schedules: start the agent
// without --slurm, or the server with --slurm".
std::string MismatchReason(JobSource agent, JobSource server) {
  const SourceWords a = WordsOf(agent);
  const SourceWords s = WordsOf(server);
  std::string reason = "its agent runs ";
  reason += agent == JobSource::kGpufleet
                ? "without " + std::string(s.flag)
                : std::string(a.agent_runs) + " (" + std::string(a.flag) + ")";
  if (server == JobSource::kGpufleet) {
    return reason + " but this server schedules: start the agent without " + std::string(a.flag) +
           ", or the server with " + std::string(a.flag);
  }
  return reason + " but this server follows " + std::string(s.server_follows) + " (" +
         std::string(s.flag) + "): start the agent with " + std::string(s.flag) + ", " +
         std::string(s.agent_place);
}

}  // namespace

// An agent and a server that disagree on whose jobs run on the node: a Slurm or Kubernetes
// agent would have gpufleet's launches run beside Slurm's jobs or the pods, and a plain agent
// under a Slurm or Kubernetes server would call every process of theirs unmanaged. The node is
// drained with the fix, and the drain lifted once an agent of the right kind says hello (an
// admin's own drain is left alone).
void NodeDesk::CheckJobSource(const NodeId& node, const std::string& agent_jobs_from) {
  const std::optional<std::string>& drain = p_.nodes.At(node).drain;
  bool ours = false;
  for (const JobSource agent : {JobSource::kGpufleet, JobSource::kSlurm, JobSource::kKubernetes}) {
    ours = ours || (drain && agent != jobs_from_ && *drain == MismatchReason(agent, jobs_from_));
  }
  const std::optional<JobSource> agent = JobSourceOfName(agent_jobs_from);
  if (agent != jobs_from_) {
    const std::string reason = agent
                                   ? MismatchReason(*agent, jobs_from_)
                                   : "its agent's jobs come from \"" + agent_jobs_from +
                                         "\", which this server does not know: upgrade the server";
    if (drain != reason && p_.nodes.SetDrain(node, reason).ok()) {
      spdlog::error("controller: node {} drained: {}", node.value(), reason);
      p_.jobs.Record(std::nullopt, "node", "controller", "drain " + node.value() + ": " + reason);
      RefreshState(node);
    }
  } else if (ours && p_.nodes.SetDrain(node, std::nullopt).ok()) {
    p_.jobs.Record(std::nullopt,
                   "node",
                   "controller",
                   "resume " + node.value() + ": its agent is of the right kind now");
    RefreshState(node);
  }
}

Result<Node> NodeDesk::Drain(const Caller& caller, const NodeId& node, const std::string& reason) {
  GF_TRY(p_.nodes.SetDrain(node, reason));
  p_.jobs.Record(std::nullopt, "node", caller.user, "drain " + node.value() + ": " + reason);
  RefreshState(node);
  return p_.nodes.At(node).node;
}

Result<Node> NodeDesk::Resume(const Caller& caller, const NodeId& node) {
  GF_TRY(p_.nodes.SetDrain(node, std::nullopt));
  p_.jobs.Record(std::nullopt, "node", caller.user, "resume " + node.value());
  RefreshState(node);
  return p_.nodes.At(node).node;
}

// A remote node whose agent has not reported for node_timeout is down (NodeRegistry::
// CheckLiveness): its jobs' processes may be gone with it, so they are requeued (NODE_FAIL →
// PENDING) and its GPUs take no work until its agent says hello again.
void NodeDesk::CheckLiveness() {
  for (NodeRegistry::NodeDown& down : p_.nodes.CheckLiveness(node_timeout_, liveness_clock_())) {
    const NodeId name = down.node.name;
    const std::string& cause = down.cause;
    p_.out.batch.nodes.push_back(std::move(down.node));
    if (down.agent != nullptr) {
      down.agent->EndSession();  // a partitioned agent's next report gets "say hello again"
    }
    p_.jobs.Record(std::nullopt, "node", "controller", cause);
    spdlog::warn("controller: {}", cause);
    for (auto& [id, job] : p_.jobs.Active()) {
      if (jobs_from_ == JobSource::kGpufleet && HoldsGpus(job) && job.allocation->node == name) {
        p_.jobs.Lose(job, cause);
      }
    }
    p_.scheduling.NeedFull();
  }
}

void NodeDesk::Ingest(const NodeId& node, IngestResult result, const std::vector<GpuSample>& mig) {
  p_.gpus.ApplyHealth(node, result.health);
  p_.gpus.ApplyConditions(node, result.conditions);
  for (GpuMinute& minute : result.minutes) {
    p_.out.batch.gpu_minutes.push_back(std::move(minute));
  }
  if (!mig.empty()) {
    p_.gpus.ApplyMigSamples(node, mig);
  }
}

void NodeDesk::AssignGpus(const Job& job) {
  if (!job.allocation) {
    return;
  }
  // The idle reaper's threshold travels with the assignment: Telemetry judges each sample.
  const std::optional<IdleReaping> rule = IdleReapingFor(policy_, job.spec);
  const int idle_util_below = rule ? rule->util_below_pct : kDefaultIdleUtilBelowPct;
  const std::optional<KubePod> pod = KubePodOfJobEnv(job.spec.env);  // a pod (kube_desk.h)
  for (const GpuUuid& uuid : job.allocation->gpus) {
    // The team as the store's usage records and quotas key it ("" = no team), so that GPU
    // minutes and runs add up per team in reports; /metrics labels "" as "default".
    p_.telemetry.Assign(uuid,
                        GpuAssignment{.job = job.id,
                                      .user = job.owner.user,
                                      .team = job.spec.team,
                                      .idle_util_below_pct = idle_util_below,
                                      .since = p_.clock.Now(),
                                      .share_milli = job.allocation->gpu_milli,
                                      .memory_limit_mib = job.allocation->gpu_memory_mib,
                                      .pod_namespace = pod ? pod->pod_namespace : "",
                                      .pod = pod ? pod->name : "",
                                      .container = pod ? KubeContainerOfGpu(*pod, uuid) : ""});
  }
}

void NodeDesk::ReleaseGpus(Job& job) {
  const std::optional<JobUsage> usage = p_.telemetry.Usage(job.id);
  if (usage) {
    // A requeued job already carries the usage of its earlier runs.
    job.usage = job.usage ? CombineUsage(*job.usage, *usage) : *usage;
  }
  if (job.allocation && job.start_time) {  // else it never started: no GPU-time to account
    p_.out.batch.usage.push_back(
        p_.usage.RunEnded(job, usage ? usage->energy_mj : 0, GpuModelsOfJob(job), p_.clock.Now()));
  }
  if (job.allocation) {
    for (const GpuUuid& uuid : job.allocation->gpus) {
      p_.telemetry.Unassign(uuid, job.id);
    }
  }
  p_.telemetry.ForgetJob(job.id);
}

void NodeDesk::Finish(Job& job, const JobExitReport& report) {
  const std::string actor =
      job.allocation ? "agent:" + job.allocation->node.value() : std::string("system");
  NodeAgent* agent = p_.nodes.AgentFor(job);  // before a requeue clears the allocation
  if (!report.leftover_pids.empty()) {
    p_.gpus.HoldForLeftovers(job, report);
  }
  if (report.host_usage) {
    // A requeued job carries what its earlier runs used; this run adds to it.
    job.host_usage =
        job.host_usage ? CombineHostUsage(*job.host_usage, *report.host_usage) : report.host_usage;
  }
  p_.jobs.Exited(job, report.exit_code, report.cause, report.end_time, actor);
  if (agent != nullptr) {
    JobId id = job.id;
    p_.out.After([agent, id] { agent->AcknowledgeExit(id); });
  }
}

void NodeDesk::Hello(AgentHello hello) {
  const NodeId name = hello.node.name;
  // A node that was down is up again; an admin's drain outlives the agent's reconnects.
  const NodeRegistry::HelloMerged merged =
      p_.nodes.MergeHello(std::move(hello.node), p_.clock.Now(), liveness_clock_());
  const NodeEntry& entry = p_.nodes.At(name);
  // OnAgentHello gave telemetry the agent's view; the modes are the controller's.
  p_.telemetry.SetInventory(entry.node);
  RefreshState(name);  // draining/drained again if an admin's drain holds
  p_.out.batch.nodes.push_back(entry.node);
  if (merged.changed) {
    p_.jobs.Record(std::nullopt,
                   "node",
                   "agent:" + name.value(),
                   "node " + name.value() + (merged.was_down ? " back up" : " up") + " with " +
                       std::to_string(entry.node.gpus.size()) + " GPUs (" + entry.node.gpu_backend +
                       ")");
  }
  CheckJobSource(name, hello.jobs_from);
  if (jobs_from_ != JobSource::kGpufleet) {
    return;
  }
  std::set<JobId> running(hello.running.begin(), hello.running.end());
  std::map<JobId, JobExitReport> ended;
  for (auto& e : hello.ended) {
    ended.emplace(e.job, e);
  }
  for (auto& [id, job] : p_.jobs.Active()) {
    if (!job.allocation || job.allocation->node != name ||
        (job.state != JobState::kStarting && job.state != JobState::kRunning)) {
      continue;
    }
    if (running.contains(id)) {
      if (job.state == JobState::kStarting) {
        job.start_time = p_.clock.Now();
        p_.jobs.Transition(
            job, JobState::kRunning, "re-attached after restart", "agent:" + name.value());
      } else {
        p_.jobs.Record(id, "reattach", "agent:" + name.value(), "re-attached after restart");
      }
    } else if (auto e = ended.find(id); e != ended.end()) {
      Finish(job, e->second);
    } else if (job.state == JobState::kStarting) {
      // Its launch never reached the agent (a lost stream, or a crash before the launch):
      // send it again. A launch is a no-op for a job the agent already runs.
      p_.out.After([agent = entry.agent, launch = LaunchOf(job, p_.jobs.Active(), entry.node)] {
        agent->Launch(launch);
      });
    } else {
      p_.jobs.Lose(job,
                   "its supervisor was not found on " + name.value() + " when its agent came back");
    }
  }
  // Kills still wanted (a cancel, a time limit, a preemption) whose command may have been lost
  // with the agent's old connection. A kill of a job the agent no longer has is a no-op.
  for (const auto& [id, termination] : p_.jobs.Stops().Intents()) {
    const Job& job = p_.jobs.At(id);
    if (running.contains(id) && job.allocation && job.allocation->node == name) {
      p_.out.After([agent = entry.agent,
                    id = id,
                    grace = kill_grace_,
                    cause = termination.cause,
                    signal = kSigTerm] { agent->Kill(id, grace, cause, signal); });
    }
  }
  // Processes the agent holds for jobs that do not run here as far as this controller knows:
  // unknown, pending again (requeued after the node failed), or running elsewhere since. They
  // must not run twice.
  for (JobId id : running) {
    auto it = p_.jobs.Active().find(id);
    const bool ours = it != p_.jobs.Active().end() && HoldsGpus(it->second) &&
                      it->second.allocation->node == name;
    if (!ours) {
      NodeAgent* agent = entry.agent;
      p_.out.After([agent, id, grace = kill_grace_] {
        agent->Kill(id,
                    grace,
                    "orphan: the controller requeued or ended this job while its node was away",
                    kSigTerm);
      });
    }
  }
  for (auto& [id, e] : ended) {
    if (!p_.jobs.Active().contains(id) && entry.agent != nullptr) {
      p_.out.After([agent = entry.agent, id = id] { agent->AcknowledgeExit(id); });
    }
  }
  p_.scheduling.NeedFull();
}

// A node's state from what is known of it (NodeRegistry::RefreshState): drained once no job
// holds its GPUs. A change is recorded (the end of a drain's wait) and stored.
void NodeDesk::RefreshState(const NodeId& node) {
  const bool busy = std::any_of(p_.jobs.Holding().begin(), p_.jobs.Holding().end(), [&](JobId id) {
    return p_.jobs.At(id).allocation->node == node;
  });
  std::optional<NodeRegistry::StateChange> change = p_.nodes.RefreshState(node, busy);
  if (!change) {
    return;
  }
  if (change->drained) {
    p_.jobs.Record(std::nullopt,
                   "node",
                   "controller",
                   "node " + node.value() + " drained: no job runs on it any more");
  }
  p_.out.batch.nodes.push_back(std::move(change->node));
  p_.scheduling.NeedFull();  // where jobs may go changed
}

void NodeDesk::UpdateDrains() {
  for (const NodeId& node : p_.nodes.Draining()) {
    RefreshState(node);
  }
}

Result<NodeAgent*> NodeDesk::LogSource(const Job& job, LogStream stream) const {
  const std::string name = "job " + std::to_string(job.id.value());
  const std::string state(ToString(job.state));
  if (!job.allocation) {
    if (const std::string* requeued = p_.jobs.Stops().RequeueCause(job.id)) {
      return FailedPrecondition(
          name + " is " + state + ", " + *requeued + ", and has not started again: its new " +
          "run's output shows here once it starts; the earlier run's output stays on the node " +
          "it ran on, under the agent's data dir (jobs/" + std::to_string(job.id.value()) + ")");
    }
    return FailedPrecondition(name + " is " + state + " and has not started: it has no output" +
                              (IsTerminal(job.state) ? "" : " yet (gpufleet logs -f waits)"));
  }
  const NodeId& node = job.allocation->node;
  const NodeEntry* entry = p_.nodes.Find(node);
  if (entry == nullptr || entry->agent == nullptr) {
    return Unavailable("node " + node.value() + " has not joined this server since it started, " +
                       "so " + name + "'s output cannot be fetched; it is on that node, under " +
                       "its agent's data dir (jobs/" + std::to_string(job.id.value()) + ")");
  }
  NodeAgent* agent = entry->agent;
  if (entry->node.state == NodeState::kDown) {
    // The cause reads "node n1 down: no report ..."; say the node's name once.
    std::string cause = entry->node.state_reason;
    if (const std::string said = "node " + node.value() + " down: "; cause.starts_with(said)) {
      cause.erase(0, said.size());
    }
    return Unavailable("node " + node.value() + " is down" +
                       (cause.empty() ? "" : " (" + cause + ")") + "; " + name +
                       "'s output is on that node in " +
                       agent->LogPath(job.id, stream == LogStream::kStderr) +
                       "; it can be read here again once the node's agent is back");
  }
  return agent;
}

}  // namespace gf

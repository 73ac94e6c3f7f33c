// NodeDesk: what the agents report and the nodes' state, on the state thread (a component of
// the controller, decision 0007). An agent's hello (its node up, the jobs it still runs
// re-attached, a launch that never arrived sent again, orphans killed, exits it kept reported),
// a job's start and exit (its run ended as the job book's stop book judges it), heartbeats and
// nodes that fell silent (down, their jobs lost and requeued), the GPU samples' verdicts (health,
// conditions, finished minutes, MIG devices: GpuCare), a job's GPUs assigned in and released from
// telemetry with its run's usage accounted, and an administrator's drain and resume.
//
// Jobs change only through the job book, nodes through the NodeRegistry's methods; what is
// written, sent to agents and notified goes to the turn's outbox. State thread only.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "controller/gpu_care.h"
#include "controller/node_registry.h"
#include "controller/scheduling_stage.h"
#include "controller/turn_outbox.h"
#include "controller/usage_book.h"
#include "core/clock.h"
#include "lifecycle/job_book.h"
#include "monitor/attribution.h"
#include "monitor/telemetry.h"
#include "service/node_agent.h"
#include "service/service.h"

namespace gf {

struct NodeDeskOptions {
  const PolicyConfig& policy;  // idle rules (travel with a GPU assignment), preemption's minimum
  // A remote node silent this long is down; 0 = never (the in-process agent of `gpufleet up`).
  Millis node_timeout{0};
  // The monotonic clock liveness is judged on.
  std::function<std::chrono::steady_clock::time_point()> liveness_clock;
  std::chrono::seconds kill_grace{10};  // for kills re-sent at a hello
  // Whose jobs run on the nodes: gpufleet's, or in companion mode Slurm's (slurm_desk.h) or
  // Kubernetes' pods (kube_desk.h), which the agents neither run nor stop; a hello or a silent
  // node says nothing of those (Slurm does; for pods, only an agent's report of its node's pods).
  JobSource jobs_from = JobSource::kGpufleet;
};

// The controller's parts the desk works with; each must outlive it.
struct NodeDeskParts {
  JobBook& jobs;
  NodeRegistry& nodes;
  Telemetry& telemetry;
  GpuCare& gpus;
  UsageBook& usage;  // a run's usage record when its job gives up its GPUs
  SchedulingStage& scheduling;
  TurnOutbox& out;
  const Clock& clock;
};

class NodeDesk {
 public:
  NodeDesk(const NodeDeskOptions& options, NodeDeskParts parts);

  // ---- the agents' reports
  void Hello(AgentHello hello);
  void JobStarted(JobId id, std::int64_t pid, Time start_time);
  void JobExited(const JobExitReport& report);
  void Heard(const NodeId& node);
  // What the samples of `node` brought that the state must record (Telemetry::Ingest), and the
  // samples whose MIG devices changed.
  void Ingest(const NodeId& node, IngestResult result, const std::vector<GpuSample>& mig);

  // ---- each turn
  // A remote node whose agent has not reported for node_timeout is down (NodeRegistry::
  // CheckLiveness): its jobs' processes may be gone with it, so they are lost (requeued) and
  // its GPUs take no work until its agent says hello again.
  void CheckLiveness();
  // Draining nodes become drained once no job holds their GPUs.
  void UpdateDrains();

  // ---- a job's GPUs in telemetry (who holds which GPU, the idle rule it is judged by)
  void AssignGpus(const Job& job);
  // The job gives up its GPUs: its run's usage is added to it and accounted (UsageBook).
  void ReleaseGpus(Job& job);
  // The distinct models of the job's GPUs, sorted (as its node reports them).
  std::vector<std::string> GpuModelsOfJob(const Job& job) const;
  // The jobs holding GPUs as the accounting reads them (usage_book.h). `for_ledgers`: only what
  // the per-turn UsageBook::Advance reads (no energy; GPU models only when the fair share weighs
  // them), so that a turn makes no Telemetry lookup per running job.
  std::vector<RunningSpan> RunningSpans(bool for_ledgers = false) const;

  // The agent that holds the output of `job`, or why none can be asked (not started, requeued,
  // node down or never joined since a restart).
  Result<NodeAgent*> LogSource(const Job& job, LogStream stream) const;

  // ---- an administrator's commands (authorized and checked by the caller of these)
  Result<Node> Drain(const Caller& caller, const NodeId& node, const std::string& reason);
  Result<Node> Resume(const Caller& caller, const NodeId& node);

 private:
  // The agent reported the job's exit: the run ends (JobBook::Exited), GPUs with leftover
  // processes are held back, and the agent may forget the exit once the turn is durable.
  void Finish(Job& job, const JobExitReport& report);
  // Drains the node when its agent and this server disagree on whose jobs run there
  // (gpufleet's, Slurm's or Kubernetes'; `agent_jobs_from` as the hello names it), with the
  // fix; lifts that drain once they agree.
  void CheckJobSource(const NodeId& node, const std::string& agent_jobs_from);
  // The node's state from what is known of it (NodeRegistry::RefreshState): drained once no
  // job holds its GPUs. A change is recorded and stored.
  void RefreshState(const NodeId& node);

  const PolicyConfig& policy_;
  Millis node_timeout_;
  std::function<std::chrono::steady_clock::time_point()> liveness_clock_;
  std::chrono::seconds kill_grace_;
  JobSource jobs_from_;
  NodeDeskParts p_;
};

}  // namespace gf

// NodeAgent and AgentReports: the link between the controller and the agent of one node.
//
// The controller sends commands through NodeAgent; the agent answers through AgentReports.
// Both directions are asynchronous messages, so the same interface serves the in-process agent
// of `gpufleet up` and, later, a remote agent over the network (DESIGN.md §3).
//
// Thread-safety: NodeAgent methods are called from the controller thread and must not block
// on the agent's work (queue it); LogPath and ReadLog are the exceptions (any thread).
// AgentReports methods are called from agent threads; the controller turns each into a
// command for its own thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/ids.h"
#include "core/result.h"
#include "model/gpu_sample.h"
#include "model/job.h"
#include "model/kube_pod.h"
#include "model/node.h"
#include "model/terminal.h"
#include "service/job_log.h"

namespace gf {

class NodeAgent {
 public:
  virtual ~NodeAgent() = default;

  // Starts the job (its allocation names this node). The agent answers with OnJobStarted or,
  // if it cannot start it, OnJobExited with a cause.
  virtual void Launch(const Job& job) = 0;

  // Ends the job's whole process tree: `first_signal` (SIGTERM; the job's checkpoint signal
  // when it is preempted), `grace`, SIGKILL. Answered by OnJobExited.
  virtual void Kill(JobId job,
                    std::chrono::seconds grace,
                    const std::string& cause,
                    int first_signal) = 0;

  // Delivers `sig` to every process of the running job without ending it (`gpufleet cancel
  // --signal`, Slurm's `scancel --signal`; executor.h Executor::Signal). Fire and forget: the
  // delivery is logged on the node, and a job that ended or is not there is a warning in the
  // agent's log, not an answer. Controller thread; queues.
  virtual void Signal(JobId job, int sig) = 0;

  // Tells the agent that the controller has durably recorded the job's end; the agent may
  // forget it (an exit is re-reported after an agent restart until acknowledged).
  virtual void AcknowledgeExit(JobId job) = 0;

  // Where the job's output files are on this node (for messages: the caller may not reach
  // that disk). Any thread.
  virtual std::string LogPath(JobId job, bool stderr_stream) const = 0;

  // Reads a chunk of the job's output on this node (job_log.h; the job's current run: the
  // executor keeps an earlier run's folder aside). Called from API worker threads, never from
  // the controller thread: it may block, a remote agent for as long as its node takes to answer
  // (bounded by its timeout). Errors: kUnavailable (the node's agent cannot be reached or did
  // not answer in time, naming the node and the file), kIo (the file exists but cannot be read).
  virtual Result<LogChunk> ReadLog(const LogRequest& request) = 0;

  // Hands what the job's owner typed, a new window size, or a keepalive (an empty input) to the
  // terminal of a job running here (`gpufleet run`, model/terminal.h). Called like ReadLog,
  // from API worker threads; a remote agent sends it on the node's command stream and does not
  // wait for the node. Errors: kFailedPrecondition (the job has no terminal here, or it
  // ended), kUnavailable (the node's agent is not connected), kIo.
  virtual Status WriteTerminal(JobId job, const TerminalInput& input) = 0;

  // The controller took the node down (its agent fell silent): whatever the agent still sends
  // on its current connection must not count until it says hello again, so that the hello
  // reconciles the node (kills the copies of jobs that run elsewhere now) before anything else.
  // A network partition leaves the agent's connection able to resume, which is why this is
  // needed. An in-process agent has no session to end. Controller thread.
  virtual void EndSession() {}

  // Forgets the health verdicts the agent holds against the GPU (sticky failures: a fatal XID,
  // rising ECC errors) from its next sample on: an admin returned it to service
  // (`gpufleet gpu resume`). A GPU still broken fails again at once. Controller thread; queues.
  virtual void ResetGpuHealth(const GpuUuid& uuid) = 0;

  // Kills (SIGKILL) one process of a job: a fractional job's process over its GPU memory limit
  // (issue #7). The agent first checks that `pid` belongs to `job` (ProcessAttributor), so a
  // late command never hits a pid reused by someone else; `cause` is logged. The job goes on
  // if its other processes do; if the process was its main one, its exit is reported as usual.
  // Controller thread; queues.
  virtual void KillProcess(JobId job, std::uint32_t pid, const std::string& cause) = 0;

  // Replaces the MIG layout of the GPU (issue #7): its instances are destroyed and one MIG
  // device per entry of `profiles` ("3g.40gb"; empty: none) is made (GpuBackend::ApplyMigLayout).
  // The controller sends it only for a GPU with no job on it; the backend also refuses a GPU
  // with any process. The outcome comes with the GPU's next sample: its `mig` devices, or the
  // refusal in `mig_layout_error`. Controller thread; queues.
  virtual void ApplyMigLayout(const GpuUuid& gpu, const std::vector<std::string>& profiles) = 0;

  // How many of the node's idle GPUs the load forecast wants ready (uncapped) now, for the
  // agent's idle power policy (agent/power_saver.h KeepReady; controller/ready_gpus.h says how
  // it is worked out); nullopt: no forecast yet. An agent without a power policy ignores it.
  // Controller thread; queues.
  virtual void KeepGpusReady(std::optional<int> gpus) = 0;
};

struct JobExitReport {
  JobId job;
  int exit_code = 0;  // 128+N after signal N; -1 when unknown
  std::optional<int> signal;
  Time end_time{};
  std::string cause;  // "exited with status 0", "failed to start: ..."
  // The node it ran on. The controller heeds an exit only from the node the job runs on now:
  // a copy left on a node that was down (and is killed there as an orphan) must not end the
  // job that runs elsewhere since.
  NodeId node{};
  // Processes of the job the agent could not stop (its shim died and they escaped it: cgroup v1
  // or no cgroup). The controller keeps the job's GPUs out of placement until the agent's
  // samples say they are gone (LeftoverWatch, agent/leftover_watch.h).
  std::vector<std::int64_t> leftover_pids{};
  // What the run's processes used of the host, as its supervisor measured it; nullopt when it
  // could not (the job did not start, its supervisor died, an older agent).
  std::optional<HostUsage> host_usage{};
};

// What an agent reports when it (re)connects: its inventory and the jobs it still holds.
struct AgentHello {
  Node node;
  std::vector<JobId> running;        // jobs whose supervisor is alive
  std::vector<JobExitReport> ended;  // jobs that ended and were not yet acknowledged
  std::string run_dir{};             // where the agent keeps its jobs' folders (logs), on its node
  // Whose jobs its GPU processes are in: "" gpufleet's, "slurm" Slurm's (`gpufleet agent
  // --slurm`, issue #23), "kubernetes" Kubernetes' pods (`--kubernetes`, issue #27). A server
  // of another kind drains the node with the fix.
  std::string jobs_from{};
};

class AgentReports {
 public:
  virtual ~AgentReports() = default;
  virtual void OnAgentHello(AgentHello hello) = 0;
  virtual void OnJobStarted(JobId job, std::int64_t pid, Time start_time) = 0;
  virtual void OnJobExited(JobExitReport report) = 0;
  virtual void OnSamples(NodeId node, std::vector<GpuSample> samples) = 0;
  // Kubernetes mode: the node's pods that hold GPUs, as one complete reading of its kubelet
  // (a pod not in it has ended there). Sent only after a reading that succeeded. Others ignore
  // it. By value, like OnSamples: the overriders keep what they are given.
  // NOLINTNEXTLINE(performance-unnecessary-value-param): the default ignores it
  virtual void OnPods(const NodeId& /*node*/, std::vector<KubePod> /*pods*/) {}
  // A remote agent is alive (it reported, if only to say so): see ControllerOptions::node_timeout.
  virtual void OnAgentHeartbeat(const NodeId& node) = 0;
};

}  // namespace gf

// LocalAgent: the node agent of this machine, wired in-process to the controller by
// `gpufleet up` through the same NodeAgent/AgentReports interfaces a remote agent uses.
//
// It owns two threads. NodeAgent calls (from the controller thread) only queue work.
//  - The agent thread runs the Executor and publishes the jobs it runs (job, shim pid) for
//    attribution. It sleeps in poll(2) on an eventfd (work queued) and the Executor's WatchFd
//    (a shim exited, a starting job's folder changed), so it acts on each at once: a turn
//    starts the shims of every launch queued (side by side, none waits for another), then
//    reports the jobs whose start became known (OnJobStarted), then the exits (OnJobExited;
//    a job's start is always reported before its exit). poll_interval is only the fallback for
//    what cannot be watched (no pidfd or inotify).
//  - The sampler thread, every sample_interval, samples each GPU of the GpuBackend, attributes
//    each GPU process to its job and user (ProcessAttributor), decides each GPU's health
//    (HealthTracker; LeftoverWatch keeps the GPUs of an ended job whose processes could not all
//    be stopped degraded while they live) and reports the round with OnSamples. It is a thread
//    of its own so that a slow driver call (NVML can take tens of ms a call) never delays
//    launches, kills or exits.
// The Executor is touched by the agent thread alone, the GpuBackend, attributor and health
// tracker by the sampler thread alone (and by Start before either runs), except the power
// limit calls of the optional PowerSaver (power_saver.h): it restores a GPU's limit on the agent
// thread before a launch and caps idle GPUs on the sampler thread after each round.
#pragma once

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "agent/gpu_self_test.h"
#include "agent/kube_watch.h"
#include "agent/leftover_watch.h"
#include "agent/mps_daemons.h"
#include "agent/power_saver.h"
#include "core/clock.h"
#include "executor/executor.h"
#include "gpu/gpu_backend.h"
#include "monitor/attribution.h"
#include "monitor/health.h"
#include "service/node_agent.h"

namespace gf {

// The node's capacity for jobs' --cpus and --mem (issue #24), as the agent reports it: the
// host's (online CPUs, physical memory) unless overridden (--node-cpus, --node-mem, [up]
// node_cpus, node_mem), less a reserve for the system and the agent (--reserve-cpus,
// --reserve-mem, [up] reserve_cpus, reserve_mem).
struct HostCapacityOptions {
  std::optional<int> cpus{};                  // nullopt: detected
  std::optional<std::int64_t> memory_mib{};   // nullopt: detected
  int reserve_cpus = 0;                       // none by default: CPU is shared fairly anyway
  std::optional<std::int64_t> reserve_mib{};  // nullopt: kDefaultReserveMib's rule
};
// Default memory reserve: a tenth of the memory, at most 4 GiB (the OS, the agent, page cache).
inline constexpr std::int64_t kMaxDefaultReserveMib = 4096;
// What the node offers jobs: {cpus, memory_mib}, each at least 1 (a reserve larger than the
// host leaves 1).
std::pair<int, std::int64_t> HostCapacity(int detected_cpus,
                                          std::int64_t detected_mib,
                                          const HostCapacityOptions& options);

struct LocalAgentOptions {
  NodeId name;
  Millis poll_interval{1000};                 // fallback: how often unwatchable jobs are looked at
  Millis sample_interval{1000};               // how often GPUs are sampled; 0 turns sampling off
  std::filesystem::path proc_root = "/proc";  // where attribution reads processes (tests: fake)
  HealthPolicy health{};                      // thresholds of the health verdicts
  std::map<std::string, std::string> labels{};  // the node's labels (--label, [up] labels)
  // The host CPUs and memory jobs may hold (issue #24): HostCapacity of what the host has.
  HostCapacityOptions host{};
  // The power policy (--idle-power-limit, --idle-power-after); nullopt: off. Its idle GPUs are
  // capped only while sampling is on (the sampler thread's rounds drive it).
  std::optional<PowerSaverOptions> power{};
  // The administrator's self-test for failed GPUs (--gpu-self-test): a pass returns the GPU to
  // service (gpu_self_test.h). Empty command: off.
  GpuSelfTestOptions self_test{};
  // MPS control daemons for jobs on mps GPUs (mps_daemons.h); no control program: none.
  MpsOptions mps{};
  // Whose jobs the GPU processes are in (monitor/attribution.h): gpufleet's, or Slurm's beside
  // slurmd (`gpufleet agent --slurm`, issue #23), which this agent neither starts nor stops.
  JobSource jobs_from = JobSource::kGpufleet;
  // Kubernetes mode (jobs_from kKubernetes, `--kubernetes`): which container holds which GPU
  // (the kubelet's pod-resources, read once per sampling round) and where the kubelet's log
  // folders are (`--kubelet-logs`), for KubeWatch (kube_watch.h).
  ListPodGpus list_pod_gpus{};
  std::filesystem::path kubelet_log_root = "/var/log";
};

class LocalAgent final : public NodeAgent {
 public:
  LocalAgent(LocalAgentOptions options,
             GpuBackend& backend,
             Executor& executor,
             AgentReports& reports,
             const Clock& clock);
  ~LocalAgent() override;
  LocalAgent(const LocalAgent&) = delete;
  LocalAgent& operator=(const LocalAgent&) = delete;

  // Discovers the GPUs, re-attaches to jobs left running by an earlier instance, reports
  // both to the controller (OnAgentHello), then starts the agent thread.
  Status Start();
  void Stop();

  // NodeAgent
  void Launch(const Job& job) override;
  void Kill(JobId job,
            std::chrono::seconds grace,
            const std::string& cause,
            int first_signal) override;
  void Signal(JobId job, int sig) override;
  void AcknowledgeExit(JobId job) override;
  std::string LogPath(JobId job, bool stderr_stream) const override;
  // Reads the file itself (log_file.h), on the caller's thread: the path depends only on the
  // run dir, fixed at construction, so it needs neither the agent thread nor a lock.
  Result<LogChunk> ReadLog(const LogRequest& request) override;
  // Straight to the job's shim (executor/terminal_relay.h), on the caller's thread: it touches
  // only the job's folder, never the executor's state.
  Status WriteTerminal(JobId job, const TerminalInput& input) override;

  // Reports a fresh hello (OnAgentHello) from the agent thread: the node as Start() found it
  // and the jobs whose exit has not been reported. For a remote link that lost its session:
  // made on the agent thread, it follows every report made before it.
  void SayHelloAgain();

  // Clears what the health tracker holds against the GPU (sticky failures such as a fatal XID)
  // from the next sampling round on: an admin has dealt with the card. Any thread.
  void ResetGpuHealth(const GpuUuid& uuid) override;
  // Checked and done by the sampler thread (it owns the attributor) at its next round.
  void KillProcess(JobId job, std::uint32_t pid, const std::string& cause) override;
  // Done by the sampler thread (it owns the backend) before its next round, whose sample of
  // the GPU shows the outcome (its MIG devices, or the failure in mig_layout_error). Nothing
  // happens while sampling is off.
  void ApplyMigLayout(const GpuUuid& gpu, const std::vector<std::string>& profiles) override;
  // Handed to the PowerSaver at once (it has its own mutex); nothing without a power policy.
  void KeepGpusReady(std::optional<int> gpus) override;

 private:
  void Enqueue(std::function<void()> work);
  void Wake();
  void Loop();
  void WaitForEvents();
  void DoLaunch(const Job& job);
  // A launch on an mps GPU (MpsDaemons::Wanted): its daemon, started if need be, in the
  // job's environment. Any other launch: its GPUs' daemons quit.
  Status JoinMps(LaunchSpec& spec);
  void ReportStarts();
  void PollExits();
  void PublishLiveJobs();
  void SamplerLoop();
  void SampleRound();
  int IndexOf(const GpuUuid& uuid) const;  // the GPU's index on this node; -1 if unknown
  std::vector<GpuSample> SampleEachGpu();
  Result<Node> Inventory();
  // The GPUs of the jobs Recover found running, from their spec.json (for the PowerSaver).
  std::map<JobId, std::vector<GpuUuid>> RecoveredGpus(const std::vector<JobId>& running) const;
  // The GPUs a job was launched on, from its spec.json.
  Result<std::vector<GpuUuid>> GpusOf(JobId job) const;
  void WatchLeftovers(const JobExit& exit);  // agent thread

  LocalAgentOptions options_;
  GpuBackend& backend_;
  Executor& executor_;
  AgentReports& reports_;
  const Clock& clock_;
  std::vector<Gpu> gpus_;  // set by Start, read-only afterwards
  Node node_;              // set by Start (its inventory), read-only afterwards

  // Sampler thread only.
  ProcessAttributor attributor_;
  HealthTracker health_;
  LeftoverWatch leftovers_;  // GPUs held by processes of ended jobs that could not be stopped
  std::vector<bool> sample_failing_;        // per gpus_ entry: its last Sample failed (logged once)
  std::unique_ptr<PowerSaver> power_;       // null: no power policy; thread-safe itself
  std::unique_ptr<GpuSelfTest> self_test_;  // null: no self-test; fed by the sampler thread
  std::unique_ptr<KubeWatch> kube_;         // Kubernetes mode only; the sampler thread's
  MpsDaemons mps_{options_.mps};            // the agent thread's (DoLaunch)

  std::mutex mu_;
  int wake_fd_ = -1;                        // eventfd: wakes the agent thread (work, stop)
  std::condition_variable sampler_cv_;      // wakes the sampler thread (to stop)
  std::deque<std::function<void()>> work_;  // GUARDED_BY(mu_)
  std::vector<LiveJob> live_jobs_;          // GUARDED_BY(mu_): published by the agent thread
  std::vector<GpuUuid> health_resets_;      // GUARDED_BY(mu_): for the sampler thread
  struct NewLeftovers {
    JobId job;
    std::vector<GpuUuid> gpus;
    std::vector<exec::PidRecord> processes;
  };
  std::vector<NewLeftovers> new_leftovers_;  // GUARDED_BY(mu_): for the sampler thread
  struct ProcessKill {
    JobId job;
    std::uint32_t pid = 0;
    std::string cause;
  };
  std::vector<ProcessKill> process_kills_;            // GUARDED_BY(mu_): for the sampler thread
  void KillProcesses(std::span<const LiveJob> live);  // sampler thread
  struct MigLayout {
    GpuUuid gpu;
    std::vector<std::string> profiles;
  };
  std::vector<MigLayout> mig_layouts_;  // GUARDED_BY(mu_): for the sampler thread
  // Sampler thread: applies the queued layouts; returns the failures (GPU, why).
  std::vector<std::pair<GpuUuid, std::string>> ApplyMigLayouts();
  bool stopping_ = false;  // GUARDED_BY(mu_)
  std::thread thread_;
  std::thread sampler_;
};

}  // namespace gf

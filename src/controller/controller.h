// Controller: the single owner of the cluster's mutable state (DESIGN.md §3, decided).
//
// One state thread applies commands from a CommandQueue. Each loop turn:
//   1. apply every queued command (API calls, agent reports) to the in-memory state,
//      collecting the changes in the job book's journal and the turn's outbox;
//   2. enforce time limits; run the scheduler if anything changed: an arrival or a job's end
//      alone is decided incrementally (IncrementalScheduler), anything else by a full pass,
//      and a full pass follows incremental ones that left jobs waiting within
//      full_pass_interval (lifecycle/pass_planner.h);
//   3. commit them in one durable transaction (group commit);
//   4. answer the callers and only then act (launch, kill): nothing is acknowledged or done
//      that is not on disk first.
//
// The controller is a shell (decision 0007): the state lives in components it owns, which change
// jobs only through the JobBook (lifecycle/job_book.h) and write only to the turn's TurnOutbox:
// JobDesk (the job calls), SchedulingStage (the pass), NodeDesk (the agents' reports, liveness,
// drains), GpuCare (GPU health, sharing modes, memory breaches), IdleStage (idle reaping),
// NotificationDesk (subscriptions, notifications, budget alerts), TokenDesk (tokens), with
// NodeRegistry, UsageBook, RunTimeBook and DependencyBook.
// What is left here is the thread, the turn, the commit, the lease and the service methods.
//
// Thread-safety: the ClusterService and AgentReports methods are thread-safe. Reads are served
// on the caller's thread by the read side (ClusterReader, read_side.h) from the view the last
// turn published (view.h) and, for history, from a store read connection of their own:
// ListJobs, GetJob, JobHistory, JobEvents, ListNodes, ListGpus, Stats, MonthlyReport,
// ListTokens. Every other service call enqueues a command and blocks until it is applied and
// committed. Everything else below is touched by the state thread only ("REQUIRES: state thread").
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "controller/accounting.h"
#include "controller/authorization.h"
#include "controller/command_queue.h"
#include "controller/commit_window.h"
#include "controller/dependency_book.h"
#include "controller/gpu_care.h"
#include "controller/idle_stage.h"
#include "controller/job_desk.h"
#include "controller/kube_desk.h"
#include "controller/launch_env.h"
#include "controller/node_desk.h"
#include "controller/node_registry.h"
#include "controller/notification_desk.h"
#include "controller/read_side.h"
#include "controller/ready_gpus.h"
#include "controller/run_time_book.h"
#include "controller/scheduling_stage.h"
#include "controller/slurm_desk.h"
#include "controller/slurm_link.h"
#include "controller/token_desk.h"
#include "controller/turn_outbox.h"
#include "controller/usage_book.h"
#include "controller/view.h"
#include "core/clock.h"
#include "lifecycle/dependencies.h"
#include "lifecycle/job_book.h"
#include "lifecycle/pass_planner.h"
#include "lifecycle/stops.h"
#include "model/notification.h"
#include "model/webhook_allow.h"
#include "monitor/telemetry.h"
#include "report/report.h"
#include "scheduler/idle_policy.h"
#include "scheduler/incremental.h"
#include "scheduler/scheduler.h"
#include "service/node_agent.h"
#include "service/service.h"
#include "store/store.h"

namespace gf {

struct ControllerOptions {
  // First signal → SIGKILL for cancel, time limits and preemption. The first signal is SIGTERM,
  // or the job's checkpoint signal when it is preempted.
  std::chrono::seconds kill_grace{10};
  Millis tick{1000};  // the longest the loop sleeps with nothing to do
  PolicyConfig policy;
  // Set when the daemon is not root: it can only run jobs as its own user, so it refuses
  // other users' submissions at once instead of failing them at launch.
  std::optional<std::uint32_t> only_uid;
  // Where GPU samples go (shared with the API for /metrics and the watch streams). Null: the
  // controller keeps a private one. Must outlive the controller.
  Telemetry* telemetry = nullptr;
  // A job submitted without --team is accounted to its user's team ([team.NAME] members).
  std::map<std::string, std::string> team_of_user;
  // A node whose agent has not reported (OnAgentHeartbeat or any report) for this long is
  // down and its jobs are requeued. 0 = never: the in-process agent of `gpufleet up` cannot
  // fall silent without the controller.
  Millis node_timeout{0};
  // The clock that liveness is judged on: when an agent was last heard and how long since.
  // Monotonic (the wall clock may jump); tests give one that follows their manual clock.
  std::function<std::chrono::steady_clock::time_point()> liveness_clock = [] {
    return std::chrono::steady_clock::now();
  };
  // Leadership (`gpufleet server`, several servers on one database): the lease epoch this
  // controller took (Store::AcquireLease, before Load). The store is fenced with it, and the
  // lease is renewed every lease_ttl / 3 on the state thread. Unset: no lease (gpufleet up).
  std::optional<std::int64_t> lease_epoch;
  Millis lease_ttl{8000};
  // Which scheduling pass a turn runs (lifecycle/pass_planner.h: arrivals and job ends decided
  // incrementally, a full pass within full_pass_interval after them), the rules `gpufleet sim`
  // replays with.
  PassRules passes;
  // [energy]: what a kWh costs and emits, for `quota`, `show` and reports (issue #8).
  EnergyPrice energy_price{};
  // [sharing]: kill the largest process of a fractional job over its GPU memory limit, or
  // warn; and stop a job still over it after the grace (issue #7).
  SharingConfig sharing;
  // [notify] webhook_allow: a webhook subscription to a loopback, link-local or unspecified
  // address is refused unless this allows it (the notifier checks again at delivery).
  WebhookAllowList webhook_allow;
  // Where notifications go (notify/notifier.h): each one raised is matched against the
  // subscriptions and handed over once its turn is durable. Null: they are only logged.
  // Thread-safe; must outlive the controller.
  Notifier* notifier = nullptr;
  // Slurm companion mode (`gpufleet server --slurm`, issue #23; slurm_desk.h): Slurm schedules,
  // gpufleet follows its jobs (OnSlurmJobs) and acts through it: a stop is `scancel` or
  // `scontrol requeue`, a GPU failure drains the node in Slurm. No job is submitted to gpufleet,
  // no pass runs, no time limit is enforced here, and a node that falls silent loses no job.
  // Null: gpufleet schedules. Thread-safe; must outlive the controller.
  SlurmLink* slurm = nullptr;
  // Kubernetes mode (`gpufleet server --kubernetes`, issue #27; kube_desk.h): Kubernetes
  // schedules, gpufleet follows the pods its agents report (OnPods). Nothing is submitted, no
  // pass runs, no time limit is enforced, a silent node ends no pod, and gpufleet stops a pod
  // only where an admin opted in: the idle reaper deletes it or scales its owner where its
  // idle_action says so (kube_stop_pod), and otherwise warns and notifies; a cancel is refused
  // with the kubectl command, any other stop is dropped with an event.
  bool kubernetes = false;
  // Kubernetes mode: what the API server says of a pod (its service account and workload;
  // kube/kube_api_watch.h), by UID, when the server can read the API server; unset or nullopt
  // leaves the pod's job as its node reported it. Thread-safe; called on the state thread.
  std::function<std::optional<KubePodFacts>(std::string_view pod_uid)> kube_pod_facts{};
  // Kubernetes mode: carries out an idle pod's stop through the API server
  // (kube/kube_pod_stopper.h), called once the turn that decided it is durable; `done` gets the
  // answer, from any thread. Unset: a stop fails at once with the fix (no line to the API
  // server). Thread-safe; must outlive the controller's calls to it.
  std::function<void(KubePodStop stop, std::function<void(Status)> done)> kube_stop_pod{};
};

class Controller final : public ClusterService, public AgentReports, private JobBookListener {
 public:
  Controller(std::unique_ptr<Store> store, const Clock& clock, const ControllerOptions& options);
  ~Controller() override;
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Loads jobs and nodes from the store. Call once, before Start().
  Status Load();
  // Registers the agent of a node; the agent must outlive the controller. Before Start() it
  // takes effect at once; afterwards (a remote agent's first hello) on the state thread, before
  // any command queued after this call.
  void AttachAgent(const NodeId& node, NodeAgent* agent);
  void Start();
  // Applies what is queued, commits, and joins the state thread. Idempotent.
  void Stop();
  // The store failed, or this controller lost its lease: it accepts no more work, and a
  // `gpufleet server` should exit so that clients and agents move to the leader. Any thread.
  bool Failed() const { return failed_.load(); }

  // ClusterService
  Result<Job> Submit(const Caller& caller, JobSpec spec) override;
  Result<std::vector<Job>> SubmitArray(const Caller& caller,
                                       JobSpec spec,
                                       ArrayRequest array) override;
  Result<std::vector<Job>> SubmitBatch(const Caller& caller, std::vector<JobSpec> specs) override;
  Result<std::vector<Job>> CancelArray(const Caller& caller, JobId array_job) override;
  Result<std::vector<Job>> ListJobs(const Caller& caller, const JobFilter& filter) override;
  Result<JobListing> ListSharedJobs(const Caller& caller, const JobFilter& filter) override;
  Result<std::vector<JobId>> QueueOrder(const Caller& caller) override;
  Result<Job> GetJob(const Caller& caller, JobId id) override;
  Result<HistoryPage> JobHistory(const Caller& caller, const HistoryFilter& filter) override;
  Result<Job> CancelJob(const Caller& caller, JobId id) override;
  Result<LogChunk> ReadJobLog(const Caller& caller, const LogRequest& request) override;
  Status WriteTerminal(const Caller& caller, JobId id, const TerminalInput& input) override;
  Result<std::vector<Event>> JobEvents(const Caller& caller, JobId id) override;
  Result<Explanation> ExplainJob(const Caller& caller, JobId id) override;
  Result<std::vector<Node>> ListNodes(const Caller& caller) override;
  Result<std::vector<GpuStatus>> ListGpus(const Caller& caller) override;
  Result<std::vector<GpuMinute>> GpuHistory(const Caller& caller,
                                            const GpuUuid& uuid,
                                            Time from,
                                            Time to) override;
  Result<ClusterStats> Stats(const Caller& caller) override;
  Result<QuotaReport> Quota(const Caller& caller) override;
  Result<Report> MonthlyReport(const Caller& caller, const ReportRequest& request) override;
  Result<Job> ApproveJob(const Caller& caller, JobId id) override;
  Result<Job> CheckpointJob(const Caller& caller, JobId id) override;
  Result<Job> HoldJob(const Caller& caller, JobId id) override;
  Result<Job> ReleaseJob(const Caller& caller, JobId id) override;
  Result<Job> RequeueJob(const Caller& caller, JobId id) override;
  Result<std::vector<Job>> CancelJobs(const Caller& caller, const JobSelector& selector) override;
  Result<Job> SignalJob(const Caller& caller, JobId id, int sig) override;
  Result<SignalOutcome> SignalJobs(const Caller& caller,
                                   const JobSelector& selector,
                                   int sig) override;
  Result<Job> UpdateJob(const Caller& caller, JobId id, const JobUpdate& update) override;

  Result<IssuedToken> CreateToken(const Caller& caller, TokenRequest request) override;
  Result<std::vector<ApiToken>> ListTokens(const Caller& caller) override;
  Result<ApiToken> RevokeToken(const Caller& caller, const std::string& id) override;
  Result<Node> DrainNode(const Caller& caller, const NodeId& node, std::string reason) override;
  Result<Node> ResumeNode(const Caller& caller, const NodeId& node) override;
  Result<Gpu> ResumeGpu(const Caller& caller, const NodeId& node, const std::string& gpu) override;
  Result<Gpu> SetGpuMode(const Caller& caller,
                         const NodeId& node,
                         const std::string& gpu,
                         const std::string& mode) override;
  Result<Gpu> SetMigLayout(const Caller& caller,
                           const NodeId& node,
                           const std::string& gpu,
                           const std::string& layout) override;
  Result<Subscription> CreateSubscription(const Caller& caller, Subscription request) override;
  Result<std::vector<Subscription>> ListSubscriptions(const Caller& caller) override;
  Result<Subscription> DeleteSubscription(const Caller& caller, const std::string& id) override;

  // The Caller a bearer token stands for (tokens.h): for ApiServerOptions::authenticate. Any
  // thread; does not wait for the state thread.
  Result<Caller> Authenticate(std::string_view token) const;

  // AgentReports
  void OnAgentHello(AgentHello hello) override;
  void OnJobStarted(JobId job, std::int64_t pid, Time start_time) override;
  void OnJobExited(JobExitReport report) override;
  void OnSamples(NodeId node, std::vector<GpuSample> samples) override;
  void OnAgentHeartbeat(const NodeId& node) override;
  // Kubernetes mode: a node's pods that hold GPUs, applied on the state thread (KubeDesk).
  void OnPods(const NodeId& node, std::vector<KubePod> pods) override;

  // Companion mode: one complete reading of Slurm's jobs (SlurmLink's thread), applied on the
  // state thread (SlurmDesk::Apply).
  void OnSlurmJobs(std::vector<SlurmJob> jobs);

 private:
  using Counters = ControllerCounters;  // behind Stats(), published with each view
  // Whose jobs run on the nodes: gpufleet's, or in a companion mode Slurm's or Kubernetes'.
  JobSource JobsFrom() const;
  // KubeDeskParts::send_stop: options_.kube_stop_pod once the turn is durable, its answer posted
  // back to the state thread; null without kube_stop_pod.
  std::function<void(JobId, KubePodStop)> SendPodStop();
  // Runs fn on the state thread; returns its result once the turn is committed.
  template <typename T>
  Result<T> Call(std::function<Result<T>()> fn);
  // Call, for a call that changes state: refused once the store failed or the lease was lost.
  template <typename T>
  Result<T> CallAccepting(std::function<Result<T>()> fn) {
    return Call<T>([this, fn = std::move(fn)]() -> Result<T> {
      GF_TRY(Accepting());
      return fn();
    });
  }
  void Post(std::function<void()> fn);

  void Loop();
  // Waits for more requests while they arrive faster than turns commit (window_).
  void Gather(std::vector<Command>& commands, std::chrono::steady_clock::time_point started);
  // True when the turn committed something.
  bool RunTurn(const std::vector<Command>& commands);
  std::chrono::steady_clock::time_point NextWakeup() const;
  // Commits the turn's changes in one transaction (group commit); `answered`: the requests
  // waiting on it, for the commit counters.
  Status Flush(std::int64_t answered);

  // REQUIRES: state thread, for all below.
  // The store failed or the lease was lost: the error every call that changes state gets.
  Status Accepting() const;
  // The next view (view.h) handed to reads_: at the end of each turn (and of Load), after the
  // commit.
  void PublishView();
  // The job book's listener (lifecycle/job_book.h): a job gives up its GPUs (telemetry,
  // accounting), ends (passes, predictor, counters, notifications, dependents), is requeued.
  void OnReleasing(Job& job) override;
  void OnEnded(const Job& job) override;
  void OnRequeueing(const Job& job) override;
  // The turn's kill orders (JobBook::TakeKills), to their agents after the commit.
  void SendKills();
  // Scheduling (scheduling_stage.h): the turn's pass, its outcome applied outside the job book.
  void Schedule();
  // What the agent is sent to launch `job` (allocated): the job with the environment of its
  // gang and of its GPU share. Every launch goes through here, the first and a re-sent one.
  Job LaunchOf(const Job& job) const;
  // The agent that holds the output of the job ReadJobLog asks for, or why none can be asked
  // (not started, requeued, node down or never joined).
  Result<NodeAgent*> LogSource(const Caller& caller, const LogRequest& request);
  // The agent of the node that runs the job whose terminal WriteTerminal types into, or why
  // there is none to type into.
  Result<NodeAgent*> TerminalSource(const Caller& caller, JobId id);

  std::unique_ptr<Telemetry> own_telemetry_;  // when options.telemetry is null
  Telemetry* telemetry_;                      // thread-safe; used from agent threads too
  std::unique_ptr<Store> store_;
  const Clock& clock_;
  ControllerOptions options_;
  CommandQueue queue_;
  CommitWindow window_;  // state thread: how long a turn gathers requests (Gather)
  std::thread thread_;
  // The read side (any thread): the published view and what is read from it, Telemetry and
  // store read connections.
  ClusterReader reads_;

  // State thread only.

  // The active jobs, every change of their state, the stops under way and the turn's journal
  // (lifecycle/job_book.h). After clock_ and options_, which it is made from.
  JobBook jobs_;
  NodeRegistry nodes_;  // the nodes, their agents, liveness and drains (node_registry.h)
  // Pending jobs that wait for other jobs to end, judged on the active jobs and the store
  // (dependency_book.h). After both.
  DependencyBook dependencies_{jobs_.Active(), *store_};
  // Fair-share ledgers, the budget period's sums and the budget verdicts (usage_book.h).
  UsageBook usage_;
  // The run-time predictor (run_time_book.h); each active job keeps its estimate.
  RunTimeBook runtimes_;
  // The turn's rows, actions after its commit and notifications (turn_outbox.h).
  TurnOutbox out_;
  // OnSamples (agents' threads): the samples with a MIG change (gpu_care.h). Thread-safe.
  MigChangeFilter mig_changes_;
  Counters counters_;
  // The scheduler kept between passes and which pass a turn runs (scheduling_stage.h). After
  // the components it reads.
  SchedulingStage scheduling_;
  // Submissions, cancels, approvals, checkpoints, explanations, visibility (job_desk.h).
  JobDesk desk_;
  // GPU health and fail-over, sharing modes and MIG, memory breaches (gpu_care.h).
  GpuCare gpus_;
  // The agents' reports, node liveness and drains, GPUs in telemetry (node_desk.h).
  NodeDesk node_desk_;
  // Slurm's jobs followed in companion mode (slurm_desk.h).
  SlurmDesk slurm_desk_;
  // Kubernetes' pods followed in Kubernetes mode (kube_desk.h).
  KubeDesk kube_desk_;
  // The idle reaper and its verdicts applied (idle_stage.h).
  IdleStage idle_;
  // The load forecast and the idle GPUs each node keeps ready for it (ready_gpus.h).
  ReadyGpus ready_;
  // Subscriptions, the turn's notifications routed and handed over, budget alerts
  // (notification_desk.h).
  NotificationDesk notifications_;
  // API and node tokens; its Authenticate is thread-safe (token_desk.h).
  TokenDesk tokens_;
  std::optional<Error> fatal_;       // set when the store failed: every later call gets this error
  std::atomic<bool> failed_{false};  // fatal_ is set (for other threads)
  std::chrono::steady_clock::time_point lease_renewed_{};
  // Renews the lease when a third of its time has passed; a lost lease is fatal.
  void RenewLease();
};

// Defined here, not in controller.cpp, because admin.cpp calls it too.
template <typename T>
Result<T> Controller::Call(std::function<Result<T>()> fn) {
  auto result = std::make_shared<std::optional<Result<T>>>();
  auto done = std::make_shared<std::promise<Result<T>>>();
  auto future = done->get_future();
  Command command{
      [fn = std::move(fn), result] { result->emplace(fn()); },
      [result, done](const Status& commit) {
        if (!commit.ok()) {
          done->set_value(commit.error());
        } else if (!result->has_value()) {
          done->set_value(Internal("the request failed inside the controller; see its log"));
        } else {
          done->set_value(std::move(**result));
        }
      }};
  if (!queue_.Push(std::move(command))) {
    return Unavailable("gpufleet is shutting down");
  }
  return future.get();
}

}  // namespace gf

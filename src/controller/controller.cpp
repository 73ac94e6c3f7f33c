#include "controller/controller.h"

#include <algorithm>
#include <future>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "controller/authorization.h"
#include "core/duration.h"
#include "lifecycle/admission.h"
#include "model/team.h"
#include "model/terminal.h"
#include "scheduler/explain.h"

namespace gf {
namespace {

constexpr int kMaxLoadedJobs = 1'000'000;
// The jobs the run-time predictor reads at start to learn from the runs that ended among them:
// the newest, enough for every active user's recent runs; older runs weigh little in its
// weighted means anyway.
constexpr int kPredictorHistoryJobs = 50'000;

double Seconds(Time from, Time to) {
  return std::chrono::duration<double>(to - from).count();
}

}  // namespace

Controller::Controller(std::unique_ptr<Store> store,
                       const Clock& clock,
                       const ControllerOptions& options)
    : own_telemetry_(options.telemetry == nullptr ? std::make_unique<Telemetry>() : nullptr),
      telemetry_(options.telemetry != nullptr ? options.telemetry : own_telemetry_.get()),
      store_(std::move(store)),
      clock_(clock),
      options_(options),
      reads_(clock_,
             *telemetry_,
             ReadSideOptions{.policy = options_.policy,
                             .team_of_user = options_.team_of_user,
                             .energy_price = options_.energy_price},
             [this] { return store_->OpenReader(); }),
      jobs_(
          JobBookOptions{.policy = options_.policy, .kill_grace = options_.kill_grace},
          [this] { return clock_.Now(); },
          *this),
      usage_(UsageBookOptions{.policy = options_.policy,
                              .team_of_user = options_.team_of_user,
                              .energy_price = options_.energy_price}),
      scheduling_(options_.policy,
                  options_.passes,
                  SchedulingInputs{.nodes = nodes_,
                                   .telemetry = *telemetry_,
                                   .usage = usage_,
                                   .dependencies = dependencies_,
                                   .running_spans = [this] { return node_desk_.RunningSpans(); },
                                   .full_passes = counters_.full_passes,
                                   .incremental_passes = counters_.incremental_passes}),
      desk_(JobDeskOptions{.policy = options_.policy,
                           .team_of_user = options_.team_of_user,
                           .only_uid = options_.only_uid},
            JobDeskParts{.jobs = jobs_,
                         .store = *store_,
                         .dependencies = dependencies_,
                         .nodes = nodes_,
                         .runtimes = runtimes_,
                         .scheduling = scheduling_,
                         .out = out_,
                         .clock = clock_}),
      gpus_(options_.sharing,
            GpuCareParts{.nodes = nodes_,
                         .telemetry = *telemetry_,
                         .jobs = jobs_,
                         .out = out_,
                         .scheduling = scheduling_,
                         .clock = clock_,
                         .slurm = options_.slurm}),
      node_desk_(NodeDeskOptions{.policy = options_.policy,
                                 .node_timeout = options_.node_timeout,
                                 .liveness_clock = options_.liveness_clock,
                                 .kill_grace = options_.kill_grace,
                                 .jobs_from = JobsFrom()},
                 NodeDeskParts{.jobs = jobs_,
                               .nodes = nodes_,
                               .telemetry = *telemetry_,
                               .gpus = gpus_,
                               .usage = usage_,
                               .scheduling = scheduling_,
                               .out = out_,
                               .clock = clock_}),
      slurm_desk_(
          SlurmDeskParts{.jobs = jobs_, .nodes = nodes_, .node_desk = node_desk_, .clock = clock_}),
      kube_desk_(KubeDeskParts{.jobs = jobs_,
                               .nodes = nodes_,
                               .node_desk = node_desk_,
                               .clock = clock_,
                               .api_facts = options_.kube_pod_facts,
                               .send_stop = SendPodStop()}),
      idle_(options_.policy,
            IdleStageParts{.jobs = jobs_,
                           .nodes = nodes_,
                           .telemetry = *telemetry_,
                           .out = out_,
                           .clock = clock_,
                           .stop_pod =
                               [this](Job& job, const KubePodStop& stop, const std::string& cause) {
                                 kube_desk_.StopIdlePod(job, stop, cause);
                               }},
            options_.kubernetes),
      ready_(ReadyGpusOptions{},
             ReadyGpusParts{.jobs = jobs_, .nodes = nodes_, .out = out_, .clock = clock_}),
      notifications_(options_.policy,
                     options_.notifier,
                     NotificationDeskParts{.jobs = jobs_,
                                           .usage = usage_,
                                           .out = out_,
                                           .clock = clock_,
                                           .running_spans =
                                               [this] {
                                                 return node_desk_.RunningSpans();
                                               }}),
      tokens_(TokenDeskParts{.jobs = jobs_, .store = *store_, .out = out_, .clock = clock_}) {
  PublishView();
}

Controller::~Controller() {
  Stop();
}

Status Controller::Load() {
  if (options_.lease_epoch) {
    store_->FenceWith(*options_.lease_epoch);
    lease_renewed_ = std::chrono::steady_clock::now();  // AcquireLease just set its end
  }
  GF_ASSIGN_OR_RETURN(std::int64_t max_id, store_->MaxJobId());
  desk_.SetNextId(max_id + 1);
  JobQuery query;
  query.active_only = true;
  query.limit = kMaxLoadedJobs;
  GF_ASSIGN_OR_RETURN(std::vector<Job> jobs, store_->ListJobs(query));
  jobs_.Restore(std::move(jobs));
  GF_ASSIGN_OR_RETURN(const auto earlier_runs, EarlierRunsOf(*store_, jobs_.Active()));
  jobs_.RestoreEarlierRuns(earlier_runs);
  // The run-time predictor learns from the newest finished jobs before estimating these.
  GF_TRY(runtimes_.Load(*store_, kPredictorHistoryJobs));
  for (auto& [id, job] : jobs_.Active()) {
    job.prediction = runtimes_.Estimate(job);
  }
  GF_ASSIGN_OR_RETURN(std::vector<Node> nodes, store_->ListNodes());
  for (auto& node : nodes) {
    telemetry_->SetInventory(node);
    nodes_.Restore(std::move(node));
  }
  GF_TRY(tokens_.Load(*store_));
  for (const auto& [id, job] : jobs_.Active()) {
    if (job.state == JobState::kStarting || job.state == JobState::kRunning) {
      node_desk_.AssignGpus(job);
    }
  }
  GF_TRY(desk_.RestoreDependencies());
  GF_TRY(usage_.Load(*store_, clock_.Now(), node_desk_.RunningSpans()));
  GF_TRY(ready_.Load(*store_));
  GF_TRY(notifications_.Load(*store_));  // after the accounting: budget alerts already sent
  PublishView();
  spdlog::info("controller: loaded {} active jobs, {} nodes; next job id {}",
               jobs_.Active().size(),
               nodes_.Count(),
               desk_.NextId());
  return OkStatus();
}

void Controller::AttachAgent(const NodeId& node, NodeAgent* agent) {
  auto attach = [this, node, agent] {
    nodes_.AttachAgent(node, agent);
  };
  if (thread_.joinable()) {
    Post(attach);  // a remote agent's first hello, while the controller runs
  } else {
    attach();
  }
}

void Controller::Start() {
  nodes_.AwaitHellos(options_.liveness_clock());
  thread_ = std::thread([this] { Loop(); });
}

void Controller::Stop() {
  queue_.Close();
  reads_.Close();
  if (thread_.joinable()) {
    thread_.join();
  }
}

void Controller::Post(std::function<void()> fn) {
  queue_.Push(Command{std::move(fn), nullptr});
}

void Controller::Loop() {
  while (true) {
    std::vector<Command> commands = queue_.WaitAndDrain(NextWakeup());
    Gather(commands, std::chrono::steady_clock::now());
    const bool closing = queue_.closed();
    const auto applying = std::chrono::steady_clock::now();  // the turn's cost, not its wait
    if (RunTurn(commands)) {
      window_.Committed(std::chrono::steady_clock::now() - applying);
    }
    if (closing) {
      // Commands pushed between the drain and Close() are applied by one last turn.
      RunTurn(queue_.WaitAndDrain(std::chrono::steady_clock::now()));
      return;
    }
  }
}

// Group commit sized by the arrival rate (commit_window.h): while requests arrive faster than
// turns commit, the turn waits for the next before it applies any, at most half a turn.
void Controller::Gather(std::vector<Command>& commands,
                        std::chrono::steady_clock::time_point started) {
  std::size_t seen = 0;
  std::optional<std::chrono::steady_clock::time_point> newest;
  while (true) {
    for (; seen < commands.size(); ++seen) {
      if (commands[seen].reply) {  // someone waits for this one's commit
        window_.Arrived(commands[seen].queued);
        newest = commands[seen].queued;
      }
    }
    if (!newest) {
      return;  // nobody waits: nothing to gather for
    }
    const auto now = std::chrono::steady_clock::now();
    const auto wait = window_.NextWait(now, started, *newest);
    if (wait <= std::chrono::steady_clock::duration::zero() ||
        !queue_.WaitAndDrainInto(commands, now + wait)) {
      return;
    }
  }
}

bool Controller::RunTurn(const std::vector<Command>& commands) {
  RenewLease();
  // What was held since the last turn, before the commands change it.
  usage_.Advance(clock_.Now(), node_desk_.RunningSpans(/*for_ledgers=*/true));
  for (const auto& command : commands) {
    try {
      command.apply();
    } catch (const std::exception& e) {
      // A command must not take the state thread down; its caller gets no value, so the
      // reply below reports the failure.
      spdlog::error("controller: command failed: {}", e.what());
    }
  }
  if (!fatal_) {
    node_desk_.CheckLiveness();
    node_desk_.UpdateDrains();
    if (JobsFrom() == JobSource::kGpufleet) {  // Slurm, Kubernetes enforce their own limits
      jobs_.EnforceTimeLimits();
    }
    gpus_.EnforceMemoryLimits();
    idle_.Run();
    if (JobsFrom() == JobSource::kGpufleet) {  // else Slurm or Kubernetes schedules
      jobs_.SettleGangs();  // before the pass: a requeued gang's running members are told to stop
      Schedule();
      jobs_.SettleGangs();  // after it: a preempted member's gang follows it
    }
    notifications_.CheckBudgets();  // after the turn's starts and ends
    ready_.Run();
  }
  SendKills();
  notifications_.HandOver();
  // Done only once the turn is durable; dropped with it otherwise.
  std::vector<std::function<void()>> actions = std::move(out_.after_commit);
  const auto answered = std::count_if(
      commands.begin(), commands.end(), [](const Command& c) { return c.reply != nullptr; });
  const std::int64_t commits_before = counters_.commits;
  Status commit = Flush(answered);
  PublishView();  // what the callers are about to be told is what readers see
  for (const auto& command : commands) {
    if (command.reply) {
      command.reply(commit);
    }
  }
  if (commit.ok()) {
    for (auto& action : actions) {
      action();
    }
  }
  jobs_.EraseEnded();
  return counters_.commits != commits_before;
}

std::chrono::steady_clock::time_point Controller::NextWakeup() const {
  Millis wait = options_.tick;
  const Time now = clock_.Now();
  // The next pass owed, the reaper's next look, the next time limit.
  for (const std::optional<Time>& at :
       {scheduling_.WakeAt(), idle_.NextAt(), jobs_.NextDeadline()}) {
    if (at) {
      wait = std::min(wait, std::max(Millis(0), *at - now));
    }
  }
  return std::chrono::steady_clock::now() + wait;
}

Status Controller::Flush(std::int64_t answered) {
  Journal journal = jobs_.TakeJournal();
  StoreBatch batch = std::exchange(out_, TurnOutbox{}).batch;
  if (fatal_) {
    return *fatal_;  // nothing more is written
  }
  batch.jobs = std::move(journal.jobs);
  batch.events = std::move(journal.events);
  if (batch.empty()) {
    return OkStatus();
  }
  const auto started = std::chrono::steady_clock::now();
  Status s = store_->Commit(batch);
  counters_.commits += 1;
  counters_.commit_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  counters_.committed_requests += answered;
  if (!s.ok()) {
    // The in-memory state is now ahead of the disk. Stop accepting work rather than
    // acknowledge anything else; a restart reloads the last durable state.
    fatal_ = Unavailable("the state store failed (" + s.error().message +
                         "); gpufleet stopped accepting work: restart it");
    failed_ = true;
    spdlog::critical("controller: {}", fatal_->message);
    return *fatal_;
  }
  return OkStatus();
}

void Controller::RenewLease() {
  if (!options_.lease_epoch || fatal_) {
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (now - lease_renewed_ < options_.lease_ttl / 3) {
    return;
  }
  Status s = store_->RenewLease(*options_.lease_epoch, clock_.Now(), options_.lease_ttl);
  if (!s.ok()) {
    // Another controller leads now (this one stalled past its lease): stop at once; the
    // fenced store would refuse every commit anyway.
    fatal_ = Unavailable("this controller lost the leadership (" + s.error().message + ")");
    failed_ = true;
    spdlog::critical("controller: {}", fatal_->message);
    return;
  }
  lease_renewed_ = now;
}

// The stops the turn decided, sent once it is durable (a kill of a run its agent no longer has
// is a no-op there).
void Controller::SendKills() {
  if (options_.kubernetes) {
    // Kubernetes runs the pod: gpufleet stops one only where the idle reaper's opt-in says so
    // (KubeDesk::StopIdlePod, not a kill order). Any other stop is not carried out, so the job
    // is not being stopped either.
    for (const KillOrder& kill : jobs_.TakeKills()) {
      jobs_.Stops().Forget(kill.job);
      jobs_.Record(kill.job,
                   "kill_dropped",
                   "controller",
                   "not carried out (" + kill.cause +
                       "): this gpufleet server follows Kubernetes and stops a pod only where "
                       "idle_action says so");
    }
    return;
  }
  if (options_.slurm != nullptr) {
    // Slurm runs the job: it is stopped through Slurm, and its end read back from Slurm.
    for (KillOrder& kill : jobs_.TakeKills()) {
      const bool requeue = SlurmDesk::RequeueMeant(jobs_, kill.job);
      out_.After([slurm = options_.slurm, requeue, kill = std::move(kill)] {
        // A node's share of a multi-node job stops the whole Slurm job (slurm_desk.h).
        const std::int64_t id = SlurmJobOfNodeJob(kill.job.value());
        if (requeue) {
          slurm->Requeue(id, kill.cause);
        } else {
          slurm->Cancel(id, kill.cause);
        }
      });
    }
    return;
  }
  for (KillOrder& kill : jobs_.TakeKills()) {
    const NodeEntry* entry = nodes_.Find(kill.node);
    if (entry == nullptr || entry->agent == nullptr) {
      continue;  // its node has not joined since a restart: its hello kills what should not run
    }
    out_.After([agent = entry->agent, kill = std::move(kill), grace = options_.kill_grace] {
      agent->Kill(kill.job, grace, kill.cause, kill.first_signal);
    });
  }
}

// The turn's pass (scheduling_stage.h), and what its decisions mean outside the job book: the
// started jobs' GPUs in telemetry, their launch once the turn is durable, the preempted jobs'
// owners told.
void Controller::Schedule() {
  gpus_.ApplyWaitingModes();
  const PassOutcome outcome = scheduling_.Run(jobs_, clock_.Now());
  for (const PreemptDecision& preemption : outcome.preempted) {
    out_.Notify(PreemptedNotification(jobs_.At(preemption.victim), preemption.cause, clock_.Now()));
  }
  for (const JobId id : outcome.started) {
    const Job& job = jobs_.At(id);
    node_desk_.AssignGpus(job);
    counters_.CountWait(Seconds(job.submit_time, clock_.Now()));
  }
  // Launched once every start is applied: a gang member's environment names all its members'
  // nodes.
  for (const JobId id : outcome.started) {
    const Job& job = jobs_.At(id);
    out_.After([agent = nodes_.At(job.allocation->node).agent, launched = LaunchOf(job)] {
      agent->Launch(launched);
    });
  }
}

Job Controller::LaunchOf(const Job& job) const {
  return gf::LaunchOf(job, jobs_.Active(), nodes_.At(job.allocation->node).node);
}

// ---- the job book's listener (lifecycle/job_book.h) ---------------------------------------

void Controller::OnReleasing(Job& job) {
  node_desk_.ReleaseGpus(job);
}

void Controller::OnEnded(const Job& job) {
  scheduling_.NoteEnd(job);  // it leaves the queue, or its GPUs are free again
  runtimes_.RunEnded(job);
  counters_.ended[job.state] += 1;
  counters_.team_gpu_seconds[CountedTeam(job)] += HeldGpuSeconds(job, clock_.Now());
  out_.Notify(EndedNotification(job, job.state, job.reason, clock_.Now()));
  notifications_.JobEnded(job);  // its own subscriptions go once the end is routed to them
  desk_.ResolveDependents(job);  // the cascade's events follow this job's own
}

// The run's GPU-time stays in the team's counters (its usage stays in job.usage:
// NodeDesk::ReleaseGpus).
void Controller::OnRequeueing(const Job& job) {
  counters_.team_gpu_seconds[CountedTeam(job)] += HeldGpuSeconds(job, clock_.Now());
  scheduling_.NeedFull();
}

Result<std::vector<Job>> Controller::ListJobs(const Caller& caller, const JobFilter& filter) {
  return reads_.ListJobs(caller, filter);
}

Result<JobListing> Controller::ListSharedJobs(const Caller& caller, const JobFilter& filter) {
  return reads_.ListSharedJobs(caller, filter);
}

Result<std::vector<JobId>> Controller::QueueOrder(const Caller& caller) {
  return reads_.QueueOrder(caller);
}

Result<Job> Controller::GetJob(const Caller& caller, JobId id) {
  return reads_.GetJob(caller, id);
}

Result<HistoryPage> Controller::JobHistory(const Caller& caller, const HistoryFilter& filter) {
  return reads_.JobHistory(caller, filter);
}

void Controller::PublishView() {
  reads_.Publish(NextView(*reads_.Latest(),
                          jobs_.Active(),
                          nodes_.Nodes(),
                          counters_,
                          fatal_,
                          scheduling_.QueueOrder()));
}

// ---- the job calls (job_desk.h) -------------------------------------------------------------

Status Controller::Accepting() const {
  return fatal_ ? Status(*fatal_) : OkStatus();
}

namespace {

Error FollowsSlurm() {
  return FailedPrecondition(
      "this gpufleet server follows Slurm (--slurm): submit with sbatch; gpufleet shows the job, "
      "its GPUs and their use once Slurm has it");
}

Error FollowsKubernetes() {
  return FailedPrecondition(
      "this gpufleet server follows Kubernetes (--kubernetes): create pods with kubectl (GPUs "
      "requested as resources.limits nvidia.com/gpu); gpufleet shows each pod, its GPUs and their "
      "use once its node's agent reports it");
}

// Why a submission is refused here, if it is: the jobs are another scheduler's.
std::optional<Error> RefusesSubmissions(const ControllerOptions& options) {
  if (options.slurm != nullptr) {
    return FollowsSlurm();
  }
  if (options.kubernetes) {
    return FollowsKubernetes();
  }
  return std::nullopt;
}

}  // namespace

Result<Job> Controller::Submit(const Caller& caller, JobSpec spec) {
  if (std::optional<Error> refused = RefusesSubmissions(options_)) {
    return *refused;
  }
  return CallAccepting<Job>([this, caller, spec = std::move(spec)]() mutable {
    return desk_.Submit(caller, std::move(spec));
  });
}

Result<std::vector<Job>> Controller::SubmitArray(const Caller& caller,
                                                 JobSpec spec,
                                                 ArrayRequest array) {
  if (std::optional<Error> refused = RefusesSubmissions(options_)) {
    return *refused;
  }
  return CallAccepting<std::vector<Job>>(
      [this, caller, spec = std::move(spec), array = std::move(array)]() mutable {
        return desk_.SubmitArray(caller, std::move(spec), array);
      });
}

Result<std::vector<Job>> Controller::SubmitBatch(const Caller& caller, std::vector<JobSpec> specs) {
  if (options_.slurm != nullptr) {
    return FollowsSlurm();
  }
  return CallAccepting<std::vector<Job>>([this, caller, specs = std::move(specs)]() mutable {
    return desk_.SubmitBatch(caller, std::move(specs));
  });
}

Result<Job> Controller::CancelJob(const Caller& caller, JobId id) {
  return CallAccepting<Job>([this, caller, id]() -> Result<Job> {
    if (options_.kubernetes) {
      const Job* job = jobs_.Find(id);
      const std::optional<KubePod> pod =
          job != nullptr ? KubePodOfJobEnv(job->spec.env) : std::nullopt;
      if (pod) {
        return FailedPrecondition("job " + std::to_string(id.value()) + " is Kubernetes pod " +
                                  pod->pod_namespace + "/" + pod->name +
                                  ", which gpufleet does not stop: kubectl delete pod -n " +
                                  pod->pod_namespace + " " + pod->name);
      }
    }
    const Job* before = jobs_.Find(id);
    const bool pending = before != nullptr && before->state == JobState::kPending;
    Result<Job> cancelled = desk_.Cancel(caller, id);
    if (cancelled.ok() && pending && options_.slurm != nullptr) {
      // A pending job gets no kill order (nothing runs): Slurm's queue must drop it too.
      out_.After([slurm = options_.slurm, id] {
        slurm->Cancel(SlurmJobOfNodeJob(id.value()), "cancelled in gpufleet");
      });
    }
    return cancelled;
  });
}

Result<std::vector<Job>> Controller::CancelArray(const Caller& caller, JobId array_job) {
  return CallAccepting<std::vector<Job>>(
      [this, caller, array_job] { return desk_.CancelArray(caller, array_job); });
}

Result<Job> Controller::ApproveJob(const Caller& caller, JobId id) {
  return CallAccepting<Job>([this, caller, id] { return desk_.Approve(caller, id); });
}

Result<Job> Controller::CheckpointJob(const Caller& caller, JobId id) {
  return CallAccepting<Job>([this, caller, id] { return desk_.Checkpoint(caller, id); });
}

// Job control (issue #24): each a command on the state thread, its rules the job desk's.
Result<Job> Controller::HoldJob(const Caller& caller, JobId id) {
  return CallAccepting<Job>([this, caller, id] { return desk_.Hold(caller, id); });
}

Result<Job> Controller::ReleaseJob(const Caller& caller, JobId id) {
  return CallAccepting<Job>([this, caller, id] { return desk_.Release(caller, id); });
}

Result<Job> Controller::RequeueJob(const Caller& caller, JobId id) {
  return CallAccepting<Job>([this, caller, id] { return desk_.Requeue(caller, id); });
}

Result<std::vector<Job>> Controller::CancelJobs(const Caller& caller, const JobSelector& selector) {
  return CallAccepting<std::vector<Job>>(
      [this, caller, selector] { return desk_.CancelMatching(caller, selector); });
}

Result<Job> Controller::SignalJob(const Caller& caller, JobId id, int sig) {
  return CallAccepting<Job>([this, caller, id, sig] { return desk_.Signal(caller, id, sig); });
}

Result<SignalOutcome> Controller::SignalJobs(const Caller& caller,
                                             const JobSelector& selector,
                                             int sig) {
  return CallAccepting<SignalOutcome>(
      [this, caller, selector, sig] { return desk_.SignalMatching(caller, selector, sig); });
}

Result<Job> Controller::UpdateJob(const Caller& caller, JobId id, const JobUpdate& update) {
  return CallAccepting<Job>(
      [this, caller, id, update] { return desk_.Update(caller, id, update); });
}

Result<Explanation> Controller::ExplainJob(const Caller& caller, JobId id) {
  return Call<Explanation>([this, caller, id] { return desk_.Explain(caller, id); });
}

// Two steps, like `kubectl logs`: the state thread only finds who holds the output (a quick
// Call); the read runs here, on the caller's thread, so a slow or remote node never holds up
// the state thread, and nothing about it is stored.
Result<LogChunk> Controller::ReadJobLog(const Caller& caller, const LogRequest& request) {
  GF_ASSIGN_OR_RETURN(NodeAgent * agent, Call<NodeAgent*>([this, caller, request] {
                        return LogSource(caller, request);
                      }));
  return agent->ReadLog(request);
}

// As ReadJobLog: found on the state thread, sent from the caller's.
Status Controller::WriteTerminal(const Caller& caller, JobId id, const TerminalInput& input) {
  GF_ASSIGN_OR_RETURN(NodeAgent * agent,
                      Call<NodeAgent*>([this, caller, id] { return TerminalSource(caller, id); }));
  return agent->WriteTerminal(id, input);
}

Result<NodeAgent*> Controller::TerminalSource(const Caller& caller, JobId id) {
  const std::string name = "job " + std::to_string(id.value());
  GF_ASSIGN_OR_RETURN(const Job job, desk_.FindVisible(caller, id));
  if (!Visible(caller, job, Action::kAttach)) {
    // 404 as the table says, but who may see the job is told why.
    return NotFound(name + ": its terminal is its owner's alone (nobody else types into it, " +
                    "admins included; gpufleet cancel ends it)");
  }
  if (!HasTerminal(job.spec)) {
    return FailedPrecondition(name + " has no terminal: only a job started by `gpufleet run` " +
                              "has one (see its output with gpufleet logs " +
                              std::to_string(id.value()) + ")");
  }
  if (job.state != JobState::kRunning) {
    return FailedPrecondition(name + " is " + std::string(ToString(job.state)) +
                              ": its terminal takes input only while it runs");
  }
  return node_desk_.LogSource(job, LogStream::kStdout);
}

Result<NodeAgent*> Controller::LogSource(const Caller& caller, const LogRequest& request) {
  GF_ASSIGN_OR_RETURN(const Job job, desk_.FindVisible(caller, request.job));
  return node_desk_.LogSource(job, request.stream);
}

Result<std::vector<Event>> Controller::JobEvents(const Caller& caller, JobId id) {
  return reads_.JobEvents(caller, id);
}

Result<std::vector<Node>> Controller::ListNodes(const Caller& caller) {
  return reads_.ListNodes(caller);
}

Result<std::vector<GpuStatus>> Controller::ListGpus(const Caller& caller) {
  return reads_.ListGpus(caller);
}

Result<ClusterStats> Controller::Stats(const Caller& /*caller*/) {
  return reads_.Stats(notifications_.Counts());
}

Result<std::vector<GpuMinute>> Controller::GpuHistory(const Caller& caller,
                                                      const GpuUuid& uuid,
                                                      Time from,
                                                      Time to) {
  return reads_.GpuHistory(caller, uuid, from, to);
}

Result<Report> Controller::MonthlyReport(const Caller& caller, const ReportRequest& request) {
  return reads_.MonthlyReport(caller, request);
}

// ---- accounting (usage_book.h): its inputs, quota; approve, checkpoint ---------------------

Result<QuotaReport> Controller::Quota(const Caller& caller) {
  return Call<QuotaReport>([this, caller]() -> Result<QuotaReport> {
    GF_TRY(Authorize(caller, Resource::kTeam, Action::kRead, Ownership::kOwn, "quota"));
    return usage_.Quota(caller, desk_.TeamsOf(caller), node_desk_.RunningSpans(), clock_.Now());
  });
}

// ---- AgentReports ------------------------------------------------------------------------

void Controller::OnAgentHello(AgentHello hello) {
  // Before any sample of this agent is ingested (samples bypass the state thread).
  telemetry_->SetInventory(hello.node);
  Post([this, hello = std::move(hello)]() mutable {
    ready_.Forget(hello.node.name);  // a restarted agent is told its target again
    node_desk_.Hello(std::move(hello));
  });
}

void Controller::OnJobStarted(JobId id, std::int64_t pid, Time start_time) {
  Post([this, id, pid, start_time] { node_desk_.JobStarted(id, pid, start_time); });
}

void Controller::OnJobExited(JobExitReport report) {
  Post([this, report = std::move(report)] { node_desk_.JobExited(report); });
}

void Controller::OnPods(const NodeId& node, std::vector<KubePod> pods) {
  if (!options_.kubernetes) {
    return;  // an agent of another kind: its node is drained (NodeDesk::CheckJobSource)
  }
  Post([this, node, pods = std::move(pods)] { kube_desk_.Apply(node, pods); });
}

JobSource Controller::JobsFrom() const {
  if (options_.slurm != nullptr) {
    return JobSource::kSlurm;
  }
  return options_.kubernetes ? JobSource::kKubernetes : JobSource::kGpufleet;
}

std::function<void(JobId, KubePodStop)> Controller::SendPodStop() {
  if (!options_.kube_stop_pod) {
    return nullptr;
  }
  return [this](JobId job, KubePodStop stop) {
    out_.After([this, job, stop = std::move(stop)]() mutable {
      KubePodStop told = stop;
      options_.kube_stop_pod(std::move(stop), [this, job, told = std::move(told)](Status answer) {
        Post([this, job, told, answer = std::move(answer)] {
          kube_desk_.StopAnswered(job, told, answer);
        });
      });
    });
  };
}

void Controller::OnSlurmJobs(std::vector<SlurmJob> jobs) {
  Post([this, jobs = std::move(jobs)] { slurm_desk_.Apply(jobs); });
}

void Controller::OnAgentHeartbeat(const NodeId& node) {
  Post([this, node] { node_desk_.Heard(node); });
}

void Controller::OnSamples(NodeId node, std::vector<GpuSample> samples) {
  // Telemetry is thread-safe: samples are taken here, on the agent's thread, and only what
  // the state must record (health changes, conditions, finished minutes) becomes a command.
  // Only a sample whose MIG devices changed or that carries a layout's refusal goes to the state
  // thread (MigChangeFilter).
  std::vector<GpuSample> mig = mig_changes_.Changed(samples);
  IngestResult result = telemetry_->Ingest(node, std::move(samples));
  if (result.health.empty() && result.conditions.empty() && result.minutes.empty() && mig.empty()) {
    return;
  }
  Post([this, node = std::move(node), result = std::move(result), mig = std::move(mig)]() mutable {
    node_desk_.Ingest(node, std::move(result), mig);
  });
}

// ---- subscriptions (notification_desk.h) -----------------------------------------------------

Result<Subscription> Controller::CreateSubscription(const Caller& caller, Subscription request) {
  // Checked on the caller's thread (reads only options_), stored on the state thread.
  GF_ASSIGN_OR_RETURN(Subscription sub,
                      NewSubscription(caller,
                                      std::move(request),
                                      {.webhook_allow = &options_.webhook_allow,
                                       .team_of_user = &options_.team_of_user},
                                      clock_.Now()));
  return Call<Subscription>(
      [this, caller, sub = std::move(sub)] { return notifications_.Add(caller, sub); });
}

Result<std::vector<Subscription>> Controller::ListSubscriptions(const Caller& caller) {
  GF_TRY(Authorize(caller, Resource::kSubscription, Action::kRead, Ownership::kOwn, "notify list"));
  return Call<std::vector<Subscription>>([this, caller]() -> Result<std::vector<Subscription>> {
    return notifications_.VisibleTo(caller);
  });
}

Result<Subscription> Controller::DeleteSubscription(const Caller& caller, const std::string& id) {
  GF_TRY(Authorize(
      caller, Resource::kSubscription, Action::kDelete, Ownership::kOwn, "notify remove"));
  return Call<Subscription>([this, caller, id] { return notifications_.Remove(caller, id); });
}

}  // namespace gf

#include "controller/controller.h"

#include <algorithm>
#include <future>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "controller/explain_privacy.h"
#include "controller/job_arrays.h"
#include "controller/submit_team.h"
#include "core/duration.h"
#include "lifecycle/admission.h"
#include "scheduler/explain.h"

namespace gf {
namespace {

constexpr int kMaxLoadedJobs = 1'000'000;

// A spec that names no class (the API leaves the name empty) gets the config's default class.
JobSpec WithDefaultClass(JobSpec spec, const PolicyConfig& policy) {
  if (spec.priority.name.empty()) {
    spec.priority.name = policy.default_class;
  }
  return spec;
}

double Seconds(Time from, Time to) {
  return std::chrono::duration<double>(to - from).count();
}

std::string Describe(const JobRequest& r) {
  std::string out = std::to_string(r.gpus) + (r.gpus == 1 ? " GPU" : " GPUs");
  if (r.gpu_type) {
    out += " of type " + *r.gpu_type;
  }
  return out;
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
      usage_(UsageBookOptions{.policy = options_.policy,
                              .team_of_user = options_.team_of_user,
                              .energy_price = options_.energy_price}),
      scheduler_(IncrementalOptions{.reuse_within = options_.passes.arrival_reuse}),
      passes_(options_.passes) {
  counters_.wait_buckets.assign(kWaitBucketBounds.size(), 0);
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
  next_job_id_ = max_id + 1;
  JobQuery query;
  query.active_only = true;
  query.limit = kMaxLoadedJobs;
  GF_ASSIGN_OR_RETURN(std::vector<Job> jobs, store_->ListJobs(query));
  for (auto& job : jobs) {
    if (HoldsGpus(job)) {
      holding_.insert(job.id);
    }
    active_.emplace(job.id, std::move(job));
  }
  GF_ASSIGN_OR_RETURN(std::vector<Node> nodes, store_->ListNodes());
  for (auto& node : nodes) {
    telemetry_->SetInventory(node);
    nodes_.Restore(std::move(node));
  }
  GF_TRY(LoadTokens());
  for (const auto& [id, job] : active_) {
    if (job.state == JobState::kStarting || job.state == JobState::kRunning) {
      AssignGpus(job);
    }
  }
  GF_TRY(RestoreDependencies());
  GF_TRY(usage_.Load(*store_, clock_.Now(), RunningSpans()));
  GF_TRY(LoadSubscriptions());  // after the accounting: budget alerts already sent
  PublishView();
  spdlog::info("controller: loaded {} active jobs, {} nodes; next job id {}",
               active_.size(),
               nodes_.Count(),
               next_job_id_);
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
  nodes_.AwaitHellos(std::chrono::steady_clock::now());
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
    const bool closing = queue_.closed();
    RunTurn(commands);
    if (closing) {
      // Commands pushed between the drain and Close() are applied by one last turn.
      RunTurn(queue_.WaitAndDrain(std::chrono::steady_clock::now()));
      return;
    }
  }
}

void Controller::RunTurn(const std::vector<Command>& commands) {
  RenewLease();
  // What was held since the last turn, before the commands change it.
  usage_.Advance(clock_.Now(), RunningSpans(/*for_ledgers=*/true));
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
    CheckNodeLiveness();
    UpdateDrains();
    EnforceTimeLimits();
    EnforceMemoryLimits();
    ReapIdleJobs();
    SettleGangs();  // before the pass: a requeued gang's running members are told to stop
    Schedule();
    SettleGangs();        // after it: a preempted member's gang follows it
    CheckBudgetAlerts();  // after the turn's starts and ends
  }
  Status commit = Flush();
  PublishView();  // what the callers are about to be told is what readers see
  for (const auto& command : commands) {
    if (command.reply) {
      command.reply(commit);
    }
  }
  if (commit.ok()) {
    auto actions = std::move(after_commit_);
    after_commit_.clear();
    for (auto& action : actions) {
      action();
    }
  }
  EraseFinished();
}

std::chrono::steady_clock::time_point Controller::NextWakeup() const {
  Millis wait = options_.tick;
  const Time now = clock_.Now();
  for (const std::optional<Time>& pass : {passes_.WakeAt(), reaper_.NextAt()}) {
    if (pass) {
      wait = std::min(wait, std::max(Millis(0), *pass - now));
    }
  }
  for (const JobId id : holding_) {
    const Job& job = active_.at(id);
    if (job.state != JobState::kRunning || !job.start_time || terminating_.contains(id)) {
      continue;
    }
    if (std::optional<std::chrono::seconds> limit = EffectiveLimit(job)) {
      const Time deadline = *job.start_time + *limit;
      wait = std::min(wait, std::max(Millis(0), deadline - now));
    }
  }
  return std::chrono::steady_clock::now() + wait;
}

// The queue-wait histogram behind gpufleet_queue_wait_seconds: a job just started.
void Controller::CountWait(const Job& job) {
  const double wait = Seconds(job.submit_time, clock_.Now());
  const auto* bucket = std::lower_bound(kWaitBucketBounds.begin(), kWaitBucketBounds.end(), wait);
  if (bucket != kWaitBucketBounds.end()) {
    counters_.wait_buckets[static_cast<std::size_t>(bucket - kWaitBucketBounds.begin())] += 1;
  }
  counters_.wait_count += 1;
  counters_.wait_sum_seconds += std::max(0.0, wait);
}

Status Controller::Flush() {
  if (fatal_) {
    return *fatal_;
  }
  if (batch_.empty()) {
    return OkStatus();
  }
  Status s = store_->Commit(batch_);
  batch_ = StoreBatch{};
  batch_job_slot_.clear();
  if (!s.ok()) {
    // The in-memory state is now ahead of the disk. Stop accepting work rather than
    // acknowledge anything else; a restart reloads the last durable state.
    fatal_ = Unavailable("the state store failed (" + s.error().message +
                         "); gpufleet stopped accepting work: restart it");
    failed_ = true;
    after_commit_.clear();
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

void Controller::EraseFinished() {
  for (const JobId id : ended_) {
    terminating_.erase(id);
    requeue_causes_.erase(id);
    active_.erase(id);
  }
  ended_.clear();
}

// A job changed twice in one turn (submitted and started, say) is written once: the batch keeps
// its latest version only. Batches are small (one loop turn), so a linear search is enough.
void Controller::Persist(const Job& job) {
  // Indexed, not searched: one turn may write thousands of jobs (an array's tasks).
  const auto [it, added] = batch_job_slot_.try_emplace(job.id, batch_.jobs.size());
  if (added) {
    batch_.jobs.push_back(job);
  } else {
    batch_.jobs[it->second] = job;
  }
}

void Controller::Record(std::optional<JobId> job,
                        std::string kind,
                        std::string actor,
                        std::string message) {
  Event e;
  e.time = clock_.Now();
  e.job = job;
  e.kind = std::move(kind);
  e.actor = std::move(actor);
  e.message = std::move(message);
  batch_.events.push_back(std::move(e));
}

void Controller::Transition(Job& job,
                            JobState to,
                            const std::string& cause,
                            const std::string& actor) {
  GF_CHECK(CanTransition(job.state, to));
  const JobState from = job.state;
  job.state = to;
  job.reason = cause;
  job.pending_reason.reset();  // it described the state the job leaves
  if (IsTerminal(to)) {
    if (!job.end_time) {
      job.end_time = clock_.Now();
    }
    NoteEnd(job);  // it leaves the queue, or its GPUs are free again
    ended_.push_back(job.id);
    counters_.ended[to] += 1;
    counters_.team_gpu_seconds[CountedTeam(job)] += HeldGpuSeconds(job, clock_.Now());
  }
  const bool ended = IsTerminal(to);
  if ((from == JobState::kStarting || from == JobState::kRunning) && to != JobState::kRunning) {
    ReleaseGpus(job);
  }
  if (HoldsGpus(job)) {
    holding_.insert(job.id);
  } else {
    holding_.erase(job.id);
  }
  Persist(job);
  NoteGang(job);
  Record(job.id,
         "state",
         actor,
         std::string(ToString(from)) + " -> " + std::string(ToString(to)) + ": " + cause);
  if (ended) {
    Notify(EndedNotification(job, to, cause, clock_.Now()));
    ResolveDependents(job);  // after this job's own event: the cascade's events follow it
  }
}

// ---- ClusterService ----------------------------------------------------------------------

Result<Job> Controller::Submit(const Caller& caller, JobSpec spec) {
  return Call<Job>([this, caller, spec = std::move(spec)]() mutable {
    return DoSubmit(caller, std::move(spec));
  });
}

Result<std::vector<Job>> Controller::SubmitArray(const Caller& caller,
                                                 JobSpec spec,
                                                 ArrayRequest array) {
  return Call<std::vector<Job>>(
      [this, caller, spec = std::move(spec), array = std::move(array)]() mutable {
        return DoSubmitArray(caller, std::move(spec), array);
      });
}

Result<Job> Controller::DoSubmit(const Caller& caller, JobSpec spec) {
  spec = WithDefaultClass(std::move(spec), options_.policy);
  GF_TRY(CheckSubmission(caller, spec));
  if (spec.request.nodes > 1) {
    return DoSubmitGang(caller, spec);
  }
  return AddJob(caller, std::move(spec));
}

// One command on the state thread: the tasks get consecutive ids and share one commit, so
// an array is queued whole or not at all.
Result<std::vector<Job>> Controller::DoSubmitArray(const Caller& caller,
                                                   JobSpec spec,
                                                   const ArrayRequest& array) {
  GF_TRY(ValidateArrayRequest(array));
  if (spec.request.nodes > 1) {
    return InvalidArgument(
        "nodes: a job array's tasks run on one node each; submit a multi-node job (--nodes) "
        "without --array");
  }
  spec = WithDefaultClass(std::move(spec), options_.policy);
  GF_TRY(CheckSubmission(caller, spec));
  const JobId first(next_job_id_);
  std::vector<Job> tasks;
  tasks.reserve(array.indices.size());
  for (int index : array.indices) {
    JobSpec task = spec;
    task.array = ArrayTask{.array_job = first, .index = index, .max_running = array.max_running};
    tasks.push_back(AddJob(caller, std::move(task)));
  }
  return tasks;
}

Status Controller::CheckSubmission(const Caller& caller, const JobSpec& spec) {
  if (fatal_) {
    return *fatal_;
  }
  GF_TRY(Authorize(caller, Resource::kJob, Action::kSubmit, Ownership::kNone, "submit"));
  if (options_.only_uid && caller.uid != *options_.only_uid) {
    return PermissionDenied("this gpufleet runs as uid " + std::to_string(*options_.only_uid) +
                            " and can only run that user's jobs; run gpufleet up as root to "
                            "serve every user");
  }
  GF_TRY(ValidateSpec(spec));
  GF_TRY(CheckSubmitTeam(caller, spec.team, options_.policy, options_.team_of_user));
  GF_TRY(CheckClassExists(options_.policy, spec.priority));  // "priority: no class 'urgent'; ..."
  if (!spec.idle_reap) {
    GF_TRY(CheckIdleOptOut(options_.policy, spec.priority));  // "--no-reap: class 'normal' ..."
  }
  const ClusterSnapshot nodes =
      NodesSnapshot({}, /*loads=*/false);  // what could ever run, not what is free
  if (!nodes.nodes.empty()) {
    GF_TRY(CheckFeasible(nodes, spec.request));
  }
  return dependencies_.Check(caller, spec.after);
}

Job Controller::AddJob(const Caller& caller, JobSpec spec) {
  Job job;
  job.id = JobId(next_job_id_++);
  job.owner = Owner{caller.uid, caller.gid, caller.user};
  job.spec = std::move(spec);
  if (job.spec.team.empty()) {
    if (auto team = options_.team_of_user.find(caller.user); team != options_.team_of_user.end()) {
      job.spec.team = team->second;
    }
  }
  if (job.spec.name.empty()) {
    job.spec.name = DefaultJobName(job.spec.argv.front());  // escaped: argv[0] is any bytes
  }
  job.state = JobState::kPending;
  job.submit_time = clock_.Now();
  job.reason = "waiting for the scheduler";
  Persist(job);
  std::string limit =
      job.spec.time_limit ? ", time limit " + FormatDuration(*job.spec.time_limit) : "";
  std::string task;
  if (job.spec.array) {
    task = " (array task " + ArrayTaskName(*job.spec.array) + ")";
  } else if (job.spec.gang) {
    task = " (node " + std::to_string(job.spec.gang->rank + 1) + " of " +
           std::to_string(job.spec.gang->size) + " of job " +
           std::to_string(job.spec.gang->gang_job.value()) + ")";
  }
  Record(job.id,
         "submit",
         caller.user,
         "submitted '" + job.spec.name + "'" + task + ": " + Describe(job.spec.request) +
             ", priority " + std::string(ToString(job.spec.priority)) + limit);
  active_.emplace(job.id, job);
  dependencies_.Track(job);
  NoteArrival(job);
  return job;
}

Result<std::vector<Job>> Controller::ListJobs(const Caller& caller, const JobFilter& filter) {
  return reads_.ListJobs(caller, filter);
}

// On the state thread: a job not in active_ was committed by an earlier turn (EraseFinished
// follows the commit), so the store has it.
Result<Job> Controller::FindVisible(const Caller& caller, JobId id, Action action) {
  // Who has no identity is told how to get one, not that the job does not exist.
  GF_TRY(Authorize(
      caller, Resource::kJob, action, Ownership::kOwn, "job " + std::to_string(id.value())));
  if (auto it = active_.find(id); it != active_.end()) {
    if (!Visible(caller, it->second, action)) {
      return NotVisible(id);
    }
    return it->second;
  }
  GF_ASSIGN_OR_RETURN(std::optional<Job> stored, store_->GetJob(id));
  if (!stored || !Visible(caller, *stored, action)) {
    return NotVisible(id);
  }
  return *stored;
}

Result<Job> Controller::GetJob(const Caller& caller, JobId id) {
  return reads_.GetJob(caller, id);
}

void Controller::PublishView() {
  std::vector<const Node*> nodes;
  nodes.reserve(nodes_.Count());
  for (const auto& [name, entry] : nodes_.Entries()) {
    nodes.push_back(&entry.node);
  }
  reads_.Publish(NextView(*reads_.Latest(), active_, nodes, counters_, fatal_));
}

Result<Job> Controller::CancelJob(const Caller& caller, JobId id) {
  return Call<Job>([this, caller, id] { return DoCancel(caller, id); });
}

Result<Job> Controller::DoCancel(const Caller& caller, JobId id) {
  if (fatal_) {
    return *fatal_;
  }
  GF_ASSIGN_OR_RETURN(Job found, FindVisible(caller, id, Action::kCancel));
  auto it = active_.find(id);
  if (it == active_.end()) {
    return FailedPrecondition("job " + std::to_string(id.value()) + " already ended (" +
                              std::string(ToString(found.state)) + ")");
  }
  Job& job = it->second;
  const std::string cause = "cancelled by " + caller.user;
  auto stopping = terminating_.find(id);
  if (job.state == JobState::kPending) {
    Transition(job, JobState::kCancelled, cause, caller.user);
  } else if (stopping == terminating_.end()) {
    Record(id, "cancel", caller.user, cause + ": stopping the job's processes");
    RequestKill(job, JobState::kCancelled, cause, kSigTerm);
  } else if (Requeues(stopping->second)) {
    // Already stopping to be requeued: it ends cancelled instead of going back to the queue.
    Record(id,
           "cancel",
           caller.user,
           cause + " while it was being stopped (" + stopping->second.requeue_after + ")");
    stopping->second = StopIntent{.final_state = JobState::kCancelled, .cause = cause};
  }
  return job;
}

Result<std::vector<Job>> Controller::CancelArray(const Caller& caller, JobId array_job) {
  return Call<std::vector<Job>>(
      [this, caller, array_job] { return DoCancelArray(caller, array_job); });
}

Result<std::vector<Job>> Controller::DoCancelArray(const Caller& caller, JobId array_job) {
  GF_ASSIGN_OR_RETURN(Job first, FindVisible(caller, array_job, Action::kCancel));
  const std::string id = std::to_string(array_job.value());
  if (!first.spec.array || first.spec.array->array_job != array_job) {
    return InvalidArgument("array: job " + id + " is not a job array" +
                           (first.spec.array
                                ? "; it is task " + ArrayTaskName(*first.spec.array) +
                                      " (cancel the whole array with gpufleet cancel --array " +
                                      std::to_string(first.spec.array->array_job.value()) + ")"
                                : "; cancel it with gpufleet cancel " + id));
  }
  std::vector<JobId> tasks;
  for (const auto& [task_id, job] : active_) {
    if (job.spec.array && job.spec.array->array_job == array_job && !IsTerminal(job.state)) {
      tasks.push_back(task_id);
    }
  }
  if (tasks.empty()) {
    return FailedPrecondition("array " + id + ": every task already ended");
  }
  std::vector<Job> out;
  for (JobId task : tasks) {
    GF_ASSIGN_OR_RETURN(Job job, DoCancel(caller, task));
    out.push_back(std::move(job));
  }
  return out;
}

// ---- dependencies (dependency_book.h) -----------------------------------------------------

// After a restart: the loaded pending jobs wait again for what has not ended; one whose :ok
// dependency ended otherwise while gpufleet was down is cancelled now, before the next job is
// judged (it may wait for this one).
Status Controller::RestoreDependencies() {
  for (auto& [id, job] : active_) {
    if (job.state != JobState::kPending || job.spec.after.empty()) {
      continue;
    }
    GF_ASSIGN_OR_RETURN(const std::optional<std::string> broken, dependencies_.Restore(job));
    if (broken) {
      Transition(job, JobState::kCancelled, *broken, "controller");
    }
  }
  return OkStatus();
}

// A job's end resolves the dependencies on it by its id; an array task's end, once it was the
// last, those on the whole array. Each answer is applied before the next is asked for: the
// cancelled jobs' own ends resolve what waits for them first.
void Controller::ResolveDependents(const Job& job) {
  CancelBroken(dependencies_.OnEnded(job));
  if (!job.spec.array.has_value()) {
    return;
  }
  Result<DependencyBook::Resolution> array = dependencies_.OnArrayTaskEnded(job);
  if (!array.ok()) {
    spdlog::error("controller: dependencies on array {}: {}",
                  job.spec.array->array_job.value(),
                  array.error().message);
    return;
  }
  CancelBroken(*array);
}

void Controller::CancelBroken(const DependencyBook::Resolution& resolution) {
  for (const DependencyGraph::Broken& broken : resolution.cancel) {
    auto it = active_.find(broken.job);
    if (it != active_.end() && it->second.state == JobState::kPending) {
      Transition(it->second, JobState::kCancelled, broken.cause, "scheduler");
    }
  }
  if (resolution.changed) {
    passes_.NeedFull();  // a job that waited is now a candidate (or was cancelled)
  }
}

Result<Explanation> Controller::ExplainJob(const Caller& caller, JobId id) {
  return Call<Explanation>([this, caller, id] { return DoExplain(caller, id); });
}

// The snapshot and queue a pass would see now, so the explanation is the next pass's decision.
Result<Explanation> Controller::DoExplain(const Caller& caller, JobId id) {
  GF_ASSIGN_OR_RETURN(Job job, FindVisible(caller, id));
  const std::string name = "job " + std::to_string(id.value());
  if (IsTerminal(job.state)) {
    return FailedPrecondition(name + " has ended (" + std::string(ToString(job.state)) +
                              "): only pending and running jobs are explained; see gpufleet "
                              "show " +
                              std::to_string(id.value()));
  }
  const std::map<JobId, PendingReason> held = HeldBack(active_, dependencies_.Graph());
  if (auto h = held.find(id); h != held.end()) {
    return FailedPrecondition(name + " is not queued yet: " + h->second.text);
  }
  Result<Explanation> explanation =
      Explain(Snapshot(), PendingQueue(held), options_.policy, clock_.Now(), id);
  if (!explanation.ok() && explanation.error().code == ErrorCode::kNotFound) {
    // Neither queued nor holding GPUs: between states (e.g. preempted, not yet requeued).
    return FailedPrecondition(name + " is " + std::string(ToString(job.state)) +
                              ": nothing to explain until it is queued or running again");
  }
  if (explanation.ok()) {
    // The jobs it names are queued or running, so active; one that is not is hidden.
    HideOtherUsersJobs(*explanation, [&](JobId other) {
      const auto it = active_.find(other);
      return it != active_.end() && Visible(caller, it->second);
    });
  }
  return explanation;
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

Result<NodeAgent*> Controller::LogSource(const Caller& caller, const LogRequest& request) {
  GF_ASSIGN_OR_RETURN(const Job job, FindVisible(caller, request.job));
  const std::string name = "job " + std::to_string(request.job.value());
  const std::string state(ToString(job.state));
  if (!job.allocation) {
    if (auto r = requeue_causes_.find(job.id); r != requeue_causes_.end()) {
      return FailedPrecondition(
          name + " is " + state + ", " + r->second + ", and has not started again: its new " +
          "run's output shows here once it starts; the earlier run's output stays on the node " +
          "it ran on, under the agent's data dir (jobs/" + std::to_string(job.id.value()) + ")");
    }
    return FailedPrecondition(name + " is " + state + " and has not started: it has no output" +
                              (IsTerminal(job.state) ? "" : " yet (gpufleet logs -f waits)"));
  }
  const NodeId& node = job.allocation->node;
  const NodeEntry* entry = nodes_.Find(node);
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
                       agent->LogPath(job.id, request.stream == LogStream::kStderr) +
                       "; it can be read here again once the node's agent is back");
  }
  return agent;
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
  return reads_.Stats(NotificationCounts());
}

Result<Report> Controller::MonthlyReport(const Caller& caller, const ReportRequest& request) {
  return reads_.MonthlyReport(caller, request);
}

// ---- AgentReports ------------------------------------------------------------------------

void Controller::OnAgentHello(AgentHello hello) {
  // Before any sample of this agent is ingested (samples bypass the state thread).
  telemetry_->SetInventory(hello.node);
  Post([this, hello = std::move(hello)]() mutable { ApplyHello(std::move(hello)); });
}

void Controller::OnJobStarted(JobId id, std::int64_t pid, Time start_time) {
  Post([this, id, pid, start_time] {
    auto it = active_.find(id);
    if (it == active_.end() || it->second.state != JobState::kStarting) {
      return;
    }
    Job& job = it->second;
    job.pid = pid;
    job.start_time = start_time;
    Transition(job,
               JobState::kRunning,
               "running on " + job.allocation->node.value(),
               "agent:" + job.allocation->node.value());
    // Its start time is known only now: waiting jobs may preempt it once it is old enough.
    if (options_.policy.preemption.enabled) {
      const Time old_enough = start_time + options_.policy.preemption.min_run_time;
      if (old_enough > clock_.Now()) {
        passes_.ArmAt(old_enough);
      }
    }
  });
}

void Controller::OnJobExited(JobExitReport report) {
  Post([this, report = std::move(report)] {
    auto it = active_.find(report.job);
    const bool runs_there =
        it != active_.end() && HoldsGpus(it->second) &&
        (report.node.value().empty() || it->second.allocation->node == report.node);
    if (runs_there) {
      FinishJob(it->second, report);
      return;
    }
    // Already recorded (re-reported after a restart), or the exit of an orphan copy on a node
    // the job no longer runs on: nothing to do but let the reporting agent forget it.
    if (it != active_.end() && report.node.value().empty()) {
      return;  // the job's own agent; its exit will be acknowledged when the job ends
    }
    for (const auto& [name, entry] : nodes_.Entries()) {
      if (entry.agent != nullptr && (report.node.value().empty() || name == report.node)) {
        entry.agent->AcknowledgeExit(report.job);
      }
    }
  });
}

void Controller::OnAgentHeartbeat(const NodeId& node) {
  Post([this, node] { nodes_.Heard(node, std::chrono::steady_clock::now()); });
}

// A remote node whose agent has not reported for node_timeout is down (NodeRegistry::
// CheckLiveness): its jobs' processes may be gone with it, so they are requeued (NODE_FAIL →
// PENDING) and its GPUs take no work until its agent says hello again.
void Controller::CheckNodeLiveness() {
  for (NodeRegistry::NodeDown& down :
       nodes_.CheckLiveness(options_.node_timeout, std::chrono::steady_clock::now())) {
    const NodeId name = down.node.name;
    const std::string& cause = down.cause;
    batch_.nodes.push_back(std::move(down.node));
    if (down.agent != nullptr) {
      down.agent->EndSession();  // a partitioned agent's next report gets "say hello again"
    }
    Record(std::nullopt, "node", "controller", cause);
    spdlog::warn("controller: {}", cause);
    for (auto& [id, job] : active_) {
      if (HoldsGpus(job) && job.allocation->node == name) {
        LoseJob(job, cause);
      }
    }
    passes_.NeedFull();
  }
}

void Controller::OnSamples(NodeId node, std::vector<GpuSample> samples) {
  // Telemetry is thread-safe: samples are taken here, on the agent's thread, and only what
  // the state must record (health changes, conditions, finished minutes) becomes a command.
  // Only a sample whose MIG devices differ from the GPU's previous sample (a layout applied, MIG
  // turned on) or that carries a layout's refusal goes to the state thread.
  std::vector<GpuSample> mig;
  const bool any_mig =
      std::any_of(samples.begin(), samples.end(), [](const GpuSample& s) { return s.mig_enabled; });
  if (any_mig || mig_seen_any_.load(std::memory_order_relaxed)) {
    std::lock_guard lock(mig_seen_mu_);
    for (const GpuSample& sample : samples) {
      if (!sample.mig_enabled && !mig_seen_.contains(sample.uuid)) {
        continue;  // the usual GPU: never in MIG mode
      }
      mig_seen_any_.store(true, std::memory_order_relaxed);
      std::vector<GpuUuid> devices;
      for (const MigSample& device : sample.mig) {
        devices.push_back(device.instance.uuid);
      }
      auto& seen = mig_seen_[sample.uuid];
      if (seen != std::make_pair(sample.mig_enabled, devices) || !sample.mig_layout_error.empty()) {
        seen = {sample.mig_enabled, std::move(devices)};
        mig.push_back(sample);
      }
    }
  }
  IngestResult result = telemetry_->Ingest(node, std::move(samples));
  if (result.health.empty() && result.conditions.empty() && result.minutes.empty() && mig.empty()) {
    return;
  }
  Post([this, node = std::move(node), result = std::move(result), mig = std::move(mig)]() mutable {
    ApplyIngest(node, std::move(result));
    if (!mig.empty()) {
      ApplyMigSamples(node, mig);
    }
  });
}

void Controller::ApplyIngest(const NodeId& node, IngestResult result) {
  const std::string actor = "agent:" + node.value();
  Node* known = nodes_.EditNode(node);
  for (const HealthChange& change : result.health) {
    if (known != nullptr && AlreadyHolds(*known, change)) {
      continue;  // the controller made this change itself (HoldForLeftovers)
    }
    if (known != nullptr) {
      for (Gpu& gpu : known->gpus) {
        if (gpu.uuid == change.uuid) {
          gpu.health = change.to;
          gpu.health_cause = change.cause;
        }
      }
      batch_.nodes.push_back(*known);
    }
    std::string message = "GPU " + std::to_string(change.index) + " (" + change.uuid.value() +
                          ") on " + node.value() + ": " + std::string(ToString(change.from)) +
                          " -> " + std::string(ToString(change.to));
    if (!change.cause.empty()) {
      message += ": " + change.cause;
    }
    Record(std::nullopt, "gpu_health", actor, message);
    passes_.NeedFull();  // a failed GPU takes no work; a recovered one does again
    if (change.to == GpuHealth::kFailed && change.from != GpuHealth::kFailed) {
      FailOverGpu(node, change);
    }
  }
  for (const ConditionChange& change : result.conditions) {
    // Only a job this controller still knows may be named: events reference their job.
    std::optional<JobId> job =
        change.job && active_.contains(*change.job) ? change.job : std::nullopt;
    Record(job, change.active ? "gpu_condition" : "gpu_condition_cleared", actor, change.message);
    if (job && change.kind == kGpuMemoryOverLimit) {
      if (change.active) {
        OnMemoryBreach(active_.at(*job), change);
      } else {
        breaches_.OnCleared(*job);
      }
    }
  }
  for (GpuMinute& minute : result.minutes) {
    batch_.gpu_minutes.push_back(std::move(minute));
  }
}

void Controller::AssignGpus(const Job& job) {
  if (!job.allocation) {
    return;
  }
  // The idle reaper's threshold travels with the assignment: Telemetry judges each sample.
  const std::optional<IdleReaping> rule = IdleReapingFor(options_.policy, job.spec);
  const int idle_util_below = rule ? rule->util_below_pct : kDefaultIdleUtilBelowPct;
  for (const GpuUuid& uuid : job.allocation->gpus) {
    // The team as the store's usage records and quotas key it ("" = no team), so that GPU
    // minutes and runs add up per team in reports; /metrics labels "" as "default".
    telemetry_->Assign(uuid,
                       GpuAssignment{.job = job.id,
                                     .user = job.owner.user,
                                     .team = job.spec.team,
                                     .idle_util_below_pct = idle_util_below,
                                     .since = clock_.Now(),
                                     .share_milli = job.allocation->gpu_milli,
                                     .memory_limit_mib = job.allocation->gpu_memory_mib});
  }
}

void Controller::ReleaseGpus(Job& job) {
  const std::optional<JobUsage> usage = telemetry_->Usage(job.id);
  if (usage) {
    // A requeued job already carries the usage of its earlier runs.
    job.usage = job.usage ? CombineUsage(*job.usage, *usage) : *usage;
  }
  if (job.allocation && job.start_time) {  // else it never started: no GPU-time to account
    batch_.usage.push_back(
        usage_.RunEnded(job, usage ? usage->energy_mj : 0, GpuModels(job), clock_.Now()));
  }
  if (job.allocation) {
    for (const GpuUuid& uuid : job.allocation->gpus) {
      telemetry_->Unassign(uuid, job.id);
    }
  }
  telemetry_->ForgetJob(job.id);
}

void Controller::FinishJob(Job& job, const JobExitReport& report) {
  JobState final_state = report.exit_code == 0 ? JobState::kCompleted : JobState::kFailed;
  std::string cause = report.cause;
  std::optional<StopIntent> requested;  // why the controller stopped it, when it did
  if (auto t = terminating_.find(job.id); t != terminating_.end()) {
    requested = t->second;
    final_state = t->second.final_state;
    // The agent's account of the kill starts with the cause it was given: say it once.
    std::string how = report.cause;
    if (const std::string said = t->second.cause + ": "; how.starts_with(said)) {
      how.erase(0, said.size());
    }
    cause = t->second.cause + " (" + how + ")";
  }
  job.exit_code = report.exit_code;
  job.end_time = report.end_time;
  const std::string actor =
      job.allocation ? "agent:" + job.allocation->node.value() : std::string("system");
  NodeAgent* agent = nodes_.AgentFor(job);  // before a requeue clears the allocation
  if (!report.leftover_pids.empty()) {
    HoldForLeftovers(job, report);
  }
  Transition(job, final_state, cause, actor);
  if (requested && Requeues(*requested)) {
    // Preempted or reaped: CANCELLED if it must not run twice; its GPU failed: FAILED.
    RequeueOrEnd(job,
                 final_state == JobState::kPreempted ? JobState::kCancelled : JobState::kFailed,
                 requested->requeue_after,
                 requested->cause);
  }
  if (agent != nullptr) {
    JobId id = job.id;
    after_commit_.emplace_back([agent, id] { agent->AcknowledgeExit(id); });
  }
}

void Controller::RequestKill(Job& job,
                             JobState final_state,
                             const std::string& cause,
                             int first_signal) {
  terminating_[job.id] = StopIntent{.final_state = final_state, .cause = cause};
  NoteGang(job);
  NodeAgent* agent = nodes_.AgentFor(job);
  if (agent == nullptr) {
    return;
  }
  JobId id = job.id;
  auto grace = options_.kill_grace;
  after_commit_.emplace_back(
      [agent, id, grace, cause, first_signal] { agent->Kill(id, grace, cause, first_signal); });
}

void Controller::Preempt(Job& victim, const PreemptDecision& decision) {
  Record(victim.id,
         "preempt",
         "scheduler",
         decision.cause + ": sending SIG" + CheckpointSignalName(victim.spec.checkpoint_signal) +
             ", " + AfterStopText(victim, JobState::kCancelled));
  victim.reason = decision.cause;  // what its owner sees while it stops
  Notify(PreemptedNotification(victim, decision.cause, clock_.Now()));
  StopToRequeue(
      victim, JobState::kPreempted, "preemption", decision.cause, victim.spec.checkpoint_signal);
}

std::string Controller::AfterStopText(const Job& job, JobState end_state) const {
  return "SIGKILL after " + FormatDuration(options_.kill_grace) +
         (job.spec.requeue
              ? "; the job goes back to the queue at its place"
              : "; the job then ends " + std::string(ToString(end_state)) + " (--no-requeue)");
}

void Controller::StopToRequeue(Job& job,
                               JobState state,
                               const std::string& after,
                               const std::string& cause,
                               int first_signal) {
  RequestKill(job, state, cause, first_signal);
  terminating_[job.id].requeue_after = after;
}

// PREEMPTED or NODE_FAIL → PENDING (`after` says which). The submit time is kept, so the job keeps
// its place in the order; the run's GPU-time stays in the team's counters and its usage in
// job.usage (ReleaseGpus).
void Controller::Requeue(Job& job, const std::string& after, const std::string& cause) {
  counters_.team_gpu_seconds[CountedTeam(job)] += HeldGpuSeconds(job, clock_.Now());
  terminating_.erase(job.id);
  requeue_causes_[job.id] = "requeued after " + after + " (" + cause + ")";
  job.allocation.reset();
  job.pid.reset();
  job.start_time.reset();
  job.end_time.reset();
  job.exit_code.reset();
  job.preemptible = false;
  Transition(job, JobState::kPending, "requeued after " + after + ": " + cause, "scheduler");
  passes_.NeedFull();
}

// A job that must not run twice (`--no-requeue`: it sends mail, appends to a database) cannot
// be put back in the queue without the risk of a second, partial run: it ends in `end_state`
// instead, as Slurm cancels non-requeueable victims (PreemptMode=CANCEL) and fails those of a
// failed node. Its dependents and array see the end as any other (Transition).
void Controller::RequeueOrEnd(Job& job,
                              JobState end_state,
                              const std::string& after,
                              const std::string& cause) {
  if (job.spec.requeue) {
    Requeue(job, after, cause);
    return;
  }
  Transition(job, end_state, cause + "; not requeued (--no-requeue)", "controller");
}

// RUNNING/STARTING → NODE_FAIL → PENDING: the job's node failed under it (its agent went
// silent, or came back without it). It goes back to the queue at its place, as a preempted job
// does (or ends FAILED if it must not run twice); a copy still running on a node that comes
// back is killed at that node's hello.
void Controller::FailJobWithNode(Job& job, const std::string& cause) {
  const std::string actor =
      job.allocation ? "node:" + job.allocation->node.value() : std::string("system");
  Transition(job, JobState::kNodeFail, cause, actor);
  RequeueOrEnd(job, JobState::kFailed, "node failure", cause);
}

// A job lost with its node: a cancel or time limit under way ends as it was meant to (the kill
// cannot be confirmed, but the job is not to run again); otherwise NODE_FAIL and requeue.
void Controller::LoseJob(Job& job, const std::string& cause) {
  if (auto t = terminating_.find(job.id); t != terminating_.end() && !Requeues(t->second)) {
    Transition(job, t->second.final_state, t->second.cause + " (then " + cause + ")", "controller");
    return;
  }
  FailJobWithNode(job, cause);
}

void Controller::ApplyHello(AgentHello hello) {
  const NodeId name = hello.node.name;
  // A node that was down is up again; an admin's drain outlives the agent's reconnects.
  const NodeRegistry::HelloMerged merged =
      nodes_.MergeHello(std::move(hello.node), clock_.Now(), std::chrono::steady_clock::now());
  const NodeEntry& entry = nodes_.At(name);
  // OnAgentHello gave telemetry the agent's view; the modes are the controller's.
  telemetry_->SetInventory(entry.node);
  SetNodeState(name);  // draining/drained again if an admin's drain holds
  batch_.nodes.push_back(entry.node);
  if (merged.changed) {
    Record(std::nullopt,
           "node",
           "agent:" + name.value(),
           "node " + name.value() + (merged.was_down ? " back up" : " up") + " with " +
               std::to_string(entry.node.gpus.size()) + " GPUs (" + entry.node.gpu_backend + ")");
  }
  std::set<JobId> running(hello.running.begin(), hello.running.end());
  std::map<JobId, JobExitReport> ended;
  for (auto& e : hello.ended) {
    ended.emplace(e.job, e);
  }
  for (auto& [id, job] : active_) {
    if (!job.allocation || job.allocation->node != name ||
        (job.state != JobState::kStarting && job.state != JobState::kRunning)) {
      continue;
    }
    if (running.contains(id)) {
      if (job.state == JobState::kStarting) {
        job.start_time = clock_.Now();
        Transition(job, JobState::kRunning, "re-attached after restart", "agent:" + name.value());
      } else {
        Record(id, "reattach", "agent:" + name.value(), "re-attached after restart");
      }
    } else if (auto e = ended.find(id); e != ended.end()) {
      FinishJob(job, e->second);
    } else if (job.state == JobState::kStarting) {
      // Its launch never reached the agent (a lost stream, or a crash before the launch):
      // send it again. A launch is a no-op for a job the agent already runs.
      after_commit_.emplace_back(
          [agent = entry.agent, launch = LaunchOf(job)] { agent->Launch(launch); });
    } else {
      LoseJob(job, "its supervisor was not found on " + name.value() + " when its agent came back");
    }
  }
  // Kills still wanted (a cancel, a time limit, a preemption) whose command may have been lost
  // with the agent's old connection. A kill of a job the agent no longer has is a no-op.
  for (const auto& [id, termination] : terminating_) {
    const Job& job = active_.at(id);
    if (running.contains(id) && job.allocation && job.allocation->node == name) {
      after_commit_.emplace_back([agent = entry.agent,
                                  id = id,
                                  grace = options_.kill_grace,
                                  cause = termination.cause,
                                  signal = kSigTerm] { agent->Kill(id, grace, cause, signal); });
    }
  }
  // Processes the agent holds for jobs that do not run here as far as this controller knows:
  // unknown, pending again (requeued after the node failed), or running elsewhere since. They
  // must not run twice.
  for (JobId id : running) {
    auto it = active_.find(id);
    const bool ours =
        it != active_.end() && HoldsGpus(it->second) && it->second.allocation->node == name;
    if (!ours) {
      NodeAgent* agent = entry.agent;
      after_commit_.emplace_back([agent, id, grace = options_.kill_grace] {
        agent->Kill(id,
                    grace,
                    "orphan: the controller requeued or ended this job while its node was away",
                    kSigTerm);
      });
    }
  }
  for (auto& [id, e] : ended) {
    if (!active_.contains(id) && entry.agent != nullptr) {
      after_commit_.emplace_back([agent = entry.agent, id = id] { agent->AcknowledgeExit(id); });
    }
  }
  passes_.NeedFull();
}

void Controller::EnforceTimeLimits() {
  const Time now = clock_.Now();
  // A copy: a kill may end a job (and change holding_) at once.
  for (const JobId id : std::vector<JobId>(holding_.begin(), holding_.end())) {
    Job& job = active_.at(id);
    if (job.state != JobState::kRunning || !job.start_time || terminating_.contains(id)) {
      continue;
    }
    const std::optional<std::chrono::seconds> limit = EffectiveLimit(job);
    if (limit && now >= *job.start_time + *limit) {
      const std::string cause = "time limit " + FormatDuration(*limit) + " reached";
      Record(id, "timeout", "controller", cause + ": stopping the job's processes");
      RequestKill(job, JobState::kTimeout, cause, kSigTerm);
    }
  }
}

std::optional<std::chrono::seconds> Controller::EffectiveLimit(const Job& job) const {
  return EffectiveTimeLimit(ClassPolicyFor(options_.policy, job.spec.priority),
                            job.spec.time_limit);
}

// ---- accounting (usage_book.h): its inputs, quota; approve, checkpoint ---------------------

// The distinct models of the job's GPUs, sorted (as its node reports them).
std::vector<std::string> Controller::GpuModels(const Job& job) const {
  const NodeEntry* entry = nodes_.Find(job.allocation->node);
  return GpuModelsOn(entry != nullptr ? &entry->node : nullptr, job);
}

std::vector<RunningSpan> Controller::RunningSpans(bool for_ledgers) const {
  const bool models = !for_ledgers || usage_.WeighsModels();
  std::vector<RunningSpan> out;
  out.reserve(holding_.size());
  for (const JobId id : holding_) {
    const Job& job = active_.at(id);
    const std::optional<JobUsage> usage = for_ledgers ? std::nullopt : telemetry_->Usage(job.id);
    out.push_back(RunningSpan{.team = job.spec.team,
                              .user = job.owner.user,
                              .gpus = HeldGpus(*job.allocation),
                              .start = job.start_time.value_or(clock_.Now()),
                              .gpu_models = models ? GpuModels(job) : std::vector<std::string>{},
                              .energy_mj = usage ? usage->energy_mj : 0,
                              .held_milli = HeldMilli(*job.allocation),
                              .borrowed = job.preemptible});
  }
  return out;
}

Result<QuotaReport> Controller::Quota(const Caller& caller) {
  return Call<QuotaReport>([this, caller]() -> Result<QuotaReport> {
    GF_TRY(Authorize(caller, Resource::kTeam, Action::kRead, Ownership::kOwn, "quota"));
    std::set<std::string> job_teams;  // the teams of the caller's jobs, pending ones too
    for (const auto& [id, job] : active_) {
      if (job.owner.uid == caller.uid) {
        job_teams.insert(job.spec.team);
      }
    }
    return usage_.Quota(caller, job_teams, RunningSpans(), clock_.Now());
  });
}

Result<Job> Controller::ApproveJob(const Caller& caller, JobId id) {
  return Call<Job>([this, caller, id] { return DoApprove(caller, id); });
}

Result<Job> Controller::DoApprove(const Caller& caller, JobId id) {
  if (fatal_) {
    return *fatal_;
  }
  const std::string name = std::to_string(id.value());
  if (Status allowed =
          Authorize(caller, Resource::kJob, Action::kApprove, Ownership::kNone, "quota approve");
      !allowed.ok()) {
    return PermissionDenied(allowed.error().message +
                            "; ask an administrator to run 'gpufleet "
                            "quota approve " +
                            name + "'");
  }
  GF_ASSIGN_OR_RETURN(Job found, FindVisible(caller, id));
  if (found.state != JobState::kPending) {
    return FailedPrecondition("quota approve: job " + name + " is " +
                              std::string(ToString(found.state)) +
                              ", not PENDING; only a waiting job can be approved");
  }
  Job& job = active_.at(id);
  if (!job.budget_approved) {
    job.budget_approved = true;
    Persist(job);
    Record(id,
           "approve",
           caller.user,
           "approved by " + caller.user + " to run past team " +
               (job.spec.team.empty() ? std::string("(none)") : job.spec.team) +
               "'s GPU-hour budget");
    passes_.NeedFull();
  }
  return job;
}

Result<Job> Controller::CheckpointJob(const Caller& caller, JobId id) {
  return Call<Job>([this, caller, id] { return DoCheckpoint(caller, id); });
}

Result<Job> Controller::DoCheckpoint(const Caller& caller, JobId id) {
  if (fatal_) {
    return *fatal_;
  }
  GF_ASSIGN_OR_RETURN(Job found, FindVisible(caller, id, Action::kCheckpoint));
  // STARTING too: the job's process may run (and report) before its start is recorded.
  if (!HoldsGpus(found)) {
    return FailedPrecondition("checkpoint: job " + std::to_string(id.value()) + " is " +
                              std::string(ToString(found.state)) +
                              "; only a running job can report a checkpoint");
  }
  Job& job = active_.at(id);
  job.last_checkpoint = clock_.Now();
  Persist(job);
  Record(id,
         "checkpoint",
         caller.user,
         "checkpoint saved: a preemption now loses only the work done since");
  passes_.NeedFull();  // a waiting job may now pick other victims
  return job;
}

}  // namespace gf

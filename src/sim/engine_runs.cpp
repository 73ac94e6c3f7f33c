// The engine's runs (engine_internal.h): a job as the book holds it, a start, a run's events,
// the book's kill orders and gang rules on the virtual clock, what the book's listener does (the
// virtual GPUs given back, a job's end, a requeue), node failures and repairs, what a job holds,
// and the inflation figures. Split from engine.cpp by topic.
#include <algorithm>
#include <set>

#include "core/check.h"
#include "lifecycle/admission.h"
#include "lifecycle/job_views.h"
#include "sim/engine_internal.h"

namespace gf::sim::engine_detail {

// Scheduler job i arrives: its job, as the controller's book would hold it once submitted.
Job Engine::JobOf(std::size_t i, const std::optional<Prediction>& prediction) const {
  const Live& live = live_[i];
  const QueuedJob& q = live.queued;
  Job job;
  job.id = q.id;
  job.owner.user = q.user;
  job.spec.request = q.request;
  job.spec.priority = q.priority;
  job.spec.team = q.team;
  // Nothing ends under no_departures: no limit either.
  job.spec.time_limit = options_.no_departures ? std::nullopt : trace_[live.job].time_limit;
  if (live.members > 1) {
    job.spec.gang = GangMember{.gang_job = live_[live.first].queued.id,
                               .rank = static_cast<int>(i - live.first),
                               .size = live.members};
  }
  job.submit_time = q.submit_time;
  if (prediction) {
    job.prediction = JobPrediction{
        .expected = prediction->expected, .high = prediction->high, .basis = {}, .explanation = {}};
  }
  return job;
}

// What the queue holds for job i: the controller's view of a pending job (lifecycle/
// job_views.h), with the oracle figures only the baseline orders read.
QueuedJob Engine::QueuedOf(std::size_t i) const {
  const Live& live = live_[i];
  QueuedJob queued = AsQueued(book_, book_.At(live.queued.id));
  queued.expected_duration = live.remaining;
  return queued;
}

// Job i was started by a pass (STARTING in the book, JobBook::Start): its processes run from the
// end of the launch lag (RUNNING from then, as its agent would report), on the GPUs the pass
// gave it. Its run ends when its work is done, or is stopped when it reaches its time limit.
void Engine::Start(std::size_t i, Millis now) {
  Live& live = live_[i];
  Job& job = BookJob(i);
  JobOutcome& outcome = result_.jobs[live.job];
  book_.Started(job, /*pid=*/0, At(now + options_.launch_lag), "agent");
  live.running = true;
  live.run_start = now;
  live.run += 1;
  live.running_at = cluster_.running.size();
  const std::optional<std::chrono::seconds> limit = book_.EffectiveLimit(job);
  const bool timeout = limit && Millis(*limit) < live.remaining;
  RunningJob running = AsRunning(book_, job, At(now));
  // the oracle figures the baseline orders read
  running.expected_duration = timeout ? Millis(*limit) : live.remaining;
  cluster_.running.push_back(std::move(running));
  const Allocation& allocation = *job.allocation;
  if (!allocation.gpus.empty()) {  // a CPU-only job holds no GPU, maybe no node
    NodeSnapshot& node = cluster_.nodes[node_index_.at(allocation.node.value())];
    node.allocated.insert(allocation.gpus.begin(), allocation.gpus.end());
    for (const GpuUuid& gpu : allocation.gpus) {
      rooms_[gpu_index_.at(gpu.value())].free_milli -= allocation.gpu_milli;
    }
    allocated_milli_ += HeldMilli(allocation);
  }
  Hold(i, +1);
  if (!outcome.first_start) {
    outcome.first_start = now;
  }
  if (options_.no_departures) {
    return;  // it never ends
  }
  const Millis ran_from = now + options_.launch_lag;
  events_.push(
      Event{.at = ran_from + live.remaining, .kind = EventKind::kEnd, .job = i, .run = live.run});
  if (timeout) {
    events_.push(Event{
        .at = ran_from + Millis(*limit), .kind = EventKind::kDeadline, .job = i, .run = live.run});
  }
}

// The run of job i gives its virtual GPUs back (it leaves STARTING or RUNNING): its GPU time and
// run are counted.
void Engine::StopRun(std::size_t i, Millis now) {
  Live& live = live_[i];
  GF_CHECK(live.running);
  const RunningJob& running = cluster_.running[live.running_at];
  if (!running.allocation.gpus.empty()) {
    NodeSnapshot& node = cluster_.nodes[node_index_.at(running.allocation.node.value())];
    for (const GpuUuid& gpu : running.allocation.gpus) {
      GpuRoom& room = rooms_[gpu_index_.at(gpu.value())];
      room.free_milli += running.allocation.gpu_milli;
      if (room.free_milli >= kWholeGpuMilli) {  // a shared GPU: its last share left
        node.allocated.erase(gpu);
      }
    }
    allocated_milli_ -= HeldMilli(running.allocation);
  }
  JobOutcome& outcome = result_.jobs[live.job];
  outcome.gpu_seconds += Seconds(now - live.run_start) *
                         static_cast<double>(RequestedMilli(live.queued.request)) / kWholeGpuMilli;
  if (i == live.first) {  // a gang's members run together: one run for the trace job
    outcome.runs.emplace_back(live.run_start, now);
  }
  Hold(i, -1);
  // Swap-remove: the running list's order means nothing to Decide.
  if (live.running_at + 1 != cluster_.running.size()) {
    cluster_.running[live.running_at] = std::move(cluster_.running.back());
    live_[IndexOf(cluster_.running[live.running_at].id)].running_at = live.running_at;
  }
  cluster_.running.pop_back();
  live.running = false;
}

// Whether `event` is about the run job i has now (a run that ended or was stopped since makes
// its later events stale).
bool Engine::CurrentRun(const Event& event) const {
  const Live& live = live_[event.job];
  return live.running && live.run == event.run;
}

// An event of a run: its work is done (exit 0), its time limit is reached (the book stops it as
// the controller's EnforceTimeLimits does: SIGTERM, SIGKILL when the kill grace ends, TIMEOUT
// whichever way its processes then exit), or a stop's kill grace is over (SIGKILL).
void Engine::OnEvent(const Event& event) {
  if (!CurrentRun(event)) {
    return;
  }
  switch (event.kind) {
    case EventKind::kEnd:
      Exit(event.job, 0, "exited with status 0");
      break;
    case EventKind::kDeadline:
      book_.EnforceTimeLimit(BookJob(event.job));
      break;
    case EventKind::kStop:
      Exit(event.job, kKilledExitCode, "killed by signal 9");
      break;
    default:
      break;
  }
}

// Job i's processes exited: the book judges the run's end by its stop book (completed, timed
// out, requeued with its gang after a preemption).
void Engine::Exit(std::size_t i, int exit_code, const std::string& how) {
  book_.Exited(BookJob(i), exit_code, how, At(now_), "agent");
}

// A kill order of the book (a preemption, a time limit, a gang's requeue): the run holds its GPUs
// as `stopping` (Decide counts them as about to be free, as the controller's snapshot does) until
// the kill grace ends, or its work is done first; with no grace it is killed at once.
void Engine::Kill(const KillOrder& kill) {
  const std::size_t i = IndexOf(kill.job);
  Live& live = live_[i];
  if (!live.running) {
    return;  // its run ended before the order was sent
  }
  if (options_.kill_grace.count() <= 0) {
    Exit(i, kKilledExitCode, "killed by signal 9");
    return;
  }
  cluster_.running[live.running_at].stopping = true;
  events_.push(
      Event{.at = now_ + options_.kill_grace, .kind = EventKind::kStop, .job = i, .run = live.run});
}

// The book's gang rules (lifecycle/gang_rules.h, JobBook::SettleGangs) and the kill orders they
// and the instant's stops gave, until none follows: a requeued member's gang is stopped to be
// requeued with it, at once without a kill grace.
void Engine::SettleGangs() {
  for (;;) {
    book_.SettleGangs();
    const std::vector<KillOrder> kills = book_.TakeKills();
    if (kills.empty()) {
      return;
    }
    for (const KillOrder& kill : kills) {
      Kill(kill);
    }
  }
}

// JobBookListener: the run's GPUs are free again (it leaves STARTING or RUNNING).
void Engine::OnReleasing(Job& job) {
  StopRun(IndexOf(job.id), now_);
}

// JobBookListener: the job ended. COMPLETED or TIMEOUT after a run (the simulator fails no run
// and cancels none that runs), or CANCELLED while held for a dependency that broke.
void Engine::OnEnded(const Job& job) {
  const std::size_t i = IndexOf(job.id);
  Live& live = live_[i];
  JobOutcome& outcome = result_.jobs[live.job];
  --unfinished_;
  if (job.state == JobState::kCancelled) {
    outcome.fate = JobFate::kCancelled;
    outcome.reason = job.reason;
    return;
  }
  GF_CHECK(job.state == JobState::kCompleted || job.state == JobState::kTimeout);
  const bool timeout = job.state == JobState::kTimeout;
  planner_.End(job.id);
  outcome.fate = timeout ? JobFate::kTimeout : JobFate::kCompleted;
  outcome.end = now_;
  live.remaining = Millis(0);
  if (i == live.first) {  // a gang's members end together: one run of the trace job
    Learn(live.job, now_ - live.run_start - options_.launch_lag, timeout);
    ResolveDependents(live.job);
  }
}

// JobBookListener: the job goes back to the queue (preempted, or its node failed), keeping its
// submit time and so its place (the book's Requeue). It keeps its work up to its last checkpoint
// (all of it with a checkpoint interval of 0, none without one).
void Engine::OnRequeueing(const Job& job) {
  const std::size_t i = IndexOf(job.id);
  Live& live = live_[i];
  if (job.state == JobState::kNodeFail) {
    result_.jobs[live.job].failures += 1;
  }
  // Its work, from the end of the launch lag (the GPUs were held from the start).
  const Millis ran = std::max(Millis(0), now_ - live.run_start - options_.launch_lag);
  planner_.NeedFull();  // the scheduler's copy has it stopping or running
  if (options_.checkpoint_interval && options_.checkpoint_interval->count() > 0) {
    const Millis interval = *options_.checkpoint_interval;
    live.remaining -= (ran / interval) * interval;  // kept: up to the last checkpoint
  } else if (options_.checkpoint_interval) {
    live.remaining -= ran;  // 0: suspended and resumed, nothing lost
  }
  if (live.members > 1) {
    gangs_waiting_.insert(live.first);  // queued again whole, once none holds GPUs
    return;
  }
  Enqueue(QueuedOf(i));
}

// The admission rule for gangs (lifecycle/admission.h, GangHoldReason), as the controller's
// HeldBack applies it before a pass: a requeued gang's members go back to the queue together,
// once none of them holds GPUs (a member stopped with a kill grace may outlast the others).
void Engine::AdmitGangs() {
  for (auto it = gangs_waiting_.begin(); it != gangs_waiting_.end();) {
    const std::size_t first = *it;
    if (GangHoldReason(book_.Active(), BookJob(first))) {
      ++it;
      continue;
    }
    for (std::size_t m = first; m < first + static_cast<std::size_t>(live_[first].members); ++m) {
      Enqueue(QueuedOf(m));
    }
    planner_.NeedFull();  // a gang's members are decided together
    it = gangs_waiting_.erase(it);
  }
}

RunKey Engine::KeyOf(std::size_t t) const {
  const JobOutcome& outcome = result_.jobs[t];
  return RunKey{
      .user = outcome.user, .team = outcome.team, .family = trace_[t].name, .gpus = outcome.gpus};
}

// Trace job t arrives: what the predictor and the baseline say of it, from the runs that ended
// so far (its own has not even started). The prediction is its jobs' (JobOf), as the controller
// gives a submitted job the predictor's estimate.
std::optional<Prediction> Engine::Predict(std::size_t t) {
  JobOutcome& outcome = result_.jobs[t];
  std::optional<Prediction> p = predictor_.Predict(KeyOf(t));
  if (p) {
    outcome.predicted = p->expected;
  }
  if (auto runs = last_runs_.find(outcome.user); runs != last_runs_.end()) {
    const auto& [last, previous] = runs->second;
    outcome.last_two = previous ? (last + *previous) / 2 : last;
  }
  return p;
}

// Trace job t's run of `ran` ended (completed, or stopped by its time limit).
void Engine::Learn(std::size_t t, Millis ran, bool timeout) {
  predictor_.Learn(KeyOf(t), ran, timeout ? RunEnd::kTimeout : RunEnd::kCompleted);
  const std::string& user = result_.jobs[t].user;
  if (!user.empty()) {
    auto [it, added] = last_runs_.try_emplace(user, ran, std::nullopt);
    if (!added) {
      it->second = {ran, it->second.first};
    }
  }
}

// Back into the queue, which stays sorted by id (submit order): a requeued or released job.
void Engine::Enqueue(const QueuedJob& job) {
  queue_.pending.insert(std::lower_bound(queue_.pending.begin(),
                                         queue_.pending.end(),
                                         job.id,
                                         [](const QueuedJob& q, JobId id) { return q.id < id; }),
                        job);
}

// The node goes down: its running jobs stop and are queued again, as the controller requeues a
// job whose node failed (NODE_FAIL), and it takes no job until it is repaired.
void Engine::FailNode(const NodeFailure& failure) {
  const Millis back = failure.at + failure.repair;
  if (back <= down_until_[failure.node]) {
    return;  // down already, for longer
  }
  down_until_[failure.node] = back;
  events_.push(Event{.at = back, .kind = EventKind::kNodeUp, .job = failure.node});
  NodeSnapshot& node = cluster_.nodes[failure.node];
  if (node.node.state == NodeState::kDown) {
    return;  // its jobs stopped when it went down
  }
  node.node.state = NodeState::kDown;
  node.node.state_reason = "failed (simulated)";
  planner_.NeedFull();  // nodes are not an event the scheduler is told
  std::vector<std::size_t> victims;
  for (const RunningJob& running : cluster_.running) {
    if (running.allocation.node == node.node.name && !running.allocation.gpus.empty()) {
      victims.push_back(IndexOf(running.id));
    }
  }
  std::sort(victims.begin(), victims.end());  // the running list's order means nothing
  for (const std::size_t i : victims) {
    // As the controller loses a job with its node (JobBook::Lose): requeued, unless a stop
    // that ends it (a time limit) was under way.
    book_.Lose(BookJob(i), node.node.state_reason);
  }
}

void Engine::RepairNode(const Event& event) {
  if (event.at < down_until_[event.job]) {
    return;  // a later failure keeps it down
  }
  NodeSnapshot& node = cluster_.nodes[event.job];
  node.node.state = NodeState::kUp;
  node.node.state_reason.clear();
  planner_.NeedFull();
}

void Engine::Hold(std::size_t i, int sign) {
  const std::int64_t milli = sign * RequestedMilli(live_[i].queued.request);
  AddHeld(held_by_team_, live_[i].queued.team, milli);
  AddHeld(held_by_user_, live_[i].queued.user, milli);
}

// no_departures: the jobs the pass left waiting would never start (capacity only shrinks), so
// they leave the queue with the pass's reason, as the FGD paper counts a task that fails to be
// placed.
void Engine::DropUnplaced(const Decisions& decisions) {
  for (const PendingDecision& pending : decisions.pending) {
    JobOutcome& outcome = result_.jobs[live_[IndexOf(pending.job)].job];
    outcome.fate = JobFate::kNeverStarted;
    outcome.reason = "not placed at its arrival (no departures): " + pending.reason.text;
  }
  unfinished_ -= queue_.pending.size();
  queue_.pending.clear();
}

void Engine::RecordInflation() {
  const Fragmentation f = Fragmented(rooms_, cluster_.nodes.size(), shapes_);
  result_.inflation.push_back(
      SimResult::InflationPoint{.arrived_milli = arrived_milli_,
                                .arrived_unplaceable_milli = arrived_unplaceable_milli_,
                                .allocated_milli = allocated_milli_,
                                .free_milli = f.free_milli,
                                .fragmented_milli = f.fragmented_milli});
}

}  // namespace gf::sim::engine_detail

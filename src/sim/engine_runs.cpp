// The engine's runs (engine_internal.h): a start, a run's end, a preemption (with the kill
// grace) and its requeue with the gang rules, node failures and repairs, what a job holds, and
// the inflation figures. Split from engine.cpp by topic.
#include <algorithm>
#include <set>

#include "core/check.h"
#include "lifecycle/gang_rules.h"
#include "sim/engine_internal.h"

namespace gf::sim::engine_detail {

void Engine::Start(const StartDecision& start, Millis now) {
  const std::size_t i = IndexOf(start.job);
  Live& live = live_[i];
  JobOutcome& outcome = result_.jobs[live.job];
  live.running = true;
  live.run_start = now;
  live.run += 1;
  live.running_at = cluster_.running.size();
  const bool timeout = live.limit && Millis(*live.limit) < live.remaining;
  const Millis length = timeout ? Millis(*live.limit) : live.remaining;
  cluster_.running.push_back(RunningJob{.id = start.job,
                                        .team = live.queued.team,
                                        .user = live.queued.user,
                                        .priority = live.queued.priority,
                                        .allocation = start.allocation,
                                        // Its processes run from the end of the launch lag.
                                        .start_time = At(now + options_.launch_lag),
                                        .time_limit = live.limit,
                                        .preemptible = start.preemptible,
                                        .last_checkpoint = std::nullopt,
                                        .stopping = false,
                                        .estimate = live.queued.estimate,
                                        // the oracle figures the baseline orders read
                                        .expected_duration = length,
                                        .attained_gpu_seconds = outcome.gpu_seconds,
                                        .submit_time = live.queued.submit_time});
  if (!start.allocation.gpus.empty()) {  // a CPU-only job holds no GPU, maybe no node
    NodeSnapshot& node = cluster_.nodes[node_index_.at(start.allocation.node.value())];
    node.allocated.insert(start.allocation.gpus.begin(), start.allocation.gpus.end());
    for (const GpuUuid& gpu : start.allocation.gpus) {
      rooms_[gpu_index_.at(gpu.value())].free_milli -= start.allocation.gpu_milli;
    }
    allocated_milli_ += HeldMilli(start.allocation);
  }
  Hold(i, +1);
  if (!outcome.first_start) {
    outcome.first_start = now;
  }
  if (options_.no_departures) {
    return;  // it never ends
  }
  events_.push(Event{.at = now + options_.launch_lag + length,
                     .kind = EventKind::kEnd,
                     .job = i,
                     .run = live.run,
                     .timeout = timeout});
}

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
                         static_cast<double>(HeldMilliOf(live.queued.request)) / kWholeGpuMilli;
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

// A run's end event: its work is done (the processes exit 0), or its time limit is reached,
// when it is stopped as the controller stops it (EnforceTimeLimits: SIGTERM, SIGKILL when the
// kill grace ends, TIMEOUT whichever way its processes then exit).
void Engine::Finish(const Event& event) {
  Live& live = live_[event.job];
  if (!live.running || live.run != event.run) {
    return;  // that run was stopped before
  }
  if (!event.timeout) {
    Exit(event.job, event.at, 0, "exited with status 0");
    return;
  }
  stops_.Request(live.queued.id,
                 StopIntent{.final_state = JobState::kTimeout, .cause = "time limit reached"});
  if (options_.kill_grace.count() <= 0) {
    Exit(event.job, event.at, kKilledExitCode, "killed by signal 9");
    return;
  }
  // It holds its GPUs, being stopped, until the grace ends or its work is done first.
  cluster_.running[live.running_at].stopping = true;
  const Millis work_done = live.run_start + options_.launch_lag + live.remaining;
  events_.push(Event{.at = std::min(event.at + options_.kill_grace, work_done),
                     .kind = EventKind::kStop,
                     .job = event.job,
                     .run = live.run,
                     .timeout = false});
}

// Job i's processes exited: the stop book says what the run's end is (lifecycle/stops.h).
void Engine::Exit(std::size_t i, Millis at, int exit_code, const std::string& how) {
  EndRun(i, at, stops_.OnExit(live_[i].queued.id, exit_code, how));
}

// A run ended as `end` says: requeued with its gang (a preemption, a node failure), or ended.
void Engine::EndRun(std::size_t i, Millis at, const RunVerdict& end) {
  if (end.requeue) {
    RequeueGang(i, at);
    return;
  }
  Complete(i, at, end.state);
}

// Job i's run ended for good: COMPLETED, or TIMEOUT (the simulator cancels no job that runs,
// and no run fails).
void Engine::Complete(std::size_t i, Millis at, JobState state) {
  GF_CHECK(state == JobState::kCompleted || state == JobState::kTimeout);
  Live& live = live_[i];
  const bool timeout = state == JobState::kTimeout;
  StopRun(i, at);
  stops_.Forget(live.queued.id);
  planner_.End(live.queued.id);
  --unfinished_;
  JobOutcome& outcome = result_.jobs[live.job];
  outcome.fate = timeout ? JobFate::kTimeout : JobFate::kCompleted;
  outcome.end = at;
  live.remaining = Millis(0);
  if (i == live.first) {  // a gang's members end together: one run of the trace job
    Learn(live.job, at - live.run_start - options_.launch_lag, timeout);
    ResolveDependents(live.job);
  }
}

RunKey Engine::KeyOf(std::size_t t) const {
  const JobOutcome& outcome = result_.jobs[t];
  return RunKey{
      .user = outcome.user, .team = outcome.team, .family = trace_[t].name, .gpus = outcome.gpus};
}

// Trace job t arrives: what the predictor and the baseline say of it, from the runs that ended
// so far (its own has not even started). The prediction is its scheduler jobs' estimate, as
// the controller gives a submitted job the predictor's estimate.
void Engine::Predict(std::size_t t) {
  JobOutcome& outcome = result_.jobs[t];
  if (const std::optional<Prediction> p = predictor_.Predict(KeyOf(t))) {
    outcome.predicted = p->expected;
    const std::size_t first = first_of_[t];
    for (std::size_t i = first; i < first + static_cast<std::size_t>(live_[first].members); ++i) {
      live_[i].queued.estimate = RunEstimate{.expected = p->expected, .high = p->high};
    }
  }
  if (auto runs = last_runs_.find(outcome.user); runs != last_runs_.end()) {
    const auto& [last, previous] = runs->second;
    outcome.last_two = previous ? (last + *previous) / 2 : last;
  }
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

// A preemption, as the controller's Preempt: the victim is stopped to be requeued (lifecycle/
// stops.h). With no kill grace it stops at once and is requeued with its gang (RequeueGang).
// With one, it is sent its first signal and holds its GPUs as `stopping` (Decide counts them as
// about to be free, as the controller's snapshot does for a job it is stopping) until the grace
// ends, when it is killed and requeued (kStop), or until its processes exit first (exit 0 on its
// checkpoint signal: requeued all the same). A gang follows its preempted member: its other
// running members are stopped with it (lifecycle/gang_rules.h).
void Engine::Preempt(const PreemptDecision& preemption, Millis now) {
  const std::size_t i = IndexOf(preemption.victim);
  Live& live = live_[i];
  if (!live.running || stops_.Stopping(preemption.victim)) {
    return;
  }
  result_.jobs[live.job].preemptions += 1;
  const bool grace = options_.kill_grace.count() > 0;
  for (std::size_t m = live.first; m < live.first + static_cast<std::size_t>(live.members); ++m) {
    Live& member = live_[m];
    if (!member.running || stops_.Stopping(member.queued.id) || (!grace && m != i)) {
      continue;  // without a grace, RequeueGang stops the others
    }
    stops_.Request(member.queued.id,
                   StopIntent{.final_state = JobState::kPreempted,
                              .cause = preemption.cause,
                              .requeue_after = "preemption"});
    if (!grace) {
      continue;
    }
    cluster_.running[member.running_at].stopping = true;
    events_.push(Event{.at = now + options_.kill_grace,
                       .kind = EventKind::kStop,
                       .job = m,
                       .run = member.run,
                       .timeout = false});
    if (m != i) {
      planner_.NeedFull();  // the scheduler chose only the victim: it does not know of these
    }
  }
  if (!grace) {
    Exit(i, now, kKilledExitCode, "killed by signal 9");
  }
}

// A stop's kill grace is over: SIGKILL ends the run (requeued after a preemption, TIMEOUT
// after a time limit), unless it ended during the grace.
void Engine::KillAtGraceEnd(const Event& event) {
  const Live& live = live_[event.job];
  if (live.running && live.run == event.run) {
    Exit(event.job, event.at, kKilledExitCode, "killed by signal 9");
  }
}

// Job i's run stopped to be requeued (preempted, or its node failed): the lifecycle's gang rules
// (lifecycle/gang_rules.h, which the controller applies too) stop its gang's other running
// members to be requeued with it, at once: members being stopped with it (a preemption's kill
// grace) have their grace end at this same instant, and the same intent.
void Engine::RequeueGang(std::size_t i, Millis now) {
  const Live& live = live_[i];
  std::set<std::size_t> stop;
  if (live.running) {
    stop.insert(i);
  }
  if (live.members > 1) {
    std::vector<GangMemberState> states;
    for (std::size_t m = live.first; m < live.first + static_cast<std::size_t>(live.members); ++m) {
      const Live& member = live_[m];
      // Job i counts as back in the queue already: that is what it is being stopped for.
      const JobState state = m == i                          ? JobState::kPending
                             : member.running                ? JobState::kRunning
                             : member.remaining == Millis(0) ? JobState::kCompleted
                                                             : JobState::kPending;
      states.push_back(GangMemberState{.job = member.queued.id,
                                       .rank = static_cast<int>(m - live.first),
                                       .size = live.members,
                                       .state = state,
                                       .reason = {},
                                       .stopping = std::nullopt});
    }
    for (const GangAction& action : SettleGang(states)) {
      GF_CHECK(action.step == GangStep::kStopToRequeue);  // no member ends other than completed
      stop.insert(IndexOf(action.job));
    }
  }
  for (const std::size_t m : stop) {  // in rank order, as the members' runs were kept
    Requeue(m, now);
  }
}

// Stops job i's run (preempted, or its node failed) and queues it again: it keeps its work up to
// its last checkpoint (all of it with a checkpoint interval of 0, none without one).
void Engine::Requeue(std::size_t i, Millis now) {
  Live& live = live_[i];
  // Its work, from the end of the launch lag (the GPUs were held from the start).
  const Millis ran = std::max(Millis(0), now - live.run_start - options_.launch_lag);
  StopRun(i, now);
  stops_.Forget(live.queued.id);  // its stop is over (the simulator shows no requeue causes)
  planner_.NeedFull();            // the scheduler's copy has it stopping or running (a requeue)
  if (options_.checkpoint_interval && options_.checkpoint_interval->count() > 0) {
    const Millis interval = *options_.checkpoint_interval;
    live.remaining -= (ran / interval) * interval;  // kept: up to the last checkpoint
  } else if (options_.checkpoint_interval) {
    live.remaining -= ran;  // 0: suspended and resumed, nothing lost
  }
  live.queued.expected_duration = live.remaining;
  live.queued.attained_gpu_seconds = result_.jobs[live.job].gpu_seconds;
  // Requeued keeping its submit time, so its place (the controller does the same).
  Enqueue(live.queued);
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
    if (!live_[i].running) {
      continue;  // requeued with a gang member that ran here too
    }
    // As the controller loses a job with its node (StopBook::OnLost): requeued, unless a stop
    // that ends it (a time limit) was under way.
    const RunVerdict end = stops_.OnLost(live_[i].queued.id, node.node.state_reason);
    result_.jobs[live_[i].job].failures += end.requeue ? 1 : 0;
    EndRun(i, failure.at, end);
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
  const std::int64_t milli = sign * HeldMilliOf(live_[i].queued.request);
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

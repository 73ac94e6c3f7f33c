#include "sim/engine.h"

#include <algorithm>
#include <set>

#include "lifecycle/apply_decisions.h"
#include "lifecycle/wakeups.h"
#include "sim/engine_internal.h"

namespace gf::sim {
namespace engine_detail {
SimResult Engine::Run() {
  live_.reserve(trace_.size());
  // On a cluster with no exclusive GPU, a 1-GPU job asks for a share of 1.0 (a whole shared
  // GPU), so that a trace of whole and fractional jobs runs on one shared cluster; larger
  // jobs need exclusive GPUs and pend (or are dropped under no_departures), counted. On a
  // cluster with no shared GPU, a share asks for a whole GPU (as before sharing existed).
  const bool one_gpu_as_share =
      std::none_of(rooms_.begin(), rooms_.end(), [](const GpuRoom& g) { return !g.shared; });
  const bool any_shared =
      std::any_of(rooms_.begin(), rooms_.end(), [](const GpuRoom& g) { return g.shared; });
  int largest = 0;
  for (const NodeSnapshot& node : cluster_.nodes) {
    largest = std::max(largest, static_cast<int>(node.node.gpus.size()));
  }
  std::map<std::pair<int, int>, double> shapes;
  for (std::size_t i = 0; i < trace_.size(); ++i) {
    const TraceJob& t = trace_[i];
    const int milli = t.gpu_milli > 0                   ? (any_shared ? t.gpu_milli : 0)
                      : one_gpu_as_share && t.gpus == 1 ? kWholeGpuMilli
                                                        : 0;
    const GangSplit split = milli > 0 ? GangSplit{.members = 1, .gpus_per_member = t.gpus}
                                      : SplitAcrossNodes(t.gpus, largest);
    if (t.gpus > 0) {
      shapes[{split.gpus_per_member, milli}] += split.members;
    }
    std::string team = t.team;
    if (team.empty()) {
      auto member = options_.team_of_user.find(t.user);
      team = member == options_.team_of_user.end() ? "" : member->second;
    }
    const PriorityClass priority{t.priority.empty() ? options_.policy.default_class : t.priority};
    std::map<std::string, std::string> labels;
    if (!options_.team_label.empty() && !team.empty()) {
      labels.emplace(options_.team_label, team);
    }
    result_.jobs.push_back(JobOutcome{.id = t.id,
                                      .team = team,
                                      .user = t.user,
                                      .priority = priority.name,
                                      .gpus = split.members * split.gpus_per_member,
                                      .gpu_milli = milli,
                                      .submit = t.submit,
                                      .duration = t.duration});
    const std::size_t first = live_.size();
    first_of_.push_back(first);
    for (int rank = 0; rank < split.members; ++rank) {
      live_.push_back(
          Live{.queued = QueuedJob{.id = JobId(static_cast<std::int64_t>(live_.size()) + 1),
                                   .priority = priority,
                                   .submit_time = At(t.submit),
                                   .request = JobRequest{.gpus = split.gpus_per_member,
                                                         .gpu_type = std::nullopt,
                                                         .node_labels = labels,
                                                         .nodes = split.members,
                                                         .gpu_milli = milli,
                                                         .gpu_memory_mib = 0},
                                   .user = t.user,
                                   .team = team},
               .job = i,
               .first = first,
               .members = split.members,
               .remaining = t.duration});
    }
  }
  // The shapes the cluster has GPUs of a kind for (shares: shared GPUs; whole: exclusive).
  const auto placeable = [&](int milli) {
    return milli > 0 ? any_shared : !one_gpu_as_share;
  };
  for (const auto& [shape, count] : shapes) {
    if (placeable(shape.second)) {
      shapes_.push_back(TaskShape{.gpus = shape.first, .milli = shape.second, .weight = count});
    }
  }
  for (const Live& live : live_) {
    placeable_.push_back(live.queued.request.gpus == 0 || placeable(live.queued.request.gpu_milli));
  }
  // Dependencies name jobs by their trace id: the index is built only for a trace that has some.
  if (std::any_of(
          trace_.begin(), trace_.end(), [](const TraceJob& t) { return !t.after.empty(); })) {
    for (std::size_t t = 0; t < trace_.size(); ++t) {
      index_of_id_.emplace(trace_[t].id, t);
    }
  }
  std::size_t next_arrival = 0;
  std::size_t next_failure = 0;
  // Failures and repairs matter only while a job is queued or running.
  while (next_arrival < trace_.size() ||
         (unfinished_ > 0 && (!events_.empty() || next_failure < failures_.size()))) {
    Millis now = next_arrival < trace_.size() ? trace_[next_arrival].submit : Millis::max();
    if (!events_.empty()) {
      now = std::min(now, events_.top().at);
    }
    if (next_failure < failures_.size()) {
      now = std::min(now, failures_[next_failure].at);
    }
    now_ = now;
    if (options_.fair_share) {
      team_usage_.Advance(At(now), held_by_team_);
      user_usage_.Advance(At(now), held_by_user_);
    }
    while (!events_.empty() && events_.top().at == now) {
      const Event event = events_.top();
      events_.pop();
      if (event.kind == EventKind::kNodeUp) {
        RepairNode(event);
      } else if (event.kind == EventKind::kWake) {
        wakes_.erase(event.at);
      } else {
        OnEvent(event);
      }
    }
    while (next_failure < failures_.size() && failures_[next_failure].at == now) {
      FailNode(failures_[next_failure++]);
    }
    while (next_arrival < trace_.size() && trace_[next_arrival].submit == now) {
      Arrive(next_arrival++);
    }
    SettleGangs();  // the instant's stops, and the gangs of its requeued jobs
    const bool arrivals = arrivals_;
    Pass(now);
    arrived_now_.clear();
    if (options_.no_departures && arrivals) {
      RecordInflation();
    }
    book_.EraseEnded();  // as the controller's turn ends
  }
  CollectNeverStarted();
  for (const Live& live : live_) {
    if (live.running) {
      result_.jobs[live.job].fate = JobFate::kRunning;  // no_departures: nothing ended
    }
  }
  return std::move(result_);
}

// Trace job t arrives: its scheduler job, or each member of its gang, is queued.
void Engine::Arrive(std::size_t t) {
  const std::size_t first = first_of_[t];
  const Live& head = live_[first];
  const std::optional<Prediction> prediction = Predict(t);
  const JobRequest& request = head.queued.request;
  const std::int64_t milli = RequestedMilli(request) * head.members;
  arrived_milli_ += milli;
  arrived_unplaceable_milli_ += placeable_[first] ? 0 : milli;
  auto key = std::make_tuple(request.gpus, request.nodes, request.gpu_milli, request.node_labels);
  auto memo = infeasible_.find(key);
  if (memo == infeasible_.end()) {
    const Status feasible = CheckFeasible(failures_.empty() ? cluster_ : every_node_up_, request);
    memo = infeasible_
               .emplace(std::move(key),
                        feasible.ok() ? std::nullopt : std::optional(feasible.error().message))
               .first;
  }
  if (memo->second) {
    result_.jobs[t].fate = JobFate::kRejected;
    result_.jobs[t].reason = *memo->second;
    return;
  }
  Result<std::vector<Dependency>> unmet = UnmetDependencies(t);
  if (!unmet.ok()) {
    result_.jobs[t].fate = JobFate::kRejected;
    result_.jobs[t].reason = unmet.error().message;
    return;
  }
  unfinished_ += static_cast<std::size_t>(head.members);
  arrivals_ = true;
  for (std::size_t i = first; i < first + static_cast<std::size_t>(head.members); ++i) {
    book_.Add(JobOf(i, prediction));
  }
  if (!unmet->empty()) {
    // Held back until they are met (the controller's admission); the controller's full pass
    // on such an arrival, though it decides nothing new.
    dependencies_.Wait(DependencyId(t), *unmet);
    held_.insert(t);
    planner_.NeedFull();
    return;
  }
  for (std::size_t i = first; i < first + static_cast<std::size_t>(head.members); ++i) {
    queue_.pending.push_back(QueuedOf(i));  // arrivals come in id order: stays sorted
    arrived_now_.push_back(i);
    if (head.members == 1) {
      planner_.Arrival(live_[i].queued.id);
    }
  }
  if (head.members > 1) {
    planner_.NeedFull();  // a gang's members are decided together (the controller's NoteArrival)
  }
}

// Trace job t's dependencies at its arrival, judged as the controller judges a submission's
// `after` (controller/dependency_book.h): those whose jobs have not ended, which it waits for.
// Errors: a job that ended without meeting one, or was rejected (the controller refuses such a
// submission; the message is the rejected job's reason).
Result<std::vector<Dependency>> Engine::UnmetDependencies(std::size_t t) const {
  std::vector<Dependency> unmet;
  for (const TraceDependency& after : trace_[t].after) {
    const std::size_t target = index_of_id_.at(after.job);
    if (result_.jobs[target].fate == JobFate::kRejected) {
      return InvalidArgument("after: job '" + after.job + "' was rejected");
    }
    const std::optional<gf::JobOutcome> ended = EndOf(target);
    if (!ended) {
      unmet.push_back(Dependency{.job = DependencyId(target), .kind = after.kind});
    } else if (!Satisfies(after.kind, *ended)) {
      return InvalidArgument("after: " + BrokenCause(NameOf(DependencyId(target)), *ended) +
                             " before this job was submitted");
    }
  }
  return unmet;
}

// How trace job t ended, as a dependency on it sees it; nullopt while it has not.
std::optional<gf::JobOutcome> Engine::EndOf(std::size_t t) const {
  switch (result_.jobs[t].fate) {
    case JobFate::kCompleted:
      return gf::JobOutcome{.state = JobState::kCompleted, .exit_code = 0};
    case JobFate::kTimeout:
      return gf::JobOutcome{.state = JobState::kTimeout, .exit_code = std::nullopt};
    case JobFate::kCancelled:
      return gf::JobOutcome{.state = JobState::kCancelled, .exit_code = std::nullopt};
    default:
      return std::nullopt;
  }
}

// Trace job t ended: the jobs held for it are cancelled where a dependency broke (and down the
// chain), and queued where every dependency is now met, keeping their submit time and so their
// place, with a full pass, as the controller does (DependencyBook::OnEnded).
void Engine::ResolveDependents(std::size_t t) {
  if (held_.empty()) {
    return;
  }
  for (const DependencyGraph::Broken& broken : dependencies_.OnEnded(DependencyId(t), *EndOf(t))) {
    const std::size_t first = IndexOf(broken.job);
    held_.erase(live_[first].job);
    for (std::size_t i = first; i < first + static_cast<std::size_t>(live_[first].members); ++i) {
      book_.Transition(BookJob(i), JobState::kCancelled, broken.cause, "scheduler");
    }
  }
  for (auto it = held_.begin(); it != held_.end();) {
    if (dependencies_.Waiting(DependencyId(*it))) {
      ++it;
      continue;
    }
    const std::size_t first = first_of_[*it];
    for (std::size_t i = first; i < first + static_cast<std::size_t>(live_[first].members); ++i) {
      Enqueue(QueuedOf(i));
    }
    planner_.NeedFull();
    it = held_.erase(it);
  }
}

// The scheduling of one instant, by the lifecycle's pass rule (lifecycle/pass_planner.h), as
// the controller's turn runs it (Controller::Schedule): a full pass, or the instant's arrivals
// and ends told one by one; again at the same instant while a pass leaves a change the
// scheduler is not told of (a preemption's victim stops at once here and is requeued, as the
// controller's next pass would see it once the victim has exited). Then the next wake-up: a
// full pass due after incremental ones, or a running job coming of age for preemption.
void Engine::Pass(Millis now) {
  arrivals_ = false;
  AdmitGangs();
  if (!KeepsScheduler()) {
    // Decide() on the whole state at every instant where jobs wait, as before the engine kept
    // the scheduler; with nothing waiting a pass decides nothing.
    if (queue_.pending.empty()) {
      planner_.StartFull();
      return;
    }
    planner_.NeedFull();
  }
  for (int pass = 0; pass < kMaxPassesPerInstant; ++pass) {
    AdmitGangs();  // a pass's preemption may have requeued a gang without a kill grace
    const PassKind kind = planner_.Plan(At(now));
    if (kind == PassKind::kNone) {
      break;
    }
    if (options_.checkpoint_interval) {
      RefreshCheckpoints(now);
    }
    if (options_.fair_share) {
      PublishUsage();
    }
    ++result_.decide_calls;
    result_.max_queue =
        std::max(result_.max_queue, static_cast<std::int64_t>(queue_.pending.size()));
    if (kind == PassKind::kIncremental) {
      IncrementalPass(now);
      continue;
    }
    const Decisions decisions = FullPass(now);
    if (options_.no_departures && decisions.preemptions.empty()) {
      DropUnplaced(decisions);
    }
  }
  ScheduleWake(now);
}

// A full pass: the scheduler takes the whole state and decides it (Decide() itself), or, where
// it is not kept, Decide() alone (the scheduler's copy would be for nothing).
Decisions Engine::FullPass(Millis now) {
  ++result_.full_passes;
  planner_.StartFull();
  Decisions decisions =
      KeepsScheduler() ? scheduler_.Full(cluster_, queue_, options_.policy, At(now))
                       : Decide(cluster_, queue_, options_.policy, At(now), FullListing(options_));
  Apply(decisions, now);
  for (const std::size_t i : arrived_now_) {
    NoteWaitedAtArrival(i);
  }
  if (!decisions.pending.empty()) {
    ArmPass(now);
  }
  return decisions;
}

// The instant's ends told to the kept scheduler together, then its arrivals one by one, each
// call's decisions applied before the next (lifecycle/pass_planner.h IncrementalBatch, as
// Controller::IncrementalPass tells them).
void Engine::IncrementalPass(Millis now) {
  const IncrementalBatch batch = planner_.StartIncremental();
  bool waiting = false;
  const auto apply = [&](const IncrementalResult& result) {
    waiting = waiting || !result.decisions.pending.empty();
    Apply(result.decisions, now);
    // A preemption's victim went back to the queue: the full pass decides the rest.
    return !planner_.FullNeeded();
  };
  bool in_step = batch.ends.empty() || apply(scheduler_.OnCompletions(batch.ends, At(now)));
  for (std::size_t i = 0; in_step && i < batch.arrivals.size(); ++i) {
    const std::size_t job = IndexOf(batch.arrivals[i]);
    if (!live_[job].running) {
      in_step = apply(scheduler_.OnArrival(QueuedOf(job), At(now)));
      NoteWaitedAtArrival(job);  // a full pass on its arrival may not have listed it
    }
  }
  if (!in_step) {
    return;  // the full pass follows at once
  }
  planner_.IncrementalRan(At(now), scheduler_.Waiting());
  if (waiting && !planner_.ArmedAt()) {
    ArmPass(now);
  }
}

// Acts on a pass's decisions: preemptions first (each victim stops at once and is requeued,
// which asks for a full pass), then starts.
void Engine::Apply(const Decisions& decisions, Millis now) {
  for (const PendingDecision& pending : decisions.pending) {
    const Live& live = live_[IndexOf(pending.job)];
    JobOutcome& outcome = result_.jobs[live.job];
    if (live.queued.submit_time == At(now) && !outcome.first_start &&
        !outcome.waited_at_arrival) {  // the first pass to decide it, at its arrival
      outcome.waited_at_arrival = true;
      if (pending.estimated_start) {
        outcome.estimated_start = pending.estimated_start->time_since_epoch();
      }
    }
  }
  // As the controller applies them (lifecycle/apply_decisions.h): the victims are stopped (kill
  // orders, their gangs following), then the starts move their jobs to STARTING.
  const AppliedDecisions applied =
      ApplyDecisions(book_, decisions.preemptions, decisions.starts, [](const StartDecision&) {
        return std::string("started");
      });
  for (const PreemptDecision& preemption : applied.preempted) {
    result_.jobs[live_[IndexOf(preemption.victim)].job].preemptions += 1;
  }
  if (applied.stale) {
    planner_.NeedFull();  // the scheduler's copy was stale
  }
  SettleGangs();
  for (const JobId id : applied.started) {
    Start(IndexOf(id), now);
  }
  if (!applied.started.empty()) {
    std::erase_if(queue_.pending,
                  [this](const QueuedJob& q) { return live_[IndexOf(q.id)].running; });
  }
}

void Engine::NoteWaitedAtArrival(std::size_t i) {
  JobOutcome& outcome = result_.jobs[live_[i].job];
  if (!live_[i].running && !outcome.first_start) {
    outcome.waited_at_arrival = true;
  }
}

// A waiting job may preempt a running job once it is old enough, or (las) once it reaches its
// next queue (lifecycle/wakeups.h): the pass of that moment, armed as the controller arms it.
void Engine::ArmPass(Millis now) {
  if (const std::optional<Time> at = NextPassAt(cluster_.running, options_.policy, At(now))) {
    planner_.ArmAt(*at);
  }
}

void Engine::PublishUsage() {
  for (const auto& [team, sum] : team_usage_.Sums()) {
    cluster_.team_usage[team].decayed_gpu_seconds = sum;
  }
  cluster_.user_decayed_gpu_seconds = user_usage_.Sums();
}

// A job checkpoints every interval since its start: its last checkpoint is the latest
// start + k * interval (k >= 1) not after now, which preemption uses to choose victims.
void Engine::RefreshCheckpoints(Millis now) {
  const Millis interval = *options_.checkpoint_interval;
  for (RunningJob& running : cluster_.running) {
    if (interval.count() <= 0) {
      running.last_checkpoint = At(now);  // suspend and resume: a preemption loses nothing
      continue;
    }
    const Millis start = running.start_time.time_since_epoch();
    const std::int64_t done = (now - start) / interval;
    running.last_checkpoint = done > 0 ? std::optional(At(start + done * interval)) : std::nullopt;
  }
}

// A wake-up at the pass rule's next look (PassPlanner::WakeAt, as the controller's loop wakes):
// a full pass due after incremental ones, or a running job coming of age for preemption.
void Engine::ScheduleWake(Millis now) {
  const std::optional<Time> next = planner_.WakeAt();
  if (next && next->time_since_epoch() > now && wakes_.insert(next->time_since_epoch()).second) {
    events_.push(Event{.at = next->time_since_epoch(), .kind = EventKind::kWake});
  }
}

// Jobs still waiting once nothing else can happen (a class rule that never lets them in, for
// example): the reason of one last pass says why.
void Engine::CollectNeverStarted() {
  for (const std::size_t t : held_) {
    const Dependency unmet = *dependencies_.FirstUnmet(DependencyId(t));
    result_.jobs[t].fate = JobFate::kNeverStarted;
    result_.jobs[t].reason = WaitingReason(unmet.kind, NameOf(unmet.job)).text;
  }
  if (queue_.pending.empty()) {
    return;
  }
  const Decisions decisions = Decide(cluster_, queue_, options_.policy, At(now_));
  for (const PendingDecision& pending : decisions.pending) {
    JobOutcome& outcome = result_.jobs[live_[IndexOf(pending.job)].job];
    outcome.fate = JobFate::kNeverStarted;
    outcome.reason = pending.reason.text;
  }
}

}  // namespace engine_detail

GangSplit SplitAcrossNodes(int gpus, int largest_node) {
  if (largest_node <= 0 || gpus <= largest_node) {
    return GangSplit{.members = 1, .gpus_per_member = gpus};
  }
  const int members = (gpus + largest_node - 1) / largest_node;
  return GangSplit{.members = members, .gpus_per_member = (gpus + members - 1) / members};
}

std::string_view ToString(JobFate fate) {
  switch (fate) {
    case JobFate::kCompleted:
      return "completed";
    case JobFate::kTimeout:
      return "timeout";
    case JobFate::kRejected:
      return "rejected";
    case JobFate::kNeverStarted:
      return "never-started";
    case JobFate::kCancelled:
      return "cancelled";
    case JobFate::kRunning:
      return "running";
  }
  return "unknown";
}

Result<SimResult> Simulate(const std::vector<Node>& nodes,
                           const std::vector<TraceJob>& trace,
                           const SimOptions& options) {
  GF_TRY(ValidatePolicy(options.policy));
  if (nodes.empty()) {
    return InvalidArgument("cluster: no nodes; give at least one (e.g. 1x8xH100)");
  }
  return engine_detail::Engine(nodes, trace, options).Run();
}

}  // namespace gf::sim

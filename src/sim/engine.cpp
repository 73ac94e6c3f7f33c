#include "sim/engine.h"

#include <algorithm>
#include <cmath>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_map>

#include "core/check.h"
#include "lifecycle/gang_rules.h"
#include "lifecycle/pass_planner.h"
#include "lifecycle/wakeups.h"
#include "predict/runtime_predictor.h"
#include "scheduler/classes.h"
#include "scheduler/incremental.h"
#include "scheduler/ordering/usage_ledger.h"
#include "scheduler/quota/ledger.h"
#include "scheduler/scheduler.h"

namespace gf::sim {
namespace {

// The virtual clock starts at the epoch: trace time t is Time(t).
Time At(Millis t) {
  return Time(t);
}

double Seconds(Millis d) {
  return std::chrono::duration<double>(d).count();
}

// Bounds the passes at one instant (each after preemptions): preemption needs a victim that ran
// min_run_time, so with a positive minimum the second pass already starts what the first made
// room for; with min_run_time = 0 this stops a pathological ping-pong.
constexpr int kMaxPassesPerInstant = 100;

// kStop: a preempted run's kill grace is over (SimOptions::kill_grace): it stops and is
// requeued, unless it ended before.
enum class EventKind { kEnd, kStop, kWake, kNodeUp };

struct Event {
  Millis at{0};
  EventKind kind = EventKind::kWake;
  std::size_t job = 0;    // kEnd: the job whose run ends; kNodeUp: the node
  std::uint64_t run = 0;  // kEnd: that run (stale once the job was preempted)
  bool timeout = false;   // kEnd: the run ends by its time limit
  auto Key() const { return std::tie(at, kind, job, run); }
};
struct Later {
  bool operator()(const Event& a, const Event& b) const { return a.Key() > b.Key(); }
};

// GPUs held per key (team or user); a key that holds none is dropped, so the usage ledger
// iterates only holders. Shares are counted in milli-GPUs and rounded back, so a key that
// holds none reads exactly 0.
void AddHeld(std::map<std::string, double>& held, const std::string& key, std::int64_t milli) {
  auto [it, inserted] = held.emplace(key, 0);
  const std::int64_t sum = std::llround(it->second * kWholeGpuMilli) + milli;
  it->second = static_cast<double>(sum) / kWholeGpuMilli;
  if (sum == 0) {
    held.erase(it);
  }
}

// What a job holds, in milli-GPUs (a share counts its fraction).
std::int64_t HeldMilliOf(const JobRequest& request) {
  return request.gpu_milli > 0 ? request.gpu_milli : std::int64_t{request.gpus} * kWholeGpuMilli;
}

// The scheduler is kept between passes where its copy of the state can follow the engine's
// event by event, as the controller's does: the stock order (a baseline order reads oracle
// figures of running jobs that the product never has, so its copy lacks them), no checkpoints
// (they move running jobs' state at every instant), and jobs that leave (no_departures drops
// the jobs a pass leaves, which the copy would keep).
bool SchedulerKept(const SimOptions& options) {
  return !options.passes.full_passes_only && !options.no_departures &&
         !options.checkpoint_interval && options.policy.ordering.order == QueueOrder::kPriority;
}

PassRules RulesFor(const SimOptions& options) {
  PassRules rules = options.passes;
  rules.full_passes_only = !SchedulerKept(options);
  return rules;
}

// One per scheduler job: a trace job, or each member of the gang a trace job larger than the
// largest node runs as (SplitAcrossNodes), ids consecutive. The outcome is the trace job's.
struct Live {
  QueuedJob queued;       // what the queue holds while it waits
  std::size_t job = 0;    // the trace job (index into trace and result)
  std::size_t first = 0;  // its first member's index (itself if no gang)
  int members = 1;
  std::optional<std::chrono::seconds> limit;  // effective time limit of each run
  Millis remaining{0};                        // work still to do
  Millis run_start{0};
  std::uint64_t run = 0;  // counts starts
  bool running = false;
  std::size_t running_at = 0;  // index in ClusterSnapshot::running while running
};

class Engine {
 public:
  Engine(const std::vector<Node>& nodes,
         const std::vector<TraceJob>& trace,
         const SimOptions& options)
      : trace_(trace),
        options_(options),
        team_usage_(options.policy.fair_share.half_life),
        user_usage_(options.policy.fair_share.half_life),
        scheduler_(IncrementalOptions{.reuse_within = options.passes.arrival_reuse}),
        planner_(RulesFor(options)) {
    for (const Node& node : nodes) {
      for (const Gpu& gpu : node.gpus) {
        gpu_index_.emplace(gpu.uuid.value(), rooms_.size());
        rooms_.push_back(GpuRoom{.node = cluster_.nodes.size(),
                                 .shared = HoldsFractions(gpu.sharing),
                                 .free_milli = TakesWork(gpu) ? kWholeGpuMilli : 0});
      }
      node_index_.emplace(node.name.value(), cluster_.nodes.size());
      cluster_.nodes.push_back(NodeSnapshot{.node = node, .allocated = {}});
      result_.total_gpus += static_cast<int>(node.gpus.size());
    }
    if (!options.node_failures.empty()) {
      every_node_up_ = cluster_;  // before any failure: a job is feasible on the whole cluster
      down_until_.assign(nodes.size(), Millis(0));
      failures_ = options.node_failures;
      std::sort(failures_.begin(), failures_.end(), [](const NodeFailure& a, const NodeFailure& b) {
        return std::tie(a.at, a.node) < std::tie(b.at, b.node);
      });
    }
  }

  SimResult Run();

 private:
  std::size_t IndexOf(JobId id) const { return static_cast<std::size_t>(id.value() - 1); }
  void Arrive(std::size_t i);
  void Pass(Millis now);
  bool KeepsScheduler() const { return keeps_scheduler_; }
  Decisions FullPass(Millis now);
  void IncrementalPass(Millis now);
  void Apply(const Decisions& decisions, Millis now);
  void ArmPass(Millis now);
  void Start(const StartDecision& start, Millis now);
  void Preempt(const PreemptDecision& preemption, Millis now);
  void StopPreempted(const Event& event);
  void Requeue(std::size_t i, Millis now);
  void RequeueGang(std::size_t i, Millis now);
  void FailNode(const NodeFailure& failure);
  void RepairNode(const Event& event);
  void StopRun(std::size_t i, Millis now);
  void Finish(const Event& event);
  RunKey KeyOf(std::size_t t) const;
  void Predict(std::size_t t);
  void Learn(std::size_t t, Millis ran, bool timeout);
  void Hold(std::size_t i, int sign);
  void PublishUsage();
  void RefreshCheckpoints(Millis now);
  void ScheduleWake(Millis now);
  void CollectNeverStarted();
  void DropUnplaced(const Decisions& decisions);
  void RecordInflation();

  const std::vector<TraceJob>& trace_;
  const SimOptions& options_;
  ClusterSnapshot cluster_;
  Queue queue_;  // sorted by job id, which is submit order
  std::unordered_map<std::string, std::size_t> node_index_;
  std::vector<Live> live_;             // by scheduler job (IndexOf): a gang's members each
  std::vector<std::size_t> first_of_;  // by trace job: its first scheduler job's index
  std::priority_queue<Event, std::vector<Event>, Later> events_;
  std::set<Millis> wakes_;  // wake-ups scheduled, so that one instant gets one
  // By request (GPU count, nodes, share, node labels): why no node could ever run it, or nullopt.
  std::map<std::tuple<int, int, int, std::map<std::string, std::string>>,
           std::optional<std::string>>
      infeasible_;
  std::map<std::string, double> held_by_team_;
  std::map<std::string, double> held_by_user_;
  UsageLedger team_usage_;  // the controller's fair-share ledgers, on the virtual clock
  UsageLedger user_usage_;
  SimResult result_;
  Millis now_{0};  // the instant being simulated
  // The controller's scheduler (scheduler/incremental.h) and its pass rule
  // (lifecycle/pass_planner.h): told the arrivals and ends one by one, with a full pass when
  // the rule asks for one, on the virtual clock. Where the scheduler is not kept (KeepsScheduler:
  // the baseline orders, checkpoints, no_departures, full_passes_only) every pass is Decide()
  // on the whole state.
  bool keeps_scheduler_ = SchedulerKept(options_);
  IncrementalScheduler scheduler_;
  PassPlanner planner_;
  bool arrivals_ = false;  // jobs were queued at this instant (no_departures' inflation point)
  // Node failures (SimOptions::node_failures), by time; a node is down until down_until_.
  std::vector<NodeFailure> failures_;
  std::vector<Millis> down_until_;
  ClusterSnapshot every_node_up_;  // what CheckFeasible sees when nodes may fail
  std::size_t unfinished_ = 0;     // jobs queued or running
  // Each GPU's free milli-GPUs (in node order, GPU order), for the inflation figures, and for
  // a shared GPU whether anyone still holds it (the snapshot's `allocated` keeps it until the
  // last share leaves).
  std::unordered_map<std::string, std::size_t> gpu_index_;
  std::vector<GpuRoom> rooms_;
  std::vector<TaskShape> shapes_;               // the workload's (no_departures)
  std::int64_t arrived_milli_ = 0;              // demand arrived (no_departures)
  std::int64_t arrived_unplaceable_milli_ = 0;  // of it, of a kind no GPU of the cluster takes
  std::vector<bool> placeable_;                 // by job: the cluster has GPUs of its kind
  std::int64_t allocated_milli_ = 0;            // held by running jobs
  // Learned online from the runs that ended (JobOutcome::predicted, last_two): the predictor,
  // and each user's last run and the one before.
  RuntimePredictor predictor_;
  std::unordered_map<std::string, std::pair<Millis, std::optional<Millis>>> last_runs_;
};

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
    const PriorityClass priority{options_.policy.default_class};
    std::map<std::string, std::string> labels;
    if (!options_.team_label.empty() && !team.empty()) {
      labels.emplace(options_.team_label, team);
    }
    result_.jobs.push_back(JobOutcome{.id = t.id,
                                      .team = team,
                                      .user = t.user,
                                      .gpus = split.members * split.gpus_per_member,
                                      .gpu_milli = milli,
                                      .submit = t.submit,
                                      .duration = t.duration});
    const std::size_t first = live_.size();
    first_of_.push_back(first);
    const std::optional<JobId> gang =
        split.members > 1 ? std::optional(JobId(static_cast<std::int64_t>(first) + 1))
                          : std::nullopt;
    for (int rank = 0; rank < split.members; ++rank) {
      live_.push_back(Live{
          .queued = QueuedJob{.id = JobId(static_cast<std::int64_t>(live_.size()) + 1),
                              .priority = priority,
                              .submit_time = At(t.submit),
                              .request = JobRequest{.gpus = split.gpus_per_member,
                                                    .gpu_type = std::nullopt,
                                                    .node_labels = labels,
                                                    .nodes = split.members,
                                                    .gpu_milli = milli,
                                                    .gpu_memory_mib = 0},
                              .user = t.user,
                              .team = team,
                              .gang = gang,
                              .expected_duration = t.duration},
          .job = i,
          .first = first,
          .members = split.members,
          .limit =
              options_.no_departures
                  ? std::nullopt
                  : EffectiveTimeLimit(ClassPolicyFor(options_.policy, priority), std::nullopt),
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
    if (options_.fair_share) {
      team_usage_.Advance(At(now), held_by_team_);
      user_usage_.Advance(At(now), held_by_user_);
    }
    while (!events_.empty() && events_.top().at == now) {
      const Event event = events_.top();
      events_.pop();
      if (event.kind == EventKind::kEnd) {
        Finish(event);
      } else if (event.kind == EventKind::kStop) {
        StopPreempted(event);
      } else if (event.kind == EventKind::kNodeUp) {
        RepairNode(event);
      } else {
        wakes_.erase(event.at);
      }
    }
    while (next_failure < failures_.size() && failures_[next_failure].at == now) {
      FailNode(failures_[next_failure++]);
    }
    while (next_arrival < trace_.size() && trace_[next_arrival].submit == now) {
      Arrive(next_arrival++);
    }
    now_ = now;
    const bool arrivals = arrivals_;
    Pass(now);
    if (options_.no_departures && arrivals) {
      RecordInflation();
    }
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
  Predict(t);
  const JobRequest& request = head.queued.request;
  const std::int64_t milli = HeldMilliOf(request) * head.members;
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
  for (std::size_t i = first; i < first + static_cast<std::size_t>(head.members); ++i) {
    queue_.pending.push_back(live_[i].queued);  // arrivals come in id order: stays sorted
    ++unfinished_;
    if (head.members == 1) {
      planner_.Arrival(live_[i].queued.id);
    }
  }
  if (head.members > 1) {
    planner_.NeedFull();  // a gang's members are decided together (the controller's NoteArrival)
  }
  arrivals_ = true;
}

// The scheduling of one instant, by the lifecycle's pass rule (lifecycle/pass_planner.h), as
// the controller's turn runs it (Controller::Schedule): a full pass, or the instant's arrivals
// and ends told one by one; again at the same instant while a pass leaves a change the
// scheduler is not told of (a preemption's victim stops at once here and is requeued, as the
// controller's next pass would see it once the victim has exited). Then the next wake-up: a
// full pass due after incremental ones, or a running job coming of age for preemption.
void Engine::Pass(Millis now) {
  arrivals_ = false;
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
  Decisions decisions = KeepsScheduler()
                            ? scheduler_.Full(cluster_, queue_, options_.policy, At(now))
                            : Decide(cluster_, queue_, options_.policy, At(now));
  Apply(decisions, now);
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
    const Live& live = live_[IndexOf(batch.arrivals[i])];
    if (!live.running) {
      in_step = apply(scheduler_.OnArrival(live.queued, At(now)));
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
  for (const PreemptDecision& preemption : decisions.preemptions) {
    Preempt(preemption, now);
  }
  bool started = false;
  for (const StartDecision& start : decisions.starts) {
    if (live_[IndexOf(start.job)].running) {
      planner_.NeedFull();  // the scheduler's copy was stale: never start a job twice
      continue;
    }
    Start(start, now);
    started = true;
  }
  if (started) {
    std::erase_if(queue_.pending,
                  [this](const QueuedJob& q) { return live_[IndexOf(q.id)].running; });
  }
}

// A waiting job may preempt a running job once it is old enough, or (las) once it reaches its
// next queue (lifecycle/wakeups.h): the pass of that moment, armed as the controller arms it.
void Engine::ArmPass(Millis now) {
  if (const std::optional<Time> at = NextPassAt(cluster_.running, options_.policy, At(now))) {
    planner_.ArmAt(*at);
  }
}

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
                                        // the oracle figures the baseline orders read
                                        .expected_duration = length,
                                        .attained_gpu_seconds = outcome.gpu_seconds});
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

void Engine::Finish(const Event& event) {
  Live& live = live_[event.job];
  if (!live.running || live.run != event.run) {
    return;  // that run was preempted
  }
  StopRun(event.job, event.at);
  planner_.End(JobId(static_cast<std::int64_t>(event.job) + 1));
  --unfinished_;
  JobOutcome& outcome = result_.jobs[live.job];
  outcome.fate = event.timeout ? JobFate::kTimeout : JobFate::kCompleted;
  outcome.end = event.at;
  live.remaining = Millis(0);
  if (event.job == live.first) {  // a gang's members end together: one run of the trace job
    Learn(live.job, event.at - live.run_start - options_.launch_lag, event.timeout);
  }
}

RunKey Engine::KeyOf(std::size_t t) const {
  const JobOutcome& outcome = result_.jobs[t];
  return RunKey{.user = outcome.user, .team = outcome.team, .family = "", .gpus = outcome.gpus};
}

// Trace job t arrives: what the predictor and the baseline say of it, from the runs that ended
// so far (its own has not even started).
void Engine::Predict(std::size_t t) {
  JobOutcome& outcome = result_.jobs[t];
  if (const std::optional<Prediction> p = predictor_.Predict(KeyOf(t))) {
    outcome.predicted = p->expected;
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

// A preemption: with no kill grace the victim stops at once and is requeued (RequeueGang).
// With one, it is sent its first signal and holds its GPUs as `stopping` (Decide counts them as
// about to be free, as the controller's snapshot does for a job it is stopping) until the grace
// ends, when it is killed and requeued (kStop), or until its run ends first. A gang follows its
// preempted member: its other running members are stopped with it (lifecycle/gang_rules.h).
void Engine::Preempt(const PreemptDecision& preemption, Millis now) {
  const std::size_t i = IndexOf(preemption.victim);
  Live& live = live_[i];
  if (!live.running || cluster_.running[live.running_at].stopping) {
    return;
  }
  result_.jobs[live.job].preemptions += 1;
  if (options_.kill_grace.count() <= 0) {
    RequeueGang(i, now);
    return;
  }
  for (std::size_t m = live.first; m < live.first + static_cast<std::size_t>(live.members); ++m) {
    Live& member = live_[m];
    if (!member.running || cluster_.running[member.running_at].stopping) {
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
}

// A preempted run's grace is over: it is killed and goes back to the queue, unless it ended
// (its work done) during the grace.
void Engine::StopPreempted(const Event& event) {
  const Live& live = live_[event.job];
  if (live.running && live.run == event.run) {
    Requeue(event.job, event.at);
  }
}

// Job i's run stopped to be requeued (preempted, or its node failed): the lifecycle's gang rules
// (lifecycle/gang_rules.h, which the controller applies too) stop its gang's other running
// members to be requeued with it. Here a stop takes effect at once (no kill grace), so no
// member is ever "being stopped".
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
  planner_.NeedFull();  // the scheduler's copy has it stopping or running (a requeue)
  if (options_.checkpoint_interval && options_.checkpoint_interval->count() > 0) {
    const Millis interval = *options_.checkpoint_interval;
    live.remaining -= (ran / interval) * interval;  // kept: up to the last checkpoint
  } else if (options_.checkpoint_interval) {
    live.remaining -= ran;  // 0: suspended and resumed, nothing lost
  }
  live.queued.expected_duration = live.remaining;
  live.queued.attained_gpu_seconds = result_.jobs[live.job].gpu_seconds;
  // Requeued keeping its submit time, so its place (the controller does the same).
  auto at = std::lower_bound(queue_.pending.begin(),
                             queue_.pending.end(),
                             live.queued.id,
                             [](const QueuedJob& q, JobId id) { return q.id < id; });
  queue_.pending.insert(at, live.queued);
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
    result_.jobs[live_[i].job].failures += 1;
    RequeueGang(i, failure.at);
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

}  // namespace

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
  return Engine(nodes, trace, options).Run();
}

}  // namespace gf::sim

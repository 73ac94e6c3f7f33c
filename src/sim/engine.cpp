#include "sim/engine.h"

#include <algorithm>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_map>

#include "core/check.h"
#include "scheduler/ordering/baseline.h"
#include "scheduler/ordering/usage_ledger.h"
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

enum class EventKind { kEnd, kWake };

struct Event {
  Millis at{0};
  EventKind kind = EventKind::kWake;
  std::size_t job = 0;    // kEnd: the job whose run ends
  std::uint64_t run = 0;  // kEnd: that run (stale once the job was preempted)
  bool timeout = false;   // kEnd: the run ends by its time limit
  auto Key() const { return std::tie(at, kind, job, run); }
};
struct Later {
  bool operator()(const Event& a, const Event& b) const { return a.Key() > b.Key(); }
};

// GPUs held per key (team or user); a key that holds none is dropped, so the usage ledger
// iterates only holders.
void AddHeld(std::map<std::string, double>& held, const std::string& key, int gpus) {
  auto [it, inserted] = held.emplace(key, 0);
  it->second += gpus;  // whole numbers: exact in a double, so a key that holds none reads 0
  if (it->second == 0) {
    held.erase(it);
  }
}

struct Live {
  QueuedJob queued;                           // what the queue holds while it waits
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
        user_usage_(options.policy.fair_share.half_life) {
    for (const Node& node : nodes) {
      node_index_.emplace(node.name.value(), cluster_.nodes.size());
      cluster_.nodes.push_back(NodeSnapshot{.node = node, .allocated = {}});
      result_.total_gpus += static_cast<int>(node.gpus.size());
    }
  }

  SimResult Run();

 private:
  std::size_t IndexOf(JobId id) const { return static_cast<std::size_t>(id.value() - 1); }
  void Arrive(std::size_t i);
  void Pass(Millis now);
  void Start(const StartDecision& start, Millis now);
  void Preempt(const PreemptDecision& preemption, Millis now);
  void StopRun(std::size_t i, Millis now);
  void Finish(const Event& event);
  void Hold(std::size_t i, int sign);
  void PublishUsage();
  void RefreshCheckpoints(Millis now);
  void ScheduleWake(Millis now);
  void CollectNeverStarted();

  const std::vector<TraceJob>& trace_;
  const SimOptions& options_;
  ClusterSnapshot cluster_;
  Queue queue_;  // sorted by job id, which is submit order
  std::unordered_map<std::string, std::size_t> node_index_;
  std::vector<Live> live_;
  std::priority_queue<Event, std::vector<Event>, Later> events_;
  std::set<Millis> wakes_;  // wake-ups scheduled, so that one instant gets one
  std::map<int, std::optional<std::string>> infeasible_;  // by GPU count: why, or fits
  std::map<std::string, double> held_by_team_;
  std::map<std::string, double> held_by_user_;
  UsageLedger team_usage_;  // the controller's fair-share ledgers, on the virtual clock
  UsageLedger user_usage_;
  SimResult result_;
  Millis now_{0};  // the instant being simulated
};

SimResult Engine::Run() {
  live_.reserve(trace_.size());
  for (std::size_t i = 0; i < trace_.size(); ++i) {
    const TraceJob& t = trace_[i];
    std::string team = t.team;
    if (team.empty()) {
      auto member = options_.team_of_user.find(t.user);
      team = member == options_.team_of_user.end() ? "" : member->second;
    }
    const PriorityClass priority{options_.policy.default_class};
    result_.jobs.push_back(JobOutcome{.id = t.id,
                                      .team = team,
                                      .user = t.user,
                                      .gpus = t.gpus,
                                      .submit = t.submit,
                                      .duration = t.duration});
    live_.push_back(
        Live{.queued = QueuedJob{.id = JobId(static_cast<std::int64_t>(i) + 1),
                                 .priority = priority,
                                 .submit_time = At(t.submit),
                                 .request = JobRequest{.gpus = t.gpus, .gpu_type = std::nullopt},
                                 .user = t.user,
                                 .team = std::move(team),
                                 .expected_duration = t.duration},
             .limit = EffectiveTimeLimit(ClassPolicyFor(options_.policy, priority), std::nullopt),
             .remaining = t.duration});
  }
  std::size_t next_arrival = 0;
  while (next_arrival < trace_.size() || !events_.empty()) {
    Millis now = next_arrival < trace_.size() ? trace_[next_arrival].submit : Millis::max();
    if (!events_.empty()) {
      now = std::min(now, events_.top().at);
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
      } else {
        wakes_.erase(event.at);
      }
    }
    while (next_arrival < trace_.size() && trace_[next_arrival].submit == now) {
      Arrive(next_arrival++);
    }
    now_ = now;
    Pass(now);
  }
  CollectNeverStarted();
  return std::move(result_);
}

void Engine::Arrive(std::size_t i) {
  const int gpus = trace_[i].gpus;
  auto memo = infeasible_.find(gpus);
  if (memo == infeasible_.end()) {
    const Status feasible = CheckFeasible(cluster_, live_[i].queued.request);
    memo =
        infeasible_
            .emplace(gpus, feasible.ok() ? std::nullopt : std::optional(feasible.error().message))
            .first;
  }
  if (memo->second) {
    result_.jobs[i].fate = JobFate::kRejected;
    result_.jobs[i].reason = *memo->second;
    return;
  }
  queue_.pending.push_back(live_[i].queued);  // arrivals come in id order: stays sorted
}

void Engine::Pass(Millis now) {
  for (int pass = 0; pass < kMaxPassesPerInstant && !queue_.pending.empty(); ++pass) {
    if (options_.checkpoint_interval) {
      RefreshCheckpoints(now);
    }
    if (options_.fair_share) {
      PublishUsage();
    }
    const Decisions decisions = Decide(cluster_, queue_, options_.policy, At(now));
    ++result_.decide_calls;
    result_.max_queue =
        std::max(result_.max_queue, static_cast<std::int64_t>(queue_.pending.size()));
    for (const PreemptDecision& preemption : decisions.preemptions) {
      Preempt(preemption, now);
    }
    for (const StartDecision& start : decisions.starts) {
      Start(start, now);
    }
    if (!decisions.starts.empty()) {
      std::erase_if(queue_.pending,
                    [this](const QueuedJob& q) { return live_[IndexOf(q.id)].running; });
    }
    if (decisions.preemptions.empty()) {
      if (!decisions.pending.empty()) {
        ScheduleWake(now);
      }
      return;
    }
  }
}

void Engine::Start(const StartDecision& start, Millis now) {
  const std::size_t i = IndexOf(start.job);
  Live& live = live_[i];
  JobOutcome& outcome = result_.jobs[i];
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
                                        .start_time = At(now),
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
  }
  Hold(i, +1);
  if (!outcome.first_start) {
    outcome.first_start = now;
  }
  events_.push(Event{
      .at = now + length, .kind = EventKind::kEnd, .job = i, .run = live.run, .timeout = timeout});
}

void Engine::StopRun(std::size_t i, Millis now) {
  Live& live = live_[i];
  GF_CHECK(live.running);
  const RunningJob& running = cluster_.running[live.running_at];
  if (!running.allocation.gpus.empty()) {
    NodeSnapshot& node = cluster_.nodes[node_index_.at(running.allocation.node.value())];
    for (const GpuUuid& gpu : running.allocation.gpus) {
      node.allocated.erase(gpu);
    }
  }
  result_.jobs[i].gpu_seconds += Seconds(now - live.run_start) * trace_[i].gpus;
  result_.jobs[i].runs.emplace_back(live.run_start, now);
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
  JobOutcome& outcome = result_.jobs[event.job];
  outcome.fate = event.timeout ? JobFate::kTimeout : JobFate::kCompleted;
  outcome.end = event.at;
  live.remaining = Millis(0);
}

void Engine::Preempt(const PreemptDecision& preemption, Millis now) {
  const std::size_t i = IndexOf(preemption.victim);
  Live& live = live_[i];
  if (!live.running) {
    return;
  }
  const Millis ran = now - live.run_start;
  StopRun(i, now);
  if (options_.checkpoint_interval && options_.checkpoint_interval->count() > 0) {
    const Millis interval = *options_.checkpoint_interval;
    live.remaining -= (ran / interval) * interval;  // kept: up to the last checkpoint
  } else if (options_.checkpoint_interval) {
    live.remaining -= ran;  // 0: suspended and resumed, nothing lost
  }
  result_.jobs[i].preemptions += 1;
  live.queued.expected_duration = live.remaining;
  live.queued.attained_gpu_seconds = result_.jobs[i].gpu_seconds;
  // Requeued keeping its submit time, so its place (the controller does the same).
  auto at = std::lower_bound(queue_.pending.begin(),
                             queue_.pending.end(),
                             preemption.victim,
                             [](const QueuedJob& q, JobId id) { return q.id < id; });
  queue_.pending.insert(at, live.queued);
}

void Engine::Hold(std::size_t i, int sign) {
  const int gpus = sign * trace_[i].gpus;
  AddHeld(held_by_team_, live_[i].queued.team, gpus);
  AddHeld(held_by_user_, live_[i].queued.user, gpus);
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

// The controller's NextPreemptable: a waiting job may be planning to preempt a job that has
// not yet run the minimum run time, so a pass is due when the youngest such job comes of age.
// Under 2D-LAS, likewise when a running job reaches its next queue (NextRankChange).
void Engine::ScheduleWake(Millis now) {
  if (!options_.policy.preemption.enabled) {
    return;
  }
  const Millis min_run = options_.policy.preemption.min_run_time;
  std::optional<Millis> next;
  const auto consider = [&](Millis at) {
    if (at > now && (!next || at < *next)) {
      next = at;
    }
  };
  for (const RunningJob& running : cluster_.running) {
    consider(running.start_time.time_since_epoch() + min_run);
    if (const std::optional<Time> change = NextRankChange(running, options_.policy, At(now))) {
      consider(change->time_since_epoch());
    }
  }
  if (next && wakes_.insert(*next).second) {
    events_.push(Event{.at = *next, .kind = EventKind::kWake});
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
    JobOutcome& outcome = result_.jobs[IndexOf(pending.job)];
    outcome.fate = JobFate::kNeverStarted;
    outcome.reason = pending.reason;
  }
}

}  // namespace

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

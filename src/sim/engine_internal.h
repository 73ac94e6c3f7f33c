// The discrete-event engine's insides (engine.h), shared by the files that define it:
// engine.cpp (the run loop, arrivals, the passes, wake-ups) and engine_runs.cpp (a run's start,
// end, preemption and requeue, node failures, inflation). Not for use outside src/sim.
#pragma once

#include <algorithm>
#include <cmath>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_map>

#include "core/check.h"
#include "lifecycle/dependencies.h"
#include "lifecycle/job_book.h"
#include "lifecycle/pass_planner.h"
#include "lifecycle/wakeups.h"
#include "predict/runtime_predictor.h"
#include "scheduler/classes.h"
#include "scheduler/incremental.h"
#include "scheduler/ordering/usage_ledger.h"
#include "scheduler/quota/ledger.h"
#include "scheduler/scheduler.h"
#include "sim/engine.h"

namespace gf::sim::engine_detail {

// The virtual clock starts at the epoch: trace time t is Time(t).
inline Time At(Millis t) {
  return Time(t);
}

inline double Seconds(Millis d) {
  return std::chrono::duration<double>(d).count();
}

// Bounds the passes at one instant (each after preemptions): preemption needs a victim that ran
// min_run_time, so with a positive minimum the second pass already starts what the first made
// room for; with min_run_time = 0 this stops a pathological ping-pong.
constexpr int kMaxPassesPerInstant = 100;

// The exit status a run killed by SIGKILL reports (128 + 9, as a shell tells it).
constexpr int kKilledExitCode = 137;

// kEnd: a run's work is done (its processes exit 0). kDeadline: a run reaches its time limit
// (the job book stops it). kStop: the kill grace of a stop is over (SimOptions::kill_grace; a
// preemption, a time limit, a gang's requeue): SIGKILL ends the run, unless it ended before.
enum class EventKind { kEnd, kDeadline, kStop, kWake, kNodeUp };

struct Event {
  Millis at{0};
  EventKind kind = EventKind::kWake;
  std::size_t job = 0;    // kEnd, kDeadline, kStop: the job's index; kNodeUp: the node
  std::uint64_t run = 0;  // which run of the job (stale once that run ended)
  auto Key() const { return std::tie(at, kind, job, run); }
};
struct Later {
  bool operator()(const Event& a, const Event& b) const { return a.Key() > b.Key(); }
};

// GPUs held per key (team or user); a key that holds none is dropped, so the usage ledger
// iterates only holders. Shares are counted in milli-GPUs and rounded back, so a key that
// holds none reads exactly 0.
inline void AddHeld(std::map<std::string, double>& held,
                    const std::string& key,
                    std::int64_t milli) {
  auto [it, inserted] = held.emplace(key, 0);
  const std::int64_t sum = std::llround(it->second * kWholeGpuMilli) + milli;
  it->second = static_cast<double>(sum) / kWholeGpuMilli;
  if (sum == 0) {
    held.erase(it);
  }
}

// The scheduler is kept between passes where its copy of the state can follow the engine's
// event by event, as the controller's does: the stock order (a baseline order reads oracle
// figures of running jobs that the product never has, so its copy lacks them), no checkpoints
// (they move running jobs' state at every instant), and jobs that leave (no_departures drops
// the jobs a pass leaves, which the copy would keep).
inline bool SchedulerKept(const SimOptions& options) {
  return !options.full_passes_only && !options.no_departures && !options.checkpoint_interval &&
         options.policy.ordering.order == QueueOrder::kPriority;
}

// Which waiting jobs a full pass lists: a replay reads the reasons of none but those that
// never start (CollectNeverStarted decides again) and, with no_departures, those it drops; it
// reads estimated starts only at arrival, which a pass gives only to jobs it looked at (a
// reservation) — so a deep queue behind a full cluster need not cost a reason per job per pass.
inline Listing FullListing(const SimOptions& options) {
  return options.no_departures ? Listing::kEveryJob : Listing::kLookedAt;
}

// One per scheduler job: a trace job, or each member of the gang a trace job larger than the
// largest node runs as (SplitAcrossNodes), ids consecutive. The outcome is the trace job's.
// From its arrival the job's state is the job book's (JobOf); what is kept here is what only a
// simulation knows: the work it has left, and where its run is on the virtual cluster.
struct Live {
  QueuedJob queued;       // its request, owner and class, as the trace gives them
  std::size_t job = 0;    // the trace job (index into trace and result)
  std::size_t first = 0;  // its first member's index (itself if no gang)
  int members = 1;
  Millis remaining{0};  // work still to do
  Millis run_start{0};
  std::uint64_t run = 0;       // counts starts
  bool running = false;        // its run holds virtual GPUs (from its start to OnReleasing)
  std::size_t running_at = 0;  // index in ClusterSnapshot::running while running
};

// The engine is the job book's shell, as the controller is (lifecycle/job_book.h): it applies
// the book's kill orders on the virtual clock, and its listener frees the virtual GPUs, counts a
// run's end and puts a requeued job back in the queue.
class Engine : private JobBookListener {
 public:
  Engine(const std::vector<Node>& nodes,
         const std::vector<TraceJob>& trace,
         const SimOptions& options)
      : trace_(trace),
        options_(options),
        dependencies_([this](JobId id) { return NameOf(id); }),
        team_usage_(options.policy.fair_share.half_life),
        user_usage_(options.policy.fair_share.half_life),
        scheduler_(IncrementalOptions{.reuse_within = options.passes.arrival_reuse,
                                      .full_listing = FullListing(options)}),
        planner_(options.passes),
        book_(
            JobBookOptions{
                .policy = options.policy,
                .kill_grace = std::chrono::duration_cast<std::chrono::seconds>(options.kill_grace),
                .journal = false},
            [this] { return At(now_); },
            *this) {
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
  Result<std::vector<Dependency>> UnmetDependencies(std::size_t t) const;
  std::optional<gf::JobOutcome> EndOf(std::size_t t) const;
  void ResolveDependents(std::size_t t);
  JobId DependencyId(std::size_t t) const { return live_[first_of_[t]].queued.id; }
  // "job 'j12'": a trace job, named by its trace id, from any of its scheduler jobs' ids.
  std::string NameOf(JobId id) const { return "job '" + trace_[live_[IndexOf(id)].job].id + "'"; }
  void Pass(Millis now);
  bool KeepsScheduler() const { return keeps_scheduler_; }
  Decisions FullPass(Millis now);
  void IncrementalPass(Millis now);
  void Apply(const Decisions& decisions, Millis now);
  // Scheduler job i, which arrived at this instant, waited at its arrival if the pass that
  // decided it did not start it: also when that pass, a full one, did not list it (Listing::
  // kLookedAt; its estimated start, which only a listed job can have, is Apply's).
  void NoteWaitedAtArrival(std::size_t i);
  void ArmPass(Millis now);
  Job JobOf(std::size_t i, const std::optional<Prediction>& prediction) const;
  QueuedJob QueuedOf(std::size_t i) const;
  Job& BookJob(std::size_t i) { return book_.At(live_[i].queued.id); }
  void Start(std::size_t i, Millis now);
  void Kill(const KillOrder& kill);
  void SettleGangs();
  void AdmitGangs();
  void OnEvent(const Event& event);
  bool CurrentRun(const Event& event) const;
  void Exit(std::size_t i, int exit_code, const std::string& how);
  void Enqueue(const QueuedJob& job);
  void FailNode(const NodeFailure& failure);
  void RepairNode(const Event& event);
  void StopRun(std::size_t i, Millis now);
  // JobBookListener: a run gives its virtual GPUs back, a job ends, a job is requeued.
  void OnReleasing(Job& job) override;
  void OnEnded(const Job& job) override;
  void OnRequeueing(const Job& job) override;
  RunKey KeyOf(std::size_t t) const;
  std::optional<Prediction> Predict(std::size_t t);
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
  std::unordered_map<std::string, std::size_t> index_of_id_;  // trace id → trace job
  // The trace's dependencies (TraceJob::after), by the controller's rules (lifecycle/
  // dependencies.h): a trace job is known to the graph by its first scheduler job's id
  // (DependencyId). A job that waits for one is held out of the queue, as the controller's
  // admission holds it back from its passes (lifecycle/admission.h), until its dependencies are
  // met, or is cancelled when one breaks.
  DependencyGraph dependencies_;
  std::set<std::size_t> held_;  // trace jobs that wait for a dependency
  // Requeued gangs (their first member's index) whose members wait out of the queue until none
  // of them holds GPUs (AdmitGangs).
  std::set<std::size_t> gangs_waiting_;
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
  std::vector<std::size_t> arrived_now_;  // the scheduler jobs queued at this instant
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
  // The jobs from their arrival to their end, and every change of their state: the controller's
  // job book (lifecycle/job_book.h), so that a run starts, ends, is stopped with its kill grace,
  // times out or is requeued with its gang as in the product. Its clock is the virtual one; it
  // keeps no journal (nothing is stored).
  JobBook book_;
};

}  // namespace gf::sim::engine_detail

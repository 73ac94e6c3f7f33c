// The controller's scheduling step (controller.h): what the scheduler is shown, which pass a
// turn runs, and acting on its decisions.
//
// Which pass runs is the lifecycle's rule (lifecycle/pass_planner.h), the one `gpufleet sim`
// replays with: a full pass gives the IncrementalScheduler a fresh snapshot (nodes, running
// jobs, usage) and the whole queue; an incremental pass feeds it the turn's arrivals and ends
// one by one, at a cost that does not grow with the queue (issue #6: acknowledged
// submissions per second). What is left here is the controller's side of it: which queue
// changes are more than one event (NoteArrival, NoteEnd), the snapshot and queue, and applying
// the decisions.
#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <utility>

#include <spdlog/spdlog.h>

#include "controller/controller.h"
#include "lifecycle/admission.h"
#include "lifecycle/wakeups.h"

namespace gf {
namespace {

// Counts a pass and its wall time (steady clock: the controller's clock may be a test's).
class PassTimer {
 public:
  explicit PassTimer(PassStats& stats) : stats_(stats) {}
  ~PassTimer() {
    stats_.count += 1;
    stats_.seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  PassTimer(const PassTimer&) = delete;
  PassTimer& operator=(const PassTimer&) = delete;

 private:
  PassStats& stats_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

std::string GpuIndices(const Node& node, const std::vector<GpuUuid>& uuids) {
  std::string out;
  for (const auto& uuid : uuids) {
    for (const auto& gpu : node.gpus) {
      if (gpu.uuid == uuid) {
        out += (out.empty() ? "" : ",") + std::to_string(gpu.index);
      }
    }
  }
  return out.empty() ? "none" : out;
}

}  // namespace

void Controller::NoteArrival(const Job& job) {
  // A job that waits for another job, or an array task (its array's max_running may hold it
  // back), is not simply a new entry in the queue: the full pass sorts out what HeldBack says.
  if (job.spec.array.has_value() || job.spec.gang.has_value() || dependencies_.Waiting(job.id)) {
    passes_.NeedFull();
    return;
  }
  passes_.Arrival(job.id);
}

void Controller::NoteEnd(const Job& job) {
  if (job.spec.array.has_value() && job.spec.array->max_running) {
    passes_.NeedFull();  // a task held back by the array's limit may run now
    return;
  }
  passes_.End(job.id);
}

void Controller::Schedule() {
  ApplyWaitingModes();
  const Time now = clock_.Now();
  const auto budgets_crossed = [&] {
    return usage_.HasBudgets() && usage_.BudgetsCrossed(RunningSpans(), now);
  };
  switch (passes_.Plan(now, budgets_crossed)) {
    case PassKind::kFull:
      FullPass();
      break;
    case PassKind::kIncremental:
      IncrementalPass();
      break;
    case PassKind::kNone:
      break;
  }
}

void Controller::FullPass() {
  const PassTimer timer(counters_.full_passes);
  passes_.StartFull();
  if (usage_.HasBudgets()) {
    usage_.NoteFullPass(RunningSpans(), clock_.Now());
  }
  // Even with nothing queued, the scheduler takes the state: the next arrival is decided on it.
  Decisions decisions =
      scheduler_.Full(Snapshot(),
                      PendingQueue(HeldBack(jobs_.Active(), dependencies_.Graph())),
                      options_.policy,
                      clock_.Now());
  if (!decisions.pending.empty()) {
    if (const std::optional<Time> at = NextPassAt()) {
      passes_.ArmAt(*at);
    }
  }
  ApplyDecisions(std::move(decisions));
  // The jobs held back get their reasons after this pass's starts, so that an array's count
  // of running tasks includes the ones just started. Computed again on the same jobs: what
  // the pass started leaves the same tasks over their array's limit.
  for (const auto& [id, reason] : HeldBack(jobs_.Active(), dependencies_.Graph())) {
    Job& job = jobs_.At(id);
    job.reason = reason.text;  // in memory only, like the reasons Decide gives
    job.pending_reason = reason;
    job.estimated_start.reset();
  }
}

void Controller::IncrementalPass() {
  const Time now = clock_.Now();
  const IncrementalBatch batch = passes_.StartIncremental();
  bool waiting = false;
  const auto apply = [&](IncrementalResult result) {
    waiting = waiting || !result.decisions.pending.empty();
    ApplyDecisions(std::move(result.decisions));
    // A decision that could not be applied as given (see ApplyDecisions) means the scheduler's
    // copy no longer matches: the full pass below resyncs it.
    return !passes_.FullNeeded();
  };
  bool in_step = true;
  if (!batch.ends.empty()) {
    const PassTimer timer(counters_.incremental_passes);
    in_step = apply(scheduler_.OnCompletions(batch.ends, now));
  }
  for (std::size_t i = 0; in_step && i < batch.arrivals.size(); ++i) {
    auto it = jobs_.Active().find(batch.arrivals[i]);
    if (it == jobs_.Active().end() || it->second.state != JobState::kPending) {
      continue;  // it left in the same turn (cancelled): its end event says nothing either
    }
    const PassTimer timer(counters_.incremental_passes);
    in_step = apply(scheduler_.OnArrival(AsQueued(it->second), now));
  }
  if (!in_step) {
    FullPass();
    return;
  }
  passes_.IncrementalRan(now, scheduler_.Waiting());
  if (waiting && !passes_.ArmedAt()) {
    // A job waits that a running job may have to make way for once old enough: the full
    // pass of that moment decides the preemption.
    if (const std::optional<Time> at = NextPassAt()) {
      passes_.ArmAt(*at);
    }
  }
}

QueuedJob Controller::AsQueued(const Job& job) {
  return QueuedJob{.id = job.id,
                   .priority = job.spec.priority,
                   .submit_time = job.submit_time,
                   .request = job.spec.request,
                   .user = job.owner.user,
                   .team = job.spec.team,
                   .time_limit = job.spec.time_limit,
                   .budget_approved = job.budget_approved,
                   .gang = job.spec.gang ? std::optional(job.spec.gang->gang_job) : std::nullopt,
                   .estimate = EstimateOf(job)};
}

Queue Controller::PendingQueue(const std::map<JobId, PendingReason>& held) const {
  Queue queue;
  for (const auto& [id, job] : jobs_.Active()) {
    if (job.state == JobState::kPending && !held.contains(id)) {
      queue.pending.push_back(AsQueued(job));
    }
  }
  return queue;
}

std::vector<RunningJob> Controller::RunningJobs() const {
  std::vector<RunningJob> out;
  out.reserve(jobs_.Holding().size());
  for (const JobId id : jobs_.Holding()) {
    const Job& job = jobs_.At(id);
    out.push_back(RunningJob{
        .id = id,
        .team = job.spec.team,
        .user = job.owner.user,
        .priority = job.spec.priority,
        .allocation = *job.allocation,
        // A STARTING job has run for no time yet: it is as young as a job can be.
        .start_time = job.start_time.value_or(clock_.Now()),
        .time_limit = jobs_.EffectiveLimit(job),
        .preemptible = job.preemptible,
        .last_checkpoint = job.last_checkpoint,  // gpufleet checkpoint, since this start
        .stopping = jobs_.Stops().Stopping(id),
        .estimate = EstimateOf(job),
    });
  }
  return out;
}

std::map<GpuUuid, GpuLoad> Controller::GpuLoads(const Node& node) const {
  std::map<GpuUuid, GpuLoad> loads;
  for (const Gpu& gpu : node.gpus) {
    const std::optional<GpuView> view = telemetry_->Find(gpu.uuid);
    if (view.has_value() && view->sample.has_value() && !view->sample->lost) {
      loads[gpu.uuid] = GpuLoad{.util_pct = view->sample->util_gpu_pct.value_or(0),
                                .memory_used_mib = view->sample->memory_used_mib};
    }
  }
  return loads;
}

ClusterSnapshot Controller::NodesSnapshot(std::map<NodeId, std::set<GpuUuid>> allocated,
                                          bool loads) const {
  if (!loads) {
    return nodes_.Snapshot(std::move(allocated), nullptr);
  }
  return nodes_.Snapshot(std::move(allocated), [this](const Node& node) { return GpuLoads(node); });
}

ClusterSnapshot Controller::Snapshot() const {
  std::map<NodeId, std::set<GpuUuid>> allocated;
  for (const JobId id : jobs_.Holding()) {
    const Job& job = jobs_.At(id);
    allocated[job.allocation->node].insert(job.allocation->gpus.begin(),
                                           job.allocation->gpus.end());
  }
  ClusterSnapshot snapshot = NodesSnapshot(std::move(allocated), /*loads=*/true);
  snapshot.running = RunningJobs();
  PassUsage usage = usage_.ForPass(RunningSpans(), clock_.Now());
  snapshot.team_usage = std::move(usage.teams);
  snapshot.user_decayed_gpu_seconds = std::move(usage.users);
  return snapshot;
}

// Only RUNNING jobs count: a STARTING job's clock starts when it runs (OnJobStarted arms the
// pass of its minimum run time then).
std::optional<Time> Controller::NextPassAt() const {
  std::vector<RunningJob> running = RunningJobs();
  std::erase_if(
      running, [&](const RunningJob& job) { return jobs_.At(job.id).state != JobState::kRunning; });
  return gf::NextPassAt(running, options_.policy, clock_.Now());
}

void Controller::ApplyDecisions(Decisions decisions) {
  std::vector<JobId> started;
  for (const PreemptDecision& preemption : decisions.preemptions) {
    auto victim = jobs_.Active().find(preemption.victim);
    if (victim != jobs_.Active().end() && HoldsGpus(victim->second) &&
        !jobs_.Stops().Stopping(preemption.victim)) {
      Preempt(victim->second, preemption);
    } else {
      passes_.NeedFull();  // the scheduler thought it running: its copy is stale
    }
  }
  for (auto& start : decisions.starts) {
    auto it = jobs_.Active().find(start.job);
    if (it == jobs_.Active().end() || it->second.state != JobState::kPending) {
      // Only an incremental pass on a stale copy can propose this; never start a job twice.
      spdlog::warn(
          "controller: the scheduler started job {}, which is not pending; "
          "deciding again with a full pass",
          start.job.value());
      passes_.NeedFull();
      continue;
    }
    Job& job = it->second;
    const NodeEntry& entry = nodes_.At(start.allocation.node);
    jobs_.Start(job,
                start.allocation,
                start.preemptible,
                "starting on " + start.allocation.node.value() + " GPUs " +
                    GpuIndices(entry.node, start.allocation.gpus) +
                    (start.allocation.gpu_milli < kWholeGpuMilli
                         ? " (share " + GpuAmountText(start.allocation.gpu_milli) + ", " +
                               std::to_string(start.allocation.gpu_memory_mib) + " MiB)"
                         : "") +
                    (start.preemptible ? " (borrowed: preemptible)" : ""));
    AssignGpus(job);
    CountWait(job);
    started.push_back(job.id);
  }
  // Launched once every start is applied: a gang member's environment names all its members'
  // nodes.
  for (const JobId id : started) {
    const Job& job = jobs_.At(id);
    after_commit_.emplace_back([agent = nodes_.At(job.allocation->node).agent,
                                launched = LaunchOf(job)] { agent->Launch(launched); });
  }
  // Pending reasons and estimates live in memory only: they are recomputed on every pass (and
  // after a restart), and every read of a pending job is served from jobs_.Active(). Persisting
  // them would rewrite every waiting job whenever the head of the queue changes.
  for (auto& pending : decisions.pending) {
    auto it = jobs_.Active().find(pending.job);
    if (it == jobs_.Active().end()) {
      continue;
    }
    Job& job = it->second;
    const std::string* requeued = jobs_.Stops().RequeueCause(pending.job);
    job.reason = requeued == nullptr ? pending.reason.text : *requeued + "; " + pending.reason.text;
    job.pending_reason = std::move(pending.reason);
    job.estimated_start = pending.estimated_start;
  }
}

Job Controller::LaunchOf(const Job& job) const {
  Job launched = job;
  if (job.spec.gang.has_value()) {
    AddGangEnvironment(launched);
  }
  if (job.allocation->gpu_milli < kWholeGpuMilli) {
    AddShareEnvironment(launched, nodes_.At(job.allocation->node).node);
  }
  return launched;
}

}  // namespace gf

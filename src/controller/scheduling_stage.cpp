// The controller's scheduling step (scheduling_stage.h): what the scheduler is shown, which
// pass a turn runs, and its decisions applied to the job book.
//
// Which pass runs is the lifecycle's rule (lifecycle/pass_planner.h), the one `gpufleet sim`
// replays with: a full pass gives the IncrementalScheduler a fresh snapshot (nodes, running
// jobs, usage) and the whole queue; an incremental pass feeds it the turn's arrivals and ends
// one by one, at a cost that does not grow with the queue (issue #6: acknowledged
// submissions per second).
#include "controller/scheduling_stage.h"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <utility>

#include <spdlog/spdlog.h>

#include "controller/run_time_book.h"
#include "lifecycle/admission.h"
#include "lifecycle/apply_decisions.h"
#include "lifecycle/job_views.h"
#include "lifecycle/wakeups.h"
#include "model/job_run.h"
#include "scheduler/explain.h"

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

// The node's indexes of `uuids`, in their order.
std::vector<int> GpuIndices(const Node& node, const std::vector<GpuUuid>& uuids) {
  std::vector<int> out;
  for (const auto& uuid : uuids) {
    for (const auto& gpu : node.gpus) {
      if (gpu.uuid == uuid) {
        out.push_back(gpu.index);
      }
    }
  }
  return out;
}

}  // namespace

SchedulingStage::SchedulingStage(const PolicyConfig& policy,
                                 const PassRules& rules,
                                 SchedulingInputs inputs)
    : policy_(policy),
      in_(std::move(inputs)),
      scheduler_(IncrementalOptions{.reuse_within = rules.arrival_reuse}),
      passes_(rules) {}

void SchedulingStage::NoteArrival(const Job& job, bool waits) {
  // A job that waits for another job, or an array task (its array's max_running may hold it
  // back), is not simply a new entry in the queue: the full pass sorts out what HeldBack says.
  if (job.spec.array.has_value() || job.spec.gang.has_value() || waits) {
    passes_.NeedFull();
    return;
  }
  passes_.Arrival(job.id);
}

void SchedulingStage::NoteEnd(const Job& job) {
  if (job.spec.array.has_value() && job.spec.array->max_running) {
    passes_.NeedFull();  // a task held back by the array's limit may run now
    return;
  }
  passes_.End(job.id);
}

PassOutcome SchedulingStage::Run(JobBook& jobs, Time now) {
  PassOutcome outcome;
  const auto budgets_crossed = [&] {
    return in_.usage.HasBudgets() && in_.usage.BudgetsCrossed(in_.running_spans(), now);
  };
  switch (passes_.Plan(now, budgets_crossed)) {
    case PassKind::kFull:
      FullPass(jobs, now, outcome);
      break;
    case PassKind::kIncremental:
      IncrementalPass(jobs, now, outcome);
      break;
    case PassKind::kNone:
      return outcome;
  }
  // A copy of the ids (a memcpy's cost, even for a deep queue); a job that leaves the queue in a
  // turn without a pass is left out when read (ClusterReader::QueueOrder), not here, so that the
  // state thread does no per-job lookups.
  order_ = std::make_shared<const std::vector<JobId>>(scheduler_.Order());
  return outcome;
}

void SchedulingStage::FullPass(JobBook& jobs, Time now, PassOutcome& outcome) {
  const PassTimer timer(in_.full_passes);
  passes_.StartFull();
  // Once per pass: each span looks up its job's usage and GPU models.
  const std::vector<RunningSpan> spans = in_.running_spans();
  if (in_.usage.HasBudgets()) {
    in_.usage.NoteFullPass(spans, now);
  }
  // Even with nothing queued, the scheduler takes the state: the next arrival is decided on it.
  Decisions decisions =
      scheduler_.Full(Snapshot(jobs, spans, now),
                      PendingQueue(jobs, HeldBack(jobs.Active(), in_.dependencies.Graph())),
                      policy_,
                      now);
  if (!decisions.pending.empty()) {
    if (const std::optional<Time> at = NextPassAt(jobs, now)) {
      passes_.ArmAt(*at);
    }
  }
  Apply(jobs, std::move(decisions), outcome);
  // The jobs held back get their reasons after this pass's starts, so that an array's count
  // of running tasks includes the ones just started. Computed again on the same jobs: what
  // the pass started leaves the same tasks over their array's limit.
  for (const auto& [id, reason] : HeldBack(jobs.Active(), in_.dependencies.Graph())) {
    Job& job = jobs.At(id);
    job.reason = reason.text;  // in memory only, like the reasons Decide gives
    job.pending_reason = reason;
    job.estimated_start.reset();
    job.start_estimate.reset();
  }
}

void SchedulingStage::IncrementalPass(JobBook& jobs, Time now, PassOutcome& outcome) {
  const IncrementalBatch batch = passes_.StartIncremental();
  bool waiting = false;
  const auto apply = [&](IncrementalResult result) {
    waiting = waiting || !result.decisions.pending.empty();
    Apply(jobs, std::move(result.decisions), outcome);
    // A decision that could not be applied as given (see Apply) means the scheduler's copy no
    // longer matches: the full pass below resyncs it.
    return !passes_.FullNeeded();
  };
  bool in_step = true;
  if (!batch.ends.empty()) {
    const PassTimer timer(in_.incremental_passes);
    in_step = apply(scheduler_.OnCompletions(batch.ends, now));
  }
  for (std::size_t i = 0; in_step && i < batch.arrivals.size(); ++i) {
    const Job* job = jobs.Find(batch.arrivals[i]);
    if (job == nullptr || job->state != JobState::kPending) {
      continue;  // it left in the same turn (cancelled): its end event says nothing either
    }
    const PassTimer timer(in_.incremental_passes);
    in_step = apply(scheduler_.OnArrival(AsQueued(jobs, *job), now));
  }
  if (!in_step) {
    FullPass(jobs, now, outcome);
    return;
  }
  passes_.IncrementalRan(now, scheduler_.Waiting());
  if (waiting && !passes_.ArmedAt()) {
    // A job waits that a running job may have to make way for once old enough: the full
    // pass of that moment decides the preemption.
    if (const std::optional<Time> at = NextPassAt(jobs, now)) {
      passes_.ArmAt(*at);
    }
  }
}

Queue SchedulingStage::PendingQueue(const JobBook& jobs,
                                    const std::map<JobId, PendingReason>& held) const {
  Queue queue;
  for (const auto& [id, job] : jobs.Active()) {
    if (job.state == JobState::kPending && !held.contains(id)) {
      queue.pending.push_back(AsQueued(jobs, job));
    }
  }
  return queue;
}

std::vector<RunningJob> SchedulingStage::RunningJobs(const JobBook& jobs, Time now) const {
  std::vector<RunningJob> out;
  out.reserve(jobs.Holding().size());
  for (const JobId id : jobs.Holding()) {
    out.push_back(AsRunning(jobs, jobs.At(id), now));
  }
  return out;
}

std::map<GpuUuid, GpuLoad> SchedulingStage::GpuLoads(const Node& node) const {
  std::map<GpuUuid, GpuLoad> loads;
  for (const Gpu& gpu : node.gpus) {
    const std::optional<GpuView> view = in_.telemetry.Find(gpu.uuid);
    if (view.has_value() && view->sample.has_value() && !view->sample->lost) {
      loads[gpu.uuid] = GpuLoad{.util_pct = view->sample->util_gpu_pct.value_or(0),
                                .memory_used_mib = view->sample->memory_used_mib};
    }
  }
  return loads;
}

ClusterSnapshot SchedulingStage::Snapshot(const JobBook& jobs,
                                          const std::vector<RunningSpan>& spans,
                                          Time now) const {
  std::map<NodeId, std::set<GpuUuid>> allocated;
  for (const JobId id : jobs.Holding()) {
    const Job& job = jobs.At(id);
    allocated[job.allocation->node].insert(job.allocation->gpus.begin(),
                                           job.allocation->gpus.end());
  }
  ClusterSnapshot snapshot =
      in_.nodes.Snapshot(std::move(allocated), [this](const Node& node) { return GpuLoads(node); });
  snapshot.running = RunningJobs(jobs, now);
  PassUsage usage = in_.usage.ForPass(spans, now);
  snapshot.team_usage = std::move(usage.teams);
  snapshot.user_decayed_gpu_seconds = std::move(usage.users);
  return snapshot;
}

// Only RUNNING jobs count: a STARTING job's clock starts when it runs (OnJobStarted arms the
// pass of its minimum run time then).
std::optional<Time> SchedulingStage::NextPassAt(const JobBook& jobs, Time now) const {
  std::vector<RunningJob> running = RunningJobs(jobs, now);
  std::erase_if(running,
                [&](const RunningJob& job) { return jobs.At(job.id).state != JobState::kRunning; });
  return gf::NextPassAt(running, policy_, now);
}

void SchedulingStage::Apply(JobBook& jobs, Decisions decisions, PassOutcome& outcome) {
  AppliedDecisions applied = ApplyDecisions(
      jobs, std::move(decisions.preemptions), decisions.starts, [&](const StartDecision& start) {
        const NodeEntry& entry = in_.nodes.At(start.allocation.node);
        return StartingText(start.allocation.node.value(),
                            GpuIndices(entry.node, start.allocation.gpus)) +
               (start.allocation.gpu_milli < kWholeGpuMilli
                    ? " (share " + GpuAmountText(start.allocation.gpu_milli) + ", " +
                          std::to_string(start.allocation.gpu_memory_mib) + " MiB)"
                    : "") +
               (start.preemptible ? " (borrowed: preemptible)" : "");
      });
  for (const JobId id : applied.stale_starts) {
    // Only an incremental pass on a stale copy can propose this.
    spdlog::warn(
        "controller: the scheduler started job {}, which is not pending; "
        "deciding again with a full pass",
        id.value());
  }
  if (applied.stale) {
    passes_.NeedFull();
  }
  // One pass may apply several calls' decisions (an incremental pass's arrivals, one by one).
  std::move(
      applied.preempted.begin(), applied.preempted.end(), std::back_inserter(outcome.preempted));
  outcome.started.insert(outcome.started.end(), applied.started.begin(), applied.started.end());
  // Pending reasons and estimates live in memory only: every read of a pending job is served
  // from the book (NotePending).
  NotePending(jobs, std::move(decisions.pending));
}

// The snapshot and queue a pass would see now, so the explanation is the next pass's decision.
Result<Explanation> SchedulingStage::Explain(const JobBook& jobs, const Job& job, Time now) const {
  const std::string name = "job " + std::to_string(job.id.value());
  const std::map<JobId, PendingReason> held = HeldBack(jobs.Active(), in_.dependencies.Graph());
  if (auto h = held.find(job.id); h != held.end()) {
    return FailedPrecondition(name + " is not queued yet: " + h->second.text);
  }
  Result<Explanation> explanation = gf::Explain(
      Snapshot(jobs, in_.running_spans(), now), PendingQueue(jobs, held), policy_, now, job.id);
  if (!explanation.ok() && explanation.error().code == ErrorCode::kNotFound) {
    // Neither queued nor holding GPUs: between states (e.g. preempted, not yet requeued).
    return FailedPrecondition(name + " is " + std::string(ToString(job.state)) +
                              ": nothing to explain until it is queued or running again");
  }
  return explanation;
}

}  // namespace gf

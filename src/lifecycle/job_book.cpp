#include "lifecycle/job_book.h"

#include <algorithm>
#include <utility>

#include "core/check.h"
#include "core/duration.h"
#include "lifecycle/gang_rules.h"
#include "model/job_run.h"

namespace gf {

JobBook::JobBook(JobBookOptions options, std::function<Time()> now, JobBookListener& listener)
    : options_(std::move(options)), now_(std::move(now)), listener_(listener) {}

// ---- the table ------------------------------------------------------------------------------

void JobBook::Restore(std::vector<Job> jobs) {
  for (Job& job : jobs) {
    if (HoldsGpus(job)) {
      holding_.insert(job.id);
    }
    const JobId id = job.id;
    active_.insert_or_assign(id, std::move(job));
  }
}

void JobBook::RestoreEarlierRuns(const std::map<JobId, double>& gpu_seconds) {
  for (const auto& [id, seconds] : gpu_seconds) {
    if (active_.contains(id)) {
      earlier_runs_[id.value()] = seconds;
    }
  }
}

double JobBook::EarlierRunsGpuSeconds(JobId id) const {
  const auto it = earlier_runs_.find(id.value());
  return it == earlier_runs_.end() ? 0 : it->second;
}

void JobBook::Add(Job job) {
  GF_CHECK(!IsTerminal(job.state));
  Write(job);
  if (HoldsGpus(job)) {
    holding_.insert(job.id);
  }
  const JobId id = job.id;
  active_.insert_or_assign(id, std::move(job));
}

Job* JobBook::Find(JobId id) {
  const auto it = active_.find(id);
  return it == active_.end() ? nullptr : &it->second;
}

const Job* JobBook::Find(JobId id) const {
  const auto it = active_.find(id);
  return it == active_.end() ? nullptr : &it->second;
}

Job& JobBook::At(JobId id) {
  return active_.at(id);
}

const Job& JobBook::At(JobId id) const {
  return active_.at(id);
}

void JobBook::EraseEnded() {
  for (const JobId id : ended_) {
    stops_.Forget(id);
    earlier_runs_.erase(id.value());
    active_.erase(id);
  }
  ended_.clear();
}

// ---- the journal ----------------------------------------------------------------------------

// Indexed, not searched: one turn may write thousands of jobs (an array's tasks).
void JobBook::Write(const Job& job) {
  if (!options_.journal) {
    return;
  }
  const auto [it, added] = journal_slot_.try_emplace(job.id.value(), journal_.jobs.size());
  if (added) {
    journal_.jobs.push_back(job);
  } else {
    journal_.jobs[it->second] = job;
  }
}

void JobBook::Record(std::optional<JobId> job,
                     std::string kind,
                     std::string actor,
                     std::string message) {
  if (!options_.journal) {
    return;
  }
  Event e;
  e.time = now_();
  e.job = job;
  e.kind = std::move(kind);
  e.actor = std::move(actor);
  e.message = std::move(message);
  journal_.events.push_back(std::move(e));
}

Journal JobBook::TakeJournal() {
  journal_slot_.clear();
  return std::exchange(journal_, Journal{});
}

std::vector<KillOrder> JobBook::TakeKills() {
  return std::exchange(kills_, {});
}

// ---- a job's life ---------------------------------------------------------------------------

void JobBook::Transition(Job& job,
                         JobState to,
                         const std::string& cause,
                         const std::string& actor) {
  GF_CHECK(CanTransition(job.state, to));
  const JobState from = job.state;
  const bool ended = IsTerminal(to);
  job.state = to;
  job.reason = cause;
  job.pending_reason.reset();  // it described the state the job leaves
  if (ended) {
    if (!job.end_time) {
      job.end_time = now_();
    }
    ended_.push_back(job.id);
  }
  if ((from == JobState::kStarting || from == JobState::kRunning) && to != JobState::kRunning) {
    // The run's GPU time, as its usage record counts it (RunRecord; a STARTING job ran for none).
    if (job.allocation && job.start_time) {
      const Time end = job.end_time.value_or(now_());
      const auto ran = std::chrono::duration<double>(end - *job.start_time).count();
      earlier_runs_[job.id.value()] += std::max(0.0, ran) * HeldGpus(*job.allocation);
    }
    listener_.OnReleasing(job);
  }
  if (HoldsGpus(job)) {
    holding_.insert(job.id);
  } else {
    holding_.erase(job.id);
  }
  Write(job);
  NoteGang(job);
  if (options_.journal) {  // the event's text is built only to be kept
    Record(job.id, "state", actor, StateChangeText(ToString(from), ToString(to), cause));
  }
  if (ended) {
    listener_.OnEnded(job);  // after this job's own event: what its end causes follows it
  }
}

void JobBook::Start(Job& job,
                    const Allocation& allocation,
                    bool preemptible,
                    const std::string& cause) {
  job.allocation = allocation;
  job.preemptible = preemptible;
  job.estimated_start.reset();
  job.start_estimate.reset();
  job.last_checkpoint.reset();  // a checkpoint of an earlier run saves nothing of this one
  stops_.Started(job.id);
  Transition(job, JobState::kStarting, cause, "scheduler");
}

void JobBook::Started(Job& job, std::int64_t pid, Time start_time, const std::string& actor) {
  job.pid = pid;
  job.start_time = start_time;
  Transition(job, JobState::kRunning, "running on " + job.allocation->node.value(), actor);
}

void JobBook::Kill(Job& job, StopIntent intent, int first_signal) {
  std::string cause = intent.cause;
  stops_.Request(job.id, std::move(intent));
  NoteGang(job);
  if (job.allocation) {
    kills_.push_back(KillOrder{.job = job.id,
                               .node = job.allocation->node,
                               .cause = std::move(cause),
                               .first_signal = first_signal});
  }
}

void JobBook::RequestKill(Job& job,
                          JobState final_state,
                          const std::string& cause,
                          int first_signal) {
  Kill(job, StopIntent{.final_state = final_state, .cause = cause}, first_signal);
}

void JobBook::StopToRequeue(Job& job,
                            JobState state,
                            const std::string& after,
                            const std::string& cause,
                            int first_signal) {
  Kill(job, StopIntent{.final_state = state, .cause = cause, .requeue_after = after}, first_signal);
}

void JobBook::Preempt(Job& victim, const std::string& cause) {
  Record(victim.id,
         "preempt",
         "scheduler",
         cause + ": sending SIG" + CheckpointSignalName(victim.spec.checkpoint_signal) + ", " +
             AfterStopText(victim, JobState::kCancelled));
  victim.reason = cause;  // what its owner sees while it stops
  StopToRequeue(victim, JobState::kPreempted, "preemption", cause, victim.spec.checkpoint_signal);
}

std::string JobBook::AfterStopText(const Job& job, JobState end_state) const {
  return "SIGKILL after " + FormatDuration(options_.kill_grace) +
         (job.spec.requeue
              ? "; the job goes back to the queue at its place"
              : "; the job then ends " + std::string(ToString(end_state)) + " (--no-requeue)");
}

void JobBook::Cancel(Job& job, const std::string& caller) {
  const std::string cause = "cancelled by " + caller;
  const std::optional<StopIntent> stopping = stops_.Find(job.id);
  if (job.state == JobState::kPending) {
    Transition(job, JobState::kCancelled, cause, caller);
  } else if (!stopping) {
    Record(job.id, "cancel", caller, cause + ": stopping the job's processes");
    RequestKill(job, JobState::kCancelled, cause, kSigTerm);
  } else if (Requeues(*stopping)) {
    // Already stopping to be requeued: it ends cancelled instead of going back to the queue.
    Record(job.id,
           "cancel",
           caller,
           cause + " while it was being stopped (" + stopping->requeue_after + ")");
    stops_.Request(job.id, StopIntent{.final_state = JobState::kCancelled, .cause = cause});
  }
}

void JobBook::EndRun(Job& job, const RunVerdict& end, const std::string& actor) {
  Transition(job, end.state, end.cause, actor);
  if (end.requeue) {
    RequeueOrEnd(job, end.requeue->otherwise, end.requeue->after, end.requeue->cause);
  }
}

void JobBook::Exited(
    Job& job, int exit_code, const std::string& how, Time end_time, const std::string& actor) {
  const RunVerdict end = stops_.OnExit(job.id, exit_code, how);
  job.exit_code = exit_code;
  job.end_time = end_time;
  EndRun(job, end, actor);
}

// A job lost with its node: a cancel or time limit under way ends as it was meant to (the kill
// cannot be confirmed, but the job is not to run again); otherwise RUNNING/STARTING →
// NODE_FAIL → PENDING at its place, as a preempted job goes back (or FAILED if it must not run
// twice).
void JobBook::Lose(Job& job, const std::string& cause) {
  const RunVerdict end = stops_.OnLost(job.id, cause);
  const std::string actor = !end.requeue     ? std::string("controller")
                            : job.allocation ? "node:" + job.allocation->node.value()
                                             : std::string("system");
  EndRun(job, end, actor);
}

// The submit time is kept, so the job keeps its place in the order; what the run used stays
// with the job (OnReleasing) and in the shell's counters (OnRequeueing).
void JobBook::Requeue(Job& job, const std::string& after, const std::string& cause) {
  listener_.OnRequeueing(job);
  stops_.Requeued(job.id, after, cause);
  job.allocation.reset();
  job.pid.reset();
  job.start_time.reset();
  job.end_time.reset();
  job.exit_code.reset();
  job.preemptible = false;
  Transition(job, JobState::kPending, "requeued after " + after + ": " + cause, "scheduler");
}

// A job that must not run twice (`--no-requeue`: it sends mail, appends to a database) cannot
// be put back in the queue without the risk of a second, partial run: it ends in `end_state`
// instead, as Slurm cancels non-requeueable victims (PreemptMode=CANCEL) and fails those of a
// failed node. Its dependents and array see the end as any other (Transition).
void JobBook::RequeueOrEnd(Job& job,
                           JobState end_state,
                           const std::string& after,
                           const std::string& cause) {
  if (job.spec.requeue) {
    Requeue(job, after, cause);
    return;
  }
  Transition(job, end_state, cause + "; not requeued (--no-requeue)", "controller");
}

// ---- time limits ----------------------------------------------------------------------------

std::optional<std::chrono::seconds> JobBook::EffectiveLimit(const Job& job) const {
  return EffectiveTimeLimit(ClassPolicyFor(options_.policy, job.spec.priority),
                            job.spec.time_limit);
}

void JobBook::EnforceTimeLimits() {
  // A copy: a kill may end a job (and change holding_) at once.
  for (const JobId id : std::vector<JobId>(holding_.begin(), holding_.end())) {
    EnforceTimeLimit(active_.at(id));
  }
}

void JobBook::EnforceTimeLimit(Job& job) {
  if (job.state != JobState::kRunning || !job.start_time || stops_.Stopping(job.id)) {
    return;
  }
  const std::optional<std::chrono::seconds> limit = EffectiveLimit(job);
  if (limit && now_() >= *job.start_time + *limit) {
    const std::string cause = "time limit " + FormatDuration(*limit) + " reached";
    Record(job.id, "timeout", "controller", cause + ": stopping the job's processes");
    RequestKill(job, JobState::kTimeout, cause, kSigTerm);
  }
}

std::optional<Time> JobBook::NextDeadline() const {
  std::optional<Time> next;
  for (const JobId id : holding_) {
    const Job& job = active_.at(id);
    if (job.state != JobState::kRunning || !job.start_time || stops_.Stopping(id)) {
      continue;
    }
    if (const std::optional<std::chrono::seconds> limit = EffectiveLimit(job)) {
      const Time deadline = *job.start_time + *limit;
      next = next ? std::min(*next, deadline) : deadline;
    }
  }
  return next;
}

// ---- gangs ----------------------------------------------------------------------------------

void JobBook::NoteGang(const Job& job) {
  if (job.spec.gang.has_value()) {
    gangs_to_settle_.emplace(job.spec.gang->gang_job, *job.spec.gang);
  }
}

void JobBook::SettleGangs() {
  // Each action below notes the gang again (Transition, Kill); the second look finds every
  // member ended or stopping and SettleGang returns nothing, so the loop ends.
  while (!gangs_to_settle_.empty()) {
    const GangMember gang = gangs_to_settle_.begin()->second;
    gangs_to_settle_.erase(gangs_to_settle_.begin());
    std::vector<GangMemberState> states;
    for (const Job* job : GangMembers(active_, gang)) {
      states.push_back(GangMemberState{.job = job->id,
                                       .rank = job->spec.gang->rank,
                                       .size = job->spec.gang->size,
                                       .state = job->state,
                                       .reason = job->reason,
                                       .stopping = stops_.Find(job->id)});
    }
    for (const GangAction& action : SettleGang(states)) {
      Job& job = active_.at(action.job);
      switch (action.step) {
        case GangStep::kCancel:
          Transition(job, JobState::kCancelled, action.cause, "controller");
          break;
        case GangStep::kStopToCancel:
          Record(job.id, "cancel", "controller", action.cause + ": stopping the job's processes");
          RequestKill(job, JobState::kCancelled, action.cause, kSigTerm);
          break;
        case GangStep::kRetargetToCancel:
          stops_.Request(job.id,
                         StopIntent{.final_state = JobState::kCancelled, .cause = action.cause});
          break;
        case GangStep::kStopToRequeue:
          Record(job.id,
                 "requeue",
                 "controller",
                 action.cause + ": sending SIG" + CheckpointSignalName(job.spec.checkpoint_signal) +
                     ", " + AfterStopText(job, JobState::kCancelled));
          job.reason = action.cause;
          StopToRequeue(job,
                        JobState::kPreempted,
                        "its gang's requeue",
                        action.cause,
                        job.spec.checkpoint_signal);
          break;
      }
    }
  }
}

}  // namespace gf

// JobBook: the active jobs and every change of their lives (decision 0007, step 3). It owns the
// jobs not yet ended, which of them hold GPUs, the stop book (stops.h) and the gangs to settle
// (gang_rules.h), and is the one place a job changes state: submitted, started, running, stopped
// (a cancel, a time limit, a preemption, its gang), its run ended as the stop book judges it,
// requeued at its place or ended. What the shell must do about a change comes out as values:
// the journal (the jobs to write and the events to log, in order) and kill orders (a job's
// processes to stop, on which node, with which first signal). What needs the shell's other parts
// at the moment of a change (its GPUs given back while its run is still on it; a job's end for the
// predictor, the passes and its dependents) is a call to its JobBookListener.
//
// The controller writes the journal in the turn's transaction and sends the kill orders to the
// agents after it; a shell without a store (a test, the simulator) may drop the journal.
// Pure: no I/O, no threads; the time comes from the `now` it is given. Not thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "lifecycle/stop_intent.h"
#include "lifecycle/stops.h"
#include "model/event.h"
#include "model/job.h"
#include "scheduler/policy.h"

namespace gf {

// What a shell does at the moments only it can act on.
class JobBookListener {
 public:
  virtual ~JobBookListener() = default;
  // `job` gives up its GPUs (it leaves STARTING or RUNNING); its allocation and run times are
  // still on it, and what is changed on it here is written with it.
  virtual void OnReleasing(Job& job) = 0;
  // `job` reached a terminal state; its state event is in the journal.
  virtual void OnEnded(const Job& job) = 0;
  // `job` goes back to the queue: its run (allocation, start) is cleared right after this.
  virtual void OnRequeueing(const Job& job) = 0;
};

// A job's processes are to be stopped: `first_signal`, then SIGKILL after the kill grace.
struct KillOrder {
  JobId job;
  NodeId node;  // where the run is (the job may have left it by the time the order is sent)
  std::string cause;
  int first_signal = kSigTerm;
  bool operator==(const KillOrder&) const = default;
};

// The turn's writes, in the order they were made: a job changed twice is written once, as it
// is last (its place is its first write's).
struct Journal {
  std::vector<Job> jobs;
  std::vector<Event> events;
};

struct JobBookOptions {
  // The limits and classes that time limits are judged by (EffectiveTimeLimit).
  PolicyConfig policy;
  // First signal → SIGKILL; only said in events here ("SIGKILL after 10s").
  std::chrono::seconds kill_grace{10};
  // Whether the journal is kept. A shell with no store (the simulator) keeps none: Write and
  // Record then do nothing, and a replay of 100,000 jobs copies no job and builds no event.
  bool journal = true;
};

class JobBook {
 public:
  JobBook(JobBookOptions options, std::function<Time()> now, JobBookListener& listener);
  JobBook(const JobBook&) = delete;
  JobBook& operator=(const JobBook&) = delete;

  // ---- the table ------------------------------------------------------------------------
  // The active jobs as stored (a restart): nothing is written or recorded.
  void Restore(std::vector<Job> jobs);
  // A restart: the GPU-seconds of active jobs' earlier runs, as their usage records say (the
  // store keeps one per run: Store::ListUsage).
  void RestoreEarlierRuns(const std::map<JobId, double>& gpu_seconds);
  // A new job, PENDING: written; the shell records its submission.
  void Add(Job job);
  Job* Find(JobId id);
  const Job* Find(JobId id) const;
  Job& At(JobId id);
  const Job& At(JobId id) const;
  // Every job not yet erased: the active ones, and those that ended this turn.
  const std::map<JobId, Job>& Active() const { return active_; }
  std::map<JobId, Job>& Active() { return active_; }
  // The active jobs that hold GPUs (HoldsGpus): the per-turn work visits these, not every job.
  const std::set<JobId>& Holding() const { return holding_; }
  std::size_t Size() const { return active_.size(); }
  // The GPU-seconds the job's runs that ended held (GPUs x run time, a share of a GPU counted
  // as its fraction): the service a requeued job attained before, which the stock policy's
  // remaining work and 2D-LAS count (QueuedJob/RunningJob::attained_gpu_seconds). 0 for a job
  // never stopped; its current run is not in it.
  double EarlierRunsGpuSeconds(JobId id) const;
  // After the turn's commit: the jobs that ended leave the table (and the stop book).
  void EraseEnded();

  // ---- the journal ----------------------------------------------------------------------
  // `job` changed: it is written with the turn.
  void Write(const Job& job);
  // An event of `job`, or of the cluster (nullopt), at now.
  void Record(std::optional<JobId> job, std::string kind, std::string actor, std::string message);
  Journal TakeJournal();
  std::vector<KillOrder> TakeKills();

  // ---- a job's life -----------------------------------------------------------------------
  // The one place a job changes state: its reason, its end time, whether it holds GPUs, its
  // state event; the listener's OnReleasing and OnEnded; its gang noted.
  void Transition(Job& job, JobState to, const std::string& cause, const std::string& actor);
  // PENDING → STARTING on `allocation` (a pass's start): `cause` says where.
  void Start(Job& job, const Allocation& allocation, bool preemptible, const std::string& cause);
  // STARTING → RUNNING: its agent started it as `pid` at `start_time`.
  void Started(Job& job, std::int64_t pid, Time start_time, const std::string& actor);
  // Stops a job that holds GPUs: the intent in the stop book and a kill order.
  void Kill(Job& job, StopIntent intent, int first_signal);
  // A stop that ends the job in `final_state`.
  void RequestKill(Job& job, JobState final_state, const std::string& cause, int first_signal);
  // A stop that requeues the job (stop_intent.h Requeues): `state` PREEMPTED or NODE_FAIL,
  // `after` what happened ("preemption", "idle reaping", "GPU failure").
  void StopToRequeue(Job& job,
                     JobState state,
                     const std::string& after,
                     const std::string& cause,
                     int first_signal);
  // The scheduler preempts the job (`cause`): stopped with its checkpoint signal, to be requeued.
  void Preempt(Job& victim, const std::string& cause);
  // What follows a stop-to-requeue's first signal, for its event: "SIGKILL after 10s; the job
  // goes back to the queue at its place", or "...; the job then ends CANCELLED (--no-requeue)".
  std::string AfterStopText(const Job& job, JobState end_state) const;
  // The caller cancels the job: a pending one ends now; one that holds GPUs is stopped; one
  // being stopped to be requeued ends CANCELLED instead. A job already being stopped to end
  // is left as it is.
  void Cancel(Job& job, const std::string& caller);
  // The run ended as the stop book judged it (StopBook::OnExit, OnLost): the job takes that
  // state, then goes back to the queue at its place if the end asks for it.
  void EndRun(Job& job, const RunVerdict& end, const std::string& actor);
  // The job's processes exited (its agent's report); `actor` reports it.
  void Exited(
      Job& job, int exit_code, const std::string& how, Time end_time, const std::string& actor);
  // The job's node was lost under it: a stop under way that ends the job ends it as meant;
  // otherwise NODE_FAIL → PENDING at its place (FAILED if it must not run twice).
  void Lose(Job& job, const std::string& cause);
  // PREEMPTED or NODE_FAIL → PENDING, keeping its submit time (its place in the order).
  void Requeue(Job& job, const std::string& after, const std::string& cause);
  // Requeue, unless the job must not run twice (--no-requeue): then it ends in `end_state`.
  void RequeueOrEnd(Job& job,
                    JobState end_state,
                    const std::string& after,
                    const std::string& cause);

  // ---- time limits ----------------------------------------------------------------------
  // The job's limit, defaulted and capped by its priority class.
  std::optional<std::chrono::seconds> EffectiveLimit(const Job& job) const;
  // Stops every running job past its limit (TIMEOUT, SIGTERM first).
  void EnforceTimeLimits();
  // The same for one job (the simulator's deadline event names it): stopped if it runs past
  // its limit and is not being stopped already.
  void EnforceTimeLimit(Job& job);
  // The earliest moment a running job reaches its limit, if any.
  std::optional<Time> NextDeadline() const;

  // ---- gangs (gang_rules.h) -------------------------------------------------------------
  // Keeps each gang whose member changed whole: when a member is requeued (or being stopped to
  // be), the members still running are stopped to be requeued with it; when one ends other than
  // COMPLETED, the others are cancelled.
  void SettleGangs();

  StopBook& Stops() { return stops_; }
  const StopBook& Stops() const { return stops_; }

 private:
  void NoteGang(const Job& job);

  JobBookOptions options_;
  std::function<Time()> now_;
  JobBookListener& listener_;
  std::map<JobId, Job> active_;
  std::set<JobId> holding_;
  std::vector<JobId> ended_;  // this turn's: erased after the commit
  StopBook stops_;
  std::map<JobId, GangMember> gangs_to_settle_;            // by gang id
  std::unordered_map<std::int64_t, double> earlier_runs_;  // job id → EarlierRunsGpuSeconds
  Journal journal_;
  std::unordered_map<std::int64_t, std::size_t> journal_slot_;  // job id → its place in jobs
  std::vector<KillOrder> kills_;
};

}  // namespace gf

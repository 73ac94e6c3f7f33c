// Pass: one scheduling pass, internal to gf_scheduler. Decide() (scheduler.cpp), DecideUpTo()
// (pass_probe.h, for Explain) and the IncrementalScheduler (incremental.h) all run this one
// class, so that there is one algorithm (README.md, "Algorithm").
//
// A pass considers jobs in the fair-share order; each job starts, preempts, sets GPUs aside
// (reservation, claim) or pends with a reason. Its state (the pool, the ledger, the counters of
// reservations and preemptors) only ever loses capacity as it goes.
//
// Two ways to drive it:
// - Run(queue): orders the queue (FairShareOrdering) and considers every job: Decide().
// - ConsiderNext(job, class): the caller gives the jobs one by one in the order (the
//   IncrementalScheduler, which keeps the order itself); the pass numbers them in that order.
//   Jobs the caller leaves out must be ones that would change nothing (see OnlyStartsLeft).
//
// Not thread-safe; the cluster and policy must outlive the pass, and so must every job given
// to it (the pass keeps pointers for its reasons).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/clock.h"
#include "model/snapshot.h"
#include "scheduler/classes.h"
#include "scheduler/pass_probe.h"
#include "scheduler/placement/gpu_pool.h"
#include "scheduler/placement/mig_pool.h"
#include "scheduler/placement/share_pool.h"
#include "scheduler/policy.h"
#include "scheduler/preemption/victims.h"
#include "scheduler/quota/ledger.h"
#include "scheduler/scheduler.h"

namespace gf {

// Requests that did not fit, per model and constraint: a later request of the same model and
// constraint for at least as many GPUs, on at least as many nodes (a gang's members) and ending
// no earlier cannot fit either (capacity only shrinks within a pass).
class FailureMemo {
 public:
  bool Covers(Shape shape, std::int64_t end_ms, int nodes = 1) const;
  void Add(Shape shape, std::int64_t end_ms, int nodes = 1);

 private:
  struct Failure {
    int gpus = 0;
    int nodes = 1;
    std::int64_t end_ms = 0;
  };
  // (model, constraint, cpus, memory): a failure covers more GPUs and later ends of the same
  // host request (issue #24: more CPUs may fail where fewer fit).
  std::map<std::tuple<int, int, int, std::int64_t>, std::vector<Failure>> failed_;
};

class Pass {
 public:
  Pass(const ClusterSnapshot& cluster, const PolicyConfig& policy, Time now);
  // On `pool`, which must be what GpuPool(cluster, now) builds (the IncrementalScheduler keeps
  // one between passes and hands each pass a copy).
  Pass(const ClusterSnapshot& cluster,
       const PolicyConfig& policy,
       Time now,
       std::unique_ptr<GpuPool> pool);
  // The pool, for the next pass to overwrite rather than allocate anew; the pass is unusable
  // afterwards.
  std::unique_ptr<GpuPool> ReleasePool() { return std::move(owned_pool_); }
  Pass(const Pass&) = delete;
  Pass& operator=(const Pass&) = delete;

  // With `probe` (DecideUpTo, for Explain): shows it the pass just before `target` and stops
  // once `target` is decided.
  Decisions Run(const Queue& queue,
                std::optional<JobId> target = std::nullopt,
                const PassProbe* probe = nullptr);
  // Which waiting jobs Run lists in Decisions::pending (scheduler.h Listing); every one unless
  // told otherwise.
  void SetListing(Listing listing) { listing_ = listing; }

  // Considers `job` (of class `c`, an index of Classes()) as the next job in the order.
  // Returns whether that changed the pass's state (it started, preempted, reserved or claimed
  // GPUs, or counted against the backfill depth): a job that changes nothing leaves the pass
  // exactly as it found it for every later job.
  bool ConsiderNext(const QueuedJob& job, ClassIndex c);

  // Whether every later job can only start or pend: no reservation (backfill on and its depth
  // used up) and no preemption (off, or max_preemptors_per_pass reached) is left to anyone.
  // From then on a job that cannot start changes nothing, whatever else it is.
  bool OnlyStartsLeft() const;
  // Whether some job of `request` ending at `end_ms` (unix ms, kNever for none) would find GPUs
  // now; when not, no job of that request ending at or after `end_ms` can start in this pass.
  bool CouldStart(const JobRequest& request, std::int64_t end_ms);

  // The decisions made since the pass began or since the last call.
  Decisions TakeDecisions();
  // How many jobs it started so far (since the last TakeDecisions).
  std::size_t StartsSoFar() const { return decisions_.starts.size(); }
  // After Run: the order it used and each position's class.
  const std::vector<const QueuedJob*>& Order() const { return order_; }
  const std::vector<ClassIndex>& OrderClasses() const { return order_class_; }
  // The order position of the last job whose consideration changed the state; -1 none.
  int LastChange() const { return last_change_; }
  const ClassTable& Classes() const { return classes_; }
  // The ledger as the pass found it (the running jobs), before any job of the pass counted.
  const Ledger& StartLedger() const;
  // Its own ledger, which is the same before it considers a job: for a pass that is not kept
  // (no later StartLedger), it saves counting the running jobs again. REQUIRES: no job
  // considered yet; the reference changes as jobs are.
  const Ledger& LedgerSoFar() const { return ledger_; }
  Time Now() const { return now_; }

  static std::int64_t EndOf(Time start, std::optional<std::chrono::seconds> limit) {
    return limit.has_value() ? ToUnixMillis(start) + Millis(*limit).count() : kNever;
  }
  // The length a start of `job` (of class `c`) is planned with: its limit (the class default
  // or cap applied), or its estimate where shorter (PlannedLength).
  std::optional<std::chrono::seconds> PlannedLimit(const QueuedJob& job, ClassIndex c) const;
  // How a start of `job` (of the class being considered) at `start`, planned to last `limit`
  // (PlannedLength), is planned to end, and at the earliest when it starts at `early`
  // (PlannedEnd: what later estimated starts rest on).
  PlannedEnd EndPlan(const QueuedJob& job,
                     Time start,
                     Time early,
                     std::optional<std::chrono::seconds> limit) const;

 private:
  // What the later jobs see of the pass: any change to it is a change of state. The waiters
  // count too: a claim over GPUs already claimed changes no GPU, but it makes the job one that
  // later reasons name ("behind job 5") and changes what later claims cover.
  auto Stamp() const {
    return std::make_tuple(pool_.Generation(),
                           shares_.has_value() ? shares_->Generation() : 0,
                           migs_.has_value() ? migs_->Generation() : 0,
                           reservations_,
                           preemptors_,
                           waiters_.size());
  }

  void Consider(const QueuedJob& job, ClassIndex c, int position);
  // A multi-node job: its queued members (`members`, ids ascending) start together, each on a
  // node of its own, or all wait (reservation or claim as Wait). A gang preempts nothing.
  void ConsiderGang(const std::vector<const QueuedJob*>& members, ClassIndex c, int position);
  void WaitGang(const std::vector<const QueuedJob*>& members,
                int position,
                Shape shape,
                std::optional<std::chrono::seconds> limit);
  // The members of `job`'s gang still to decide (itself alone when the pass was not given the
  // queue: ConsiderNext); empty once the gang was decided.
  std::vector<const QueuedJob*> GangOf(const QueuedJob& job);
  // Where GangOf finds them, without taking them: null when the pass was not given the queue.
  struct GangSlice;
  GangSlice* FindGang(const QueuedJob& job);
  // Whether `job` (of class `c`), considered now, would surely neither start nor change
  // anything: it can set nothing aside (the backfill depth is used up; with backfill off, an
  // earlier claim covers its own), a one-node job can preempt nothing (off, or
  // max_preemptors_per_pass reached; a gang preempts nothing), and a request at least as
  // small, on as few nodes, ending no later already found no GPUs in this pass. Cheap: no
  // fit is tried.
  bool SurelyWaits(const QueuedJob& job, ClassIndex c);
  // A fractional job (IsFractional): it starts on the SharePool's fullest GPU that fits, or
  // pends; it neither reserves nor preempts.
  // A MIG job (IsMig) likewise, on a free MigPool device of its profile.
  void ConsiderFraction(const QueuedJob& job, ClassIndex c);
  template <typename PartPool>
  void ConsiderPart(PartPool& pool, const QueuedJob& job, ClassIndex c);
  bool TryStart(const QueuedJob& job, Shape shape, const PlannedEnd& end, bool borrowed);
  bool TryPreempt(const QueuedJob& job,
                  int position,
                  Shape shape,
                  ClassIndex c,
                  const QuotaVerdict& verdict,
                  std::optional<std::chrono::seconds> limit);
  void Preempt(const QueuedJob& job,
               int position,
               const Preemptor& preemptor,
               const VictimChoice& choice);
  bool WaitForYoungVictims(const QueuedJob& job,
                           int position,
                           Preemptor preemptor,
                           std::optional<std::chrono::seconds> limit);
  void Wait(const QueuedJob& job,
            int position,
            Shape shape,
            std::optional<std::chrono::seconds> limit);
  void AddWaiter(const QueuedJob& job, Shape shape);
  PendingReason Reason(const QueuedJob& job, Shape shape, bool could_ever_start);
  // Why a job that asks host CPUs or memory waits when those are what it lacks (issue #24):
  // no up node that could hold its GPUs has that many (kCpuMemTooLarge), or its GPUs are free
  // on nodes without that many free now (kCpuMemBusy). nullopt: GPUs are what it lacks.
  std::optional<PendingReason> HostReason(const QueuedJob& job,
                                          Shape shape,
                                          std::int64_t end_ms) const;
  // Whether node `n` has room for `shape`'s host request, until `end_ms`, once `victims` have
  // stopped (reservations of the node's host CPUs and memory for later count: HostRoomUntil).
  bool HostRoomAfter(int n,
                     Shape shape,
                     const std::vector<int>& victims,
                     std::int64_t end_ms) const;
  PendingReason ComputeReason(const QueuedJob& job, Shape shape, bool could_ever_start);
  // DescribeNoFit for `job`, naming the nodes that are not up when none is.
  PendingReason NoFitReason(const QueuedJob& job, Shape shape) const;
  void Pend(const QueuedJob& job, PendingReason reason);
  PendingReason WithClassNote(const QueuedJob& job, PendingReason reason) const;

  struct Waiter {
    const QueuedJob* job;
    Shape shape;
  };

  const ClusterSnapshot& cluster_;
  const PolicyConfig& policy_;
  Time now_;
  std::unique_ptr<GpuPool> owned_pool_;
  GpuPool& pool_;                    // *owned_pool_
  std::optional<SharePool> shares_;  // built when the pass meets its first fractional job
  std::optional<MigPool> migs_;      // ... its first MIG job
  ClassTable classes_;               // before the ledgers, which refer to it
  Ledger ledger_;
  mutable std::optional<Ledger> start_ledger_;  // ledger_ before any job counted; on first use
  std::vector<const QueuedJob*> order_;
  std::vector<ClassIndex> order_class_;  // by position in order_
  ClassIndex current_class_ = 0;         // the class of the job being considered
  int last_change_ = -1;
  Decisions decisions_;
  FailureMemo unfit_;        // one-node requests (TryStart)
  FailureMemo unfit_gangs_;  // multi-node ones (ConsiderGang)
  Listing listing_ = Listing::kEveryJob;
  // (model, constraint, class, guarantee right, team) → the GPUs, rank (ordering/baseline.h;
  // 0 but under srtf, las and preemption by size) and place (preemption by size, else 0) of
  // the last job that found no victims: a job asking no less, ranked and placed no earlier,
  // finds none either.
  struct NoVictims {
    int gpus = 0;
    std::int64_t rank = 0;
    std::int64_t place_ms = 0;
  };
  std::map<std::tuple<int, int, int, bool, std::string>, NoVictims> unpreemptable_;
  VictimCache victims_;          // what earlier victim searches found per node
  std::vector<Waiter> waiters_;  // jobs that reserved or claimed GPUs, in order
  // Multi-node jobs of the queue Run was given (queue_; null for ConsiderNext): gang id → its
  // queued members, ids ascending, found when the first member comes up; a gang's slice is
  // emptied once decided.
  const Queue* queue_ = nullptr;
  bool gangs_found_ = false;
  struct GangSlice {
    std::uint32_t begin = 0;  // into gang_members_
    std::uint32_t count = 0;  // 0 once decided
  };
  std::unordered_map<std::int64_t, GangSlice> gangs_;
  // Each gang's queued members side by side, ids ascending: one allocation for all, as a pass
  // over a deep queue of gangs builds this anew each time.
  std::vector<const QueuedJob*> gang_members_;
  int reservations_ = 0;
  int preemptors_ = 0;  // jobs that preempted in this pass
  // The last reason given for each (model, GPU count), valid while nothing that could change
  // it changed: the pool's generation, the waiters and the request's spelling of its type.
  struct ReasonMemo {
    std::uint64_t generation = 0;
    std::size_t waiters = 0;
    std::string spelling;
    PendingReason reason;
  };
  // (model, gpus, constraint, cpus, memory)
  std::map<std::tuple<int, int, int, int, std::int64_t>, ReasonMemo> reasons_;
};

}  // namespace gf

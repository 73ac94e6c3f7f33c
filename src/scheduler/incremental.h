// IncrementalScheduler: Decide() kept up to date between full passes, so that one arrival or
// one job's end costs about what it changes rather than a pass over the whole queue (issue #4:
// a full pass over 100,000 pending jobs under 50 ms, an incremental one under 1 ms).
//
// It owns its copy of the cluster, the queue and the policy, and applies its own decisions to
// them: a started job leaves the queue and runs from `now` on the GPUs it was given (its
// effective time limit, borrowed or not); a preempted job is `stopping`. The caller (the
// controller) acts on the same decisions, so both copies stay the same; anything else that
// changes (nodes, policy, usage, jobs the caller stopped) takes a Full() pass.
//
// The guarantee, checked by incremental_property_test.cpp: after every event, the starts and
// preemptions an incremental pass returns are exactly those of Decide() on the scheduler's
// state (Cluster(), CurrentQueue()) with the event applied, at the same `now`; and every
// pending decision it returns is Decide()'s for that job. It returns only the jobs it looked
// at (see each path); a queued job it did not look at keeps the reason it was last given, which
// the next full pass refreshes.
//
// Why it can skip jobs (pass.h): once no reservation (backfill depth used up) and no
// preemption (max_preemptors_per_pass reached) is left in a pass, a later job changes nothing
// unless it starts, and it can start only if a job of its request ending no later would find
// GPUs. So a pass need consider the jobs in order only up to that point, and after it only the
// jobs whose request (GPU count, type, labels) could still find GPUs, until none can.
//
// Paths (IncrementalResult::path):
// - kFast: an arrival after the last job that changed the kept pass's state (its frontier),
//   with nothing changed since that pass: the arriving job is considered against the kept
//   pass's end state, which is exactly what a full pass would show it. O(log n) plus one fit.
//   It decides as of the kept pass's time, so it is taken only within `reuse_within` of it
//   (default 0: the same instant). Also a queued job leaving from beyond the frontier.
// - kReplay: everything else: a fresh pass over the current state that considers the jobs in
//   order up to the point above, then only the jobs that could still start. Its decisions are
//   those of every job it considered.
// - kHead: a running job ended (or several at once: OnCompletions): its GPUs go to the head of
//   the queue. A pass over the current
//   state considers the jobs in order while they start, and stops after the first that does
//   not (its decision, a reservation or a preemption, is made too). Those decisions are
//   Decide()'s for those jobs, since a pass decides each job from the jobs before it alone;
//   the jobs after it are left as they were: what Decide() would backfill or preempt for them
//   waits for the caller's next full pass (the controller's follows within a second), as
//   Slurm's quick scheduling on a job's end leaves backfill to its periodic pass. It keeps no
//   pass to reuse: the next event replays. O(one pass set-up + a few fits).
// - kFull: the order itself changed (a team crossed its guarantee, which the order ranks
//   first), or a member of a multi-node job is queued: a full pass, re-sorting the queue; its
//   decisions are Decide()'s, all of them.
//
// Not thread-safe: one owner (the controller's scheduling loop).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/clock.h"
#include "model/snapshot.h"
#include "scheduler/classes.h"
#include "scheduler/ordering/fair_share.h"
#include "scheduler/policy.h"
#include "scheduler/scheduler.h"

namespace gf {

class GpuPool;
class Ledger;
class Pass;

enum class IncrementalPath { kFast, kReplay, kHead, kFull };
std::string_view ToString(IncrementalPath path);

struct IncrementalResult {
  Decisions decisions;  // see the paths above for which jobs it lists
  IncrementalPath path = IncrementalPath::kFull;
  int considered = 0;  // jobs the pass considered (for tests and the bench)
};

struct IncrementalOptions {
  // How long after the kept pass an arrival may still be decided against it (kFast).
  std::chrono::milliseconds reuse_within{0};
  // Which waiting jobs a full pass lists (scheduler.h); the other paths list those they look at.
  Listing full_listing = Listing::kEveryJob;
};

class IncrementalScheduler {
 public:
  explicit IncrementalScheduler(IncrementalOptions options = {});
  ~IncrementalScheduler();
  IncrementalScheduler(const IncrementalScheduler&) = delete;
  IncrementalScheduler& operator=(const IncrementalScheduler&) = delete;

  // Takes this state as its own and decides it: Decide(cluster, queue, policy, now), listing
  // the waiting jobs as IncrementalOptions::full_listing says.
  Decisions Full(ClusterSnapshot cluster, Queue queue, PolicyConfig policy, Time now);
  // A job joins the queue.
  IncrementalResult OnArrival(QueuedJob job, Time now);
  // A running job ended (its GPUs are free), or a queued job left the queue (cancelled).
  // An id it does not know changes nothing.
  IncrementalResult OnCompletion(JobId job, Time now);
  // Several jobs ended at once (one controller turn, one simulated instant): the running ones
  // give up their GPUs together and then one head-of-queue pass (kHead) decides, so that the
  // head sees every GPU they freed, as a full pass would; told one by one, the first end's
  // pass could place the head's predecessor on a GPU that the second end's GPUs would have
  // completed a node with. Queued jobs among them (cancelled) leave as OnCompletion has them
  // leave. The decisions of every pass it ran, in order, named by the path of the last (one
  // id: OnCompletion's).
  IncrementalResult OnCompletions(const std::vector<JobId>& jobs, Time now);

  // Nothing happened, but the kept pass may be stale (its decisions changed the state) or
  // older than `now`: decides again (kReplay), so that the next arrival can take kFast. For an
  // idle moment; returns the same as an event would.
  IncrementalResult Refresh(Time now);

  // The state it decides: the cluster (with the jobs it started running), and the queue in
  // scheduling order.
  const ClusterSnapshot& Cluster() const { return cluster_; }
  Queue CurrentQueue() const;
  // How many jobs its queue holds (CurrentQueue().pending.size(), without the copy).
  std::size_t Waiting() const { return slots_.size(); }
  // The queued jobs' ids in scheduling order (CurrentQueue()'s, without copying the jobs).
  std::vector<JobId> Order() const;

 private:
  // One queued job in the order.
  struct Slot {
    const QueuedJob* job = nullptr;
    ClassIndex cls = 0;
    int bucket = 0;  // index into buckets_
  };
  // The queued jobs of one request (GPUs, type, labels): a job of it can start only if the
  // one with the shortest limit could.
  struct Bucket {
    JobRequest request;
    std::multiset<std::int64_t> limits_ms;  // effective limits; kNever for none
  };
  // The order's key of a job (FairShareOrdering's: class tier, team below its guarantee, team
  // share, user share, place (PlaceMs: the submit time, moved back by the job's estimate), id).
  struct OrderKey {
    std::size_t tier = 0;
    int borrowing = 0;
    double team_share = 0;
    double user_key = 0;  // UserStanding::key
    std::int64_t place_ms = 0;
    std::int64_t id = 0;
    bool operator<(const OrderKey& other) const {
      return std::tie(tier, borrowing, team_share, user_key, place_ms, id) <
             std::tie(other.tier,
                      other.borrowing,
                      other.team_share,
                      other.user_key,
                      other.place_ms,
                      other.id);
    }
  };

  // A fresh pass over the current state, or a full one when the order moved (kFull).
  IncrementalResult Rerun(Time now);
  // kHead: the head of the queue, in order, until a job does not start (or kFull).
  IncrementalResult HeadStarts(Time now);
  // `arrived`, when given, is decided even where it could not start (it is owed an answer).
  IncrementalResult Replay(std::unique_ptr<Pass> pass,
                           Time now,
                           const QueuedJob* arrived = nullptr);
  IncrementalResult FullOnCurrent(Time now);
  // Considers the slots from `from` on whose bucket could still start, until none can, and
  // `must` wherever it is.
  void StartsInTail(Pass& pass,
                    std::size_t from,
                    const QueuedJob* must,
                    int& considered,
                    std::optional<std::size_t>& last_change);
  // Applies `decisions` to the copy; returns whether that changed it (a start, a preemption).
  bool Apply(const Decisions& decisions, Time now);
  void BuildSlots(const Pass& pass);
  void AddSlot(const QueuedJob& job, ClassIndex cls, std::size_t at);
  void RemoveSlot(std::size_t at);
  void RemoveSlots(std::vector<const QueuedJob*> jobs);  // the jobs that started
  int BucketOf(const QueuedJob& job, ClassIndex cls);
  std::size_t InsertionPoint(const OrderKey& key, const Ledger& ledger) const;
  std::optional<std::size_t> PositionOf(const QueuedJob& job, const Ledger& ledger) const;
  OrderKey KeyOf(const QueuedJob& job, ClassIndex cls, const Ledger& ledger) const;
  std::int64_t LimitMs(const QueuedJob& job, ClassIndex cls) const;
  bool StandingsMoved(const Pass& pass) const;
  bool StandingsMoved(const Ledger& start) const;  // with the ledger of a pass not yet run
  // Whether the kept pass may stand for a pass at `now` (kFast).
  bool Reusable(Time now) const;
  bool RemoveRunning(JobId job);
  std::unique_ptr<Pass> NewPass(Time now);
  void DropPass();  // keeps its pool for the next pass (spare_)

  IncrementalOptions options_;
  ClusterSnapshot cluster_;
  PolicyConfig policy_;
  std::unique_ptr<ClassTable> classes_;  // of policy_: indexes and tiers do not change
  Queue initial_;                        // the queue Full() was given (slots point into it)
  std::deque<QueuedJob> arrived_;        // jobs that arrived since (a deque: stable addresses)
  std::vector<Slot> slots_;              // the queue in scheduling order
  std::unordered_map<std::int64_t, const QueuedJob*> queued_;  // by id
  // Queued jobs that only a full pass decides: members of multi-node jobs (a gang's members are
  // decided together, which needs the whole queue: Pass::Run) and fractional jobs (the end of
  // a fractional job frees part of a shared GPU, which the head-of-queue path does not look
  // at). While there are any, every event takes a full pass; both are rare enough not to need
  // a faster way.
  int full_pass_slots_ = 0;
  std::vector<Bucket> buckets_;
  // (GPUs, type, labels, host CPUs, host memory) → index into buckets_
  std::map<std::tuple<int,
                      std::optional<std::string>,
                      std::map<std::string, std::string>,
                      int,
                      std::int64_t>,
           int,
           std::less<>>
      bucket_of_;
  // Standings cached from the ledger the kept order was sorted with: team → (below its
  // guarantee ? 0 : 1, share); user → share or band, with the mean the bands were taken
  // against (ShareScale).
  ShareScale scale_;
  mutable std::unordered_map<std::string, std::pair<int, double>> teams_;
  // by user: (UserStanding::key, UserStanding::size_weight)
  mutable std::unordered_map<std::string, std::pair<double, double>> users_;
  std::unique_ptr<Pass> pass_;  // the kept pass at its end; null when stale
  // The pool of cluster_ at base_now_, before any pass used it (NewPass): patched as jobs
  // start, stop and end, and copied into each pass's own. Null until a second pass at one
  // `now`, and after Full().
  std::unique_ptr<GpuPool> base_;
  Time base_now_{};
  Time last_now_{};                 // the `now` of the latest pass
  std::unique_ptr<GpuPool> spare_;  // a dropped pass's pool, overwritten by the next copy
  Time pass_now_{};
  std::optional<std::size_t> frontier_;  // slot of the last job that changed pass_'s state
};

}  // namespace gf

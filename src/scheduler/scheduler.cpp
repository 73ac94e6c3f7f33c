// Decide(): composes the stages, each in its own file (README.md has the whole algorithm):
//   ordering/fair_share.h   who goes next (class, guarantee, fair share, submit time)
//   quota/ledger.h          class and team rules: who may start now, and as borrowed or not
//   placement/gpu_pool.h    where it fits (best fit over an index of open GPUs)
//   preemption/victims.h    whom to stop when a job has the right and does not fit
//   backfill (here + pool)  reservations for the first waiting jobs; later jobs start only on
//                           GPUs they give back before any reservation begins
//
// Assumptions:
// - One pass sees one snapshot; starts, preemptions, claims and reservations made in the pass
//   only ever take capacity away, so a request that failed stays failed for the rest of the
//   pass. Decide() remembers failures and reasons (keyed on the pool's generation) so that a
//   long queue behind a full cluster costs little per job.
// - A waiting job that could start on the up nodes once running jobs end either gets a
//   reservation (backfill on, among the first `depth` waiting jobs, and the ends of the jobs in
//   its way are known), or claims every GPU it could use (backfill off, or ends unknown): the
//   v1 rule, so that nothing after it in the order delays it. Beyond the depth a waiting job
//   sets nothing aside.
// - A job that can never start on the up nodes (too large, unknown model, no node up) sets
//   nothing aside: holding the queue for it would idle the cluster for nothing.
#include "scheduler/scheduler.h"

#include <algorithm>
#include <array>
#include <map>
#include <tuple>

#include "scheduler/ordering/fair_share.h"
#include "scheduler/placement/gpu_pool.h"
#include "scheduler/placement/whole_gpu_fit.h"
#include "scheduler/preemption/victims.h"
#include "scheduler/quota/ledger.h"

namespace gf {
namespace {

// "now", "45s", "25m", "1h30m", "2d3h": a wait for a person.
std::string FormatWait(std::int64_t ms) {
  if (ms <= 0) {
    return "now";
  }
  std::int64_t s = (ms + 999) / 1000;
  static constexpr std::array<std::pair<std::int64_t, const char*>, 4> kUnits = {
      {{86'400, "d"}, {3'600, "h"}, {60, "m"}, {1, "s"}}};
  std::string text;
  int parts = 0;
  for (const auto& [unit_s, name] : kUnits) {
    if (s >= unit_s && parts < 2) {
      text += std::to_string(s / unit_s) + name;
      s %= unit_s;
      ++parts;
    } else if (parts > 0) {
      ++parts;  // two adjacent units at most: "1h30m", never "1h0m5s"
    }
  }
  return text;
}

std::string JobLabel(const QueuedJob& job) {
  return "job " + std::to_string(job.id.value()) + " (" + std::string(ToString(job.priority)) +
         " priority, needs " + DescribeRequest(job.request) + ")";
}

// Requests that did not fit, per model: a later request of the same model for at least as many
// GPUs and ending no earlier cannot fit either (capacity only shrinks within a pass).
class FailureMemo {
 public:
  bool Covers(Shape shape, std::int64_t end_ms) const {
    const auto it = failed_.find(shape.model);
    return it != failed_.end() &&
           std::any_of(it->second.begin(), it->second.end(), [&](const auto& f) {
             return f.first <= shape.gpus && f.second <= end_ms;
           });
  }
  void Add(Shape shape, std::int64_t end_ms) {
    auto& frontier = failed_[shape.model];
    std::erase_if(frontier,
                  [&](const auto& f) { return f.first >= shape.gpus && f.second >= end_ms; });
    frontier.emplace_back(shape.gpus, end_ms);
  }

 private:
  std::map<int, std::vector<std::pair<int, std::int64_t>>> failed_;
};

// The order visits the queue's jobs out of memory order; with 100,000 of them most visits
// would start by waiting for memory. Asking for a job's lines a few visits ahead of its turn
// hides that wait.
constexpr std::size_t kPrefetchAhead = 6;

void Prefetch(const QueuedJob& job) {
  const char* bytes = reinterpret_cast<const char*>(&job);
  for (std::size_t offset = 0; offset < sizeof(QueuedJob); offset += 64) {
    __builtin_prefetch(bytes + offset);
  }
}

class Pass {
 public:
  Pass(const ClusterSnapshot& cluster, const PolicyConfig& policy, Time now)
      : cluster_(cluster),
        policy_(policy),
        now_(now),
        pool_(cluster, now),
        ledger_(policy, cluster) {
    for (const PriorityClass p :
         {PriorityClass::kHigh, PriorityClass::kNormal, PriorityClass::kLow}) {
      classes_[static_cast<std::size_t>(Rank(p))] = ClassPolicyFor(policy, p);
    }
  }

  Decisions Run(const Queue& queue) {
    order_ = FairShareOrder(queue, cluster_, policy_, ledger_);
    decisions_.pending.reserve(queue.pending.size());
    for (std::size_t position = 0; position < order_.size(); ++position) {
      if (position + kPrefetchAhead < order_.size()) {
        Prefetch(*order_[position + kPrefetchAhead]);
      }
      Consider(*order_[position], static_cast<int>(position));
    }
    return std::move(decisions_);
  }

 private:
  void Consider(const QueuedJob& job, int position) {
    if (job.request.gpus < 0) {
      Pend(job,
           "invalid request: gpus is " + std::to_string(job.request.gpus) + ", must be 0 or more");
      return;
    }
    const PriorityClassPolicy& cls = classes_[static_cast<std::size_t>(Rank(job.priority))];
    const Shape shape = pool_.ShapeOf(job.request);
    const QuotaVerdict verdict = ledger_.Check(job, cls, shape.gpus);
    if (!verdict.may_start) {
      Pend(job, verdict.reason);
      return;
    }
    const std::optional<std::chrono::seconds> limit = EffectiveTimeLimit(cls, job.time_limit);
    const std::int64_t end_ms = EndOf(now_, limit);
    if (TryStart(job, shape, end_ms, verdict.borrowed) ||
        TryPreempt(job, position, shape, cls, verdict)) {
      return;
    }
    Wait(job, position, shape, limit);
  }

  static std::int64_t EndOf(Time start, std::optional<std::chrono::seconds> limit) {
    return limit.has_value() ? ToUnixMillis(start) + Millis(*limit).count() : kNever;
  }

  bool TryStart(const QueuedJob& job, Shape shape, std::int64_t end_ms, bool borrowed) {
    if (unfit_.Covers(shape, end_ms)) {
      return false;
    }
    const std::optional<PoolFit> fit = pool_.FindFit(shape, end_ms);
    if (!fit.has_value()) {
      unfit_.Add(shape, end_ms);
      return false;
    }
    pool_.Take(*fit, end_ms);
    ledger_.Add(job.team, job.user, job.priority, shape.gpus);
    decisions_.starts.push_back(StartDecision{
        .job = job.id, .allocation = pool_.ToAllocation(*fit), .preemptible = borrowed});
    return true;
  }

  bool TryPreempt(const QueuedJob& job,
                  int position,
                  Shape shape,
                  const PriorityClassPolicy& cls,
                  const QuotaVerdict& verdict) {
    if (!policy_.preemption.enabled || shape.gpus == 0 ||
        (cls.preempts.empty() && !verdict.guarantee_right) ||
        preemptors_ >= policy_.preemption.max_preemptors_per_pass) {
      return false;
    }
    const auto memo_key = std::make_tuple(shape.model,
                                          cls.rank,
                                          verdict.guarantee_right,
                                          verdict.guarantee_right ? job.team : std::string());
    const auto failed = unpreemptable_.find(memo_key);
    if (failed != unpreemptable_.end() && failed->second <= shape.gpus) {
      return false;
    }
    const Preemptor preemptor = MakePreemptor(shape, cls, job.team, verdict.guarantee_right);
    const std::optional<VictimChoice> choice =
        ChooseVictims(pool_, cluster_, preemptor, policy_, now_);
    if (!choice.has_value()) {
      unpreemptable_[memo_key] = shape.gpus;
      return false;
    }
    Preempt(job, position, preemptor, *choice);
    return true;
  }

  // Records `choice` for `job`: the preemptions, its GPUs and its victims' set aside for it,
  // the GPUs counted for its team, and its reason and estimated start (now: it starts as soon
  // as the victims have stopped).
  void Preempt(const QueuedJob& job,
               int position,
               const Preemptor& preemptor,
               const VictimChoice& choice) {
    std::string waits_for;
    const auto add = [&](const RunningJob& running, const std::string& why) {
      waits_for += (waits_for.empty() ? "job " : ", job ") + std::to_string(running.id.value()) +
                   " (" + why + ")";
    };
    std::vector<int> set_aside = choice.fit.gpus;
    for (const int r : choice.victims) {
      const RunningJob& victim = cluster_.running[static_cast<std::size_t>(r)];
      const std::string cause = PreemptionCause(
          RightToPreempt(pool_, cluster_, r, preemptor, policy_, now_), victim, preemptor);
      decisions_.preemptions.push_back(PreemptDecision{
          .victim = victim.id,
          .for_job = job.id,
          .cause = "preempted for job " + std::to_string(job.id.value()) + ": " + cause});
      ledger_.Remove(victim);
      add(victim, "preempted: " + cause);
      const std::vector<int>& gpus = pool_.RunningGpus(r);  // all: nobody else takes them
      set_aside.insert(set_aside.end(), gpus.begin(), gpus.end());
    }
    for (const int r : choice.stopping) {
      add(cluster_.running[static_cast<std::size_t>(r)], "already stopping");
    }
    pool_.ClaimGpus(set_aside, position);
    ++preemptors_;
    ledger_.Add(job.team, job.user, job.priority, preemptor.shape.gpus);
    const Allocation allocation = pool_.ToAllocation(choice.fit);
    decisions_.pending.push_back(PendingDecision{
        .job = job.id,
        .reason = "starts on " + allocation.node.value() + " once these jobs stop: " + waits_for,
        .estimated_start = now_,
        .reservation = allocation});
  }

  // The job waits: its reason, and what it sets aside so that later jobs do not delay it.
  void Wait(const QueuedJob& job,
            int position,
            Shape shape,
            std::optional<std::chrono::seconds> limit) {
    const bool could_ever_start =
        shape.gpus > 0 && shape.model != kNoSuchModel && pool_.LargestUsable(shape) >= shape.gpus;
    std::string reason = Reason(job, shape, could_ever_start);
    if (!could_ever_start) {
      Pend(job, std::move(reason));
      return;
    }
    const bool reserve = policy_.backfill.enabled && reservations_ < policy_.backfill.depth;
    if (policy_.backfill.enabled && !reserve) {
      Pend(job, std::move(reason));  // beyond the depth: sets nothing aside
      return;
    }
    ++reservations_;
    const std::optional<PoolReservation> reservation =
        reserve ? pool_.EarliestStart(shape) : std::nullopt;
    if (reservation.has_value()) {
      const Time start = FromUnixMillis(reservation->start_ms);
      pool_.Reserve(*reservation, position, EndOf(start, limit));
      AddWaiter(job, shape);
      const Allocation allocation = pool_.ToAllocation(reservation->fit);
      decisions_.pending.push_back(PendingDecision{
          .job = job.id,
          .reason = reason + "; expected to start in " + FormatWait((start - now_).count()) +
                    " on " + allocation.node.value() + " (GPUs reserved)",
          .estimated_start = start,
          .reservation = allocation});
      return;
    }
    // No foreseeable start: claim everything it could use (the v1 rule).
    if (pool_.Claim(shape, position)) {
      AddWaiter(job, shape);
    }
    Pend(job, std::move(reason));
  }

  void AddWaiter(const QueuedJob& job, Shape shape) {
    waiters_.push_back(Waiter{.job = &job, .shape = shape});
  }

  // The reason a job that did not start waits (before it sets anything aside). Memoized: a
  // deep queue behind a full cluster asks the same question 100,000 times.
  std::string Reason(const QueuedJob& job, Shape shape, bool could_ever_start) {
    std::string_view spelling;
    if (job.request.gpu_type.has_value()) {
      spelling = *job.request.gpu_type;
    }
    ReasonMemo& memo = reasons_[{shape.model, shape.gpus}];
    if (memo.generation != pool_.Generation() || memo.waiters != waiters_.size() ||
        memo.spelling != spelling || memo.reason.empty()) {
      memo = ReasonMemo{.generation = pool_.Generation(),
                        .waiters = waiters_.size(),
                        .spelling = std::string(spelling),
                        .reason = ComputeReason(job, shape, could_ever_start)};
    }
    return memo.reason;
  }

  std::string ComputeReason(const QueuedJob& job, Shape shape, bool could_ever_start) {
    if (!could_ever_start) {
      return DescribeNoFit(job.request, pool_.NoFitFactsFor(shape));
    }
    // A job that would fit but for the GPUs set aside names the first waiting job that set
    // one aside; one that does not fit even so names the first waiting job that wants the
    // same GPUs (as Slurm's "Priority" reason): those GPUs go to that job first.
    const GpuPool::InTheWay in_the_way = pool_.WhoIsInTheWay(shape);
    if (in_the_way.first_waiter.has_value()) {
      return "behind " + JobLabel(*order_[static_cast<std::size_t>(*in_the_way.first_waiter)]);
    }
    if (!in_the_way.fits) {
      for (const Waiter& waiter : waiters_) {
        if (pool_.ClaimsOverlap(waiter.shape, shape)) {
          return "behind " + JobLabel(*waiter.job);
        }
      }
    }
    return DescribeNoFit(job.request, pool_.NoFitFactsFor(shape));
  }

  void Pend(const QueuedJob& job, std::string reason) {
    decisions_.pending.push_back(PendingDecision{
        .job = job.id, .reason = std::move(reason), .estimated_start = {}, .reservation = {}});
  }

  struct Waiter {
    const QueuedJob* job;
    Shape shape;
  };

  const ClusterSnapshot& cluster_;
  const PolicyConfig& policy_;
  Time now_;
  GpuPool pool_;
  Ledger ledger_;
  std::array<PriorityClassPolicy, 3> classes_;
  std::vector<const QueuedJob*> order_;
  Decisions decisions_;
  FailureMemo unfit_;
  std::map<std::tuple<int, int, bool, std::string>, int> unpreemptable_;  // → fewest GPUs failed
  std::vector<Waiter> waiters_;  // jobs that reserved or claimed GPUs, in order
  int reservations_ = 0;
  int preemptors_ = 0;  // jobs that preempted in this pass
  // The last reason given for each (model, GPU count), valid while nothing that could change
  // it changed: the pool's generation, the waiters and the request's spelling of its type.
  struct ReasonMemo {
    std::uint64_t generation = 0;
    std::size_t waiters = 0;
    std::string spelling;
    std::string reason;
  };
  std::map<std::pair<int, int>, ReasonMemo> reasons_;
};

}  // namespace

Decisions Decide(const ClusterSnapshot& cluster,
                 const Queue& queue,
                 const PolicyConfig& policy,
                 Time now) {
  return Pass(cluster, policy, now).Run(queue);
}

Status CheckFeasible(const ClusterSnapshot& cluster, const JobRequest& request) {
  if (request.gpus < 0) {
    return InvalidArgument("gpus: must be 0 or more, got " + std::to_string(request.gpus));
  }
  // Nodes that are not down may take work again (draining and drained ones are undrained);
  // failed GPUs are left out, they need repair first.
  const Capacity capacity = BuildCapacity(cluster, NodeScope::kNotDown);
  if (capacity.nodes.empty() || request.gpus == 0) {
    // With no node known nothing can be judged, and agents may join later: accept.
    return OkStatus();
  }
  const int largest = LargestUsable(capacity, request);
  const bool typed = request.gpu_type.has_value() && !request.gpu_type->empty();
  if (typed && largest == 0) {
    const std::string models = UsableModels(capacity);
    return InvalidArgument("gpu-type: no GPU of type '" + *request.gpu_type +
                           "' in this cluster; " +
                           (models.empty() ? "it has no usable GPU" : "types: " + models));
  }
  if (largest < request.gpus) {
    return InvalidArgument("gpus: " + DescribeRequest(request) +
                           " requested on one node, the largest node has " +
                           std::to_string(largest) + (typed ? " of that type" : ""));
  }
  return OkStatus();
}

}  // namespace gf

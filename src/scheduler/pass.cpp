// The pass (pass.h): the stages composed, in the order README.md's "Algorithm" gives.
//
// Assumptions:
// - One pass sees one snapshot; starts, preemptions, claims and reservations made in the pass
//   only ever take capacity away, so a request that failed stays failed for the rest of the
//   pass. The pass remembers failures and reasons (keyed on the pool's generation) so that a
//   long queue behind a full cluster costs little per job.
// - A waiting job that could start on the up nodes once running jobs end either gets a
//   reservation (backfill on, among the first `depth` waiting jobs, and the ends of the jobs in
//   its way are known), or claims every GPU it could use (backfill off, or ends unknown): the
//   v1 rule, so that nothing after it in the order delays it. Beyond the depth a waiting job
//   sets nothing aside.
// - A job that can never start on the up nodes (too large, unknown model, no node up) sets
//   nothing aside: holding the queue for it would idle the cluster for nothing.
#include "scheduler/pass.h"

#include <algorithm>
#include <array>
#include <utility>

#include "core/duration.h"
#include "scheduler/estimates.h"
#include "scheduler/ordering/baseline.h"
#include "scheduler/ordering/fair_share.h"
#include "scheduler/placement/whole_gpu_fit.h"

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

// Appends "job 7 (note)" to a comma-separated list of jobs.
void AppendJob(std::string& list, const RunningJob& job, std::string_view note) {
  list += (list.empty() ? "job " : ", job ") + std::to_string(job.id.value()) + " (" +
          std::string(note) + ")";
}

// "expected to start at 2026-11-14 10:25:00 UTC", or "between ... and ..." for a range (one
// wider than the seconds a reason shows); and what it rests on, for the end of a reason: "by
// time limits", "by predicted run times".
std::string ExpectedStart(const StartEstimate& start) {
  const std::string earliest = FormatUtcSeconds(start.earliest);
  const std::string latest = FormatUtcSeconds(start.latest);
  return earliest != latest ? "expected to start between " + earliest + " and " + latest
                            : "expected to start at " + latest;
}
// What a reservation of `shape` sets aside, for its reason.
std::string Reserved(Shape shape) {
  std::string what = shape.gpus > 0 ? "GPUs" : "";
  const auto add = [&what](const char* resource) {
    what += (what.empty() ? "" : ", ") + std::string(resource);
  };
  if (shape.cpus > 0) {
    add("CPUs");
  }
  if (shape.memory_mib > 0) {
    add("memory");
  }
  return what;
}

std::string_view ByWhat(StartBasis basis) {
  return basis == StartBasis::kPredictions ? "by predicted run times" : "by time limits";
}

// The estimated start of a reservation (GpuPool::EarliestStart's).
StartEstimate StartOf(const PoolReservation& reservation) {
  return StartEstimate{
      .earliest = FromUnixMillis(reservation.early_ms),
      .latest = FromUnixMillis(reservation.start_ms),
      .basis = reservation.predicted ? StartBasis::kPredictions : StartBasis::kTimeLimits};
}

std::string JobLabel(const QueuedJob& job) {
  return "job " + std::to_string(job.id.value()) + " (" + std::string(ToString(job.priority)) +
         " priority, needs " + DescribeRequest(job.request) + ")";
}

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
}  // namespace

bool FailureMemo::Covers(Shape shape, std::int64_t end_ms, int nodes) const {
  const auto it = failed_.find({shape.model, shape.constraint, shape.cpus, shape.memory_mib});
  return it != failed_.end() &&
         std::any_of(it->second.begin(), it->second.end(), [&](const Failure& f) {
           return f.gpus <= shape.gpus && f.nodes <= nodes && f.end_ms <= end_ms;
         });
}

void FailureMemo::Add(Shape shape, std::int64_t end_ms, int nodes) {
  auto& frontier = failed_[{shape.model, shape.constraint, shape.cpus, shape.memory_mib}];
  std::erase_if(frontier, [&](const Failure& f) {
    return f.gpus >= shape.gpus && f.nodes >= nodes && f.end_ms >= end_ms;
  });
  frontier.push_back(Failure{.gpus = shape.gpus, .nodes = nodes, .end_ms = end_ms});
}

Pass::Pass(const ClusterSnapshot& cluster, const PolicyConfig& policy, Time now)
    : Pass(cluster, policy, now, std::make_unique<GpuPool>(cluster, now, UsesEstimates(policy))) {}

Pass::Pass(const ClusterSnapshot& cluster,
           const PolicyConfig& policy,
           Time now,
           std::unique_ptr<GpuPool> pool)
    : cluster_(cluster),
      policy_(policy),
      now_(now),
      owned_pool_(std::move(pool)),
      pool_(*owned_pool_),
      classes_(policy, cluster),
      ledger_(policy, cluster, classes_) {}

const Ledger& Pass::StartLedger() const {
  if (!start_ledger_.has_value()) {
    // Built again rather than copied from ledger_: that one has counted this pass's jobs, and
    // a Ledger caches a pointer into its own map. Only the incremental scheduler asks.
    start_ledger_.emplace(policy_, cluster_, classes_);
  }
  return *start_ledger_;
}

Decisions Pass::Run(const Queue& queue, std::optional<JobId> target, const PassProbe* probe) {
  Ordering ordering = FairShareOrdering(queue, cluster_, policy_, ledger_);
  order_ = std::move(ordering.order);
  // The ordering gives classes by position in the queue; the pass keeps them by position in
  // the order, as ConsiderNext does.
  order_class_.reserve(order_.size());
  for (const QueuedJob* job : order_) {
    order_class_.push_back(
        ordering.job_class[static_cast<std::size_t>(job - queue.pending.data())]);
  }
  decisions_.pending.reserve(queue.pending.size());
  queue_ = &queue;
  for (std::size_t position = 0; position < order_.size(); ++position) {
    if (position + kPrefetchAhead < order_.size()) {
      Prefetch(*order_[position + kPrefetchAhead]);
    }
    const bool probed = target.has_value() && order_[position]->id == *target;
    if (!probed && listing_ == Listing::kLookedAt &&
        SurelyWaits(*order_[position], order_class_[position])) {
      continue;
    }
    if (probed) {
      (*probe)(PassView{.pool = pool_,
                        .ledger = ledger_,
                        .order = order_,
                        .position = static_cast<int>(position),
                        .so_far = decisions_});
    }
    Consider(*order_[position], order_class_[position], static_cast<int>(position));
    if (probed) {
      break;
    }
  }
  return TakeDecisions();
}

bool Pass::ConsiderNext(const QueuedJob& job, ClassIndex c) {
  order_.push_back(&job);
  order_class_.push_back(c);
  const int before = last_change_;
  Consider(job, c, static_cast<int>(order_.size() - 1));
  return last_change_ != before;
}

bool Pass::OnlyStartsLeft() const {
  const bool no_reservation = policy_.backfill.enabled && reservations_ >= policy_.backfill.depth;
  const bool no_preemption =
      !policy_.preemption.enabled || preemptors_ >= policy_.preemption.max_preemptors_per_pass;
  return no_reservation && no_preemption;
}

bool Pass::CouldStart(const JobRequest& request, std::int64_t end_ms) {
  if (request.gpus < 0) {
    return false;  // an invalid request pends, always
  }
  const Shape shape = pool_.ShapeOf(request);
  if (unfit_.Covers(shape, end_ms)) {
    return false;
  }
  if (!pool_.FindFit(shape, end_ms).has_value()) {
    unfit_.Add(shape, end_ms);
    return false;
  }
  return true;
}

std::optional<std::chrono::seconds> Pass::PlannedLimit(const QueuedJob& job, ClassIndex c) const {
  return PlannedLength(job, EffectiveTimeLimit(classes_.Policy(c), job.time_limit), policy_);
}

PlannedEnd Pass::EndPlan(const QueuedJob& job,
                         Time start,
                         Time early,
                         std::optional<std::chrono::seconds> limit) const {
  const std::optional<std::chrono::seconds> effective =
      EffectiveTimeLimit(classes_.Policy(current_class_), job.time_limit);
  return PlannedEnd{.at = EndOf(start, limit),
                    .early = EndOf(early, ExpectedLength(job, effective, policy_)),
                    .predicted = limit != effective};
}

Decisions Pass::TakeDecisions() {
  return std::exchange(decisions_, Decisions{});
}

void Pass::Consider(const QueuedJob& job, ClassIndex c, int position) {
  const auto before = Stamp();
  current_class_ = c;
  if (job.request.gpus < 0) {
    Pend(job,
         PendingReason::Of(PendingCode::kInvalidRequest,
                           "invalid request: gpus is " + std::to_string(job.request.gpus) +
                               ", must be 0 or more"));
    return;
  }
  if (job.gang.has_value()) {
    if (const std::vector<const QueuedJob*> members = GangOf(job); !members.empty()) {
      ConsiderGang(members, c, position);
    }
    if (Stamp() != before) {
      last_change_ = position;
    }
    return;
  }
  if (IsFractional(job.request) || IsMig(job.request)) {
    ConsiderFraction(job, c);
    if (Stamp() != before) {
      last_change_ = position;
    }
    return;
  }
  const Shape shape = pool_.ShapeOf(job.request);
  const QuotaVerdict verdict = ledger_.Check(job, c, shape.gpus * kWholeGpuMilli);
  if (!verdict.may_start) {
    Pend(job, verdict.reason);
    return;
  }
  const std::optional<std::chrono::seconds> limit = PlannedLimit(job, c);
  if (!TryStart(job, shape, EndPlan(job, now_, now_, limit), verdict.borrowed) &&
      !TryPreempt(job, position, shape, c, verdict, limit)) {
    Wait(job, position, shape, limit);
  }
  if (Stamp() != before) {
    last_change_ = position;
  }
}

Pass::GangSlice* Pass::FindGang(const QueuedJob& job) {
  if (queue_ == nullptr) {
    return nullptr;
  }
  if (!gangs_found_) {
    // Found on the first member met, not up front: most passes have no gang, and a scan of
    // 100,000 queued jobs costs more than the rest of a pass over a full cluster.
    gangs_found_ = true;
    for (const QueuedJob& queued : queue_->pending) {
      if (queued.gang.has_value()) {
        ++gangs_[queued.gang->value()].count;
      }
    }
    std::uint32_t next = 0;
    for (auto& [gang, slice] : gangs_) {
      slice.begin = next;
      next += std::exchange(slice.count, 0);
    }
    gang_members_.resize(next);
    for (const QueuedJob& queued : queue_->pending) {
      if (queued.gang.has_value()) {
        GangSlice& slice = gangs_[queued.gang->value()];
        gang_members_[slice.begin + slice.count++] = &queued;
      }
    }
    const auto by_id = [](const QueuedJob* a, const QueuedJob* b) {
      return a->id.value() < b->id.value();
    };
    for (const auto& [gang, slice] : gangs_) {
      const auto first = gang_members_.begin() + slice.begin;
      const auto last = first + slice.count;
      if (!std::is_sorted(first, last, by_id)) {  // queues come in id order
        std::sort(first, last, by_id);
      }
    }
  }
  const auto it = gangs_.find(job.gang->value());
  return it == gangs_.end() ? nullptr : &it->second;
}

std::vector<const QueuedJob*> Pass::GangOf(const QueuedJob& job) {
  GangSlice* slice = FindGang(job);
  if (slice == nullptr) {
    return {&job};
  }
  const auto first = gang_members_.begin() + slice->begin;
  std::vector<const QueuedJob*> members(first, first + std::exchange(slice->count, 0));
  return members;
}

bool Pass::SurelyWaits(const QueuedJob& job, ClassIndex c) {
  // Waiting, it may set GPUs aside: a reservation while the depth lasts, or with backfill off
  // a claim (unless an earlier claim covers it, checked below).
  const bool claims = !policy_.backfill.enabled;
  if (!claims && reservations_ < policy_.backfill.depth) {
    return false;
  }
  if (job.request.gpus < 0 || IsFractional(job.request) || IsMig(job.request)) {
    // Considered, as they are few: an invalid request pends with its reason (so a pass that
    // leaves jobs waiting always lists one, the first that found no GPUs), and a fractional
    // or MIG job's pool keeps no memo.
    return false;
  }
  const QueuedJob* planned = &job;  // whose request and length the fit would be tried with
  int nodes = 1;
  if (job.gang.has_value()) {
    const GangSlice* slice = FindGang(job);
    if (slice == nullptr || slice->count == 0) {
      return slice != nullptr;  // decided already (or not a gang the pass knows: consider)
    }
    planned = gang_members_[slice->begin];  // as ConsiderGang
    nodes = static_cast<int>(slice->count);
  } else if (policy_.preemption.enabled &&
             preemptors_ < policy_.preemption.max_preemptors_per_pass) {
    return false;  // it may preempt (a gang preempts nothing)
  }
  const Shape shape = pool_.ShapeOf(planned->request);
  if (claims && !pool_.ClaimCovered(shape)) {
    return false;
  }
  const std::int64_t end_ms = EndOf(now_, PlannedLimit(*planned, c));
  return job.gang.has_value() ? unfit_gangs_.Covers(shape, end_ms, nodes)
                              : unfit_.Covers(shape, end_ms);
}

void Pass::ConsiderGang(const std::vector<const QueuedJob*>& members, ClassIndex c, int position) {
  const QueuedJob& job = *members.front();
  const auto count = static_cast<int>(members.size());
  const Shape shape = pool_.ShapeOf(job.request);
  const QuotaVerdict verdict = ledger_.Check(job, c, shape.gpus * count * kWholeGpuMilli);
  if (!verdict.may_start) {
    for (const QueuedJob* member : members) {
      Pend(*member, verdict.reason);
    }
    return;
  }
  const std::optional<std::chrono::seconds> limit = PlannedLimit(job, c);
  const PlannedEnd end = EndPlan(job, now_, now_, limit);
  const bool unfit = unfit_gangs_.Covers(shape, end.at, count);
  const std::optional<std::vector<PoolFit>> fits =
      unfit ? std::nullopt : pool_.FindGangFit(shape, count, end.at);
  if (!fits.has_value()) {
    if (!unfit) {
      unfit_gangs_.Add(shape, end.at, count);
    }
    WaitGang(members, position, shape, limit);
    return;
  }
  for (std::size_t i = 0; i < members.size(); ++i) {
    const QueuedJob& member = *members[i];
    pool_.Take((*fits)[i], end);
    ledger_.Add(member.team, member.user, current_class_, shape.gpus * kWholeGpuMilli);
    decisions_.starts.push_back(StartDecision{.job = member.id,
                                              .allocation = pool_.ToAllocation((*fits)[i]),
                                              .preemptible = verdict.borrowed});
  }
}

void Pass::WaitGang(const std::vector<const QueuedJob*>& members,
                    int position,
                    Shape shape,
                    std::optional<std::chrono::seconds> limit) {
  const QueuedJob& job = *members.front();
  const auto count = static_cast<int>(members.size());
  const int usable = pool_.NodesWithUsable(shape);
  const std::string needs = "needs " + DescribeRequest(job.request);
  if (usable < count) {
    for (const QueuedJob* member : members) {
      Pend(*member,
           PendingReason::Of(PendingCode::kTooFewNodes,
                             needs + "; " + std::to_string(usable) + " up " +
                                 (usable == 1 ? "node has" : "nodes have") +
                                 " that many usable GPUs"));
    }
    return;
  }
  const int givable = pool_.NodesWithGivable(shape, EndOf(now_, limit));
  PendingReason reason = PendingReason::Of(
      PendingCode::kNoFreeGpus,
      needs + "; " + std::to_string(givable) + " of the " + std::to_string(usable) +
          " nodes that could take a member " + (givable == 1 ? "has" : "have") + " room now");
  const bool reserve = policy_.backfill.enabled && reservations_ < policy_.backfill.depth;
  if (policy_.backfill.enabled && !reserve) {
    for (const QueuedJob* member : members) {
      Pend(*member, reason);
    }
    return;
  }
  if (reserve) {
    ++reservations_;
  }
  const std::optional<std::vector<PoolReservation>> reservations =
      reserve ? pool_.EarliestGangStart(shape, count) : std::nullopt;
  if (!reservations.has_value()) {
    if (pool_.Claim(shape, position)) {  // no foreseeable start: the v1 rule, as Wait
      AddWaiter(job, shape);
    }
    for (const QueuedJob* member : members) {
      Pend(*member, reason);
    }
    return;
  }
  const StartEstimate start = StartOf(reservations->front());
  std::string nodes;
  for (const PoolReservation& reservation : *reservations) {
    pool_.Reserve(reservation, position, EndPlan(job, start.latest, start.earliest, limit));
    nodes += (nodes.empty() ? "" : ", ") +
             pool_.Nodes()[static_cast<std::size_t>(reservation.fit.node)].name.value();
  }
  AddWaiter(job, shape);
  reason = PendingReason::Of(PendingCode::kGpusReserved,
                             reason.text + "; " + ExpectedStart(start) + " on " + nodes + " (" +
                                 Reserved(shape) + " reserved; " +
                                 std::string(ByWhat(start.basis)) + ")");
  for (std::size_t i = 0; i < members.size(); ++i) {
    decisions_.pending.push_back(
        PendingDecision{.job = members[i]->id,
                        .reason = WithClassNote(*members[i], reason),
                        .estimated_start = start.latest,
                        .start_estimate = start,
                        .reservation = pool_.ToAllocation((*reservations)[i].fit)});
  }
}

void Pass::ConsiderFraction(const QueuedJob& job, ClassIndex c) {
  if (IsMig(job.request)) {
    if (!migs_.has_value()) {
      migs_.emplace(cluster_);
    }
    ConsiderPart(*migs_, job, c);
    return;
  }
  if (!shares_.has_value()) {
    shares_.emplace(cluster_, policy_.share_placement);
  }
  ConsiderPart(*shares_, job, c);
}

template <typename PartPool>
void Pass::ConsiderPart(PartPool& pool, const QueuedJob& job, ClassIndex c) {
  const auto fit = pool.FindFit(job.request, job.user);
  // Quotas count what it would take of the GPU it goes to (its memory may weigh more than its
  // share); with no GPU to go to, its share as asked.
  const int milli = fit.has_value() ? fit->milli : std::max(job.request.gpu_milli, 1);
  const QuotaVerdict verdict = ledger_.Check(job, c, milli);
  if (!verdict.may_start) {
    Pend(job, verdict.reason);
    return;
  }
  if (!fit.has_value()) {
    Pend(job, pool.WhyNot(job.request, job.user));
    return;
  }
  Allocation allocation = pool.ToAllocation(*fit);
  const int node = pool_.NodeAt(allocation.node);
  if (AsksHost(job.request)) {
    // Until its planned end: a reservation of the node's CPUs or memory for later holds too.
    const PlannedEnd end = EndPlan(job, now_, now_, PlannedLimit(job, c));
    // Its pool chose the GPU; the host CPUs and memory must be free on that GPU's node too.
    if (node < 0 || !pool_.HostRoomOn(node, job.request.cpus, job.request.memory_mib, end.at)) {
      Pend(job,
           PendingReason::Of(PendingCode::kCpuMemBusy,
                             "needs " + DescribeHostRequest(job.request) + " on " +
                                 allocation.node.value() +
                                 ", the node of the GPU it fits on; not free there now"));
      return;
    }
    pool_.TakeHost(node, job.request.cpus, job.request.memory_mib, end);
    allocation.cpus = job.request.cpus;
    allocation.memory_mib = job.request.memory_mib;
  }
  pool.Take(*fit, job.user);
  ledger_.Add(job.team, job.user, current_class_, fit->milli);
  decisions_.starts.push_back(StartDecision{
      .job = job.id, .allocation = std::move(allocation), .preemptible = verdict.borrowed});
}

bool Pass::TryStart(const QueuedJob& job, Shape shape, const PlannedEnd& end, bool borrowed) {
  if (unfit_.Covers(shape, end.at)) {
    return false;
  }
  const std::optional<PoolFit> fit = pool_.FindFit(shape, end.at);
  if (!fit.has_value()) {
    unfit_.Add(shape, end.at);
    return false;
  }
  pool_.Take(*fit, end);
  ledger_.Add(job.team, job.user, current_class_, shape.gpus * kWholeGpuMilli);
  decisions_.starts.push_back(StartDecision{
      .job = job.id, .allocation = pool_.ToAllocation(*fit), .preemptible = borrowed});
  return true;
}

// Preempts for `job` now, or (WaitForYoungVictims) plans to once its victims have run the
// minimum run time. Returns whether it did either (the job's decision is then made).
bool Pass::TryPreempt(const QueuedJob& job,
                      int position,
                      Shape shape,
                      ClassIndex c,
                      const QuotaVerdict& verdict,
                      std::optional<std::chrono::seconds> limit) {
  // A job whose class the config does not list preempts nothing (ClassTable).
  if (!policy_.preemption.enabled || shape.gpus == 0 || !classes_.IsConfigured(c) ||
      (classes_.Policy(c).preempts.empty() && !verdict.guarantee_right &&
       !OrderPreempts(policy_)) ||
      preemptors_ >= policy_.preemption.max_preemptors_per_pass) {
    return false;
  }
  // Under srtf and las the job's rank is part of its rights (0 under the other orders): a job
  // ranked later has no right an earlier one lacked, so a failure covers later ranks too.
  // Preemption by size: a later place has no right an earlier one lacked either, and the
  // rights are within the job's team.
  const Preemptor preemptor =
      JobPreemptor(job, shape, classes_, c, verdict.guarantee_right, policy_, limit, ledger_);
  const auto memo_key =
      std::make_tuple(shape.model,
                      shape.constraint,
                      static_cast<int>(c),
                      verdict.guarantee_right,
                      verdict.guarantee_right || preemptor.by_size ? job.team : std::string());
  const auto failed = unpreemptable_.find(memo_key);
  if (failed != unpreemptable_.end() && failed->second.gpus <= shape.gpus &&
      failed->second.rank <= preemptor.rank && failed->second.place_ms <= preemptor.place_ms) {
    return false;
  }
  const std::optional<VictimChoice> choice =
      ChooseVictims(pool_, cluster_, preemptor, policy_, now_, &victims_);
  if (choice.has_value() &&
      !HostRoomAfter(choice->fit.node, shape, choice->victims, EndOf(now_, limit))) {
    // Its victims' GPUs would not bring the host CPUs or memory it asks: preempting them
    // would stop work for nothing (issue #24). It waits (Wait says what is short).
    return false;
  }
  if (!choice.has_value()) {
    unpreemptable_[memo_key] = {
        .gpus = shape.gpus, .rank = preemptor.rank, .place_ms = preemptor.place_ms};
    return WaitForYoungVictims(job, position, preemptor, limit);
  }
  Preempt(job, position, preemptor, *choice);
  return true;
}

// Records `choice` for `job`: the preemptions, its GPUs and its victims' set aside for it,
// the GPUs counted for its team, and its reason and estimated start (now: it starts as soon
// as the victims have stopped).
void Pass::Preempt(const QueuedJob& job,
                   int position,
                   const Preemptor& preemptor,
                   const VictimChoice& choice) {
  std::string waits_for;
  std::vector<int> set_aside = choice.fit.gpus;
  for (const int r : choice.victims) {
    const RunningJob& victim = cluster_.running[static_cast<std::size_t>(r)];
    const std::string cause =
        PreemptionCause(RightToPreempt(pool_, cluster_, r, preemptor, policy_, now_),
                        victim,
                        preemptor,
                        policy_,
                        now_);
    decisions_.preemptions.push_back(PreemptDecision{
        .victim = victim.id,
        .for_job = job.id,
        .cause = "preempted for job " + std::to_string(job.id.value()) + ": " + cause});
    ledger_.Remove(victim);
    AppendJob(waits_for, victim, "preempted: " + cause);
    const std::vector<int>& gpus = pool_.RunningGpus(r);  // all: nobody else takes them
    set_aside.insert(set_aside.end(), gpus.begin(), gpus.end());
  }
  for (const int r : choice.stopping) {
    AppendJob(waits_for, cluster_.running[static_cast<std::size_t>(r)], "already stopping");
  }
  pool_.ClaimGpus(set_aside, position);
  ++preemptors_;
  ledger_.Add(job.team, job.user, current_class_, preemptor.shape.gpus * kWholeGpuMilli);
  const Allocation allocation = pool_.ToAllocation(choice.fit);
  decisions_.pending.push_back(PendingDecision{
      .job = job.id,
      .reason = PendingReason::Of(
          PendingCode::kVictimsStopping,
          "starts on " + allocation.node.value() + " once these jobs stop: " + waits_for),
      .estimated_start = now_,
      .start_estimate =
          StartEstimate{.earliest = now_, .latest = now_, .basis = StartBasis::kPreemption},
      .reservation = allocation});
}

// `job` has the right to preempt but no victim has run PreemptionPolicy::min_run_time yet:
// plans the preemption for when they have (the victims that lose the least, as if they were
// old enough), reserves the GPUs it will get from then, and says whom it waits for and when.
// A reservation like Wait's: only with backfill on and among the first `depth` waiting jobs
// (it costs a second victim search). Returns whether it planned one.
bool Pass::WaitForYoungVictims(const QueuedJob& job,
                               int position,
                               Preemptor preemptor,
                               std::optional<std::chrono::seconds> limit) {
  const std::chrono::seconds min_run_time = policy_.preemption.min_run_time;
  if (min_run_time.count() == 0 || !policy_.backfill.enabled ||
      reservations_ >= policy_.backfill.depth) {
    return false;
  }
  preemptor.ignore_min_run_time = true;
  const std::optional<VictimChoice> later =
      ChooseVictims(pool_, cluster_, preemptor, policy_, now_, &victims_);
  if (!later.has_value() || later->victims.empty() ||
      !HostRoomAfter(later->fit.node, preemptor.shape, later->victims, EndOf(now_, limit))) {
    return false;  // no right at all, only stopping jobs in the way, or no CPUs to gain
  }
  Time at = now_;
  std::string victims;
  for (const int r : later->victims) {
    const RunningJob& victim = cluster_.running[static_cast<std::size_t>(r)];
    at = std::max(at, victim.start_time + min_run_time);
    AppendJob(victims, victim, ToString(victim.priority));
  }
  for (const int r : later->stopping) {
    AppendJob(victims, cluster_.running[static_cast<std::size_t>(r)], "already stopping");
  }
  ++reservations_;
  pool_.Reserve(PoolReservation{.fit = later->fit, .start_ms = ToUnixMillis(at)},
                position,
                EndPlan(job, at, at, limit));
  AddWaiter(job, preemptor.shape);
  const Allocation allocation = pool_.ToAllocation(later->fit);
  decisions_.pending.push_back(PendingDecision{
      .job = job.id,
      .reason =
          PendingReason::Of(PendingCode::kVictimsProtected,
                            "waiting to preempt " + victims + " on " + allocation.node.value() +
                                ", possible at " + FormatUtcSeconds(at) + " (minimum run time " +
                                FormatWait(Millis(min_run_time).count()) + ")"),
      .estimated_start = at,
      .start_estimate =
          StartEstimate{.earliest = at, .latest = at, .basis = StartBasis::kPreemption},
      .reservation = allocation});
  return true;
}

// The job waits: its reason, and what it sets aside so that later jobs do not delay it.
// A job short of host CPUs or memory, not GPUs, sets nothing aside: reservations plan GPUs
// (running jobs' ends free their CPUs and memory too, but the pool does not foresee them).
void Pass::Wait(const QueuedJob& job,
                int position,
                Shape shape,
                std::optional<std::chrono::seconds> limit) {
  std::optional<PendingReason> host;
  if (AsksHost(shape)) {
    host = HostReason(job, shape, EndOf(now_, limit));
    // Too much for any node: nothing to set aside. Short of host CPUs or memory now, with
    // backfill on: it reserves them (and its GPUs) from when they are expected back, as a job
    // short of GPUs does, so that smaller jobs cannot keep taking them ahead of it.
    if (host.has_value() && (host->code != PendingCode::kCpuMemBusy || !policy_.backfill.enabled)) {
      Pend(job, *std::move(host));
      return;
    }
  }
  const bool could_ever_start =
      shape.model != kNoSuchModel &&
      (shape.gpus > 0 ? pool_.LargestUsable(shape) >= shape.gpus : host.has_value());
  PendingReason reason = host.has_value() ? *std::move(host) : Reason(job, shape, could_ever_start);
  if (!could_ever_start) {
    Pend(job, std::move(reason));
    return;
  }
  const bool reserve = policy_.backfill.enabled && reservations_ < policy_.backfill.depth;
  if (policy_.backfill.enabled && !reserve) {
    Pend(job, std::move(reason));  // beyond the depth: sets nothing aside
    return;
  }
  // Counted only where the depth applies (backfill on), so that with backfill off a waiting
  // job whose claim an earlier one already covers changes nothing (pass.h: ConsiderNext).
  if (reserve) {
    ++reservations_;
  }
  const std::optional<PoolReservation> reservation =
      reserve ? pool_.EarliestStart(shape) : std::nullopt;
  if (reservation.has_value()) {
    const StartEstimate start = StartOf(*reservation);
    pool_.Reserve(*reservation, position, EndPlan(job, start.latest, start.earliest, limit));
    AddWaiter(job, shape);
    const Allocation allocation = pool_.ToAllocation(reservation->fit);
    decisions_.pending.push_back(PendingDecision{
        .job = job.id,
        .reason = WithClassNote(
            job,
            PendingReason::Of(PendingCode::kGpusReserved,
                              reason.text + "; " + ExpectedStart(start) + " on " +
                                  allocation.node.value() + " (" + Reserved(shape) + " reserved; " +
                                  std::string(ByWhat(start.basis)) + ")")),
        .estimated_start = start.latest,
        .start_estimate = start,
        .reservation = allocation});
    return;
  }
  // No foreseeable start: claim everything it could use (the v1 rule). Not for a job short of
  // host CPUs or memory with its GPUs free: claiming GPUs would not bring it those.
  if (reason.code != PendingCode::kCpuMemBusy && pool_.Claim(shape, position)) {
    AddWaiter(job, shape);
  }
  Pend(job, std::move(reason));
}

namespace {

// "32 CPUs on n1, 120 GiB memory on n2" (the most of each on one node), for reasons; a
// resource a node does not report counts as none there.
std::string MostHost(const std::vector<PoolNode>& nodes,
                     const std::vector<int>& candidates,
                     bool free) {
  int cpus = -1;
  std::int64_t mib = -1;
  std::string cpu_node;
  std::string mib_node;
  for (const int n : candidates) {
    const PoolNode& node = nodes[static_cast<std::size_t>(n)];
    const int c = free ? node.cpus - node.cpus_used : node.cpus;
    const std::int64_t m = free ? node.memory_mib - node.memory_used_mib : node.memory_mib;
    if (node.cpus > 0 && c > cpus) {
      cpus = c;
      cpu_node = node.name.value();
    }
    if (node.memory_mib > 0 && m > mib) {
      mib = m;
      mib_node = node.name.value();
    }
  }
  std::string text;
  if (cpus >= 0) {
    text = std::to_string(cpus) + (cpus == 1 ? " CPU on " : " CPUs on ") + cpu_node;
  }
  if (mib >= 0) {
    text += (text.empty() ? "" : ", ") + FormatMib(mib) + " memory on " + mib_node;
  }
  return text;
}

}  // namespace

std::optional<PendingReason> Pass::HostReason(const QueuedJob& job,
                                              Shape shape,
                                              std::int64_t end_ms) const {
  const std::vector<PoolNode>& nodes = pool_.Nodes();
  std::vector<int> candidates;  // the up nodes that could ever hold its GPUs
  bool capacity = false;
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    if (pool_.Allows(static_cast<int>(n), shape) &&
        GpuPool::Usable(nodes[n], shape.model) >= shape.gpus) {
      candidates.push_back(static_cast<int>(n));
      capacity = capacity || HostCapacity(nodes[n], shape.cpus, shape.memory_mib);
    }
  }
  if (candidates.empty()) {
    return std::nullopt;  // no node for its GPUs at all: the GPU reasons say so
  }
  const std::string needs = "needs " + DescribeRequest(job.request);
  if (!capacity) {
    const std::string most = MostHost(nodes, candidates, false);
    return PendingReason::Of(PendingCode::kCpuMemTooLarge,
                             needs + "; no up node that could take it has that many host " +
                                 "CPUs and that much memory" +
                                 (most.empty() ? "" : " (the most: " + most + ")"));
  }
  Shape gpus_only = shape;
  gpus_only.cpus = 0;
  gpus_only.memory_mib = 0;
  if (!pool_.FindFit(gpus_only, end_ms).has_value()) {
    return std::nullopt;  // GPUs are short too: wait for them as any job
  }
  const bool free_now = std::any_of(candidates.begin(), candidates.end(), [&](int n) {
    return HostRoom(nodes[static_cast<std::size_t>(n)], shape.cpus, shape.memory_mib);
  });
  if (free_now) {  // then a reservation for a job ahead holds them before this one would end
    return PendingReason::Of(PendingCode::kCpuMemBusy,
                             needs +
                                 "; its GPUs and host CPUs and memory are free now, but those "
                                 "are reserved for a job ahead before this one would end");
  }
  const std::string most = MostHost(nodes, candidates, true);
  return PendingReason::Of(PendingCode::kCpuMemBusy,
                           needs +
                               "; its GPUs are free but not with that many free host CPUs "
                               "and that much memory on one node" +
                               (most.empty() ? "" : " (most free: " + most + ")"));
}

bool Pass::HostRoomAfter(int n,
                         Shape shape,
                         const std::vector<int>& victims,
                         std::int64_t end_ms) const {
  if (!AsksHost(shape)) {
    return true;
  }
  PoolNode node = pool_.Nodes()[static_cast<std::size_t>(n)];  // a copy: preemption is rare
  for (const int r : victims) {
    const Allocation& held = cluster_.running[static_cast<std::size_t>(r)].allocation;
    if (held.node == node.name) {
      node.cpus_used -= held.cpus;
      node.memory_used_mib -= held.memory_mib;
    }
    std::erase_if(node.host_spans, [r](const HostSpan& span) { return span.running == r; });
  }
  return HostRoomUntil(node, shape.cpus, shape.memory_mib, ToUnixMillis(now_), end_ms);
}

void Pass::AddWaiter(const QueuedJob& job, Shape shape) {
  waiters_.push_back(Waiter{.job = &job, .shape = shape});
}

// The reason a job that did not start waits (before it sets anything aside). Memoized: a
// deep queue behind a full cluster asks the same question 100,000 times.
PendingReason Pass::Reason(const QueuedJob& job, Shape shape, bool could_ever_start) {
  std::string_view spelling;
  if (job.request.gpu_type.has_value()) {
    spelling = *job.request.gpu_type;
  }
  ReasonMemo& memo =
      reasons_[{shape.model, shape.gpus, shape.constraint, shape.cpus, shape.memory_mib}];
  if (memo.generation != pool_.Generation() || memo.waiters != waiters_.size() ||
      memo.spelling != spelling || memo.reason.text.empty()) {
    memo = ReasonMemo{.generation = pool_.Generation(),
                      .waiters = waiters_.size(),
                      .spelling = std::string(spelling),
                      .reason = ComputeReason(job, shape, could_ever_start)};
  }
  return memo.reason;
}

PendingReason Pass::NoFitReason(const QueuedJob& job, Shape shape) const {
  NoFitFacts facts = pool_.NoFitFactsFor(shape);
  if (!facts.any_node) {  // rare, and the pool keeps only the up nodes: ask the snapshot
    facts.not_up = NotUpNodes(cluster_);
  }
  return DescribeNoFit(job.request, facts);
}

PendingReason Pass::ComputeReason(const QueuedJob& job, Shape shape, bool could_ever_start) {
  if (!could_ever_start) {
    return NoFitReason(job, shape);
  }
  // A job that would fit but for the GPUs set aside names the first waiting job that set
  // one aside; one that does not fit even so names the first waiting job that wants the
  // same GPUs (as Slurm's "Priority" reason): those GPUs go to that job first.
  const GpuPool::InTheWay in_the_way = pool_.WhoIsInTheWay(shape);
  if (in_the_way.first_waiter.has_value()) {
    return PendingReason::Of(
        PendingCode::kBehindEarlierJob,
        "behind " + JobLabel(*order_[static_cast<std::size_t>(*in_the_way.first_waiter)]));
  }
  if (!in_the_way.fits) {
    for (const Waiter& waiter : waiters_) {
      if (pool_.ClaimsOverlap(waiter.shape, shape)) {
        return PendingReason::Of(PendingCode::kBehindEarlierJob, "behind " + JobLabel(*waiter.job));
      }
    }
  }
  return NoFitReason(job, shape);
}

void Pass::Pend(const QueuedJob& job, PendingReason reason) {
  decisions_.pending.push_back(PendingDecision{.job = job.id,
                                               .reason = WithClassNote(job, std::move(reason)),
                                               .estimated_start = {},
                                               .reservation = {}});
}

// A job whose class the config does not list (dropped since it was submitted) says so: it
// is why the job goes after every other.
PendingReason Pass::WithClassNote(const QueuedJob& job, PendingReason reason) const {
  if (!classes_.IsConfigured(current_class_)) {
    reason.text += "; its class '" + job.priority.name +
                   "' is not configured, so it goes after every configured class";
  }
  return reason;
}

}  // namespace gf

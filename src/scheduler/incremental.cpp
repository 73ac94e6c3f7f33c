// IncrementalScheduler (incremental.h): which path an event takes, and the bookkeeping that
// keeps its copy of the state equal to what Decide() would be given.
#include "scheduler/incremental.h"

#include <algorithm>
#include <functional>
#include <iterator>
#include <utility>

#include "scheduler/estimates.h"
#include "scheduler/ordering/fair_share.h"
#include "scheduler/pass.h"
#include "scheduler/quota/ledger.h"

namespace gf {
namespace {

bool NeedsFullPass(const QueuedJob& job) {
  return job.gang.has_value() || IsFractional(job.request) || IsMig(job.request);
}

}  // namespace

std::string_view ToString(IncrementalPath path) {
  switch (path) {
    case IncrementalPath::kFast:
      return "fast";
    case IncrementalPath::kReplay:
      return "replay";
    case IncrementalPath::kHead:
      return "head";
    case IncrementalPath::kFull:
      return "full";
  }
  return "full";
}

IncrementalScheduler::IncrementalScheduler(IncrementalOptions options) : options_(options) {}
IncrementalScheduler::~IncrementalScheduler() = default;

Decisions IncrementalScheduler::Full(ClusterSnapshot cluster,
                                     Queue queue,
                                     PolicyConfig policy,
                                     Time now) {
  pass_.reset();  // it refers to the state replaced here
  base_.reset();
  cluster_ = std::move(cluster);
  policy_ = std::move(policy);
  initial_ = std::move(queue);
  arrived_.clear();
  classes_ = std::make_unique<ClassTable>(policy_);
  teams_.clear();
  users_.clear();
  auto pass = std::make_unique<Pass>(cluster_, policy_, now);
  pass->SetListing(options_.full_listing);
  last_now_ = now;
  Decisions decisions = pass->Run(initial_);
  BuildSlots(*pass);
  // A full pass numbers the whole queue, so its positions are slots.
  const int last = pass->LastChange();
  frontier_ = last < 0 ? std::nullopt : std::optional<std::size_t>(static_cast<std::size_t>(last));
  pass_ = std::move(pass);
  pass_now_ = now;
  if (Apply(decisions, now)) {
    DropPass();
  }
  return decisions;
}

IncrementalResult IncrementalScheduler::OnArrival(QueuedJob job, Time now) {
  if (classes_ == nullptr) {  // no Full() yet: an empty cluster under the default policy
    Queue queue;
    queue.pending.push_back(std::move(job));
    return {.decisions = Full({}, std::move(queue), {}, now),
            .path = IncrementalPath::kFull,
            .considered = 1};
  }
  const QueuedJob& added = arrived_.emplace_back(std::move(job));
  const ClassIndex cls = classes_->IndexOf(added.priority);
  if (policy_.ordering.order != QueueOrder::kPriority) {
    // A baseline order (ordering/baseline.h) has no key kept here: a full pass sorts it in.
    AddSlot(added, cls, slots_.size());
    return FullOnCurrent(now);
  }
  if (NeedsFullPass(added) || full_pass_slots_ > 0) {
    AddSlot(added, cls, slots_.size());  // the full pass sorts it in
    return FullOnCurrent(now);           // only a full pass decides it (full_pass_slots_)
  }
  const bool reuse = Reusable(now);
  std::unique_ptr<Pass> fresh;
  if (!reuse) {
    fresh = NewPass(now);
    if (StandingsMoved(*fresh)) {
      AddSlot(added, cls, slots_.size());  // the full pass sorts it in
      return FullOnCurrent(now);
    }
  }
  const Ledger& ledger = reuse ? pass_->StartLedger() : fresh->StartLedger();
  const std::size_t at = InsertionPoint(KeyOf(added, cls, ledger), ledger);
  AddSlot(added, cls, at);
  if (!reuse || (frontier_.has_value() && at <= *frontier_)) {
    return Replay(fresh != nullptr ? std::move(fresh) : NewPass(now), now, &added);
  }
  // Every job between the frontier and `at` changed nothing, so the kept pass's end state is
  // the state a full pass would show this job.
  const bool changed = pass_->ConsiderNext(added, cls);
  Decisions decisions = pass_->TakeDecisions();
  // What it took or set aside shows in later jobs' decisions, and a start (even a CPU-only
  // one, which changes no GPU) changes the state a later pass is given: the next event replays.
  // A start runs from `now`, when the caller starts it.
  if (Apply(decisions, now) || changed) {
    DropPass();
  }
  return {.decisions = std::move(decisions), .path = IncrementalPath::kFast, .considered = 1};
}

IncrementalResult IncrementalScheduler::OnCompletion(JobId job, Time now) {
  if (full_pass_slots_ > 0) {  // see full_pass_slots_
    if (!RemoveRunning(job)) {
      if (const auto queued = queued_.find(job.value()); queued != queued_.end()) {
        RemoveSlots({queued->second});
      }
    }
    return FullOnCurrent(now);
  }
  if (RemoveRunning(job)) {
    DropPass();
    return HeadStarts(now);
  }
  if (classes_ == nullptr) {
    return {.decisions = {}, .path = IncrementalPath::kFast, .considered = 0};
  }
  const bool reuse = Reusable(now);
  const auto queued = queued_.find(job.value());
  if (queued == queued_.end()) {  // nothing changed but, maybe, the time
    return reuse
               ? IncrementalResult{.decisions = {}, .path = IncrementalPath::kFast, .considered = 0}
               : Rerun(now);
  }
  std::unique_ptr<Pass> fresh;
  if (!reuse) {
    fresh = NewPass(now);
  }
  const Ledger& ledger = reuse ? pass_->StartLedger() : fresh->StartLedger();
  const std::optional<std::size_t> at = PositionOf(*queued->second, ledger);
  if (!at.has_value()) {
    return FullOnCurrent(now);  // not where its key says: cannot happen; be safe anyway
  }
  RemoveSlot(*at);
  if (reuse && (!frontier_.has_value() || *at > *frontier_)) {
    // It changed nothing in the kept pass, so nobody's decision depended on it.
    return {.decisions = {}, .path = IncrementalPath::kFast, .considered = 0};
  }
  DropPass();
  if (fresh != nullptr && !StandingsMoved(*fresh)) {
    return Replay(std::move(fresh), now);
  }
  return Rerun(now);
}

IncrementalResult IncrementalScheduler::OnCompletions(const std::vector<JobId>& jobs, Time now) {
  if (jobs.size() == 1) {
    return OnCompletion(jobs.front(), now);
  }
  std::vector<JobId> queued;  // not running: they leave the queue one by one
  bool freed = false;
  for (const JobId job : jobs) {
    if (RemoveRunning(job)) {
      freed = true;
    } else {
      queued.push_back(job);
    }
  }
  IncrementalResult result{.decisions = {}, .path = IncrementalPath::kFast, .considered = 0};
  const auto add = [&](IncrementalResult more) {
    std::move(more.decisions.starts.begin(),
              more.decisions.starts.end(),
              std::back_inserter(result.decisions.starts));
    std::move(more.decisions.preemptions.begin(),
              more.decisions.preemptions.end(),
              std::back_inserter(result.decisions.preemptions));
    std::move(more.decisions.pending.begin(),
              more.decisions.pending.end(),
              std::back_inserter(result.decisions.pending));
    result.path = more.path;  // named by its last pass
    result.considered += more.considered;
  };
  for (const JobId job : queued) {
    add(OnCompletion(job, now));
  }
  if (freed) {
    if (full_pass_slots_ > 0) {  // see full_pass_slots_
      add(FullOnCurrent(now));
    } else {
      DropPass();
      add(HeadStarts(now));
    }
  }
  return result;
}

IncrementalResult IncrementalScheduler::Refresh(Time now) {
  if (classes_ == nullptr || Reusable(now)) {
    return {.decisions = {}, .path = IncrementalPath::kFast, .considered = 0};
  }
  return full_pass_slots_ > 0 ? FullOnCurrent(now) : Rerun(now);
}

bool IncrementalScheduler::Reusable(Time now) const {
  const auto since = now - pass_now_;
  return pass_ != nullptr && since.count() >= 0 && since <= options_.reuse_within;
}

Queue IncrementalScheduler::CurrentQueue() const {
  Queue queue;
  queue.pending.reserve(slots_.size());
  for (const Slot& slot : slots_) {
    queue.pending.push_back(*slot.job);
  }
  return queue;
}

std::vector<JobId> IncrementalScheduler::Order() const {
  std::vector<JobId> order;
  order.reserve(slots_.size());
  for (const Slot& slot : slots_) {
    order.push_back(slot.job->id);
  }
  return order;
}

IncrementalResult IncrementalScheduler::Rerun(Time now) {
  std::unique_ptr<Pass> pass = NewPass(now);
  if (StandingsMoved(*pass)) {
    return FullOnCurrent(now);
  }
  return Replay(std::move(pass), now);
}

IncrementalResult IncrementalScheduler::HeadStarts(Time now) {
  if (slots_.empty()) {
    // Nothing waits: nothing to decide, and no pass to set up (a copy of the pool, a ledger).
    // A team's standing that moved shows at the next pass, which checks it first.
    return {.decisions = {}, .path = IncrementalPath::kHead, .considered = 0};
  }
  std::unique_ptr<Pass> pass = NewPass(now);
  if (StandingsMoved(pass->LedgerSoFar())) {  // before any job counts: the start ledger
    return FullOnCurrent(now);
  }
  int considered = 0;
  for (const Slot& slot : slots_) {
    ++considered;
    const std::size_t started = pass->StartsSoFar();
    pass->ConsiderNext(*slot.job, slot.cls);
    if (pass->StartsSoFar() == started) {
      break;  // it waits: the jobs after it are the next full pass's
    }
  }
  Decisions decisions = pass->TakeDecisions();
  Apply(decisions, now);         // no pass is kept (a partial one is no base for kFast)
  spare_ = pass->ReleasePool();  // but its pool is, as DropPass keeps one: the next copy's
  return {
      .decisions = std::move(decisions), .path = IncrementalPath::kHead, .considered = considered};
}

IncrementalResult IncrementalScheduler::Replay(std::unique_ptr<Pass> pass,
                                               Time now,
                                               const QueuedJob* arrived) {
  int considered = 0;
  std::optional<std::size_t> last_change;
  std::size_t i = 0;
  for (; i < slots_.size() && !pass->OnlyStartsLeft(); ++i) {
    ++considered;
    if (pass->ConsiderNext(*slots_[i].job, slots_[i].cls)) {
      last_change = i;
    }
    if (slots_[i].job == arrived) {
      arrived = nullptr;  // decided: the tail need not look for it
    }
  }
  StartsInTail(*pass, i, arrived, considered, last_change);
  Decisions decisions = pass->TakeDecisions();
  DropPass();
  pass_ = std::move(pass);
  pass_now_ = now;
  frontier_ = last_change;
  if (Apply(decisions, now)) {
    DropPass();
  }
  return {.decisions = std::move(decisions),
          .path = IncrementalPath::kReplay,
          .considered = considered};
}

IncrementalResult IncrementalScheduler::FullOnCurrent(Time now) {
  ClusterSnapshot cluster = cluster_;
  PolicyConfig policy = policy_;
  Decisions decisions = Full(std::move(cluster), CurrentQueue(), std::move(policy), now);
  const int considered = static_cast<int>(decisions.starts.size() + decisions.pending.size());
  return {
      .decisions = std::move(decisions), .path = IncrementalPath::kFull, .considered = considered};
}

void IncrementalScheduler::StartsInTail(Pass& pass,
                                        std::size_t from,
                                        const QueuedJob* must,
                                        int& considered,
                                        std::optional<std::size_t>& last_change) {
  if (from >= slots_.size()) {
    return;
  }
  // Which requests could still start: a job of one that cannot changes nothing (pass.h,
  // OnlyStartsLeft), so it is not even looked at. Capacity only shrinks, so a request that
  // cannot start now never can in this pass; it is asked again only after a start.
  const std::int64_t now_ms = ToUnixMillis(pass.Now());
  std::vector<char> live(buckets_.size(), 0);
  const auto refresh = [&] {
    bool any = false;
    for (std::size_t b = 0; b < buckets_.size(); ++b) {
      const Bucket& bucket = buckets_[b];
      if (bucket.limits_ms.empty()) {
        live[b] = 0;
        continue;
      }
      const std::int64_t shortest = *bucket.limits_ms.begin();
      live[b] =
          pass.CouldStart(bucket.request, shortest == kNever ? kNever : now_ms + shortest) ? 1 : 0;
      any = any || live[b] != 0;
    }
    return any;
  };
  bool any = refresh();
  bool owed = must != nullptr;  // a job that cannot start still gets its decision
  for (std::size_t i = from; i < slots_.size() && (any || owed); ++i) {
    const Slot& slot = slots_[i];
    owed = owed && slot.job != must;
    if (live[static_cast<std::size_t>(slot.bucket)] == 0 && slot.job != must) {
      continue;
    }
    ++considered;
    if (pass.ConsiderNext(*slot.job, slot.cls)) {
      last_change = i;
      any = refresh();
    }
  }
}

bool IncrementalScheduler::Apply(const Decisions& decisions, Time now) {
  std::vector<const QueuedJob*> started;
  for (const StartDecision& start : decisions.starts) {
    const auto queued = queued_.find(start.job.value());
    if (queued == queued_.end()) {
      continue;
    }
    const QueuedJob& job = *queued->second;
    const ClassIndex cls = classes_->IndexOf(job.priority);
    cluster_.running.push_back(
        RunningJob{.id = job.id,
                   .team = job.team,
                   .user = job.user,
                   .priority = job.priority,
                   .allocation = start.allocation,
                   .start_time = now,
                   .time_limit = EffectiveTimeLimit(classes_->Policy(cls), job.time_limit),
                   .preemptible = start.preemptible,
                   .last_checkpoint = std::nullopt,
                   .stopping = false,
                   .estimate = job.estimate});
    if (base_ != nullptr) {
      base_->RunningAdded(cluster_);
    }
    started.push_back(&job);
  }
  const bool any_started = !started.empty();
  RemoveSlots(std::move(started));
  bool stopped = false;
  for (const PreemptDecision& preemption : decisions.preemptions) {
    for (std::size_t r = 0; r < cluster_.running.size(); ++r) {
      RunningJob& running = cluster_.running[r];
      if (running.id == preemption.victim && !running.stopping) {
        running.stopping = true;  // the caller signals it; it stops within the grace period
        stopped = true;
        if (base_ != nullptr) {
          base_->RunningChanged(cluster_, static_cast<int>(r));
        }
      }
    }
  }
  return any_started || stopped;
}

bool IncrementalScheduler::RemoveRunning(JobId job) {
  const auto it = std::find_if(cluster_.running.begin(),
                               cluster_.running.end(),
                               [&](const RunningJob& running) { return running.id == job; });
  if (it == cluster_.running.end()) {
    return false;
  }
  // A snapshot may list the job's GPUs as allocated on its node too.
  for (NodeSnapshot& node : cluster_.nodes) {
    if (node.node.name == it->allocation.node) {
      for (const GpuUuid& gpu : it->allocation.gpus) {
        node.allocated.erase(gpu);
      }
    }
  }
  const int r = static_cast<int>(it - cluster_.running.begin());
  cluster_.running.erase(it);
  if (base_ != nullptr) {
    base_->RunningRemoved(cluster_, r);
  }
  return true;
}

void IncrementalScheduler::DropPass() {
  if (pass_ != nullptr) {
    spare_ = pass_->ReleasePool();
    pass_.reset();
  }
}

// A pass over the current state. Its pool is a copy of the kept one (base_): copied into the
// last pass's pool, 8,000 GPUs cost a few block copies, where building them from the snapshot
// (UUID and node lookups, sorting, the indexes) and freeing them again was a third of a job
// end's replay. At a later `now` (the controller's time moves between turns) the kept pool is
// advanced (GpuPool::AdvanceTo: free, stopping and overdue GPUs available from the new now)
// rather than built again. Without a kept pool, the first pass at a `now` builds its pool from the
// snapshot, as Decide does, and keeps none; the second at that `now` keeps one.
std::unique_ptr<Pass> IncrementalScheduler::NewPass(Time now) {
  if (base_ != nullptr && base_now_ < now) {
    base_->AdvanceTo(cluster_, now);  // a new turn: the same state, later
    base_now_ = now;
  } else if (base_ != nullptr && base_now_ != now) {
    base_.reset();  // time went back: build it again
  }
  const bool again = last_now_ == now;
  last_now_ = now;
  if (base_ == nullptr && !again) {
    return std::make_unique<Pass>(cluster_, policy_, now);
  }
  if (base_ == nullptr) {
    base_ = std::make_unique<GpuPool>(cluster_, now, UsesEstimates(policy_));
    base_now_ = now;
  }
  std::unique_ptr<GpuPool> pool = std::move(spare_);
  if (pool != nullptr) {
    *pool = *base_;
  } else {
    pool = std::make_unique<GpuPool>(*base_);
  }
  return std::make_unique<Pass>(cluster_, policy_, now, std::move(pool));
}

void IncrementalScheduler::BuildSlots(const Pass& pass) {
  slots_.clear();
  buckets_.clear();
  bucket_of_.clear();
  queued_.clear();
  full_pass_slots_ = 0;
  slots_.reserve(pass.Order().size());
  scale_ = ShareScaleOf(cluster_, policy_);
  for (std::size_t i = 0; i < pass.Order().size(); ++i) {
    const QueuedJob& job = *pass.Order()[i];
    const ClassIndex cls = pass.OrderClasses()[i];
    slots_.push_back(Slot{.job = &job, .cls = cls, .bucket = BucketOf(job, cls)});
    queued_[job.id.value()] = &job;
    full_pass_slots_ += NeedsFullPass(job) ? 1 : 0;
    // Every team's standing as the pass sorted with it: a later key must compare the same,
    // and StandingsMoved must see every team the order depends on.
    KeyOf(job, cls, pass.StartLedger());
  }
}

void IncrementalScheduler::AddSlot(const QueuedJob& job, ClassIndex cls, std::size_t at) {
  slots_.insert(slots_.begin() + static_cast<std::ptrdiff_t>(at),
                Slot{.job = &job, .cls = cls, .bucket = BucketOf(job, cls)});
  queued_[job.id.value()] = &job;
  full_pass_slots_ += NeedsFullPass(job) ? 1 : 0;
}

void IncrementalScheduler::RemoveSlot(std::size_t at) {
  const Slot slot = slots_[at];
  auto& limits = buckets_[static_cast<std::size_t>(slot.bucket)].limits_ms;
  limits.erase(limits.find(LimitMs(*slot.job, slot.cls)));
  queued_.erase(slot.job->id.value());
  full_pass_slots_ -= NeedsFullPass(*slot.job) ? 1 : 0;
  slots_.erase(slots_.begin() + static_cast<std::ptrdiff_t>(at));
}

void IncrementalScheduler::RemoveSlots(std::vector<const QueuedJob*> jobs) {
  if (jobs.empty()) {
    return;
  }
  // Matched by address, not id: the scan then reads only the slots (sequential, 100,000 of
  // them), never the jobs they point to, and once the last one is found the rest moves down
  // in one block. It was a fifth of a job end's replay when it looked each slot's id up in a
  // set.
  const std::less<const QueuedJob*> before;  // a total order on addresses
  std::sort(jobs.begin(), jobs.end(), before);
  std::size_t left = jobs.size();
  std::size_t out = 0;
  std::size_t i = 0;
  for (; i < slots_.size() && left > 0; ++i) {
    const Slot slot = slots_[i];
    if (std::binary_search(jobs.begin(), jobs.end(), slot.job, before)) {
      --left;
      auto& limits = buckets_[static_cast<std::size_t>(slot.bucket)].limits_ms;
      limits.erase(limits.find(LimitMs(*slot.job, slot.cls)));
      queued_.erase(slot.job->id.value());
      full_pass_slots_ -= NeedsFullPass(*slot.job) ? 1 : 0;
      continue;
    }
    slots_[out++] = slot;
  }
  slots_.erase(slots_.begin() + static_cast<std::ptrdiff_t>(out),
               slots_.begin() + static_cast<std::ptrdiff_t>(i));
}

int IncrementalScheduler::BucketOf(const QueuedJob& job, ClassIndex cls) {
  const JobRequest& request = job.request;
  auto it = bucket_of_.find(std::tie(
      request.gpus, request.gpu_type, request.node_labels, request.cpus, request.memory_mib));
  if (it == bucket_of_.end()) {
    it = bucket_of_
             .emplace(std::make_tuple(request.gpus,
                                      request.gpu_type,
                                      request.node_labels,
                                      request.cpus,
                                      request.memory_mib),
                      static_cast<int>(buckets_.size()))
             .first;
    buckets_.push_back(Bucket{.request = request, .limits_ms = {}});
  }
  buckets_[static_cast<std::size_t>(it->second)].limits_ms.insert(LimitMs(job, cls));
  return it->second;
}

std::int64_t IncrementalScheduler::LimitMs(const QueuedJob& job, ClassIndex cls) const {
  const std::optional<std::chrono::seconds> limit =
      PlannedLength(job, EffectiveTimeLimit(classes_->Policy(cls), job.time_limit), policy_);
  return limit.has_value() ? Millis(*limit).count() : kNever;
}

IncrementalScheduler::OrderKey IncrementalScheduler::KeyOf(const QueuedJob& job,
                                                           ClassIndex cls,
                                                           const Ledger& ledger) const {
  auto team = teams_.find(job.team);
  if (team == teams_.end()) {
    const TeamStanding standing = TeamStandingOf(job.team, cluster_, ledger);
    team =
        teams_.emplace(job.team, std::make_pair(standing.below_guarantee ? 0 : 1, standing.share))
            .first;
  }
  auto user = users_.find(job.user);
  if (user == users_.end()) {
    const UserStanding standing = UserStandingOf(job.user, cluster_, policy_, scale_);
    user = users_.emplace(job.user, std::make_pair(standing.key, standing.size_weight)).first;
  }
  return OrderKey{.tier = classes_->Tier(cls),
                  .borrowing = team->second.first,
                  .team_share = team->second.second,
                  .user_key = UserOrderKey(user->second.first, scale_),
                  .place_ms = PlaceMs(job, policy_, user->second.second),
                  .id = job.id.value()};
}

std::size_t IncrementalScheduler::InsertionPoint(const OrderKey& key, const Ledger& ledger) const {
  // After every job that goes before it or ties with it (a duplicate id keeps arrival order).
  const auto it =
      std::upper_bound(slots_.begin(), slots_.end(), key, [&](const OrderKey& k, const Slot& slot) {
        return k < KeyOf(*slot.job, slot.cls, ledger);
      });
  return static_cast<std::size_t>(it - slots_.begin());
}

std::optional<std::size_t> IncrementalScheduler::PositionOf(const QueuedJob& job,
                                                            const Ledger& ledger) const {
  const OrderKey key = KeyOf(job, classes_->IndexOf(job.priority), ledger);
  auto it =
      std::lower_bound(slots_.begin(), slots_.end(), key, [&](const Slot& slot, const OrderKey& k) {
        return KeyOf(*slot.job, slot.cls, ledger) < k;
      });
  for (; it != slots_.end() && it->job != &job; ++it) {
  }
  if (it == slots_.end()) {
    return std::nullopt;
  }
  return static_cast<std::size_t>(it - slots_.begin());
}

bool IncrementalScheduler::StandingsMoved(const Pass& pass) const {
  return StandingsMoved(pass.StartLedger());
}

bool IncrementalScheduler::StandingsMoved(const Ledger& start) const {
  return std::any_of(teams_.begin(), teams_.end(), [&](const auto& team) {
    return (start.BelowGuarantee(team.first) ? 0 : 1) != team.second.first;
  });
}

}  // namespace gf

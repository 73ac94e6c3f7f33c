#include "scheduler/preemption/victims.h"

#include <algorithm>
#include <climits>
#include <tuple>

#include "scheduler/estimates.h"
#include "scheduler/ordering/baseline.h"
#include "scheduler/ordering/fair_share.h"

namespace gf {
namespace {

// Preemption by size between teams goes only along the fair-share order: the victim's team
// must not come before the preemptor's (TeamStandingOf: below its guarantee, or a lower share
// of what it used for its weight), so a team never loses GPUs to one that has used more; and
// with quotas only a job on borrowed GPUs is taken (a guarantee is the admin's promise, which
// only classes may break). Within a team, fair share between users weighs sizes already
// (PredictionPolicy::user_fair_share), and the size rule alone decides.
bool SizeRightOverTeam(const Preemptor& preemptor,
                       const RunningJob& victim,
                       const ClusterSnapshot& cluster) {
  if (victim.team == preemptor.team) {
    return true;
  }
  const Ledger* ledger = preemptor.ledger;
  if (ledger == nullptr || (ledger->QuotasOn() && !victim.preemptible)) {
    return false;
  }
  const TeamStanding mine = TeamStandingOf(preemptor.team, cluster, *ledger);
  const TeamStanding theirs = TeamStandingOf(victim.team, cluster, *ledger);
  return std::pair(!mine.below_guarantee, mine.share) <=
         std::pair(!theirs.below_guarantee, theirs.share);
}

// Running job `r`'s GPUs, or an empty list when one of them is set aside for a waiting job
// (claimed or reserved: preempting it would jump that job) or not on an up node.
const std::vector<int>& FreeableGpus(const GpuPool& pool, int r) {
  static const std::vector<int> none;
  const std::vector<int>& gpus = pool.RunningGpus(r);
  for (const int g : gpus) {
    const PoolGpu& gpu = pool.Gpus()[static_cast<std::size_t>(g)];
    if (gpu.claimed || gpu.reserved_from != kNever) {
      return none;
    }
  }
  return gpus;
}

// Running job `r`'s class tier (0 first): victims of later tiers are taken first.
int Tier(const Preemptor& preemptor, int r) {
  return static_cast<int>(preemptor.classes->Tier(preemptor.classes->OfRunning(r)));
}

std::int64_t LostMillis(const RunningJob& job, Time now) {
  const Time since = std::max(job.start_time, job.last_checkpoint.value_or(job.start_time));
  return std::max<std::int64_t>(0, (now - since).count());
}

using NodeCost = VictimCache::NodeCost;

// One running job on a node that could make room, in the order victims are taken.
struct Option {
  // stopping first, borrowed first, lowest class, last in a baseline order, least lost, most
  // predicted work left (priority order), id
  std::tuple<bool, bool, int, std::int64_t, std::int64_t, std::int64_t, JobId> key;
  int running = 0;
  int matching = 0;  // its GPUs of the preemptor's model
};

bool MatchesOpen(const GpuPool& pool, const PoolGpu& gpu, int model) {
  return gpu.free && !gpu.claimed && gpu.reserved_from == kNever && pool.Matches(gpu, model);
}

int CountOpen(const GpuPool& pool, const PoolNode& node, int model) {
  int open = 0;
  for (int g = node.first_gpu; g < node.first_gpu + node.gpu_count; ++g) {
    open += MatchesOpen(pool, pool.Gpus()[static_cast<std::size_t>(g)], model) ? 1 : 0;
  }
  return open;
}

// Fills `options` (reused between nodes, so a pass allocates it once) with the node's jobs
// that may make room, in the order they are taken as victims; returns the node's open GPUs of
// the preemptor's model. Neither depends on how many GPUs the preemptor asks for.
int SortedOptions(const GpuPool& pool,
                  const ClusterSnapshot& cluster,
                  int n,
                  const Preemptor& preemptor,
                  const PolicyConfig& policy,
                  Time now,
                  std::vector<Option>& options) {
  const PoolNode& node = pool.Nodes()[static_cast<std::size_t>(n)];
  options.clear();
  for (const int r : node.holders) {
    const RunningJob& job = cluster.running[static_cast<std::size_t>(r)];
    if (!job.stopping &&
        RightToPreempt(pool, cluster, r, preemptor, policy, now) == PreemptionRight::kNone) {
      continue;
    }
    int matching = 0;
    for (const int g : FreeableGpus(pool, r)) {
      matching += pool.Matches(pool.Gpus()[static_cast<std::size_t>(g)], preemptor.shape.model);
    }
    if (matching > 0) {
      // Under the priority order a baseline rank is 0; the predicted remaining GPU-time
      // (preemption by size) breaks ties of lost work: the longest left first, as SRPT would.
      const bool baseline = policy.ordering.order != QueueOrder::kPriority;
      const std::int64_t rank = RunningRank(job, policy, now);
      options.push_back(Option{.key = {!job.stopping,
                                       !job.preemptible,
                                       -Tier(preemptor, r),
                                       baseline ? -rank : 0,
                                       LostMillis(job, now),
                                       baseline ? 0 : -rank,
                                       job.id},
                               .running = r,
                               .matching = matching});
    }
  }
  std::sort(options.begin(), options.end(), [](const Option& a, const Option& b) {
    return a.key < b.key;
  });
  return CountOpen(pool, node, preemptor.shape.model);
}

// The cost of node `n` with no victim: what every prefix starts from (the last tier: any
// victim's is at most that).
NodeCost NoVictims(const Preemptor& preemptor, int n) {
  return {0, -static_cast<int>(preemptor.classes->Tiers() - 1), 0, 0, n};
}

// Appends, for each i, what the first i + 1 of `options` free and cost together.
void AppendPrefixes(const ClusterSnapshot& cluster,
                    const Preemptor& preemptor,
                    const std::vector<Option>& options,
                    int n,
                    Time now,
                    std::vector<VictimCache::Prefix>& prefixes) {
  VictimCache::Prefix prefix{.matching = 0, .cost = NoVictims(preemptor, n)};
  for (const Option& option : options) {
    prefix.matching += option.matching;
    const RunningJob& job = cluster.running[static_cast<std::size_t>(option.running)];
    if (!job.stopping) {  // a stopping job costs nothing more
      NodeCost& cost = prefix.cost;
      std::get<0>(cost) += job.preemptible ? 0 : 1;
      std::get<1>(cost) = std::max(std::get<1>(cost), -Tier(preemptor, option.running));
      std::get<2>(cost) +=
          LostMillis(job, now) * static_cast<std::int64_t>(job.allocation.gpus.size());
      std::get<3>(cost) += 1;
    }
    prefixes.push_back(prefix);
  }
}

// How many of a weighed node's victims the preemptor needs (-1: even all of them are not
// enough), and what they cost.
std::pair<int, NodeCost> TakenOn(const VictimCache::Kind& kind,
                                 const VictimCache::NodeResult& result,
                                 const Preemptor& preemptor,
                                 int n) {
  const int needed = preemptor.shape.gpus - result.open;
  if (needed <= 0) {
    return {0, NoVictims(preemptor, n)};
  }
  for (std::uint32_t i = 0; i < result.count; ++i) {
    const VictimCache::Prefix& prefix = kind.prefixes[result.first + i];
    if (prefix.matching >= needed) {
      return {static_cast<int>(i) + 1, prefix.cost};
    }
  }
  return {-1, NodeCost{}};
}

// The choice on node `n`, from its first `taken` options.
VictimChoice ChoiceOf(const GpuPool& pool,
                      const ClusterSnapshot& cluster,
                      const std::vector<Option>& options,
                      int taken,
                      int n,
                      const Preemptor& preemptor) {
  VictimChoice choice;
  choice.fit.node = n;
  const auto room = [&] {
    return static_cast<int>(choice.fit.gpus.size()) < preemptor.shape.gpus;
  };
  // The freed GPUs first, so that open ones stay open for others when a victim frees more
  // than the job needs.
  for (int i = 0; i < taken; ++i) {
    const int r = options[static_cast<std::size_t>(i)].running;
    (cluster.running[static_cast<std::size_t>(r)].stopping ? choice.stopping : choice.victims)
        .push_back(r);
    for (const int g : pool.RunningGpus(r)) {
      if (room() && pool.Matches(pool.Gpus()[static_cast<std::size_t>(g)], preemptor.shape.model)) {
        choice.fit.gpus.push_back(g);
      }
    }
  }
  const PoolNode& node = pool.Nodes()[static_cast<std::size_t>(n)];
  for (int g = node.first_gpu; g < node.first_gpu + node.gpu_count && room(); ++g) {
    if (MatchesOpen(pool, pool.Gpus()[static_cast<std::size_t>(g)], preemptor.shape.model)) {
      choice.fit.gpus.push_back(g);
    }
  }
  std::sort(choice.fit.gpus.begin(), choice.fit.gpus.end());
  return choice;
}

}  // namespace

Preemptor MakePreemptor(Shape shape,
                        const ClassTable& classes,
                        ClassIndex cls,
                        std::string team,
                        bool guarantee_right) {
  return Preemptor{.shape = shape,
                   .classes = &classes,
                   .cls = cls,
                   .team = std::move(team),
                   .guarantee_right = guarantee_right,
                   .ignore_min_run_time = false,
                   .rank = 0,
                   .by_size = false,
                   .place_ms = 0};
}

Preemptor JobPreemptor(const QueuedJob& job,
                       Shape shape,
                       const ClassTable& classes,
                       ClassIndex cls,
                       bool guarantee_right,
                       const PolicyConfig& policy,
                       std::optional<std::chrono::seconds> limit,
                       const Ledger& ledger) {
  Preemptor preemptor = MakePreemptor(shape, classes, cls, job.team, guarantee_right);
  preemptor.rank = OrderPreempts(policy) ? QueuedRank(job, policy, limit) : 0;
  preemptor.by_size = PreemptsBySize(policy);
  preemptor.place_ms = preemptor.by_size ? PlaceMs(job, policy) : 0;
  preemptor.ledger = &ledger;
  return preemptor;
}

PreemptionRight RightToPreempt(const GpuPool& pool,
                               const ClusterSnapshot& cluster,
                               int r,
                               const Preemptor& preemptor,
                               const PolicyConfig& policy,
                               Time now) {
  const RunningJob& victim = cluster.running[static_cast<std::size_t>(r)];
  const bool too_young =
      !preemptor.ignore_min_run_time && now - victim.start_time < policy.preemption.min_run_time;
  if (!policy.preemption.enabled || victim.stopping || too_young || FreeableGpus(pool, r).empty()) {
    return PreemptionRight::kNone;
  }
  if (preemptor.classes->Preempts(preemptor.cls, preemptor.classes->OfRunning(r))) {
    return PreemptionRight::kHigherClass;
  }
  if (preemptor.guarantee_right && victim.preemptible && victim.team != preemptor.team) {
    return PreemptionRight::kGuarantee;
  }
  const ClassTable& classes = *preemptor.classes;
  if (!OrderPreempts(policy) || classes.Tier(preemptor.cls) != classes.Tier(classes.OfRunning(r))) {
    return PreemptionRight::kNone;
  }
  if (policy.ordering.order != QueueOrder::kPriority) {
    return preemptor.rank < RunningRank(victim, policy, now) ? PreemptionRight::kOrder
                                                             : PreemptionRight::kNone;
  }
  // Preemption by size (scheduler/estimates.h): within a team, or of a team that does not go
  // before the preemptor's in fair share (SizeRightOverTeam), never a job that must not run
  // twice, only for a job that would go before it in the queue (the anti-starvation bound),
  // and only where the victim's remaining
  // work is `ratio` times what the swap costs: the preemptor's work, plus the victim's work
  // since its last checkpoint, which it must do again. Running the small job first saves the
  // victim's remaining time and costs those two: a job that never checkpoints has lost as much
  // as it has run, so once past half its estimate (remaining = its age) it is never taken.
  if (!preemptor.by_size || !victim.requeue || !SizeRightOverTeam(preemptor, victim, cluster) ||
      preemptor.place_ms >= RunningPlaceMs(victim, policy, now)) {
    return PreemptionRight::kNone;
  }
  const double lost_gpu_ms =
      static_cast<double>(LostMillis(victim, now)) * std::max(HeldGpus(victim.allocation), 1.0);
  const double cost_gpu_ms = static_cast<double>(preemptor.rank) + lost_gpu_ms;
  return cost_gpu_ms * policy.prediction.size_preemption_ratio <=
                 static_cast<double>(RunningRank(victim, policy, now))
             ? PreemptionRight::kOrder
             : PreemptionRight::kNone;
}

std::string PreemptionCause(PreemptionRight right,
                            const RunningJob& victim,
                            const Preemptor& preemptor,
                            const PolicyConfig& policy,
                            Time now) {
  if (right == PreemptionRight::kOrder && policy.ordering.order == QueueOrder::kPriority) {
    return "predicted size: " + DescribeRank(preemptor.rank, policy) + " against " +
           DescribeRank(RunningRank(victim, policy, now), policy);
  }
  if (right == PreemptionRight::kOrder) {
    return std::string(ToString(policy.ordering.order)) + ": " +
           DescribeRank(preemptor.rank, policy) + " against " +
           DescribeRank(RunningRank(victim, policy, now), policy);
  }
  if (right == PreemptionRight::kHigherClass) {
    return preemptor.classes->Policy(preemptor.cls).name + " priority beats " +
           ToString(victim.priority);
  }
  return "team " + preemptor.team + " is within its guarantee and job " +
         std::to_string(victim.id.value()) + " ran on borrowed GPUs";
}

VictimCache::Kind& VictimCache::For(const Preemptor& preemptor, std::size_t nodes) {
  const Shape& shape = preemptor.shape;
  Kind& kind = by_preemptor_[Key{
      shape.model,
      shape.constraint,
      preemptor.cls,
      preemptor.guarantee_right,
      // the team matters only then, and to preemption by size
      preemptor.guarantee_right || preemptor.by_size ? preemptor.team : std::string(),
      preemptor.ignore_min_run_time,
      preemptor.rank,
      preemptor.place_ms}];
  kind.nodes.resize(nodes);
  return kind;
}

std::optional<VictimChoice> ChooseVictims(const GpuPool& pool,
                                          const ClusterSnapshot& cluster,
                                          const Preemptor& preemptor,
                                          const PolicyConfig& policy,
                                          Time now,
                                          VictimCache* cache) {
  if (preemptor.shape.model == kNoSuchModel || preemptor.shape.gpus <= 0) {
    return std::nullopt;
  }
  std::vector<Option> options;
  VictimCache::Kind own;  // without a cache: every node weighed afresh
  if (cache == nullptr) {
    own.nodes.resize(pool.Nodes().size());
  }
  VictimCache::Kind& kind = cache != nullptr ? cache->For(preemptor, pool.Nodes().size()) : own;
  // The node's victims for this preemptor: weighed now, or as an alike search found them
  // when the node has not changed since.
  const auto weigh = [&](int n) {
    VictimCache::NodeResult& result = kind.nodes[static_cast<std::size_t>(n)];
    const std::uint64_t version = pool.NodeVersion(n) + 1;
    if (result.seen != version) {
      result.seen = version;
      result.open = SortedOptions(pool, cluster, n, preemptor, policy, now, options);
      result.first = static_cast<std::uint32_t>(kind.prefixes.size());
      result.count = static_cast<std::uint32_t>(options.size());
      AppendPrefixes(cluster, preemptor, options, n, now, kind.prefixes);
    }
    return TakenOn(kind, result, preemptor, n);
  };
  std::optional<std::pair<NodeCost, int>> best;  // (cost, taken)
  for (std::size_t n = 0; n < pool.Nodes().size(); ++n) {
    const PoolNode& node = pool.Nodes()[n];
    const int node_n = static_cast<int>(n);
    if (node.holders.empty() || node.gpu_count < preemptor.shape.gpus ||
        !pool.Allows(node_n, preemptor.shape)) {
      continue;  // only nodes with the job's labels are worth stopping work on
    }
    const auto [taken, cost] = weigh(node_n);
    if (taken < 0) {
      continue;
    }
    if (!best.has_value() || cost < best->first) {
      best = std::make_pair(cost, taken);
    }
  }
  if (!best.has_value()) {
    return std::nullopt;
  }
  const int node_n = std::get<4>(best->first);
  SortedOptions(pool, cluster, node_n, preemptor, policy, now, options);  // the winner's, again
  return ChoiceOf(pool, cluster, options, best->second, node_n, preemptor);
}

}  // namespace gf

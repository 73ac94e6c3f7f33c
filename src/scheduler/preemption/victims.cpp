#include "scheduler/preemption/victims.h"

#include <algorithm>
#include <climits>
#include <tuple>

namespace gf {
namespace {

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
  std::tuple<bool, bool, int, std::int64_t, JobId> key;  // stopping first, borrowed first, ...
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
// that may make room, sorted; returns how many of them the preemptor needs, or -1 when even
// all of them are not enough.
int NodeOptions(const GpuPool& pool,
                const ClusterSnapshot& cluster,
                int n,
                const Preemptor& preemptor,
                const PolicyConfig& policy,
                Time now,
                std::vector<Option>& options) {
  const PoolNode& node = pool.Nodes()[static_cast<std::size_t>(n)];
  const int needed = preemptor.shape.gpus - CountOpen(pool, node, preemptor.shape.model);
  options.clear();
  int could_free = 0;
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
      options.push_back(Option{
          .key =
              {!job.stopping, !job.preemptible, -Tier(preemptor, r), LostMillis(job, now), job.id},
          .running = r,
          .matching = matching});
      could_free += matching;
    }
  }
  if (could_free < needed) {
    return -1;
  }
  std::sort(options.begin(), options.end(), [](const Option& a, const Option& b) {
    return a.key < b.key;
  });
  int taken = 0;
  for (int freed = 0; freed < needed; ++taken) {
    freed += options[static_cast<std::size_t>(taken)].matching;
  }
  return taken;
}

NodeCost CostOf(const ClusterSnapshot& cluster,
                const Preemptor& preemptor,
                const std::vector<Option>& options,
                int taken,
                int n,
                Time now) {
  // Start from the last tier: any victim's is at most that.
  NodeCost cost{0, -static_cast<int>(preemptor.classes->Tiers() - 1), 0, 0, n};
  for (int i = 0; i < taken; ++i) {
    const int r = options[static_cast<std::size_t>(i)].running;
    const RunningJob& job = cluster.running[static_cast<std::size_t>(r)];
    if (job.stopping) {
      continue;  // costs nothing more
    }
    std::get<0>(cost) += job.preemptible ? 0 : 1;
    std::get<1>(cost) = std::max(std::get<1>(cost), -Tier(preemptor, r));
    std::get<2>(cost) +=
        LostMillis(job, now) * static_cast<std::int64_t>(job.allocation.gpus.size());
    std::get<3>(cost) += 1;
  }
  return cost;
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
                   .ignore_min_run_time = false};
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
  return PreemptionRight::kNone;
}

std::string PreemptionCause(PreemptionRight right,
                            const RunningJob& victim,
                            const Preemptor& preemptor) {
  if (right == PreemptionRight::kHigherClass) {
    return preemptor.classes->Policy(preemptor.cls).name + " priority beats " +
           ToString(victim.priority);
  }
  return "team " + preemptor.team + " is within its guarantee and job " +
         std::to_string(victim.id.value()) + " ran on borrowed GPUs";
}

std::vector<VictimCache::NodeResult>& VictimCache::For(const Preemptor& preemptor,
                                                       std::size_t nodes) {
  const Shape& shape = preemptor.shape;
  std::vector<NodeResult>& results = by_preemptor_[Key{
      shape.model,
      shape.gpus,
      shape.constraint,
      preemptor.cls,
      preemptor.guarantee_right,
      preemptor.guarantee_right ? preemptor.team : std::string(),  // the team matters only then
      preemptor.ignore_min_run_time}];
  results.resize(nodes);
  return results;
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
  std::vector<VictimCache::NodeResult>* seen =
      cache != nullptr ? &cache->For(preemptor, pool.Nodes().size()) : nullptr;
  // The node's cost for this preemptor: weighed now, or as an alike search found it when the
  // node has not changed since.
  const auto weigh = [&](int n) {
    VictimCache::NodeResult result;
    VictimCache::NodeResult* cached =
        seen != nullptr ? &(*seen)[static_cast<std::size_t>(n)] : &result;
    const std::uint64_t version = pool.NodeVersion(n) + 1;
    if (cached->seen != version) {
      cached->seen = version;
      cached->taken = NodeOptions(pool, cluster, n, preemptor, policy, now, options);
      if (cached->taken >= 0) {
        cached->cost = CostOf(cluster, preemptor, options, cached->taken, n, now);
      }
    }
    return *cached;
  };
  std::optional<std::pair<NodeCost, int>> best;  // (cost, taken)
  for (std::size_t n = 0; n < pool.Nodes().size(); ++n) {
    const PoolNode& node = pool.Nodes()[n];
    const int node_n = static_cast<int>(n);
    if (node.holders.empty() || node.gpu_count < preemptor.shape.gpus ||
        !pool.Allows(node_n, preemptor.shape)) {
      continue;  // only nodes with the job's labels are worth stopping work on
    }
    const VictimCache::NodeResult result = weigh(node_n);
    if (result.taken < 0) {
      continue;
    }
    if (!best.has_value() || result.cost < best->first) {
      best = std::make_pair(result.cost, result.taken);
    }
  }
  if (!best.has_value()) {
    return std::nullopt;
  }
  const int node_n = std::get<4>(best->first);
  NodeOptions(pool, cluster, node_n, preemptor, policy, now, options);  // the winner's, again
  return ChoiceOf(pool, cluster, options, best->second, node_n, preemptor);
}

}  // namespace gf

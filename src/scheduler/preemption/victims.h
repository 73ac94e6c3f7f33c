// Preemption stage: which running jobs a waiting job may preempt, and which to choose so that
// the least work is lost (issue #4, scope 3).
//
// Assumptions:
// - A waiting job may preempt a running job when (a) its class lists the running job's class
//   in `preempts`, or (b) its team is within its guarantee (Ledger: guarantee_right) and the
//   running job is borrowed (RunningJob::preemptible) by another team, or (c) the order is
//   preemptive (srtf, las: ordering/baseline.h) and the running job, of the same class tier,
//   ranks after it (more work left, a later 2D-LAS queue), or (d) under the priority order
//   with preemption by size (scheduler/estimates.h), the running job, of the same class tier
//   and team, may be requeued, has at least `size_preemption_ratio` times the waiting job's
//   predicted remaining GPU-time, and its place had it been waiting (RunningPlaceMs) comes
//   after the waiting job's. A running job whose class the config no longer lists can be
//   preempted only by (b) (ClassTable).
// - Never a job that has run less than PreemptionPolicy::min_run_time, nor one whose GPUs an
//   earlier waiting job has claimed or reserved (taking them would jump that job).
// - A job already stopping (RunningJob::stopping) frees its GPUs at no further cost: waiting
//   for it is always chosen before preempting anything.
// - Only up nodes, one node per job, and only nodes with the job's labels, as placement.
//
// Algorithm: on every up node with enough matching GPUs, take the node's open matching GPUs,
// then add victims in the order that loses the least (stopping first, then borrowed before
// guaranteed, lowest class first, the last in a baseline order's rank first (0 under the
// priority order), least run time since start or last checkpoint, job id)
// until the job fits. Among the nodes where it fits, choose the fewest guaranteed (not
// borrowed) victims, then the node whose highest-class victim is of the lowest class, then
// the least lost GPU-seconds, then the fewest victims, then the name.
//
// Pure functions over values: safe from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/clock.h"
#include "model/snapshot.h"
#include "scheduler/classes.h"
#include "scheduler/placement/gpu_pool.h"
#include "scheduler/policy.h"
#include "scheduler/quota/ledger.h"

namespace gf {

struct Preemptor {
  Shape shape;
  const ClassTable* classes = nullptr;  // the pass's; resolves the running jobs' classes
  ClassIndex cls = 0;                   // the preemptor's class
  std::string team;
  bool guarantee_right = false;
  // Plan for later (a job that waits for its victims' minimum run time): victims that have
  // not yet run PreemptionPolicy::min_run_time count as if they had.
  bool ignore_min_run_time = false;
  // Its rank under a preemptive order (ordering/baseline.h QueuedRank); 0 otherwise.
  std::int64_t rank = 0;
  // Preemption by size (PreemptsBySize): rights within its team, so the team is part of
  // what makes preemptors alike. Its place (scheduler/estimates.h PlaceMs): preemption by
  // size takes only victims whose place, had they been waiting, comes after it.
  bool by_size = false;
  std::int64_t place_ms = 0;
  // The pass's quota ledger: the teams' fair-share standings, for preemption by size across
  // teams (RightToPreempt). Null: within its own team only.
  const Ledger* ledger = nullptr;
};

Preemptor MakePreemptor(
    Shape shape, const ClassTable& classes, ClassIndex cls, std::string team, bool guarantee_right);
// The preemptor for waiting `job` of class `cls` (effective limit `limit`): MakePreemptor's,
// with its rank and place under the policy's order (the pass and Explain alike). The place is
// by size alone: preemption by size compares sizes and ages; users' fair share weighs sizes
// in the queue's order only (measured: weighing them here too took most preemptions away from
// the heavy users' short jobs, docs/decisions/0009).
Preemptor JobPreemptor(const QueuedJob& job,
                       Shape shape,
                       const ClassTable& classes,
                       ClassIndex cls,
                       bool guarantee_right,
                       const PolicyConfig& policy,
                       std::optional<std::chrono::seconds> limit,
                       const Ledger& ledger);

struct VictimChoice {
  PoolFit fit;                // the GPUs the preemptor will get
  std::vector<int> victims;   // running jobs to preempt (indexes into cluster.running)
  std::vector<int> stopping;  // running jobs already stopping that it waits for
};

enum class PreemptionRight { kNone, kHigherClass, kGuarantee, kOrder };

// Whether running job `r` may be preempted by `preemptor`, and on which grounds (rules above,
// min run time, claims). Cheap: no strings (it runs for every candidate of every preemptor).
PreemptionRight RightToPreempt(const GpuPool& pool,
                               const ClusterSnapshot& cluster,
                               int r,
                               const Preemptor& preemptor,
                               const PolicyConfig& policy,
                               Time now);

// The cause recorded with a preemption: "high priority beats low", "team ml is within its
// guarantee and job 7 ran on borrowed GPUs", "srtf: 10m left against 2h left". Requires
// right != kNone.
std::string PreemptionCause(PreemptionRight right,
                            const RunningJob& victim,
                            const Preemptor& preemptor,
                            const PolicyConfig& policy,
                            Time now);

// What earlier victim searches of one pass found on each node, for preemptors alike (same
// model, constraint, class, guarantee right and team, minimum-run-time rule, rank; any GPU count):
// a node is weighed again only once it changed (GpuPool::NodeVersion). Up to 100 preemptors a pass
// each weigh every node with running jobs; between two of them only the nodes the first one claimed
// change. What a node offers does not depend on how many GPUs the preemptor asks for (only how far
// down the node's victims it must go does), so a node keeps its victims in the order they are taken
// with running totals, and a search for any count reads them: a replay's 1-, 2-, 4- and 8-GPU
// preemptors weigh each node once, not four times. One pass (one pool, cluster, policy and time)
// owns one; not thread-safe.
class VictimCache {
 public:
  // Lower is better: (guaranteed victims, minus the lowest rank among the victims (so the node
  // whose most important victim is least important wins), lost GPU-milliseconds, victims,
  // node).
  using NodeCost = std::tuple<int, int, std::int64_t, int, int>;
  // The first i + 1 victims of a node, in the order they are taken: the matching GPUs they
  // free and their cost together.
  struct Prefix {
    int matching = 0;
    NodeCost cost{};
  };
  struct NodeResult {
    std::uint64_t seen = 0;   // the node's version + 1 when weighed; 0 never
    int open = 0;             // open GPUs of the model there
    std::uint32_t first = 0;  // its prefixes: Kind::prefixes[first, first + count)
    std::uint32_t count = 0;
  };
  struct Kind {
    std::vector<NodeResult> nodes;  // by node position
    std::vector<Prefix> prefixes;   // appended as nodes are weighed
  };
  Kind& For(const Preemptor& preemptor, std::size_t nodes);

 private:
  using Key = std::tuple<int, int, ClassIndex, bool, std::string, bool, std::int64_t, std::int64_t>;
  std::map<Key, Kind> by_preemptor_;
};

// The cheapest way to make room for `preemptor`, or nullopt when none exists. With `cache`
// (the same pass's every time), nodes unchanged since an alike search are not weighed again.
std::optional<VictimChoice> ChooseVictims(const GpuPool& pool,
                                          const ClusterSnapshot& cluster,
                                          const Preemptor& preemptor,
                                          const PolicyConfig& policy,
                                          Time now,
                                          VictimCache* cache = nullptr);

}  // namespace gf

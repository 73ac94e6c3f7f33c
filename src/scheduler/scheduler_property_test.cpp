// Property tests of Decide() with rapidcheck: random clusters (node states, GPU models and
// health, GPUs already held) and random queues.
#include <algorithm>
#include <map>
#include <ostream>
#include <random>
#include <set>

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "scheduler/ordering/priority_order.h"
#include "scheduler/placement/whole_gpu_fit.h"
#include "scheduler/scheduler.h"

namespace gf {

// How rapidcheck prints the enums of a counterexample (found by argument-dependent lookup).
// NOLINTBEGIN(readability-identifier-naming): showValue is rapidcheck's name for this hook
inline void showValue(NodeState s, std::ostream& os) {
  os << ToString(s);
}
inline void showValue(GpuHealth h, std::ostream& os) {
  os << ToString(h);
}
inline void showValue(const PriorityClass& p, std::ostream& os) {
  os << ToString(p);
}
// NOLINTEND(readability-identifier-naming)

namespace {

const std::vector<std::string> kModels = {"H100-80GB", "A100-40GB", "L4"};
const std::vector<std::optional<std::string>> kTypes = {
    std::nullopt, "H100-80GB", "a100-40gb", "L4", "V100"};

// rapidcheck scales ranges by the test's size, which starts at 0; these picks use the whole
// range in every test case, so small and large clusters both show up from the first cases.
template <typename T>
T Pick(rc::Gen<T> gen) {
  return *rc::gen::resize(rc::kNominalSize, std::move(gen));
}

int PickInt(int min, int max_exclusive) {
  return Pick(rc::gen::inRange(min, max_exclusive));
}

ClusterSnapshot GenCluster() {
  ClusterSnapshot cluster;
  const int nodes = PickInt(0, 5);
  for (int n = 0; n < nodes; ++n) {
    NodeSnapshot node;
    node.node.name = NodeId("node" + std::to_string(n));
    node.node.state = Pick(rc::gen::element(
        NodeState::kUp, NodeState::kUp, NodeState::kUp, NodeState::kDraining, NodeState::kDown));
    const int gpus = PickInt(0, 9);
    for (int i = 0; i < gpus; ++i) {
      Gpu gpu;
      gpu.index = i;
      gpu.uuid = GpuUuid("GPU-" + std::to_string(n) + "-" + std::to_string(i));
      gpu.model = kModels[static_cast<std::size_t>(PickInt(0, 3))];
      gpu.health = Pick(rc::gen::element(GpuHealth::kOk,
                                         GpuHealth::kOk,
                                         GpuHealth::kOk,
                                         GpuHealth::kDegraded,
                                         GpuHealth::kFailed));
      if (PickInt(0, 4) == 0) {
        node.allocated.insert(gpu.uuid);
      }
      node.node.gpus.push_back(gpu);
    }
    cluster.nodes.push_back(std::move(node));
  }
  return cluster;
}

Queue GenQueue() {
  Queue queue;
  const int jobs = PickInt(0, 12);
  for (int i = 0; i < jobs; ++i) {
    QueuedJob job;
    job.id = JobId(i + 1);
    job.priority =
        Pick(rc::gen::element(PriorityClass::kHigh, PriorityClass::kNormal, PriorityClass::kLow));
    job.submit_time = FromUnixMillis(PickInt(0, 100) * std::int64_t{1000});
    job.request.gpus = PickInt(-1, 10);
    job.request.gpu_type = kTypes[static_cast<std::size_t>(PickInt(0, 5))];
    queue.pending.push_back(std::move(job));
  }
  return queue;
}

Decisions DecideAll(const ClusterSnapshot& cluster, const Queue& queue) {
  return Decide(cluster, queue, PolicyConfig{}, FromUnixMillis(0));
}

const QueuedJob& FindJob(const Queue& queue, JobId id) {
  return *std::find_if(
      queue.pending.begin(), queue.pending.end(), [&](const QueuedJob& j) { return j.id == id; });
}

const NodeSnapshot* FindNode(const ClusterSnapshot& cluster, const NodeId& name) {
  for (const NodeSnapshot& node : cluster.nodes) {
    if (node.node.name == name) {
      return &node;
    }
  }
  return nullptr;
}

RC_GTEST_PROP(SchedulerProperty, NeverOverAllocates, ()) {
  const ClusterSnapshot cluster = GenCluster();
  const Queue queue = GenQueue();
  std::set<GpuUuid> given;
  for (const StartDecision& start : DecideAll(cluster, queue).starts) {
    const NodeSnapshot* node = FindNode(cluster, start.allocation.node);
    RC_ASSERT(node != nullptr);
    RC_ASSERT(node->node.state == NodeState::kUp);
    for (const GpuUuid& uuid : start.allocation.gpus) {
      RC_ASSERT(given.insert(uuid).second);        // not given twice
      RC_ASSERT(!node->allocated.contains(uuid));  // not already held
      const auto gpu = std::find_if(node->node.gpus.begin(),
                                    node->node.gpus.end(),
                                    [&](const Gpu& g) { return g.uuid == uuid; });
      RC_ASSERT(gpu != node->node.gpus.end());       // on the chosen node
      RC_ASSERT(gpu->health != GpuHealth::kFailed);  // not failed
    }
  }
}

RC_GTEST_PROP(SchedulerProperty, StartedJobGetsItsGpusOnOneNodeOfItsType, ()) {
  const ClusterSnapshot cluster = GenCluster();
  const Queue queue = GenQueue();
  for (const StartDecision& start : DecideAll(cluster, queue).starts) {
    const JobRequest& request = FindJob(queue, start.job).request;
    RC_ASSERT(static_cast<int>(start.allocation.gpus.size()) == request.gpus);
    const NodeSnapshot* node = FindNode(cluster, start.allocation.node);
    RC_ASSERT(node != nullptr);
    for (const GpuUuid& uuid : start.allocation.gpus) {
      const auto gpu = std::find_if(node->node.gpus.begin(),
                                    node->node.gpus.end(),
                                    [&](const Gpu& g) { return g.uuid == uuid; });
      RC_ASSERT(gpu != node->node.gpus.end());
      RC_ASSERT(MatchesType(request, gpu->model));
    }
  }
}

RC_GTEST_PROP(SchedulerProperty, AllocatedPlusFreeEqualsTotal, ()) {
  ClusterSnapshot cluster = GenCluster();
  const Queue queue = GenQueue();
  const Decisions decisions = DecideAll(cluster, queue);
  std::size_t held_before = 0;
  std::size_t usable_total = 0;
  for (const NodeSnapshot& node : cluster.nodes) {
    held_before += node.allocated.size();
  }
  std::size_t started_gpus = 0;
  for (const StartDecision& start : decisions.starts) {
    auto node = std::find_if(cluster.nodes.begin(), cluster.nodes.end(), [&](const auto& n) {
      return n.node.name == start.allocation.node;
    });
    RC_ASSERT(node != cluster.nodes.end());
    node->allocated.insert(start.allocation.gpus.begin(), start.allocation.gpus.end());
    started_gpus += start.allocation.gpus.size();
  }
  std::size_t held_after = 0;
  std::size_t free_after = 0;
  for (const NodeSnapshot& node : cluster.nodes) {
    held_after += node.allocated.size();
    for (const Gpu& gpu : node.node.gpus) {
      const bool usable = gpu.health != GpuHealth::kFailed;
      usable_total += usable ? 1 : 0;
      free_after += usable && !node.allocated.contains(gpu.uuid) ? 1 : 0;
      RC_ASSERT(usable || !node.allocated.contains(gpu.uuid) ||
                std::none_of(decisions.starts.begin(), decisions.starts.end(), [&](const auto& s) {
                  return std::count(s.allocation.gpus.begin(), s.allocation.gpus.end(), gpu.uuid);
                }));
    }
  }
  RC_ASSERT(held_after == held_before + started_gpus);
  std::size_t held_usable = 0;
  for (const NodeSnapshot& node : cluster.nodes) {
    for (const Gpu& gpu : node.node.gpus) {
      held_usable += gpu.health != GpuHealth::kFailed && node.allocated.contains(gpu.uuid) ? 1 : 0;
    }
  }
  RC_ASSERT(held_usable + free_after == usable_total);
}

RC_GTEST_PROP(SchedulerProperty, EveryJobIsStartedOrHasAReason, ()) {
  const ClusterSnapshot cluster = GenCluster();
  const Queue queue = GenQueue();
  const Decisions decisions = DecideAll(cluster, queue);
  std::multiset<JobId> decided;
  for (const StartDecision& start : decisions.starts) {
    decided.insert(start.job);
  }
  for (const PendingDecision& pending : decisions.pending) {
    decided.insert(pending.job);
    RC_ASSERT(!pending.reason.text.empty());
  }
  std::multiset<JobId> queued;
  for (const QueuedJob& job : queue.pending) {
    queued.insert(job.id);
  }
  RC_ASSERT(decided == queued);
}

void AssertSame(const Decisions& a, const Decisions& b) {
  RC_ASSERT(a.starts.size() == b.starts.size());
  for (std::size_t i = 0; i < a.starts.size(); ++i) {
    RC_ASSERT(a.starts[i].job == b.starts[i].job);
    RC_ASSERT(a.starts[i].allocation == b.starts[i].allocation);
  }
  RC_ASSERT(a.pending.size() == b.pending.size());
  for (std::size_t i = 0; i < a.pending.size(); ++i) {
    RC_ASSERT(a.pending[i].job == b.pending[i].job);
    RC_ASSERT(a.pending[i].reason == b.pending[i].reason);
  }
}

RC_GTEST_PROP(SchedulerProperty, SameInputSameDecisionsInAnyListOrder, ()) {
  const ClusterSnapshot cluster = GenCluster();
  const Queue queue = GenQueue();
  const Decisions first = DecideAll(cluster, queue);
  AssertSame(first, DecideAll(cluster, queue));
  std::mt19937 rng(*rc::gen::arbitrary<std::uint32_t>());
  ClusterSnapshot shuffled_cluster = cluster;
  Queue shuffled_queue = queue;
  std::shuffle(shuffled_cluster.nodes.begin(), shuffled_cluster.nodes.end(), rng);
  for (NodeSnapshot& node : shuffled_cluster.nodes) {
    std::shuffle(node.node.gpus.begin(), node.node.gpus.end(), rng);
  }
  std::shuffle(shuffled_queue.pending.begin(), shuffled_queue.pending.end(), rng);
  AssertSame(first, DecideAll(shuffled_cluster, shuffled_queue));
}

// No backfill: a job that starts never takes a GPU that a job ahead of it in the order, still
// pending, could ever use.
RC_GTEST_PROP(SchedulerProperty, LaterJobsNeverTakeGpusAWaitingJobCouldUse, ()) {
  const ClusterSnapshot cluster = GenCluster();
  const Queue queue = GenQueue();
  const Decisions decisions = DecideAll(cluster, queue);
  const Capacity capacity = BuildCapacity(cluster);
  std::map<JobId, const Allocation*> started;
  for (const StartDecision& start : decisions.starts) {
    started[start.job] = &start.allocation;
  }
  std::set<GpuUuid> claimed;
  const PolicyConfig stock;  // DecideAll's
  for (const QueuedJob* job : PriorityOrder(queue, ClassTable(stock))) {
    const auto it = started.find(job->id);
    if (it != started.end()) {
      for (const GpuUuid& uuid : it->second->gpus) {
        RC_ASSERT(!claimed.contains(uuid));
      }
    } else if (job->request.gpus > 0) {
      const std::set<GpuUuid> could_use = CouldEverUse(capacity, job->request);
      claimed.insert(could_use.begin(), could_use.end());
    }
  }
}

}  // namespace
}  // namespace gf

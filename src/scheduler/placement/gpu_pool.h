// GpuPool: the GPUs of the up nodes during one scheduling pass, indexed so that placing a job
// costs about O(log nodes), not a scan of every node (issue #4's target: 1,000 nodes and
// 100,000 pending jobs in one pass under 50 ms).
//
// Each usable GPU (not failed, on an up node) is in one of these states:
// - open: free, not claimed, not reserved: any job may take it;
// - reserved (backfill): free or busy, set aside for a waiting job from `reserved_from` on;
//   a free reserved GPU may still go to a job that ends by then;
// - claimed: set aside for a waiting job with no foreseeable start (or for a job that
//   preempts its holder): nobody else takes it, not even by preemption;
// - busy: held by a running job (or taken in this pass) until `available_at`.
//
// Index: for every model, the nodes bucketed by how many open GPUs of that model they have,
// and for "any model" by how many free GPUs they have (best fit counts free GPUs, claimed ones
// too, as v1 did: CPU-only jobs go to the node with the fewest free GPUs). Buckets hold node
// positions (nodes are sorted by name, so a set iterates in name order). Best fit walks the
// buckets upward from the request's size and stops at the first node that cannot be beaten.
//
// Claims and reservations only ever take GPUs away within a pass, so a request that did not
// fit stays unfit for the rest of the pass: the caller can remember failures.
//
// Not thread-safe (even its const methods fill a cache); one pass owns one pool (the
// IncrementalScheduler also keeps one of the current state between passes, patched as jobs
// start, stop and end, and copies it into each pass's).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "model/snapshot.h"
#include "scheduler/estimates.h"
#include "scheduler/placement/topology.h"
#include "scheduler/placement/whole_gpu_fit.h"

namespace gf {

inline constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();  // ms
inline constexpr int kAnyModel = 0;
inline constexpr int kNoSuchModel = -1;
inline constexpr int kNoConstraint = 0;

// A request as the pool sees it: a model id (kAnyModel, or an id of a model some usable GPU
// has, or kNoSuchModel), a GPU count and a constraint id (kNoConstraint, or the id ShapeOf gave
// the request's node labels: requests with the same labels share it).
// `cpus` and `memory_mib`: the host CPUs and memory it asks on the node (issue #24); a shape
// that asks either is placed by a scan of the nodes (as a constrained one) that skips nodes
// without room for them.
struct Shape {
  int model = kAnyModel;
  int gpus = 0;
  int constraint = kNoConstraint;
  int cpus = 0;
  std::int64_t memory_mib = 0;
  bool operator==(const Shape&) const = default;
};
inline bool AsksHost(Shape shape) {
  return shape.cpus > 0 || shape.memory_mib > 0;
}

struct PoolGpu {
  int node = 0;   // position in Nodes()
  int index = 0;  // NVML index on its node
  int model = 0;  // model id (>= 1)
  GpuUuid uuid;
  bool free = false;                    // nobody holds it (in the snapshot or in this pass)
  bool claimed = false;                 // set aside for one waiting job; nobody else may take it
  std::int64_t available_at = kNever;   // unix ms when it is expected to be free
  std::int64_t reserved_from = kNever;  // earliest reservation on it
  int first_waiter = -1;                // order position of the first waiting job that set it aside
  int holder = -1;                      // index into ClusterSnapshot::running; -1 none or unknown
  // For the range and basis of a start planned on it (PlannedEnd, scheduler/estimates.h):
  // when it may be free at the earliest (<= available_at), and whether a predicted run time
  // rather than a time limit set available_at.
  std::int64_t early_at = kNever;
  bool predicted = false;
};

struct PoolModelCount {
  int model = 0;
  int usable = 0;
  int free = 0;
  int open = 0;
};

// A stretch of time over which a node's host CPUs and memory are held (issue #24): by a
// running job until its planned end, by a job started in this pass until its planned end, or
// by a reservation from its planned start until its planned end. Kept only for what the node
// counts (a node that reports neither CPUs nor memory keeps none).
struct HostSpan {
  std::int64_t from = 0;  // unix ms
  std::int64_t until = kNever;
  int cpus = 0;
  std::int64_t memory_mib = 0;
  int running = -1;  // index into ClusterSnapshot::running; -1: taken or reserved by the pass
  // As PoolGpu's: when it may end at the earliest (<= until), and whether a predicted run
  // time rather than a time limit set `until`.
  std::int64_t early = kNever;
  bool predicted = false;
  void EndAt(const PlannedEnd& end) {
    until = end.at;
    early = end.early;
    predicted = end.predicted;
  }
};

struct PoolNode {
  NodeId name;
  int first_gpu = 0;  // its GPUs are Gpus()[first_gpu, first_gpu + gpu_count), by index
  int gpu_count = 0;
  int free_total = 0;
  int open_total = 0;
  int reserved_free = 0;  // free GPUs that are reserved (not claimed)
  std::vector<PoolModelCount> models;
  std::vector<int> holders;  // running jobs on it (indexes into ClusterSnapshot::running)
  bool topology = false;     // some GPU has topology or load known: choose its GPUs with care
  // Host capacity (Node::cpus, Node::memory_mib; 0 = not reported, not counted) and what the
  // running jobs and this pass's starts hold of it (Allocation::cpus, memory_mib).
  int cpus = 0;
  int cpus_used = 0;
  std::int64_t memory_mib = 0;
  std::int64_t memory_used_mib = 0;
  // Who holds them over time: what a reservation for later (backfill) must leave alone and
  // when a job that asks them can start (HostRoomUntil, HostStart).
  std::vector<HostSpan> host_spans;
};

// The host CPUs and memory a node has left: capacity less use; INT_MAX / INT64_MAX for a
// resource the node does not report (not counted).
int FreeCpus(const PoolNode& node);
std::int64_t FreeMemoryMib(const PoolNode& node);
// Whether `node` has room for `cpus` and `memory_mib` more.
inline bool HostRoom(const PoolNode& node, int cpus, std::int64_t memory_mib) {
  return (cpus == 0 || cpus <= FreeCpus(node)) &&
         (memory_mib == 0 || memory_mib <= FreeMemoryMib(node));
}
// Whether `node` has room for them from now until `end_ms` (kNever: for good): free now, and
// free at the start of every reservation made on it before then.
bool HostRoomUntil(const PoolNode& node,
                   int cpus,
                   std::int64_t memory_mib,
                   std::int64_t now_ms,
                   std::int64_t end_ms);
// The earliest time from `earliest_ms` on after which `node` always has room for them, by the
// planned ends (`early`: the earliest ends) and starts of its spans; kNever when that never
// comes (a hold with no end).
std::int64_t HostStart(const PoolNode& node,
                       int cpus,
                       std::int64_t memory_mib,
                       std::int64_t earliest_ms,
                       bool early = false);
// Whether `node` could ever hold them (its capacity, with nothing running).
inline bool HostCapacity(const PoolNode& node, int cpus, std::int64_t memory_mib) {
  return (node.cpus == 0 || cpus <= node.cpus) &&
         (node.memory_mib == 0 || memory_mib <= node.memory_mib);
}

// GPUs chosen on one node.
struct PoolFit {
  int node = -1;
  std::vector<int> gpus;  // positions in Gpus(), in index order
  int cpus = 0;           // host CPUs and memory it takes on the node (its shape's)
  std::int64_t memory_mib = 0;
};

// Where and when a waiting job can start at the earliest, from the running jobs' expected ends.
// `early_ms` and `predicted`: how early it may come by the median estimates, and whether a
// predicted end is among those it waits for (model/start_estimate.h).
struct PoolReservation {
  PoolFit fit;
  std::int64_t start_ms = kNever;
  std::int64_t early_ms = kNever;
  bool predicted = false;
};

// A set of node positions kept as a sorted vector: the pool's index holds up to a few thousand
// nodes per bucket and changes one node at a time, so a vector's move of a few KiB beats a
// tree's allocation per node; and every pass builds (or copies) its pool, where a tree's
// thousands of allocations and frees were a visible part of a replay (bench/README.md).
class NodeSet {
 public:
  void Insert(int n) {
    const auto it = std::lower_bound(nodes_.begin(), nodes_.end(), n);
    if (it == nodes_.end() || *it != n) {
      nodes_.insert(it, n);
    }
  }
  void Erase(int n) {
    const auto it = std::lower_bound(nodes_.begin(), nodes_.end(), n);
    if (it != nodes_.end() && *it == n) {
      nodes_.erase(it);
    }
  }
  bool Contains(int n) const { return std::binary_search(nodes_.begin(), nodes_.end(), n); }
  bool Empty() const { return nodes_.empty(); }
  // NOLINTNEXTLINE(readability-identifier-naming): named for range-for
  std::vector<int>::const_iterator begin() const { return nodes_.begin(); }
  // NOLINTNEXTLINE(readability-identifier-naming): named for range-for
  std::vector<int>::const_iterator end() const { return nodes_.end(); }

 private:
  std::vector<int> nodes_;  // ascending
};

// The up nodes of `cluster`, sorted by name (stable: equal names keep their order). Pools
// list their nodes in this order.
std::vector<const NodeSnapshot*> UpNodesByName(const ClusterSnapshot& cluster);

class GpuPool {
 public:
  // The up nodes of `cluster` and their usable GPUs; GPUs in NodeSnapshot::allocated or held
  // by a running job are busy until its planned end (PlannedEndMs, scheduler/estimates.h:
  // start + time limit, or its estimate with `use_estimates`; now when it is stopping; never
  // when unknown).
  GpuPool(const ClusterSnapshot& cluster, Time now, bool use_estimates = false);

  // Patches for a pool kept between passes (the IncrementalScheduler's): each leaves the pool
  // as GpuPool(cluster, now) would build it, `cluster` being the snapshot after the change and
  // `now` the one the pool was built at. Only for a pool no pass has changed (nothing taken,
  // claimed or reserved).
  // A job was appended to cluster.running.
  void RunningAdded(const ClusterSnapshot& cluster);
  // Running job `r` was erased from cluster.running (and its GPUs from its node's
  // `allocated`): later jobs' indexes move down by one.
  void RunningRemoved(const ClusterSnapshot& cluster, int r);
  // Running job `r` changed (it was told to stop: its GPUs are expected back now).
  void RunningChanged(const ClusterSnapshot& cluster, int r);
  // The same snapshot at a later `now` (a new controller turn): a free GPU is available from
  // the new now, a held one at its holder's planned end, which moves only where that end is
  // before the new now (a job past its limit or its estimate, or stopping): one pass over the
  // GPUs instead of a rebuild. REQUIRES: now >= the pool's now.
  void AdvanceTo(const ClusterSnapshot& cluster, Time now);

  Shape ShapeOf(const JobRequest& request) const;  // requires request.gpus >= 0
  // Whether node `n` may hold a job of `shape` (its labels satisfy the shape's constraint).
  bool Allows(int n, Shape shape) const {
    return shape.constraint == kNoConstraint ||
           constraint_nodes_[static_cast<std::size_t>(shape.constraint)]
                            [static_cast<std::size_t>(n)] != 0;
  }

  // Best fit for `shape` among GPUs a job ending at `end_ms` may take: open ones, and reserved
  // free ones whose reservation starts at or after `end_ms`. The node left with the fewest
  // free GPUs wins, ties by name; on it the givable GPUs that ChooseConnectedGpus picks
  // (topology.h; in index order when the node's topology and load are unknown).
  // A constrained shape scans the nodes its labels allow instead of the index: constraints are
  // rare, and an index per label set would cost every unconstrained pass its upkeep.
  std::optional<PoolFit> FindFit(Shape shape, std::int64_t end_ms) const;
  // Takes `fit`'s GPUs (from FindFit) until `until.at` (kNever: no foreseeable end).
  void Take(const PoolFit& fit, const PlannedEnd& until);
  void Take(const PoolFit& fit, std::int64_t until_ms) {  // until a time limit's end
    Take(fit, PlannedEnd{.at = until_ms, .early = until_ms});
  }

  // Strict claim, for a waiting job with no foreseeable start: every matching usable GPU on
  // the nodes that have at least shape.gpus of them, free or busy. Does nothing when an
  // earlier claim of the same model and no more GPUs covered all of those already.
  // Returns whether it claimed anything.
  bool Claim(Shape shape, int waiter);
  // Whether Claim(shape) would change nothing: an earlier claim of the model covers it.
  bool ClaimCovered(Shape shape) const;
  // Claims exactly these GPUs (for a job that preempts their holders).
  void ClaimGpus(const std::vector<int>& gpus, int waiter);

  // The earliest start for `shape` from the GPUs' expected ends (claimed GPUs never free up);
  // nullopt when no node can say.
  std::optional<PoolReservation> EarliestStart(Shape shape) const;
  // Reserves `reservation` for `waiter`; its GPUs are then expected busy until `until.at`.
  void Reserve(const PoolReservation& reservation, int waiter, const PlannedEnd& until);
  void Reserve(const PoolReservation& reservation, int waiter, std::int64_t until_ms) {
    Reserve(reservation, waiter, PlannedEnd{.at = until_ms, .early = until_ms});
  }

  // Multi-node (gang) jobs: `count` members of `shape` each on a node of its own. Rare, so
  // these scan the nodes rather than keep an index.
  // The `count` best nodes for a job ending at `end_ms` (as FindFit: each left with the fewest
  // free GPUs, ties by name), each with the GPUs PickGpus chooses there, in that order;
  // nullopt when fewer than `count` nodes can give shape.gpus GPUs now.
  std::optional<std::vector<PoolFit>> FindGangFit(Shape shape,
                                                  int count,
                                                  std::int64_t end_ms) const;
  // The earliest time `count` nodes can each give shape.gpus GPUs (the latest of the `count`
  // earliest node starts, as EarliestStart sees each node) and the GPUs, one reservation per
  // node, all from that time; nullopt when fewer than `count` nodes can say.
  std::optional<std::vector<PoolReservation>> EarliestGangStart(Shape shape, int count) const;
  // How many up nodes (that the shape's constraint allows) have at least shape.gpus usable
  // GPUs of its model: whether a gang could ever start.
  int NodesWithUsable(Shape shape) const;
  // How many of them could give shape.gpus GPUs now to a job ending at `end_ms`.
  int NodesWithGivable(Shape shape, std::int64_t end_ms) const;
  // The usable GPUs of `model` (kAnyModel: of any) on `node`.
  static int Usable(const PoolNode& node, int model);

  // For reasons. LargestUsable: most usable matching GPUs on one up node (that the shape's
  // constraint allows).
  int LargestUsable(Shape shape) const;
  NoFitFacts NoFitFactsFor(Shape shape) const;
  // The best fit for `shape` counting every free GPU (claimed and reserved ones too), and the
  // first waiter (lowest order position) that set aside one of its GPUs: who is in the way.
  struct InTheWay {
    bool fits = false;
    std::optional<int> first_waiter;
  };
  InTheWay WhoIsInTheWay(Shape shape) const;
  // Whether some node could give both shapes GPUs they share (their strict claims overlap).
  bool ClaimsOverlap(Shape a, Shape b) const;

  Allocation ToAllocation(const PoolFit& fit) const;
  // -1: not a usable GPU of an up node. A scan of every GPU: for the rare UUID that is not
  // where its job says (UUIDs are unique in a cluster).
  int GpuPosition(const GpuUuid& uuid) const;
  // The positions of running job `r`'s GPUs (index into ClusterSnapshot::running); empty when
  // one of them is not a usable GPU of an up node.
  const std::vector<int>& RunningGpus(int r) const {
    return running_gpus_[static_cast<std::size_t>(r)];
  }
  const std::vector<PoolGpu>& Gpus() const { return gpus_; }
  const std::vector<PoolNode>& Nodes() const { return nodes_; }
  const std::string& UsableModels() const { return usable_models_; }  // "A100, H100"
  bool Matches(const PoolGpu& gpu, int model) const {
    return model == kAnyModel || gpu.model == model;
  }
  // Host CPUs and memory taken on node `n` until `until` without GPUs (a fractional or MIG
  // job placed by its own pool): counted like Take's.
  void TakeHost(int n, int cpus, std::int64_t memory_mib, const PlannedEnd& until);
  // HostRoomUntil on node `n` at the pool's now.
  bool HostRoomOn(int n, int cpus, std::int64_t memory_mib, std::int64_t end_ms) const {
    return HostRoomUntil(nodes_[static_cast<std::size_t>(n)], cpus, memory_mib, now_ms_, end_ms);
  }
  // The position of the up node named `name`; -1 when it is not an up node.
  int NodeAt(const NodeId& name) const { return NodePosition(name); }
  // Bumped by every change that can alter a fit or a reason: memos keyed on it stay valid.
  std::uint64_t Generation() const { return generation_; }
  // Bumped by every change to node `n` (its GPUs taken, claimed or reserved): what was worked
  // out about the node stays valid while it is unchanged.
  std::uint64_t NodeVersion(int n) const { return node_versions_[static_cast<std::size_t>(n)]; }

 private:
  // Per running job: the node position (-1: not an up node) and host resources it holds.
  struct HostHold {
    int node = -1;
    int cpus = 0;
    std::int64_t memory_mib = 0;
  };
  // Adds a span of host use to node `n` (when the node counts what it holds).
  void AddSpan(int n, const HostSpan& span);
  void AddNode(const NodeSnapshot& snapshot, std::set<std::string>& display_models);
  void MarkRunning(const ClusterSnapshot& cluster);  // busy GPUs, holders, running_gpus_
  // Marks running job `r`'s GPUs busy and it a holder of their nodes; adds the nodes it
  // became a holder of to `touched` when given.
  void MarkJob(const RunningJob& job, int r, std::vector<int>* touched);
  void MarkNodeAgain(const ClusterSnapshot& cluster, int n);
  static void SetEnd(PoolGpu& gpu, const PlannedEnd& end) {
    gpu.available_at = end.at;
    gpu.early_at = end.early;
    gpu.predicted = end.predicted;
  }
  int NodePosition(const NodeId& name) const;  // -1: not an up node
  // The UUID's position, looked for on node `n` first (-1: anywhere).
  int GpuPosition(int n, const GpuUuid& uuid) const;
  void BuildIndexes();
  void Unindex(int node);
  void Index(int node);
  void Recount(int node);  // Unindex, count the node's GPUs again, Index
  int Free(const PoolNode& node, int model) const;
  bool Givable(const PoolGpu& gpu, int model, std::int64_t end_ms) const;
  int CountGivable(const PoolNode& node, int model, std::int64_t end_ms) const;
  // The earliest start of `shape` on node `n` (kNever: not foreseeable); `times` is scratch
  // and holds the node's matching GPUs as (available_at, position) afterwards.
  std::int64_t NodeStart(int n,
                         Shape shape,
                         std::vector<std::pair<std::int64_t, int>>& times) const;
  // The reservation of `shape` on node `n` from `start_ms`: the first shape.gpus GPUs of
  // `times` (NodeStart's, sorted here), with how early and on what the start rests.
  PoolReservation ReservationOn(int n,
                                Shape shape,
                                std::int64_t start_ms,
                                std::vector<std::pair<std::int64_t, int>>& times) const;
  void ConsiderReservedNodes(Shape shape, std::int64_t end_ms, int& best, int& best_left) const;
  std::optional<PoolFit> FindConstrainedFit(Shape shape, std::int64_t end_ms) const;
  // Whether node `n` may take one member of a gang of `shape` ending at `end_ms` now.
  bool GivesGang(int n, Shape shape, std::int64_t end_ms) const;
  void AddHost(const HostHold& hold, int sign);
  // The GPUs a job of `shape` ending at `end_ms` gets on node `n` (which has enough of them).
  PoolFit PickGpus(int n, Shape shape, std::int64_t end_ms) const;
  void SetTopology(int n, const NodeSnapshot& snapshot);
  int& ClaimedUpto(Shape shape);

  std::int64_t now_ms_;
  bool use_estimates_ = false;  // running jobs' ends from their estimates (PlannedEndMs)
  std::vector<PoolGpu> gpus_;
  // Parallel to gpus_, filled only for nodes with PoolNode::topology (kept apart so that the
  // hot loops over gpus_ stay within fewer cache lines).
  std::vector<TopoGpu> topo_;
  std::vector<std::map<std::string, std::string>> node_labels_;  // parallel to nodes_
  std::vector<PoolNode> nodes_;
  std::vector<int> snapshot_of_;  // parallel to nodes_: its index in ClusterSnapshot::nodes
  std::unordered_map<std::string, int> model_ids_;                  // lower-case model name → id
  mutable std::unordered_map<std::string, int> model_by_spelling_;  // request spelling → id
  std::vector<int> largest_usable_;                                 // per model
  std::vector<std::vector<int>> running_gpus_;                      // per running job
  std::vector<HostHold> running_host_;                              // per running job
  std::string usable_models_;
  // buckets_[model][count]: nodes with that many open GPUs of the model (model 0: any model,
  // counted as free GPUs).
  std::vector<std::vector<NodeSet>> buckets_;
  NodeSet reserved_nodes_;         // nodes with reserved free GPUs
  std::vector<int> claimed_upto_;  // per model: smallest count a strict claim covered (0: none)
  std::map<std::pair<int, int>, int> constrained_claimed_upto_;  // the same by (model, constraint)
  // Constraint ids: by label set, and per id which nodes satisfy it (id 0: no constraint).
  mutable std::map<std::map<std::string, std::string>, int> constraint_ids_;
  mutable std::vector<std::vector<char>> constraint_nodes_{{}};
  // LargestUsable per (model, constraint), filled on first use (usable GPUs never change).
  mutable std::map<std::pair<int, int>, int> constrained_largest_;
  std::uint64_t generation_ = 0;
  std::vector<std::uint64_t> node_versions_;  // per node, bumped by every change to it
  struct StartIndex {
    std::vector<std::pair<std::int64_t, int>> by_start;  // min-heap of (start, node); stale ok
    std::vector<std::uint64_t> computed_at;              // per node: the version its entry saw
  };
  mutable std::map<std::tuple<int, int, int, int, std::int64_t>, StartIndex>
      start_index_;  // (model, gpus, constraint, cpus, memory)
};

}  // namespace gf

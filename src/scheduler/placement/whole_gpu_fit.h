// Placement stage of the scheduler ("where does it fit") for whole GPUs, apart from ordering
// ("who goes next"). Decide() builds one Capacity per pass, asks FindBestFit for each job in
// order and Reserve()s what it starts, so later jobs see the GPUs earlier ones took.
//
// Assumptions (v1):
// - A job takes whole GPUs, all on one node (no multi-node jobs, no fractional GPUs yet).
// - Only nodes in state up take new work; draining, drained and down nodes take none.
// - A GPU can be given out when its health is not failed (degraded still runs work) and no
//   STARTING/RUNNING job holds it (NodeSnapshot::allocated).
// - A request with gpu_type matches GPUs whose model equals it ignoring ASCII case; an absent
//   or empty gpu_type matches every model.
// - A CPU-only request (gpus == 0) fits on any up node; CPUs and memory are not accounted
//   in v1.
//
// Algorithm: best fit. Among the up nodes with enough free matching GPUs, choose the one that
// is left with the fewest free GPUs (of any model) after the job, ties broken by node name;
// on it take the free matching GPUs in index order. Best fit packs work onto as few nodes as
// possible and keeps whole nodes free for large jobs; for CPU-only jobs it prefers the node
// with the fewest free GPUs, which keeps CPU work off idle GPU nodes. Only nodes with every
// label of the request's node_labels are considered. (Decide itself places through GpuPool,
// which also chooses the GPUs on the node by topology: topology.h.)
//
// Plain values and pure functions: safe from any thread as long as a Capacity is not shared
// between threads while it is being changed.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/result.h"
#include "model/job.h"
#include "model/pending_reason.h"
#include "model/snapshot.h"

namespace gf {

// One GPU that is not failed, on an up node.
struct CandidateGpu {
  int index = 0;
  GpuUuid uuid;
  std::string model;
  bool free = false;  // no job holds it (in the snapshot or reserved in this pass)
  std::int64_t memory_mib = 0;
};

// One up node and its usable GPUs.
struct CandidateNode {
  NodeId name;
  std::vector<CandidateGpu> usable;  // not failed, in index order
  std::map<std::string, std::string> labels{};
};

// What placement may hand out in one pass: the up nodes, sorted by name.
struct Capacity {
  std::vector<CandidateNode> nodes;
  std::string not_up{};  // NotUpNodes of the snapshot, for the reason when no node is up
};

// Which nodes a Capacity holds: the up nodes (what can be placed on now), or every node that
// is not down (what could run here at all: draining and drained nodes come back).
enum class NodeScope { kUp, kNotDown };

// The nodes of `cluster` in `scope` and their usable GPUs, sorted by node name and GPU index.
Capacity BuildCapacity(const ClusterSnapshot& cluster, NodeScope scope = NodeScope::kUp);

// Whether a GPU of `model` satisfies `request` (gpu_type absent, empty, or equal ignoring
// ASCII case).
bool MatchesType(const JobRequest& request, const std::string& model);

// Whether `labels` (a node's) hold every key of `wanted` (a request's node_labels) with the
// same value. Every node satisfies an empty `wanted`.
bool HasLabels(const std::map<std::string, std::string>& labels,
               const std::map<std::string, std::string>& wanted);
// Whether some node of `capacity` has every label `request` asks for. Errors: kInvalidArgument
// "constraint: no node has label rack=b; labels in this cluster: rack=a, zone=x".
Status CheckNodeLabels(const Capacity& capacity, const JobRequest& request);
// "rack=a, zone=x": labels as reasons and errors show them.
std::string FormatLabels(const std::map<std::string, std::string>& labels);
// "rack=a, rack=b": already formatted labels, joined (sorted, as a set iterates).
std::string JoinLabels(const std::set<std::string>& labels);
// Adds each of `labels` to `into` as "KEY=VALUE" (the set JoinLabels prints).
void CollectLabels(const std::map<std::string, std::string>& labels, std::set<std::string>& into);

// The best-fit allocation for `request`, or nullopt when no up node has enough free matching
// GPUs. GPUs in `off_limits` are treated as not free (Decide keeps the GPUs a blocked job
// could use off limits to later jobs). Requires request.gpus >= 0.
std::optional<Allocation> FindBestFit(const Capacity& capacity,
                                      const JobRequest& request,
                                      const std::set<GpuUuid>& off_limits);

// Marks the GPUs of `allocation` as no longer free. Requires that they are free in
// `capacity` (an allocation FindBestFit returned for it).
void Reserve(Capacity& capacity, const Allocation& allocation);

// The GPUs `request` could ever be given here, free or not: the matching usable GPUs of the
// up nodes that have at least request.gpus of them. Empty when the job cannot start on the
// up nodes even once every running job has ended. Requires request.gpus >= 1.
std::set<GpuUuid> CouldEverUse(const Capacity& capacity, const JobRequest& request);

// The most GPUs matching `request` that one node has usable, free or not.
int LargestUsable(const Capacity& capacity, const JobRequest& request);
// How many nodes have at least request.gpus usable GPUs matching it (its labels too): the
// nodes a member of a multi-node job could ever run on.
int NodesWithUsable(const Capacity& capacity, const JobRequest& request);

// "A100-40GB, H100-80GB": the distinct models of the usable GPUs, sorted; "" when none.
std::string UsableModels(const Capacity& capacity);

// What a reason for a job that does not fit needs to know about the up nodes, for one
// request. Built from a Capacity (ExplainNoFit) or from a GpuPool (Decide).
struct NoFitFacts {
  bool any_node = false;       // some node is up
  int most_usable = 0;         // most usable matching GPUs on one node
  int most_free = 0;           // most free matching GPUs on one node
  std::string most_free_node;  // the first node by name with most_free
  int most_free_node_usable = 0;
  std::string models;  // UsableModels()
  // For a request with node labels: whether some up node has them all, and the labels the up
  // nodes have ("rack=a, rack=b"), so that a reason can say what there is instead.
  bool any_labelled_node = true;
  std::string labels{};
  // The nodes that take no new work and why (NotUpNodes): with no node up, the reason names
  // them ("node n1 is draining: disk swap") rather than leave the user to guess.
  std::string not_up{};
};

// "node n1 is draining: disk swap; node n2 is down: agent silent for 30s": the nodes of
// `cluster` that are not up, by name, with their state and its reason; at most three, then how
// many more. "" when every node is up.
std::string NotUpNodes(const ClusterSnapshot& cluster);

// The reason for `request` from `facts` (see ExplainNoFit for the wording and codes).
PendingReason DescribeNoFit(const JobRequest& request, const NoFitFacts& facts);

// Why `request` does not fit now, for a person. Requires that FindBestFit without off-limits
// GPUs returned nullopt. Two kinds of answers:
// - it waits for GPUs to free up (kNoFreeGpus): "needs 4 GPUs on one node; at most 2 free on
//   a node (gpu01: 2 of 8 free)", "needs 2 GPUs of type A100-40GB; 0 free";
// - it cannot start on the up nodes at all (can_ever_fit false): "no node is up" (kNoNodeUp),
//   "needs 16 GPUs on one node; the largest up node has 8 usable" (kTooLarge), "needs GPUs of
//   type V100; no up node has one (up: H100-80GB)" (kNoGpuOfType), kNoNodeWithLabels,
//   kNoUsableGpu.
PendingReason ExplainNoFit(const Capacity& capacity, const JobRequest& request);

// "4 GPUs", "1 GPU of type H100-80GB", "2 GPUs with label rack=a", "no GPU", "8 GPUs on each
// of 2 nodes": how reasons name a request.
std::string DescribeRequest(const JobRequest& request);

}  // namespace gf

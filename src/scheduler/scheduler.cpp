// Decide(), DecideUpTo() and CheckFeasible(): the pass itself (the stages composed, their
// order and the assumptions they share) is in pass.h/.cpp, which the IncrementalScheduler runs
// too (README.md has the whole algorithm).
#include "scheduler/scheduler.h"

#include <algorithm>
#include <set>

#include "scheduler/pass.h"
#include "scheduler/pass_probe.h"
#include "scheduler/placement/whole_gpu_fit.h"

namespace gf {

Decisions Decide(const ClusterSnapshot& cluster,
                 const Queue& queue,
                 const PolicyConfig& policy,
                 Time now,
                 Listing listing) {
  Pass pass(cluster, policy, now);
  pass.SetListing(listing);
  return pass.Run(queue);
}

Decisions DecideUpTo(const ClusterSnapshot& cluster,
                     const Queue& queue,
                     const PolicyConfig& policy,
                     Time now,
                     JobId target,
                     const PassProbe& probe) {
  return Pass(cluster, policy, now).Run(queue, target, &probe);
}

namespace {

// A multi-node job needs request.nodes nodes that could each run one member; the largest-node
// and type checks that follow apply to each member as to a one-node job.
Status CheckGangFeasible(const Capacity& capacity, const JobRequest& request) {
  const int nodes = NodesWithUsable(capacity, request);
  if (nodes >= request.nodes) {
    return OkStatus();
  }
  if (request.gpus == 0 && request.node_labels.empty()) {
    return InvalidArgument("nodes: " + std::to_string(request.nodes) + " nodes requested, " +
                           "this cluster has " + std::to_string(nodes) +
                           "; ask for at most that many");
  }
  if (LargestUsable(capacity, request) < request.gpus) {
    return OkStatus();  // the per-member check that follows names the GPUs
  }
  return InvalidArgument("nodes: " + DescribeRequest(request) + " requested, only " +
                         std::to_string(nodes) + (nodes == 1 ? " node has" : " nodes have") +
                         " that many; ask for fewer nodes or fewer GPUs per node");
}

// A fractional job needs a GPU of its type, on a node with its labels, with at least the memory
// it asks. Whether any GPU is shared now does not matter: an admin may share one later.
Status CheckFractionFeasible(const Capacity& capacity, const JobRequest& request) {
  std::int64_t largest = -1;  // MiB of the largest matching GPU; -1 none
  for (const CandidateNode& node : capacity.nodes) {
    if (!HasLabels(node.labels, request.node_labels)) {
      continue;
    }
    for (const CandidateGpu& gpu : node.usable) {
      if (MatchesType(request, gpu.model)) {
        largest = std::max(largest, gpu.memory_mib);
      }
    }
  }
  if (largest < 0) {
    const std::string models = UsableModels(capacity);
    return InvalidArgument("gpu-type: no GPU of type '" + request.gpu_type.value_or("") +
                           "' to share; " +
                           (models.empty() ? "none is usable" : "types: " + models));
  }
  if (request.gpu_memory_mib > largest) {
    return InvalidArgument("gpu-mem: " + std::to_string(request.gpu_memory_mib) +
                           " MiB requested, the largest GPU" +
                           (request.gpu_type.has_value() ? " of that type" : std::string()) +
                           " has " + std::to_string(largest) + " MiB; ask for less");
  }
  return OkStatus();
}

// A MIG job: some GPU with MIG on (on a node that is not down) offers its profile; whether a
// device of it exists now is the layout's business, which an admin may change.
Status CheckMigFeasible(const ClusterSnapshot& cluster, const JobRequest& request) {
  std::set<std::string> offered;
  for (const NodeSnapshot& node : cluster.nodes) {
    if (node.node.state == NodeState::kDown || !HasLabels(node.node.labels, request.node_labels)) {
      continue;
    }
    for (const Gpu& gpu : node.node.gpus) {
      if (gpu.mig_enabled && MatchesType(request, gpu.model)) {
        offered.insert(gpu.mig_profiles.begin(), gpu.mig_profiles.end());
      }
    }
  }
  if (offered.contains(request.mig_profile)) {
    return OkStatus();
  }
  if (offered.empty()) {
    return InvalidArgument(
        "mig: no GPU" +
        (request.gpu_type.has_value() ? " of type " + *request.gpu_type : std::string()) +
        " has MIG mode on; ask for whole GPUs or a share (--gpu-share)");
  }
  std::string list;
  for (const std::string& profile : offered) {
    list += (list.empty() ? "" : ", ") + profile;
  }
  return InvalidArgument("mig: no GPU offers MIG profile " + request.mig_profile +
                         "; profiles offered: " + list);
}

// A job that asks host CPUs or memory needs a node (not down, with its labels) that has that
// many, each counted where the node reports it (0: not reported, not checked).
Status CheckHostFeasible(const ClusterSnapshot& cluster, const JobRequest& request) {
  int most_cpus = -1;
  std::int64_t most_mib = -1;
  bool cpus_fit = false;
  bool mem_fit = false;
  for (const NodeSnapshot& node : cluster.nodes) {
    if (node.node.state == NodeState::kDown || !HasLabels(node.node.labels, request.node_labels)) {
      continue;
    }
    const bool cpus_ok = node.node.cpus <= 0 || request.cpus <= node.node.cpus;
    const bool mem_ok = node.node.memory_mib <= 0 || request.memory_mib <= node.node.memory_mib;
    if (cpus_ok && mem_ok) {
      return OkStatus();
    }
    cpus_fit = cpus_fit || cpus_ok;
    mem_fit = mem_fit || mem_ok;
    most_cpus = std::max(most_cpus, node.node.cpus);
    most_mib = std::max(most_mib, node.node.memory_mib);
  }
  if (most_cpus < 0) {
    return OkStatus();  // no node to judge by (the GPU checks say so)
  }
  if (!cpus_fit) {
    return InvalidArgument("cpus: " + std::to_string(request.cpus) +
                           " CPUs requested on one node, the largest node has " +
                           std::to_string(most_cpus) + " for jobs; ask for fewer");
  }
  if (!mem_fit) {
    return InvalidArgument("mem: " + FormatMib(request.memory_mib) +
                           " requested on one node, the largest node has " + FormatMib(most_mib) +
                           " for jobs; ask for less");
  }
  return InvalidArgument("cpus, mem: " + DescribeHostRequest(request) +
                         " requested on one node; no node has both; ask for fewer CPUs or less "
                         "memory");
}

}  // namespace

Status CheckFeasible(const ClusterSnapshot& cluster, const JobRequest& request) {
  if (request.gpus < 0) {
    return InvalidArgument("gpus: must be 0 or more, got " + std::to_string(request.gpus));
  }
  // Nodes that are not down may take work again (draining and drained ones are undrained);
  // failed GPUs are left out, they need repair first.
  const Capacity capacity = BuildCapacity(cluster, NodeScope::kNotDown);
  if (capacity.nodes.empty()) {
    // With no node known nothing can be judged, and agents may join later: accept.
    return OkStatus();
  }
  GF_TRY(CheckNodeLabels(capacity, request));
  if (AsksHost(request)) {
    GF_TRY(CheckHostFeasible(cluster, request));
  }
  if (IsMig(request)) {
    return CheckMigFeasible(cluster, request);
  }
  if (IsFractional(request)) {
    return CheckFractionFeasible(capacity, request);
  }
  if (request.nodes > 1) {
    GF_TRY(CheckGangFeasible(capacity, request));
  }
  if (request.gpus == 0) {
    return OkStatus();
  }
  const int largest = LargestUsable(capacity, request);  // on the nodes with its labels
  const bool typed = request.gpu_type.has_value() && !request.gpu_type->empty();
  if (typed && largest == 0) {
    const std::string models = UsableModels(capacity);
    return InvalidArgument("gpu-type: no GPU of type '" + *request.gpu_type + "' " +
                           (request.node_labels.empty()
                                ? std::string("in this cluster")
                                : "on the nodes with " + FormatLabels(request.node_labels)) +
                           "; " + (models.empty() ? "it has no usable GPU" : "types: " + models));
  }
  if (largest < request.gpus) {
    return InvalidArgument("gpus: " + DescribeRequest(request) +
                           " requested on one node, the largest node has " +
                           std::to_string(largest) + (typed ? " of that type" : ""));
  }
  return OkStatus();
}

}  // namespace gf

#include "controller/launch_env.h"

#include <algorithm>
#include <string>

#include "lifecycle/gang_rules.h"

namespace gf {
namespace {

// Why gang members are jobs of their own (decision 0005): each runs on one node like any job,
// so launching, exit reports, logs, GPU attribution, usage, the idle reaper and GPU fail-over
// need nothing new; only starting and stopping are done per gang. What a member adds is where
// the others are.
void AddGangEnvironment(Job& launched, const std::map<JobId, Job>& active) {
  // The members' nodes by rank, from their allocations: the gang starts whole, so at any
  // launch (the first, or one re-sent after an agent reconnects) every member has its node.
  std::string list;
  int rank = 0;
  int position = 0;
  std::string master;
  for (const Job* member : GangMembers(active, *launched.spec.gang)) {
    if (!member->allocation.has_value()) {
      continue;
    }
    const NodeId& node = member->allocation->node;
    list += (list.empty() ? "" : ",") + node.value();
    if (master.empty()) {
      master = node.value();
    }
    if (member->spec.gang->rank == launched.spec.gang->rank) {
      rank = position;
    }
    ++position;
  }
  auto& env = launched.spec.env;
  env.emplace_back("GPUFLEET_GANG_ID", std::to_string(launched.spec.gang->gang_job.value()));
  env.emplace_back("GPUFLEET_NODE_RANK", std::to_string(rank));
  env.emplace_back("GPUFLEET_NUM_NODES", std::to_string(position));
  env.emplace_back("GPUFLEET_NODELIST", list);
  env.emplace_back("GPUFLEET_MASTER_ADDR", master);
}

// Programs may size themselves by these (a framework's memory fraction); the controller holds
// the job to its memory whatever it does. Under MPS the daemon enforces both limits itself:
// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE caps the SMs its kernels may use and
// CUDA_MPS_PINNED_DEVICE_MEM_LIMIT its memory on device 0 (its one visible GPU).
void AddShareEnvironment(Job& launched, const Node& node) {
  const Allocation& a = *launched.allocation;
  auto& env = launched.spec.env;
  env.emplace_back("GPUFLEET_GPU_SHARE", GpuAmountText(a.gpu_milli));
  env.emplace_back("GPUFLEET_GPU_MEMORY_LIMIT_MIB", std::to_string(a.gpu_memory_mib));
  const auto gpu = std::find_if(node.gpus.begin(), node.gpus.end(), [&](const Gpu& g) {
    return !a.gpus.empty() && g.uuid == a.gpus.front();
  });
  if (gpu != node.gpus.end() && gpu->sharing == SharingMode::kMps) {
    constexpr int kMilliPerPercent = kWholeGpuMilli / 100;
    env.emplace_back("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
                     std::to_string((a.gpu_milli + kMilliPerPercent - 1) / kMilliPerPercent));
    env.emplace_back("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT",
                     "0=" + std::to_string(a.gpu_memory_mib) + "M");
  }
}

}  // namespace

Job LaunchOf(const Job& job, const std::map<JobId, Job>& active, const Node& node) {
  Job launched = job;
  if (job.spec.gang.has_value()) {
    AddGangEnvironment(launched, active);
  }
  if (job.allocation->gpu_milli < kWholeGpuMilli) {
    AddShareEnvironment(launched, node);
  }
  return launched;
}

}  // namespace gf

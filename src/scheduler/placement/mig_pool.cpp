#include "scheduler/placement/mig_pool.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "model/mig_share.h"
#include "scheduler/placement/gpu_pool.h"
#include "scheduler/placement/whole_gpu_fit.h"

namespace gf {

MigPool::MigPool(const ClusterSnapshot& cluster) {
  std::map<GpuUuid, int> position;  // MIG device uuid → its entry
  for (const NodeSnapshot* node : UpNodesByName(cluster)) {
    std::vector<const Gpu*> gpus;
    for (const Gpu& gpu : node->node.gpus) {
      if (TakesMigJobs(gpu)) {
        gpus.push_back(&gpu);
      }
    }
    std::sort(
        gpus.begin(), gpus.end(), [](const Gpu* a, const Gpu* b) { return a->index < b->index; });
    for (const Gpu* gpu : gpus) {
      const int block = static_cast<int>(free_on_gpu_.size());
      free_on_gpu_.push_back(static_cast<int>(gpu->mig_instances.size()));
      for (const MigInstance& instance : gpu->mig_instances) {
        position.emplace(instance.uuid, static_cast<int>(devices_.size()));
        devices_.push_back(MigDevice{
            .node = node, .gpu = gpu, .instance = &instance, .gpu_block = block, .free = true});
      }
    }
  }
  for (const RunningJob& job : cluster.running) {
    if (const auto it = position.find(job.allocation.mig); it != position.end()) {
      MigDevice& device = devices_[static_cast<std::size_t>(it->second)];
      device.free = false;
      --free_on_gpu_[static_cast<std::size_t>(device.gpu_block)];
    }
  }
}

int MigPool::FreeOnGpu(const MigDevice& device) const {
  return free_on_gpu_[static_cast<std::size_t>(device.gpu_block)];
}

bool MigPool::Admits(const MigDevice& device, const JobRequest& request) const {
  return device.instance->profile == request.mig_profile &&
         MatchesType(request, device.gpu->model) &&
         HasLabels(device.node->node.labels, request.node_labels);
}

std::optional<MigFit> MigPool::FindFit(const JobRequest& request,
                                       const std::string& /*user*/) const {
  std::optional<std::size_t> best;
  for (std::size_t d = 0; d < devices_.size(); ++d) {
    if (!devices_[d].free || !Admits(devices_[d], request)) {
      continue;
    }
    if (!best.has_value() || FreeOnGpu(devices_[d]) < FreeOnGpu(devices_[*best])) {
      best = d;
    }
  }
  if (!best.has_value()) {
    return std::nullopt;
  }
  const MigDevice& device = devices_[*best];
  return MigFit{.device = static_cast<int>(*best),
                .milli = MigInstanceMilli(*device.gpu, *device.instance),
                .memory_mib = device.instance->memory_mib};
}

void MigPool::Take(const MigFit& fit, const std::string& /*user*/) {
  MigDevice& device = devices_[static_cast<std::size_t>(fit.device)];
  device.free = false;
  --free_on_gpu_[static_cast<std::size_t>(device.gpu_block)];
  ++generation_;
}

Allocation MigPool::ToAllocation(const MigFit& fit) const {
  const MigDevice& device = devices_[static_cast<std::size_t>(fit.device)];
  return Allocation{.node = device.node->node.name,
                    .gpus = {device.gpu->uuid},
                    .gpu_milli = fit.milli,
                    .gpu_memory_mib = fit.memory_mib,
                    .mig = device.instance->uuid};
}

PendingReason MigPool::WhyNot(const JobRequest& request, const std::string& /*user*/) const {
  const std::string need = "needs a MIG device " + request.mig_profile;
  int matching = 0;
  std::map<std::string, int> free_profiles;
  for (const MigDevice& device : devices_) {
    if (Admits(device, request)) {
      ++matching;
    } else if (device.free) {
      ++free_profiles[device.instance->profile];
    }
  }
  if (matching > 0) {
    return PendingReason::Of(PendingCode::kNoFreeGpus,
                             need + "; all " + std::to_string(matching) + " of them are held");
  }
  std::string reason = need + "; no GPU in mig mode that takes work now has one";
  if (!free_profiles.empty()) {
    reason += " (free devices:";
    for (const auto& [profile, count] : free_profiles) {
      reason += " " + std::to_string(count) + "x " + profile;
    }
    reason += ")";
  }
  return PendingReason::Of(PendingCode::kNoMigDevice,
                           reason +
                               "; an admin sets a layout with `gpufleet gpu mig-layout "
                               "NODE GPU " +
                               request.mig_profile + ",...`");
}

}  // namespace gf

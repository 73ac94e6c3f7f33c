#include "scheduler/placement/share_pool.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <tuple>
#include <utility>

#include "scheduler/placement/gpu_pool.h"

namespace gf {
namespace {

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) {
    return static_cast<char>(std::tolower(c));
  });
  return text;
}

std::string NeedText(const JobRequest& request) {
  std::string text = "needs ";
  if (request.gpu_milli > 0) {
    text += GpuAmountText(request.gpu_milli) + " of a GPU";
  }
  if (request.gpu_memory_mib > 0) {
    text += (request.gpu_milli > 0 ? " and " : "") + std::to_string(request.gpu_memory_mib) +
            " MiB of GPU memory";
  }
  return text;
}

}  // namespace

ShareFit ShareOf(const JobRequest& request, std::int64_t gpu_memory_mib) {
  ShareFit fit;
  fit.milli = request.gpu_milli;
  if (request.gpu_memory_mib > 0) {
    fit.memory_mib = request.gpu_memory_mib;
    if (gpu_memory_mib > 0) {
      const std::int64_t of_memory =
          (request.gpu_memory_mib * kWholeGpuMilli + gpu_memory_mib - 1) / gpu_memory_mib;
      fit.milli = static_cast<int>(std::max<std::int64_t>(fit.milli, of_memory));
    }
  } else {
    fit.memory_mib = gpu_memory_mib * fit.milli / kWholeGpuMilli;
  }
  fit.milli = std::max(fit.milli, 1);
  return fit;
}

SharePool::SharePool(const ClusterSnapshot& cluster, SharePlacement placement)
    : placement_(placement) {
  std::map<GpuUuid, int> position;
  for (const NodeSnapshot* node : UpNodesByName(cluster)) {
    std::vector<const Gpu*> gpus;
    for (const Gpu& gpu : node->node.gpus) {
      if (TakesFractions(gpu)) {
        gpus.push_back(&gpu);
      }
    }
    std::sort(
        gpus.begin(), gpus.end(), [](const Gpu* a, const Gpu* b) { return a->index < b->index; });
    for (const Gpu* gpu : gpus) {
      position.emplace(gpu->uuid, static_cast<int>(gpus_.size()));
      gpus_.push_back(ShareGpu{.node = node,
                               .gpu = gpu,
                               .model = Lower(gpu->model),
                               .free_milli = kWholeGpuMilli,
                               .free_mib = gpu->memory_mib,
                               .mps_user = std::nullopt});
    }
  }
  if (gpus_.empty()) {
    return;
  }
  for (const RunningJob& job : cluster.running) {
    for (const GpuUuid& uuid : job.allocation.gpus) {
      const auto it = position.find(uuid);
      if (it == position.end()) {
        continue;
      }
      ShareGpu& gpu = gpus_[static_cast<std::size_t>(it->second)];
      // A whole-GPU holder (it started before the mode changed) leaves nothing.
      const bool whole = job.allocation.gpu_milli >= kWholeGpuMilli;
      gpu.free_milli -= whole ? gpu.free_milli : job.allocation.gpu_milli;
      gpu.free_mib -= whole || job.allocation.gpu_memory_mib == 0 ? gpu.free_mib
                                                                  : job.allocation.gpu_memory_mib;
      if (gpu.gpu->sharing == SharingMode::kMps) {
        gpu.mps_user = job.user;
      }
    }
  }
}

bool SharePool::Admits(const ShareGpu& gpu, const JobRequest& request) {
  if (request.gpu_type.has_value() && !request.gpu_type->empty() &&
      Lower(*request.gpu_type) != gpu.model) {
    return false;
  }
  const auto& labels = gpu.node->node.labels;
  return std::all_of(request.node_labels.begin(), request.node_labels.end(), [&](const auto& kv) {
    const auto it = labels.find(kv.first);
    return it != labels.end() && it->second == kv.second;
  });
}

std::optional<ShareFit> SharePool::FindFit(const JobRequest& request,
                                           const std::string& user) const {
  std::optional<ShareFit> best;
  std::tuple<int, std::int64_t> best_left{};
  for (std::size_t g = 0; g < gpus_.size(); ++g) {
    const ShareGpu& gpu = gpus_[g];
    if (!Admits(gpu, request) || (gpu.mps_user.has_value() && *gpu.mps_user != user)) {
      continue;
    }
    ShareFit fit = ShareOf(request, gpu.gpu->memory_mib);
    if (fit.milli > gpu.free_milli || fit.memory_mib > gpu.free_mib) {
      continue;
    }
    if (placement_ == SharePlacement::kFirstFit) {
      fit.gpu = static_cast<int>(g);
      return fit;
    }
    const std::tuple<int, std::int64_t> left{gpu.free_milli - fit.milli,
                                             gpu.free_mib - fit.memory_mib};
    if (!best.has_value() || left < best_left) {  // the fullest GPU first; ties: the first met
      fit.gpu = static_cast<int>(g);
      best = fit;
      best_left = left;
    }
  }
  return best;
}

void SharePool::Take(const ShareFit& fit, const std::string& user) {
  ShareGpu& gpu = gpus_[static_cast<std::size_t>(fit.gpu)];
  gpu.free_milli -= fit.milli;
  gpu.free_mib -= fit.memory_mib;
  if (gpu.gpu->sharing == SharingMode::kMps) {
    gpu.mps_user = user;
  }
  ++generation_;
}

Allocation SharePool::ToAllocation(const ShareFit& fit) const {
  const ShareGpu& gpu = gpus_[static_cast<std::size_t>(fit.gpu)];
  return Allocation{.node = gpu.node->node.name,
                    .gpus = {gpu.gpu->uuid},
                    .gpu_milli = fit.milli,
                    .gpu_memory_mib = fit.memory_mib};
}

PendingReason SharePool::WhyNot(const JobRequest& request, const std::string& user) const {
  const std::string need = NeedText(request);
  int admitting = 0;
  int other_users = 0;
  int most_milli = 0;
  std::int64_t most_mib = 0;
  std::int64_t largest_mib = 0;
  for (const ShareGpu& gpu : gpus_) {
    if (!Admits(gpu, request)) {
      continue;
    }
    ++admitting;
    largest_mib = std::max(largest_mib, gpu.gpu->memory_mib);
    if (gpu.mps_user.has_value() && *gpu.mps_user != user) {
      ++other_users;
      continue;
    }
    most_milli = std::max(most_milli, gpu.free_milli);
    most_mib = std::max(most_mib, gpu.free_mib);
  }
  if (admitting == 0) {
    return PendingReason::Of(
        PendingCode::kNoSharedGpu,
        need + "; no GPU " +
            (request.gpu_type.has_value() && !request.gpu_type->empty()
                 ? "of type " + *request.gpu_type + " "
                 : std::string()) +
            "is in shared or mps mode and takes work now (an admin shares one with `gpufleet "
            "gpu mode NODE GPU shared`)");
  }
  if (request.gpu_memory_mib > largest_mib) {
    return PendingReason::Of(
        PendingCode::kTooLarge,
        need + "; the largest shared GPU has " + std::to_string(largest_mib) + " MiB");
  }
  std::string reason = need + "; ";
  if (other_users == admitting) {
    return PendingReason::Of(
        PendingCode::kMpsOtherUser,
        reason + "every mps GPU serves another user now (MPS runs one user's jobs at a time)");
  }
  reason += "the most a shared GPU has free is " + GpuAmountText(most_milli) + " of it and " +
            std::to_string(most_mib) + " MiB";
  if (other_users > 0) {
    reason += " (" + std::to_string(other_users) + " mps GPU" + (other_users == 1 ? "" : "s") +
              " serve another user)";
  }
  return PendingReason::Of(PendingCode::kNoFreeGpus, std::move(reason));
}

}  // namespace gf

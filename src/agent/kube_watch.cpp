#include "agent/kube_watch.h"

#include <spdlog/spdlog.h>

#include "kube/kube_node_pods.h"
#include "kube/kube_owner.h"

namespace gf {

std::optional<KubeReading> KubeWatch::Read(std::span<const Gpu> gpus) {
  Result<std::vector<KubeContainerGpus>> holders = list_();
  Result<KubeLogIndex> logs =
      holders.ok() ? ReadKubeLogIndex(log_root_) : Result<KubeLogIndex>(KubeLogIndex{});
  if (!holders.ok() || !logs.ok()) {
    if (!failing_) {
      spdlog::error(
          "agent: cannot read the node's pods: {}; GPU processes get no pod and no pods are "
          "reported until it can",
          holders.ok() ? logs.error().ToString() : holders.error().ToString());
    }
    failing_ = true;
    return std::nullopt;
  }
  if (failing_) {
    spdlog::info("agent: the node's pods are read again ({} containers hold GPUs)",
                 holders->size());
    failing_ = false;
  }
  ResolveGpuIndexes(*holders, gpus);
  KubeReading reading;
  KubeNodePods pods = KubePodsOfNode(*logs, *holders);
  for (const std::string& pod : pods.without_uid) {
    if (named_missing_.insert(pod).second) {
      spdlog::warn(
          "agent: pod {} holds GPUs but has no log folder in {} (its UID is unknown): "
          "not reported until it has one",
          pod,
          (log_root_ / "pods").string());
    }
  }
  reading.pods = std::move(pods.pods);
  reading.view = KubeNodeView{.logs = std::move(*logs), .holders = std::move(*holders)};
  return reading;
}

}  // namespace gf

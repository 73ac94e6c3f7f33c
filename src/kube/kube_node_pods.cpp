#include "kube/kube_node_pods.h"

#include <algorithm>
#include <map>
#include <utility>

namespace gf {

KubeNodePods KubePodsOfNode(const KubeLogIndex& logs, std::span<const KubeContainerGpus> holders) {
  // namespace/name → UID: the log folders are keyed by UID.
  std::map<std::pair<std::string, std::string>, std::string> uid_of;
  for (const auto& [uid, pod] : logs.pods_by_uid) {
    uid_of[{pod.pod_namespace, pod.pod_name}] = uid;
  }
  KubeNodePods out;
  for (const KubeContainerGpus& holder : holders) {
    if (holder.gpus.empty()) {
      continue;
    }
    const std::string full = holder.pod_namespace + "/" + holder.pod_name;
    const auto uid = uid_of.find({holder.pod_namespace, holder.pod_name});
    if (uid == uid_of.end()) {
      if (std::find(out.without_uid.begin(), out.without_uid.end(), full) ==
          out.without_uid.end()) {
        out.without_uid.push_back(full);
      }
      continue;
    }
    auto pod = std::find_if(
        out.pods.begin(), out.pods.end(), [&](const KubePod& p) { return p.uid == uid->second; });
    if (pod == out.pods.end()) {
      out.pods.push_back(KubePod{
          .uid = uid->second, .pod_namespace = holder.pod_namespace, .name = holder.pod_name});
      pod = std::prev(out.pods.end());
    }
    KubePodContainer container{.name = holder.container};
    for (const KubeGpu& gpu : holder.gpus) {
      const GpuUuid uuid(gpu.gpu);
      // A container holding two replicas of one shared GPU holds that GPU once.
      if (std::find(container.gpus.begin(), container.gpus.end(), uuid) == container.gpus.end()) {
        container.gpus.push_back(uuid);
      }
    }
    pod->containers.push_back(std::move(container));
  }
  return out;
}

}  // namespace gf

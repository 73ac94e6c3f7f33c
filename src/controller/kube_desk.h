// KubeDesk: the controller's side of Kubernetes mode (`gpufleet server --kubernetes`, issue
// #27), on the state thread, sibling of SlurmDesk (slurm_desk.h). gpufleet schedules nothing
// there: Kubernetes does. Each agent's report of its node's pods that hold GPUs (KubePod,
// `gpufleet agent --kubernetes`) is applied to the job book, so that `gpus`, `show`, the API,
// /metrics, accounting and the idle reaper see pods as they see gpufleet's own jobs:
//   - a pod is a job under the id its UID gives (model/kube_pod.h KubeJobIdOfPod; decision
//     0014), the pod's namespace as team, its name as the job's name, its UID, namespace, name
//     and which container holds which GPU kept in the job's environment (KubePodJobEnv); its
//     user is the namespace until the API server's watch (KubeDeskParts::api_facts) names its
//     service account (`system:serviceaccount:NAMESPACE:NAME`, as Kubernetes names it), which
//     with its owner workload ("Deployment/web", in POD_WORKLOAD) is kept on the job;
//     class "kubernetes" (so `[class.kubernetes]` and `[team.NAMESPACE]` idle rules apply);
//   - it starts at once, on its node, holding the GPUs its containers hold (those the node's
//     agent reported in its inventory);
//   - it ends (COMPLETED: the kubelet does not say how a pod's containers exited) when its
//     node's agent reports the node's pods without it. Only such a report ends a pod: an agent
//     that falls silent, or whose kubelet does not answer, sends none, and its pods stay.
// gpufleet stops no pod (controller.h, ControllerOptions::kubernetes): deleting pods is a
// later step of #27.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "controller/node_desk.h"
#include "controller/node_registry.h"
#include "core/clock.h"
#include "lifecycle/job_book.h"
#include "model/kube_pod.h"

#include "kube/kube_pods.h"

namespace gf {

struct KubeDeskParts {
  JobBook& jobs;
  NodeRegistry& nodes;
  NodeDesk& node_desk;
  const Clock& clock;
  // What the API server says of a pod, by UID (ControllerOptions::kube_pod_facts); may be empty.
  std::function<std::optional<KubePodFacts>(std::string_view pod_uid)> api_facts{};
};

// The class pods are in, for idle rules (`[class.kubernetes]`).
inline constexpr std::string_view kKubernetesClass = "kubernetes";

class KubeDesk {
 public:
  explicit KubeDesk(KubeDeskParts parts) : p_(std::move(parts)) {}

  // One complete reading of the pods that hold GPUs on `node`, as its agent reported it.
  void Apply(const NodeId& node, const std::vector<KubePod>& pods);

 private:
  // A pod as gpufleet keeps it (not yet started), on `gpus` of its node.
  Job Adopt(const KubePod& pod, JobId id, const std::vector<GpuUuid>& gpus) const;
  // The GPUs the pod's containers hold that its node has (its agent's inventory), in order.
  std::vector<GpuUuid> GpusOn(const NodeId& node, const KubePod& pod) const;
  // The pod's service account as the job's user and its workload in its environment, once the
  // API server has named them (they may come after the node's report, and are kept after).
  void NameFromApi(Job& job, const KubePod& pod);

  KubeDeskParts p_;
  std::set<std::string> refused_;  // pods logged once as not adoptable (their UIDs)
};

}  // namespace gf

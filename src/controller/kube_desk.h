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
// gpufleet stops a pod only where an admin opted in: the idle reaper's idle_action delete_pod
// or scale_owner (StopIdlePod, through the API server: kube/kube_pod_stop.h); every other stop
// is dropped (controller.h, ControllerOptions::kubernetes).
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

#include "kube/kube_pod_stop.h"
#include "kube/kube_pods.h"

namespace gf {

struct KubeDeskParts {
  JobBook& jobs;
  NodeRegistry& nodes;
  NodeDesk& node_desk;
  const Clock& clock;
  // What the API server says of a pod, by UID (ControllerOptions::kube_pod_facts); may be empty.
  std::function<std::optional<KubePodFacts>(std::string_view pod_uid)> api_facts{};
  // Sends an idle pod's stop to the API server once the turn is durable, its answer coming back
  // to StopAnswered on the state thread (ControllerOptions::kube_stop_pod); unset when the
  // server has no line to the API server.
  std::function<void(JobId job, KubePodStop stop)> send_stop{};
};

// The class pods are in, for idle rules (`[class.kubernetes]`).
inline constexpr std::string_view kKubernetesClass = "kubernetes";

class KubeDesk {
 public:
  explicit KubeDesk(KubeDeskParts parts) : p_(std::move(parts)) {}

  // One complete reading of the pods that hold GPUs on `node`, as its agent reported it.
  void Apply(const NodeId& node, const std::vector<KubePod>& pods);

  // The idle reaper's stop of the pod `job` is, where an admin opted in (idle_action
  // delete_pod or scale_owner: kube_pod_stop.h KubePodStopOfJob): the job is being stopped, to end
  // CANCELLED with `cause` when its node's report no longer lists the pod, and the request is sent.
  void StopIdlePod(Job& job, const KubePodStop& stop, const std::string& cause);
  // The API server's answer to that stop: kept on the job (event `pod_stop`, or
  // `pod_stop_failed` and its reason). After a failure the stop is forgotten, so the reaper
  // judges the pod afresh: warned again, and stopped again after its grace.
  void StopAnswered(JobId job, const KubePodStop& stop, const Status& answer);

 private:
  // Where a pod runs: what its containers hold of its node's GPUs (its agent's inventory).
  struct PodPlace {
    Allocation allocation;
    std::string mig_profile{};  // a MIG device's profile ("1g.10gb"); "" for whole GPUs
  };
  // A pod as gpufleet keeps it (not yet started).
  Job Adopt(const KubePod& pod, JobId id, const PodPlace& place) const;
  // The whole GPUs the pod's containers hold, in order; or, holding none, the MIG device they
  // hold, as a share of its GPU (as gpufleet's own MIG jobs count: model/mig_share.h; a pod
  // with several is counted by its first, logged once). nullopt when it holds none of them.
  std::optional<PodPlace> PlaceOf(const NodeId& node, const KubePod& pod);
  // The pod's service account as the job's user and its workload in its environment, once the
  // API server has named them (they may come after the node's report, and are kept after).
  void NameFromApi(Job& job, const KubePod& pod);

  KubeDeskParts p_;
  std::set<std::string> refused_;  // pods logged once (not adoptable, or several MIG devices)
};

}  // namespace gf

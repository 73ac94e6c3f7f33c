// KubePod: a Kubernetes pod that holds GPUs on a node, as `gpufleet agent --kubernetes` reports
// it to `gpufleet server --kubernetes` (issue #27, docs/kubernetes.md), and the gpufleet job id
// a pod is known by. Plain value types; pure functions.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/ids.h"

namespace gf {

// One container of a pod, with the GPUs the kubelet's device manager gave it (GPU UUIDs; a
// time-sliced replica counts as its GPU).
struct KubePodContainer {
  std::string name{};
  std::vector<GpuUuid> gpus{};
  bool operator==(const KubePodContainer&) const = default;
};

struct KubePod {
  std::string uid{};  // metadata.uid, dashed lower case
  std::string pod_namespace{};
  std::string name{};
  std::vector<KubePodContainer> containers{};  // only those that hold a GPU
  bool operator==(const KubePod&) const = default;
};

// The gpufleet job id of the pod with UID `pod_uid` (docs/decisions/0014): its first 12 hex
// digits as a number (48 bits: below 2^53, so exact in JSON and the dashboard's JavaScript),
// which both the agent (for the pod's processes) and the server (for the job) work out alone.
// nullopt when the UID does not start with 12 hex digits (not a UID the kubelet gives).
std::optional<JobId> KubeJobIdOfPod(std::string_view pod_uid);

// A pod's identity kept on its job, in the job's environment entries (stored with the job, so
// that a restarted server still knows it; docs/decisions/0014): POD_UID, POD_NAMESPACE and
// POD_NAME, as the Kubernetes downward API examples name them, and POD_CONTAINER_GPUS, which
// container holds which GPU ("trainer=GPU-a,GPU-b sidecar=GPU-c": container names are DNS
// labels and UUIDs hold neither ',' nor ' ').
std::vector<std::pair<std::string, std::string>> KubePodJobEnv(const KubePod& pod);
// What the API server names of a pod, added to its job's environment once heard
// (controller/kube_desk.h): its service account, and its workload as "Deployment/train".
inline constexpr std::string_view kPodServiceAccountEnv = "POD_SERVICE_ACCOUNT";
inline constexpr std::string_view kPodWorkloadEnv = "POD_WORKLOAD";
// The pod a job is (from KubePodJobEnv's entries); nullopt for a job that is not a pod.
std::optional<KubePod> KubePodOfJobEnv(std::span<const std::pair<std::string, std::string>> env);
// The container of `pod` that holds `gpu`; "" when none does.
std::string KubeContainerOfGpu(const KubePod& pod, const GpuUuid& gpu);

}  // namespace gf

// PodResourcesClient: asks the kubelet of this node which pod and container holds which NVIDIA
// GPU, over the kubelet's pod-resources gRPC service (API v1, pod_resources.proto) on its Unix
// socket, for the Kubernetes agent (issue #27, `gpufleet agent --kubernetes`).
//
// Why this service: it is the kubelet's own record of the devices each device plugin gave each
// container, served locally to node agents without credentials for the API server; monitoring
// agents (NVIDIA's dcgm-exporter among them) read GPU-to-pod ownership from it. It names pods by
// namespace and name, not by UID, and carries no pod metadata (owner, service account):
// kube/README.md says how those are joined.
//
// The socket and its folder belong to root: the agent runs as root, on the host or in a
// DaemonSet pod with /var/lib/kubelet/pod-resources mounted from the host.
//
// Every call checks the socket first, so its errors name the path and the fix: kUnavailable
// when it is absent or nothing answers on it (or no answer within the timeout),
// kPermissionDenied when this user may not connect, kFailedPrecondition when the kubelet does
// not serve the call (too old, or a feature gate off), kResourceExhausted when it refuses the
// call under its rate limit, kNotFound for Get of a pod not on this node.
//
// Thread-safety: one client is used by one thread at a time (the agent's poll loop).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

#include "kube/kube_devices.h"

namespace gf {

inline constexpr std::string_view kKubeletPodResourcesSocket =
    "/var/lib/kubelet/pod-resources/kubelet.sock";

class PodResourcesClient {
 public:
  // Connects lazily: constructing never fails, each call reports what is wrong at that time,
  // so an agent started before its kubelet recovers once the kubelet is up.
  explicit PodResourcesClient(std::string socket_path = std::string(kKubeletPodResourcesSocket));
  ~PodResourcesClient();
  PodResourcesClient(const PodResourcesClient&) = delete;
  PodResourcesClient& operator=(const PodResourcesClient&) = delete;

  // Every container on the node that holds at least one NVIDIA GPU (List). Containers and pods
  // without one are left out: the kubelet lists every pod, and only GPUs concern gpufleet.
  Result<std::vector<KubeContainerGpus>> List(std::chrono::milliseconds timeout);

  // The containers with NVIDIA GPUs of one pod (Get; the kubelet must have the
  // KubeletPodResourcesGet feature gate on). Errors: kNotFound when the pod is not on the node.
  Result<std::vector<KubeContainerGpus>> Get(std::string_view pod_namespace,
                                             std::string_view pod_name,
                                             std::chrono::milliseconds timeout);

  // Every NVIDIA GPU the node's device plugins offer, held or not (GetAllocatableResources).
  Result<std::vector<KubeGpu>> AllocatableGpus(std::chrono::milliseconds timeout);

  const std::string& SocketPath() const { return socket_path_; }

 private:
  struct Channel;  // the gRPC channel and stub, kept out of this header
  Result<Channel*> Connect();
  void Disconnect();

  std::string socket_path_;
  std::unique_ptr<Channel> channel_;
};

}  // namespace gf

// KubeWatch: the Kubernetes agent's reading of its node (`gpufleet agent --kubernetes`, issue
// #27), once per sampling round on the sampler thread: which container holds which GPU (the
// kubelet's pod-resources List, through `list`, which the app wires to PodResourcesClient with
// its timeout, so that this module needs no gRPC) and the kubelet's log names (which pod UID
// and container id those are, kube/kube_owner.h). From them the attributor tells each GPU
// process's pod (monitor/attribution.h) and the agent reports the node's pods that hold GPUs.
//
// A kubelet that does not answer gives no reading: the round's processes get no pod and no
// pods are reported, so the server keeps what it knew instead of being told of pods that ended
// (the last reading is never passed off as a new one). The outage is logged once, with the
// client's error (which names the socket and the fix), and its end once.
//
// Thread-safety: one thread (the sampler's).
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "core/result.h"
#include "model/kube_pod.h"
#include "monitor/attribution.h"

#include "kube/kube_devices.h"

namespace gf {

// Which container holds which GPU now (PodResourcesClient::List with a timeout).
using ListPodGpus = std::function<Result<std::vector<KubeContainerGpus>>()>;

struct KubeReading {
  KubeNodeView view{};
  std::vector<KubePod> pods{};  // the node's pods that hold GPUs (kube/kube_node_pods.h)
};

class KubeWatch {
 public:
  // log_root: where the kubelet's `pods` and `containers` log folders are (/var/log).
  KubeWatch(ListPodGpus list, std::filesystem::path log_root)
      : list_(std::move(list)), log_root_(std::move(log_root)) {}

  // nullopt when the kubelet or its log folders could not be read this round. `gpus`: the
  // node's inventory, for a device plugin that names GPUs by index (ResolveGpuIndexes).
  std::optional<KubeReading> Read(std::span<const Gpu> gpus = {});

 private:
  ListPodGpus list_;
  std::filesystem::path log_root_;
  bool failing_ = false;                 // the last Read failed (logged once per outage)
  std::set<std::string> named_missing_;  // pods without a log folder, logged once each
};

}  // namespace gf

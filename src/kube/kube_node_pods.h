// The pods of a node that hold GPUs, as the Kubernetes agent reports them (model/kube_pod.h):
// pod-resources' List (which container holds which GPU, by namespace and name) joined with the
// kubelet's log folders (which UID a namespace/name is). Pure.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "model/kube_pod.h"

#include "kube/kube_devices.h"
#include "kube/kube_owner.h"

namespace gf {

struct KubeNodePods {
  std::vector<KubePod> pods{};  // in List's order, each pod once
  // "namespace/name" of pods that hold GPUs but have no log folder yet (the kubelet writes it
  // as it starts the pod): left out until they have one, as a pod is known by its UID.
  std::vector<std::string> without_uid{};
};

KubeNodePods KubePodsOfNode(const KubeLogIndex& logs, std::span<const KubeContainerGpus> holders);

}  // namespace gf

// Which pod and container a GPU process belongs to, and which GPUs that container holds: the
// join of the three things the node knows (kube/README.md, "How a GPU process becomes a pod's"),
// for the Kubernetes agent (issue #27). Not wired into the agent yet.
//
//   the process's cgroup          → pod UID, container id           (kube_cgroup.h)
//   the kubelet's log folders     → pod UID ↔ namespace/name,
//                                   container id ↔ container name   (kube_log_names.h)
//   the kubelet's pod-resources   → namespace/name/container ↔ GPUs (pod_resources_client.h)
//
// Nothing is guessed: a container whose id has no log link (not written yet, removed, or cut
// by the kubelet's 255-byte file name limit) keeps an empty container name and holds no GPU
// here, rather than being given the GPUs of another container of its pod.
//
// Thread-safety: ReadKubeLogIndex reads the file system; the rest is pure.
#pragma once

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/result.h"

#include "kube/kube_devices.h"
#include "kube/kube_log_names.h"

namespace gf {

// The kubelet's log names of a node at one moment.
struct KubeLogIndex {
  std::unordered_map<std::string, KubePodLog> pods_by_uid{};
  std::unordered_map<std::string, KubeContainerLog> containers_by_id{};
};

// Reads `<log_root>/pods` (folders) and `<log_root>/containers` (links); log_root is /var/log
// on a node. Names of any other form are skipped. A missing folder is empty (a node whose
// kubelet has started no pod yet). Errors: kIo when a folder is there but cannot be listed.
Result<KubeLogIndex> ReadKubeLogIndex(const std::filesystem::path& log_root);

// The owner of a process.
struct KubeProcessOwner {
  std::string pod_uid{};        // always set
  std::string container_id{};   // always set
  std::string pod_namespace{};  // "" when neither log name knows the pod
  std::string pod_name{};       // ""   "
  std::string container{};      // "" when the container id has no log link
  std::vector<KubeGpu> gpus{};  // what pod-resources says its container holds; empty: none
  bool operator==(const KubeProcessOwner&) const = default;
};

// The owner of the process whose /proc/<pid>/cgroup is `proc_cgroup`; nullopt when it is in no
// pod's container (kube_cgroup.h). `holders` is pod-resources' List.
std::optional<KubeProcessOwner> KubeOwnerOfProcess(std::string_view proc_cgroup,
                                                   const KubeLogIndex& logs,
                                                   std::span<const KubeContainerGpus> holders);

}  // namespace gf

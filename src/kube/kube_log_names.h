// Which pod and container a container id or pod UID is, read from the names of the kubelet's
// log files, for the Kubernetes agent (issue #27). Pure: the caller lists the folders.
//
// Why: a process's cgroup names its pod by UID and its container by runtime id
// (kube_cgroup.h), while the kubelet's pod-resources service names them by namespace, pod name
// and container name (pod_resources_client.h). The kubelet itself writes the join into the
// file system of every node, for log shippers, and it needs no credentials to read:
//   /var/log/pods/<namespace>_<pod name>_<pod uid>/<container name>/<restart>.log
//   /var/log/containers/<pod name>_<namespace>_<container name>-<container id>.log  (a link)
// Namespaces, pod names and container names are DNS names (lower-case letters, digits, '-',
// '.'), so '_' separates the parts without doubt, and a container id is the 64 hex digits after
// the last '-'. The other ways to the same join ask a daemon: the container runtime's CRI
// socket (another gRPC API, one per runtime) or the API server (credentials, and a round trip
// off the node); kube/README.md.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gf {

// A container as the kubelet's log link names it.
struct KubeContainerLog {
  std::string pod_namespace{};
  std::string pod_name{};
  std::string container{};
  std::string container_id{};  // 64 lower-case hex digits
  bool operator==(const KubeContainerLog&) const = default;
};

// A pod as its log folder names it.
struct KubePodLog {
  std::string pod_namespace{};
  std::string pod_name{};
  std::string pod_uid{};  // dashed, lower case (NormalizePodUid)
  bool operator==(const KubePodLog&) const = default;
};

// The container of a /var/log/containers file name ("train-0_ml_trainer-<id>.log"); nullopt
// for any other name.
std::optional<KubeContainerLog> ContainerOfLogLink(std::string_view file_name);

// The pod of a /var/log/pods folder name ("ml_train-0_<uid>"); nullopt for any other name.
std::optional<KubePodLog> PodOfLogFolder(std::string_view folder_name);

}  // namespace gf

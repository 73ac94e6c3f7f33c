// What only the API server knows about a pod (issue #27): its service account and the workload
// that owns it, for `gpufleet server --kubernetes` (docs/kubernetes.md, "What the server takes
// from the API server"). The agents name pods by UID, namespace and name from the node; the
// server joins these by UID.
//
// A pod's workload follows its controller one level up where that controller is itself owned:
// ReplicaSet → Deployment, Job → CronJob (the kinds people name, as `kubectl get` shows
// them). Other controllers (StatefulSet, DaemonSet, a custom resource) are the workload
// themselves; a pod without a controller is its own.
//
// KubePodBook is the state of one server's list+watch of pods, replicasets and jobs
// (kube_api_watch.h feeds it): pure, no I/O; one thread at a time.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gf {

// An object's controller (its ownerReference with controller: true).
struct KubeOwnerRef {
  std::string kind{};  // "ReplicaSet"
  std::string name{};
  bool operator==(const KubeOwnerRef&) const = default;
};

// What the server keeps of a pod.
struct KubeApiPod {
  std::string uid{};
  std::string pod_namespace{};
  std::string name{};
  std::string service_account{};  // spec.serviceAccountName; "default" when unset
  std::string priority_class{};   // spec.priorityClassName; "" when unset
  std::string phase{};            // status.phase
  std::optional<KubeOwnerRef> controller{};
  bool operator==(const KubeApiPod&) const = default;
};

// The workload a pod belongs to: "Deployment" "web" (kind and name, in the pod's namespace).
struct KubeWorkload {
  std::string kind{};
  std::string name{};
  bool operator==(const KubeWorkload&) const = default;
};

// What the server shows of a pod beyond what its node reports.
struct KubePodFacts {
  KubeApiPod pod{};
  std::optional<KubeWorkload> workload{};
};

// The resources KubePodBook follows, each its own list+watch.
enum class KubeResource { kPods, kReplicaSets, kJobs };
std::string_view KubeResourcePath(KubeResource resource);  // "/api/v1/pods", ...

// One line of a watch stream ({"type": ..., "object": ...}).
enum class KubeWatchType { kAdded, kModified, kDeleted, kBookmark };
struct KubeWatchEvent {
  KubeWatchType type = KubeWatchType::kAdded;
  std::string resource_version{};  // the object's metadata.resourceVersion
  // Set for kAdded/kModified/kDeleted: the object, as ParseKubeObject reads it.
  std::string uid{};
  std::string object_namespace{};
  std::string name{};
  std::optional<KubeOwnerRef> controller{};
  std::optional<KubeApiPod> pod{};  // pods only
};

// Reads one watch line. Errors: kInvalidArgument for a line that is not such an event;
// kFailedPrecondition when the server ended the watch with an ERROR of code 410 (Gone: the
// resource version is too old, so the caller lists again); kUnavailable for any other ERROR.
Result<KubeWatchEvent> ParseKubeWatchLine(KubeResource resource, std::string_view line);

// One page of a list (GET PATH?limit=N): its objects as watch events (kAdded), the list's
// resourceVersion (to watch from) and its continue token ("" on the last page).
struct KubeListPage {
  std::vector<KubeWatchEvent> items{};
  std::string resource_version{};
  std::string continue_token{};
};
Result<KubeListPage> ParseKubeList(KubeResource resource, std::string_view body);

class KubePodBook {
 public:
  // What a whole list (all its pages) said: replaces everything known of `resource`.
  void Relist(KubeResource resource, const std::vector<KubeWatchEvent>& items);
  void Apply(KubeResource resource, const KubeWatchEvent& event);

  const KubeApiPod* Pod(std::string_view uid) const;
  // The pod's workload; nullopt for an unknown pod. A pod whose ReplicaSet or Job is not known
  // (yet) is counted to that ReplicaSet or Job rather than guessed further.
  std::optional<KubeWorkload> WorkloadOf(std::string_view uid) const;
  std::size_t PodCount() const { return pods_.size(); }

 private:
  using Key = std::pair<std::string, std::string>;  // namespace, name
  // The controllers of replicasets ([0]) and jobs ([1]).
  std::map<Key, std::optional<KubeOwnerRef>>& Owners(KubeResource resource);
  const std::map<Key, std::optional<KubeOwnerRef>>* OwnersOf(std::string_view kind) const;

  std::map<std::string, KubeApiPod, std::less<>> pods_;  // by uid
  std::map<Key, std::optional<KubeOwnerRef>> replicaset_owners_;
  std::map<Key, std::optional<KubeOwnerRef>> job_owners_;
};

}  // namespace gf

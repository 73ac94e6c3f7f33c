// KubePodStop: how `gpufleet server --kubernetes` stops an idle pod where an admin opted in
// (idle_action "delete_pod" or "scale_owner", docs/kubernetes.md), as the one API server request
// that does it and the reading of its answer. Pure functions; KubePodStopper
// (kube_pod_stopper.h) sends the requests.
//
//   - delete_pod: DELETE the pod, with its UID as a precondition, so that a pod of the same name
//     made since (a StatefulSet's, a re-created bare pod) is never deleted in its place;
//   - scale_owner: PATCH the scale subresource of the pod's workload to 0 replicas when it is a
//     Deployment, StatefulSet or ReplicaSet (deleting such a pod is undone at once by its
//     controller, holding a GPU again); any other pod (a Job's, a DaemonSet's, a bare pod, one
//     whose workload the server could not read) is deleted as above.
// The answers that mean "done": 200 and 202; a 404 (already gone) and, for a delete, a 409 (the
// UID precondition failed: the pod was already replaced) mean there is nothing left to stop.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"
#include "model/job.h"

namespace gf {

struct KubePodStop {
  std::string pod_namespace{};
  std::string name{};
  std::string uid{};
  std::string workload{};  // "Deployment/train" (POD_WORKLOAD); "" when not known
  bool scale_owner = false;
  bool operator==(const KubePodStop&) const = default;
};

// The stop of the pod a job is, from the job's environment (model/kube_pod.h KubePodJobEnv,
// POD_WORKLOAD); nullopt when the job is not a pod.
std::optional<KubePodStop> KubePodStopOfJob(const EnvList& env, bool scale_owner);

// The workload a scale_owner stop scales ("Deployment", "train"); nullopt when the stop deletes
// the pod instead.
struct KubeScaleTarget {
  std::string kind{};  // "Deployment", "StatefulSet", "ReplicaSet"
  std::string name{};
  std::string resource{};  // "deployments", "statefulsets", "replicasets" (apps/v1)
  bool operator==(const KubeScaleTarget&) const = default;
};
std::optional<KubeScaleTarget> KubeScaleTargetOf(const KubePodStop& stop);

// What the stop does, for events and warnings: "pod dev/notebook deleted",
// "Deployment/train (namespace research) scaled to 0 replicas".
std::string KubeStopDone(const KubePodStop& stop);
// The same as something to do: "delete pod dev/notebook", "scale Deployment/train (namespace
// research) to 0 replicas".
std::string KubeStopToDo(const KubePodStop& stop);

// The API server request that carries the stop out.
struct KubeApiRequest {
  std::string method{};
  std::string target{};  // origin form: "/api/v1/namespaces/dev/pods/notebook"
  std::string body{};
  std::string content_type{};
  bool operator==(const KubeApiRequest&) const = default;
};
// Errors: kInvalidArgument when a name is not one Kubernetes gives (a DNS subdomain: lower-case
// letters, digits, '-' and '.'; a UID of hex digits and '-'): the names come from an agent's
// report, and must never steer the request to another object.
Result<KubeApiRequest> KubeStopRequest(const KubePodStop& stop);

// Reads the API server's answer (`status`, `body`) to KubeStopRequest(stop). OK when the stop is
// done or there is nothing left to stop. Errors: kPermissionDenied (401, 403) naming the RBAC
// rule to grant (deploy/kubernetes/reaper.yaml); kUnavailable otherwise, with the status and
// the start of the server's message.
Status KubeStopAnswer(const KubePodStop& stop, int status, std::string_view body);

}  // namespace gf

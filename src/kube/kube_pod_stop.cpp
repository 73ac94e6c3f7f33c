#include "kube/kube_pod_stop.h"

#include <algorithm>
#include <array>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/kube_pod.h"

namespace gf {
namespace {

// A DNS subdomain (RFC 1123) as Kubernetes names objects: 1 to 253 of [a-z0-9-.], starting
// and ending with a letter or digit.
bool IsKubeName(std::string_view name) {
  const auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  };
  return !name.empty() && name.size() <= 253 && alnum(name.front()) && alnum(name.back()) &&
         std::all_of(
             name.begin(), name.end(), [&](char c) { return alnum(c) || c == '-' || c == '.'; });
}

bool IsKubeUid(std::string_view uid) {
  return !uid.empty() && uid.size() <= 64 && std::all_of(uid.begin(), uid.end(), [](char c) {
    return (c >= 'a' && c <= 'f') || (c >= '0' && c <= '9') || c == '-';
  });
}

struct Scalable {
  std::string_view kind;
  std::string_view resource;
};
constexpr std::array<Scalable, 3> kScalable{{{"Deployment", "deployments"},
                                             {"StatefulSet", "statefulsets"},
                                             {"ReplicaSet", "replicasets"}}};

std::string PodText(const KubePodStop& stop) {
  return "pod " + stop.pod_namespace + "/" + stop.name;
}

std::string OwnerText(const KubePodStop& stop, const KubeScaleTarget& target) {
  return target.kind + "/" + target.name + " (namespace " + stop.pod_namespace + ")";
}

}  // namespace

std::optional<KubePodStop> KubePodStopOfJob(const EnvList& env, bool scale_owner) {
  const std::optional<KubePod> pod = KubePodOfJobEnv(env);
  if (!pod) {
    return std::nullopt;
  }
  return KubePodStop{.pod_namespace = pod->pod_namespace,
                     .name = pod->name,
                     .uid = pod->uid,
                     .workload = EnvValue(env, kPodWorkloadEnv),
                     .scale_owner = scale_owner};
}

std::optional<KubeScaleTarget> KubeScaleTargetOf(const KubePodStop& stop) {
  if (!stop.scale_owner) {
    return std::nullopt;
  }
  const std::size_t slash = stop.workload.find('/');
  if (slash == std::string::npos) {
    return std::nullopt;
  }
  const std::string_view workload = stop.workload;
  const std::string_view kind = workload.substr(0, slash);
  const auto* const it = std::find_if(
      kScalable.begin(), kScalable.end(), [&](const Scalable& s) { return s.kind == kind; });
  if (it == kScalable.end()) {
    return std::nullopt;
  }
  return KubeScaleTarget{.kind = std::string(kind),
                         .name = stop.workload.substr(slash + 1),
                         .resource = std::string(it->resource)};
}

std::string KubeStopDone(const KubePodStop& stop) {
  const std::optional<KubeScaleTarget> target = KubeScaleTargetOf(stop);
  return target ? OwnerText(stop, *target) + " scaled to 0 replicas" : PodText(stop) + " deleted";
}

std::string KubeStopToDo(const KubePodStop& stop) {
  const std::optional<KubeScaleTarget> target = KubeScaleTargetOf(stop);
  return target ? "scale " + OwnerText(stop, *target) + " to 0 replicas"
                : "delete " + PodText(stop);
}

Result<KubeApiRequest> KubeStopRequest(const KubePodStop& stop) {
  const std::optional<KubeScaleTarget> target = KubeScaleTargetOf(stop);
  std::vector<std::pair<const char*, std::string_view>> names = {{"namespace", stop.pod_namespace},
                                                                 {"pod name", stop.name}};
  if (target) {
    names.emplace_back("workload name", target->name);
  }
  for (const auto& [what, name] : names) {
    if (!IsKubeName(name)) {
      return InvalidArgument(std::string("the ") + what + " '" + std::string(name) +
                             "' is not a Kubernetes name (a DNS subdomain): not stopped");
    }
  }
  if (!IsKubeUid(stop.uid)) {
    return InvalidArgument("the pod UID '" + stop.uid + "' is not one Kubernetes gives");
  }
  const std::string ns = "/namespaces/" + stop.pod_namespace;
  if (target) {
    return KubeApiRequest{
        .method = "PATCH",
        .target = "/apis/apps/v1" + ns + "/" + target->resource + "/" + target->name + "/scale",
        .body = R"({"spec":{"replicas":0}})",
        .content_type = "application/merge-patch+json"};
  }
  const nlohmann::json options = {
      {"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"preconditions", {{"uid", stop.uid}}}};
  return KubeApiRequest{.method = "DELETE",
                        .target = "/api/v1" + ns + "/pods/" + stop.name,
                        .body = options.dump(),
                        .content_type = "application/json"};
}

Status KubeStopAnswer(const KubePodStop& stop, int status, std::string_view body) {
  if (status == 200 || status == 202 || status == 404 ||
      (status == 409 && !KubeScaleTargetOf(stop))) {
    return OkStatus();
  }
  // The API server's Status object says why; its message is enough, the rest is noise.
  std::string message(body.substr(0, 300));
  if (const nlohmann::json parsed = nlohmann::json::parse(body, nullptr, false);
      parsed.is_object() && parsed.contains("message") && parsed["message"].is_string()) {
    message = parsed["message"].get<std::string>();
  }
  const std::string failed = "could not " + KubeStopToDo(stop) + ": the API server answered " +
                             std::to_string(status) + " (" + message + ")";
  if (status == 401 || status == 403) {
    const std::optional<KubeScaleTarget> target = KubeScaleTargetOf(stop);
    return PermissionDenied(failed + "; grant the server's service account " +
                            (target ? "patch on " + target->resource + "/scale (apps)"
                                    : std::string("delete on pods")) +
                            " (deploy/kubernetes/reaper.yaml)");
  }
  return Unavailable(failed);
}

}  // namespace gf

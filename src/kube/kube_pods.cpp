#include "kube/kube_pods.h"

#include <nlohmann/json.hpp>

namespace gf {
namespace {

using nlohmann::json;

std::string Text(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

const json& Member(const json& object, const char* key) {
  static const json empty = json::object();
  const auto it = object.find(key);
  return it != object.end() && it->is_object() ? *it : empty;
}

std::optional<KubeOwnerRef> ControllerOf(const json& metadata) {
  const auto refs = metadata.find("ownerReferences");
  if (refs == metadata.end() || !refs->is_array()) {
    return std::nullopt;
  }
  for (const json& ref : *refs) {
    if (ref.is_object() && ref.value("controller", false)) {
      return KubeOwnerRef{.kind = Text(ref, "kind"), .name = Text(ref, "name")};
    }
  }
  return std::nullopt;
}

Result<KubeWatchEvent> ObjectEvent(KubeResource resource, KubeWatchType type, const json& object) {
  if (!object.is_object()) {
    return InvalidArgument("Kubernetes watch: the object is not a JSON object");
  }
  const json& metadata = Member(object, "metadata");
  KubeWatchEvent event{.type = type,
                       .resource_version = Text(metadata, "resourceVersion"),
                       .uid = Text(metadata, "uid"),
                       .object_namespace = Text(metadata, "namespace"),
                       .name = Text(metadata, "name"),
                       .controller = ControllerOf(metadata)};
  if (type == KubeWatchType::kBookmark) {
    return event;
  }
  if (event.uid.empty() || event.name.empty()) {
    return InvalidArgument("Kubernetes watch: an object without metadata.uid or metadata.name");
  }
  if (resource == KubeResource::kPods) {
    const json& spec = Member(object, "spec");
    std::string account = Text(spec, "serviceAccountName");
    event.pod = KubeApiPod{.uid = event.uid,
                           .pod_namespace = event.object_namespace,
                           .name = event.name,
                           .service_account = account.empty() ? "default" : std::move(account),
                           .priority_class = Text(spec, "priorityClassName"),
                           .phase = Text(Member(object, "status"), "phase"),
                           .controller = event.controller};
  }
  return event;
}

// A JSON object, or null for anything else (not JSON, an array, a number).
json ParseObject(std::string_view text) {
  json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return parsed.is_discarded() || !parsed.is_object() ? json() : parsed;
}

}  // namespace

std::string_view KubeResourcePath(KubeResource resource) {
  switch (resource) {
    case KubeResource::kPods:
      return "/api/v1/pods";
    case KubeResource::kReplicaSets:
      return "/apis/apps/v1/replicasets";
    case KubeResource::kJobs:
      return "/apis/batch/v1/jobs";
  }
  return "";
}

Result<KubeWatchEvent> ParseKubeWatchLine(KubeResource resource, std::string_view line) {
  const json event = ParseObject(line);
  if (event.is_null()) {
    return InvalidArgument("Kubernetes watch: a line that is not a JSON object: " +
                           std::string(line.substr(0, 200)));
  }
  const std::string type = Text(event, "type");
  const json& object = Member(event, "object");
  if (type == "ERROR") {
    // A Status object: code 410 (Gone) means "list again", anything else is the server's word.
    const std::string message = Text(object, "message");
    if (object.value("code", 0) == 410) {
      return FailedPrecondition("Kubernetes watch expired (410 Gone): " + message);
    }
    return Unavailable("Kubernetes watch ended with an error: " +
                       (message.empty() ? event.dump() : message));
  }
  static const std::map<std::string, KubeWatchType, std::less<>> types = {
      {"ADDED", KubeWatchType::kAdded},
      {"MODIFIED", KubeWatchType::kModified},
      {"DELETED", KubeWatchType::kDeleted},
      {"BOOKMARK", KubeWatchType::kBookmark}};
  const auto kind = types.find(type);
  if (kind == types.end()) {
    return InvalidArgument("Kubernetes watch: unknown event type '" + type + "'");
  }
  return ObjectEvent(resource, kind->second, object);
}

Result<KubeListPage> ParseKubeList(KubeResource resource, std::string_view body) {
  const json list = ParseObject(body);
  const auto items = list.find("items");  // end() for a non-object too
  if (!list.is_object() || items == list.end() || !items->is_array()) {
    return InvalidArgument("Kubernetes list of " + std::string(KubeResourcePath(resource)) +
                           ": not a list (no items array)");
  }
  KubeListPage page{.resource_version = Text(Member(list, "metadata"), "resourceVersion"),
                    .continue_token = Text(Member(list, "metadata"), "continue")};
  for (const json& item : *items) {
    GF_ASSIGN_OR_RETURN(KubeWatchEvent event, ObjectEvent(resource, KubeWatchType::kAdded, item));
    page.items.push_back(std::move(event));
  }
  return page;
}

std::map<KubePodBook::Key, std::optional<KubeOwnerRef>>& KubePodBook::Owners(
    KubeResource resource) {
  return resource == KubeResource::kJobs ? job_owners_ : replicaset_owners_;
}

const std::map<KubePodBook::Key, std::optional<KubeOwnerRef>>* KubePodBook::OwnersOf(
    std::string_view kind) const {
  if (kind == "ReplicaSet") {
    return &replicaset_owners_;
  }
  if (kind == "Job") {
    return &job_owners_;
  }
  return nullptr;
}

void KubePodBook::Relist(KubeResource resource, const std::vector<KubeWatchEvent>& items) {
  if (resource == KubeResource::kPods) {
    pods_.clear();
  } else {
    Owners(resource).clear();
  }
  for (const KubeWatchEvent& item : items) {
    Apply(resource, item);
  }
}

void KubePodBook::Apply(KubeResource resource, const KubeWatchEvent& event) {
  if (event.type == KubeWatchType::kBookmark) {
    return;
  }
  const bool gone = event.type == KubeWatchType::kDeleted;
  if (resource == KubeResource::kPods) {
    if (gone) {
      pods_.erase(event.uid);
    } else if (event.pod) {
      pods_.insert_or_assign(event.uid, *event.pod);
    }
    return;
  }
  auto& owners = Owners(resource);
  const Key key{event.object_namespace, event.name};
  if (gone) {
    owners.erase(key);
  } else {
    owners.insert_or_assign(key, event.controller);
  }
}

const KubeApiPod* KubePodBook::Pod(std::string_view uid) const {
  const auto it = pods_.find(uid);
  return it == pods_.end() ? nullptr : &it->second;
}

std::optional<KubeWorkload> KubePodBook::WorkloadOf(std::string_view uid) const {
  const KubeApiPod* pod = Pod(uid);
  if (pod == nullptr) {
    return std::nullopt;
  }
  if (!pod->controller) {
    return KubeWorkload{.kind = "Pod", .name = pod->name};
  }
  KubeWorkload workload{.kind = pod->controller->kind, .name = pod->controller->name};
  // One level up, for the two kinds whose own owner is what people name.
  if (const auto* owners = OwnersOf(workload.kind)) {
    const auto it = owners->find(Key{pod->pod_namespace, workload.name});
    if (it != owners->end() && it->second) {
      workload = KubeWorkload{.kind = it->second->kind, .name = it->second->name};
    }
  }
  return workload;
}

}  // namespace gf

#include "kube/kube_cgroup.h"

#include <vector>

#include "core/proc_cgroup.h"

namespace gf {
namespace {

constexpr std::size_t kUuidLength = 36;
constexpr std::size_t kContainerIdLength = 64;

bool IsHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

char Lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

std::string_view StripSuffix(std::string_view text, std::string_view suffix) {
  return text.ends_with(suffix) ? text.substr(0, text.size() - suffix.size()) : text;
}

std::vector<std::string_view> Components(std::string_view path) {
  std::vector<std::string_view> parts;
  std::size_t pos = 0;
  while (pos <= path.size()) {
    std::size_t slash = path.find('/', pos);
    if (slash == std::string_view::npos) {
      slash = path.size();
    }
    if (slash > pos) {
      parts.push_back(path.substr(pos, slash - pos));
    }
    pos = slash + 1;
  }
  return parts;
}

// The pod UID of a pod's cgroup name: `pod<uid>` (cgroupfs) or `…kubepods…-pod<uid>.slice`
// (systemd, the UID's dashes turned into underscores because a dash nests slices there).
std::optional<std::string> PodUidOfComponent(std::string_view part) {
  if (part.ends_with(".slice")) {
    const std::size_t at = part.rfind("-pod");
    if (at == std::string_view::npos || part.find("kubepods") == std::string_view::npos) {
      return std::nullopt;
    }
    return NormalizePodUid(StripSuffix(part, ".slice").substr(at + 4));
  }
  if (part.starts_with("pod")) {
    return NormalizePodUid(part.substr(3));
  }
  return std::nullopt;
}

// The container of the cgroup right below a pod's: `<id>` (containerd or Docker with
// cgroupfs), `crio-<id>` (CRI-O with cgroupfs), `<runtime>-<id>.scope` (systemd).
std::optional<KubeContainerCgroup> ContainerOfComponent(std::string_view part) {
  const std::string_view name = StripSuffix(part, ".scope");
  if (IsKubeContainerId(name)) {
    return KubeContainerCgroup{.container_id = std::string(name)};
  }
  const std::size_t dash = name.rfind('-');
  if (dash == std::string_view::npos || !IsKubeContainerId(name.substr(dash + 1))) {
    return std::nullopt;
  }
  const std::string_view prefix = name.substr(0, dash);
  // conmon, CRI-O's monitor of one container, runs in a scope of its own beside the container.
  if (prefix == "crio-conmon") {
    return std::nullopt;
  }
  KubeContainerCgroup found{.container_id = std::string(name.substr(dash + 1))};
  found.runtime = prefix == "cri-containerd" ? "containerd" : std::string(prefix);
  return found;
}

}  // namespace

bool IsKubeContainerId(std::string_view id) {
  if (id.size() != kContainerIdLength) {
    return false;
  }
  for (const char c : id) {
    if (!IsHex(c) || (c >= 'A' && c <= 'F')) {
      return false;
    }
  }
  return true;
}

std::optional<std::string> NormalizePodUid(std::string_view text) {
  if (text.size() != kUuidLength) {
    return std::nullopt;
  }
  std::string uid(text);
  for (std::size_t i = 0; i < uid.size(); ++i) {
    const bool separator = i == 8 || i == 13 || i == 18 || i == 23;
    if (separator) {
      if (uid[i] != '-' && uid[i] != '_') {
        return std::nullopt;
      }
      uid[i] = '-';
    } else if (IsHex(uid[i])) {
      uid[i] = Lower(uid[i]);
    } else {
      return std::nullopt;
    }
  }
  return uid;
}

std::optional<KubeContainerCgroup> KubeContainerOfCgroupPath(std::string_view path) {
  const std::vector<std::string_view> parts = Components(path);
  // Only below the kubelet's tree: a `pod…` name elsewhere (a Podman pod, a user's own cgroup)
  // is not a Kubernetes pod. A reader in a cgroup namespace of its own (an agent in a pod on
  // cgroup v2) sees other cgroups relative to its own root, "/../../burstable/pod<uid>/<id>",
  // the kubepods part cut off: what follows the ".." parts is still under the kubelet's tree,
  // since that is where the reader's own container is.
  std::size_t i = 0;
  if (!parts.empty() && parts[0] == "..") {
    while (i < parts.size() && parts[i] == "..") {
      ++i;
    }
  } else {
    while (i < parts.size() && parts[i].find("kubepods") == std::string_view::npos) {
      ++i;
    }
  }
  for (; i + 1 < parts.size(); ++i) {
    if (auto uid = PodUidOfComponent(parts[i])) {
      auto container = ContainerOfComponent(parts[i + 1]);
      if (container) {
        container->pod_uid = std::move(*uid);
      }
      return container;
    }
  }
  return std::nullopt;
}

std::optional<KubeContainerCgroup> KubeContainerOfProcCgroup(std::string_view proc_cgroup) {
  for (const std::string_view path : CgroupPaths(proc_cgroup)) {
    if (auto container = KubeContainerOfCgroupPath(path)) {
      return container;
    }
  }
  return std::nullopt;
}

}  // namespace gf

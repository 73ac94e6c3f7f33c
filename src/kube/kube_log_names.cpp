#include "kube/kube_log_names.h"

#include <array>

#include "kube/kube_cgroup.h"

namespace gf {
namespace {

// A DNS label or subdomain as Kubernetes allows for namespaces, pods and containers; checked so
// that a stray file in the folder is not taken for a container.
bool IsDnsName(std::string_view name) {
  if (name.empty() || name.size() > 253) {
    return false;
  }
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
    if (!ok) {
      return false;
    }
  }
  return true;
}

// Splits "a_b_c" into exactly three parts, each a DNS name; nullopt otherwise.
std::optional<std::array<std::string_view, 3>> ThreeParts(std::string_view text) {
  const std::size_t first = text.find('_');
  const std::size_t second = first == std::string_view::npos ? first : text.find('_', first + 1);
  if (second == std::string_view::npos || text.find('_', second + 1) != std::string_view::npos) {
    return std::nullopt;
  }
  return std::array<std::string_view, 3>{
      text.substr(0, first), text.substr(first + 1, second - first - 1), text.substr(second + 1)};
}

}  // namespace

std::optional<KubeContainerLog> ContainerOfLogLink(std::string_view file_name) {
  if (!file_name.ends_with(".log")) {
    return std::nullopt;
  }
  const std::string_view stem = file_name.substr(0, file_name.size() - 4);
  const std::size_t dash = stem.rfind('-');
  if (dash == std::string_view::npos) {
    return std::nullopt;
  }
  const std::string_view id = stem.substr(dash + 1);
  const auto parts = ThreeParts(stem.substr(0, dash));
  if (!IsKubeContainerId(id) || !parts || !IsDnsName((*parts)[0]) || !IsDnsName((*parts)[1]) ||
      !IsDnsName((*parts)[2])) {
    return std::nullopt;
  }
  return KubeContainerLog{.pod_namespace = std::string((*parts)[1]),
                          .pod_name = std::string((*parts)[0]),
                          .container = std::string((*parts)[2]),
                          .container_id = std::string(id)};
}

std::optional<KubePodLog> PodOfLogFolder(std::string_view folder_name) {
  const auto parts = ThreeParts(folder_name);
  if (!parts || !IsDnsName((*parts)[0]) || !IsDnsName((*parts)[1])) {
    return std::nullopt;
  }
  auto uid = NormalizePodUid((*parts)[2]);
  if (!uid) {
    return std::nullopt;
  }
  return KubePodLog{.pod_namespace = std::string((*parts)[0]),
                    .pod_name = std::string((*parts)[1]),
                    .pod_uid = std::move(*uid)};
}

}  // namespace gf

// Fuzz target: the readers of names the Kubernetes agent takes from the node (src/kube):
// KubeContainerOfProcCgroup (a /proc/<pid>/cgroup text: cgroup names are chosen by whoever
// made them, any local user on a delegated tree), ContainerOfLogLink and PodOfLogFolder
// (file names under /var/log), NormalizePodUid. Oracle: what they accept is well formed (a
// dashed lower-case UID that normalises to itself, a 64-hex container id) and a log name is
// exactly what its parts spell.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/check.h"

#include "kube/kube_cgroup.h"
#include "kube/kube_log_names.h"

namespace {

void CheckUid(const std::string& uid) {
  GF_CHECK(uid.size() == 36);
  GF_CHECK(gf::NormalizePodUid(uid) == uid);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);

  if (const auto container = gf::KubeContainerOfProcCgroup(text)) {
    CheckUid(container->pod_uid);
    GF_CHECK(gf::IsKubeContainerId(container->container_id));
    GF_CHECK(text.find(container->container_id) != std::string::npos);
  }
  if (const auto uid = gf::NormalizePodUid(text)) {
    CheckUid(*uid);
  }
  if (const auto log = gf::ContainerOfLogLink(text)) {
    GF_CHECK(gf::IsKubeContainerId(log->container_id));
    GF_CHECK(log->pod_name + "_" + log->pod_namespace + "_" + log->container + "-" +
                 log->container_id + ".log" ==
             text);
  }
  if (const auto pod = gf::PodOfLogFolder(text)) {
    CheckUid(pod->pod_uid);
    const std::string prefix = pod->pod_namespace + "_" + pod->pod_name + "_";
    GF_CHECK(text.starts_with(prefix));
    GF_CHECK(gf::NormalizePodUid(std::string_view(text).substr(prefix.size())) == pod->pod_uid);
  }
  return 0;
}

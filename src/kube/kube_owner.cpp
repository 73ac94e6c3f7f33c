#include "kube/kube_owner.h"

#include <system_error>

#include "kube/kube_cgroup.h"

namespace gf {
namespace {

// Calls `each` with the name of every entry of `dir`; a missing folder has none.
template <typename Each>
Status ForEachName(const std::filesystem::path& dir, Each each) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec == std::errc::no_such_file_or_directory) {
    return OkStatus();
  }
  for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    each(it->path().filename().string());
  }
  if (ec) {
    return IoError("cannot list " + dir.string() + ": " + ec.message());
  }
  return OkStatus();
}

}  // namespace

Result<KubeLogIndex> ReadKubeLogIndex(const std::filesystem::path& log_root) {
  KubeLogIndex index;
  GF_TRY(ForEachName(log_root / "pods", [&index](const std::string& name) {
    if (auto pod = PodOfLogFolder(name)) {
      index.pods_by_uid.insert_or_assign(pod->pod_uid, std::move(*pod));
    }
  }));
  GF_TRY(ForEachName(log_root / "containers", [&index](const std::string& name) {
    if (auto container = ContainerOfLogLink(name)) {
      index.containers_by_id.insert_or_assign(container->container_id, std::move(*container));
    }
  }));
  return index;
}

std::optional<KubeProcessOwner> KubeOwnerOfProcess(std::string_view proc_cgroup,
                                                   const KubeLogIndex& logs,
                                                   std::span<const KubeContainerGpus> holders) {
  auto cgroup = KubeContainerOfProcCgroup(proc_cgroup);
  if (!cgroup) {
    return std::nullopt;
  }
  KubeProcessOwner owner{.pod_uid = std::move(cgroup->pod_uid),
                         .container_id = std::move(cgroup->container_id)};
  if (const auto pod = logs.pods_by_uid.find(owner.pod_uid); pod != logs.pods_by_uid.end()) {
    owner.pod_namespace = pod->second.pod_namespace;
    owner.pod_name = pod->second.pod_name;
  }
  const auto link = logs.containers_by_id.find(owner.container_id);
  if (link == logs.containers_by_id.end()) {
    return owner;
  }
  // Both names of the pod must agree when both are there: a link of another pod's container
  // with the same id would be a broken node, and taking it would misattribute.
  if (!owner.pod_name.empty() && (link->second.pod_namespace != owner.pod_namespace ||
                                  link->second.pod_name != owner.pod_name)) {
    return owner;
  }
  owner.pod_namespace = link->second.pod_namespace;
  owner.pod_name = link->second.pod_name;
  owner.container = link->second.container;
  for (const KubeContainerGpus& holder : holders) {
    if (holder.pod_namespace == owner.pod_namespace && holder.pod_name == owner.pod_name &&
        holder.container == owner.container) {
      owner.gpus = holder.gpus;
      break;
    }
  }
  return owner;
}

}  // namespace gf

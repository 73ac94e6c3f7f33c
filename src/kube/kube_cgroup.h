// Which Kubernetes pod and container a process runs in, read from its /proc/<pid>/cgroup text,
// for the Kubernetes agent (issue #27: `gpufleet agent --kubernetes` maps each GPU process to a
// pod). Pure: the caller reads the file.
//
// The kubelet puts every pod in a cgroup named for the pod's UID and the container runtime puts
// each container in a cgroup below it named for the container id, so the cgroup names both,
// and a process cannot leave it (whatever it does to its environment, parents or session). The
// names depend on the cgroup driver the kubelet and the runtime share:
//   cgroupfs: /kubepods[/burstable|/besteffort]/pod<uid with dashes>/<container id>
//             (CRI-O: `crio-<id>` as the last part)
//   systemd:  /kubepods.slice[/kubepods-burstable.slice]/kubepods-burstable-pod<uid with
//             underscores>.slice/<runtime>-<id>.scope, runtime = cri-containerd, docker, crio
// Guaranteed pods have no QoS level (`/kubepods/pod<uid>`, `kubepods-pod<uid>.slice`). The
// whole tree may sit below other cgroups: kind and minikube nodes run the kubelet inside a
// container (`/system.slice/docker-<node>.scope/kubepods/…`, `/docker/<node>/kubepods/…`), a
// kubelet with --cgroup-root=/kubelet and the systemd driver names its slices
// `kubelet-kubepods-…`. cgroup v1 has one line per controller hierarchy, v2 the single "0::"
// line; every line is read, so hybrid hosts work too.
//
// The host's view is read (an agent on the host, or in a pod with hostPID, which reads
// /proc/<pid>/cgroup of host pids), and so is the view from a pod's own cgroup namespace
// (cgroup v2): there the kernel shows other cgroups relative to the reader's, "/../../…", with
// the part from the pod down intact.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gf {

// A container as its cgroup names it.
struct KubeContainerCgroup {
  std::string pod_uid{};       // dashed, lower case: 8-4-4-4-12 hex (as the API server shows it)
  std::string container_id{};  // 64 lower-case hex digits, without the runtime's prefix
  std::string runtime{};       // "containerd", "docker", "crio", or "" (cgroupfs gives no name)
  bool operator==(const KubeContainerCgroup&) const = default;
};

// The pod and container of one cgroup path ("/kubepods/burstable/pod…/…"); nullopt when the
// path is not inside a container of a pod: outside kubepods, a pod's own cgroup (nothing runs
// there but stray processes), or CRI-O's per-container monitor (`crio-conmon-<id>.scope`),
// which belongs to the runtime, not to the container.
std::optional<KubeContainerCgroup> KubeContainerOfCgroupPath(std::string_view path);

// The same for a whole /proc/<pid>/cgroup text ("ID:CONTROLLERS:PATH" lines): the first line
// whose path lies in a container. nullopt when none does.
std::optional<KubeContainerCgroup> KubeContainerOfProcCgroup(std::string_view proc_cgroup);

// Whether `id` is a container id as runtimes make them: 64 lower-case hex digits.
bool IsKubeContainerId(std::string_view id);

// A pod UID in either spelling (dashes as the API shows it, underscores as systemd slice names
// need) in the dashed, lower-case form; nullopt when `text` is not a UUID.
std::optional<std::string> NormalizePodUid(std::string_view text);

}  // namespace gf

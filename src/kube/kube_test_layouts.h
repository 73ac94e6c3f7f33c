// Test helper: every cgroup layout a kubelet and container runtime write for a container, as
// path patterns, and /proc/<pid>/cgroup texts of a process in one, in cgroup v1 and v2 form.
// For gf_kube_test only (the cgroup reader's tests and the owner join's).
#pragma once

#include <string>
#include <string_view>

namespace gf::testing {

struct CgroupLayout {
  std::string_view name;
  std::string_view path;     // "{uid}", "{uid_}", "{id}": the pod UID dashed / underscored, the id
  std::string_view runtime;  // what KubeContainerOfCgroupPath reports
};

// Every layout a kubelet and runtime pair writes, by cgroup driver, QoS class and runtime.
inline constexpr CgroupLayout kCgroupLayouts[] = {
    {"cgroupfs burstable", "/kubepods/burstable/pod{uid}/{id}", ""},
    {"cgroupfs besteffort", "/kubepods/besteffort/pod{uid}/{id}", ""},
    {"cgroupfs guaranteed", "/kubepods/pod{uid}/{id}", ""},
    {"cgroupfs cri-o", "/kubepods/burstable/pod{uid}/crio-{id}", "crio"},
    {"systemd containerd burstable",
     "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{uid_}.slice/"
     "cri-containerd-{id}.scope",
     "containerd"},
    {"systemd containerd besteffort",
     "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{uid_}.slice/"
     "cri-containerd-{id}.scope",
     "containerd"},
    {"systemd guaranteed",
     "/kubepods.slice/kubepods-pod{uid_}.slice/cri-containerd-{id}.scope",
     "containerd"},
    {"systemd docker",
     "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{uid_}.slice/"
     "docker-{id}.scope",
     "docker"},
    {"systemd cri-o",
     "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{uid_}.slice/"
     "crio-{id}.scope",
     "crio"},
    // kind: the node is a Docker container whose kubelet uses the systemd driver inside it.
    {"kind (v2, node in docker)",
     "/system.slice/docker-1111111111111111111111111111111111111111111111111111111111111111.scope/"
     "kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
     "kubelet-kubepods-besteffort-pod{uid_}.slice/cri-containerd-{id}.scope",
     "containerd"},
    // minikube's docker driver on a cgroup v1 host, cgroupfs inside the node container.
    {"minikube (v1, node in docker)",
     "/docker/2222222222222222222222222222222222222222222222222222222222222222/kubepods/"
     "burstable/pod{uid}/{id}",
     ""},
    // Read from an agent in a cgroup namespace of its own (cgroup v2 pods): paths relative to
    // the agent's container, kubepods cut off, for a neighbour in another QoS level and pod.
    {"seen from a pod's cgroup namespace (cgroupfs)", "/../../../burstable/pod{uid}/{id}", ""},
    {"seen from a pod's cgroup namespace (systemd)",
     "/../../../kubepods-burstable.slice/kubepods-burstable-pod{uid_}.slice/"
     "cri-containerd-{id}.scope",
     "containerd"},
    // A container that made cgroups of its own below the one the runtime gave it.
    {"nested below the container", "/kubepods/burstable/pod{uid}/{id}/worker-1", ""},
};

// A layout's path for one container: `uid` dashed, `id` its 64-hex id.
inline std::string CgroupPath(std::string_view pattern, std::string_view uid, std::string_view id) {
  std::string out(pattern);
  std::string uid_underscores(uid);
  for (char& c : uid_underscores) {
    c = c == '-' ? '_' : c;
  }
  const auto replace = [&out](std::string_view key, std::string_view value) {
    for (std::size_t at = out.find(key); at != std::string::npos; at = out.find(key)) {
      out.replace(at, key.size(), value);
    }
  };
  replace("{uid_}", uid_underscores);
  replace("{uid}", uid);
  replace("{id}", id);
  return out;
}

// A cgroup v1 /proc/<pid>/cgroup: every controller hierarchy in the same cgroup, as the kubelet
// and runtime place a container's processes, plus the v1 "name=systemd" line and v2's 0:: line
// at the root (a hybrid host).
inline std::string ProcCgroupV1(std::string_view path) {
  const std::string p(path);
  return "12:cpuset:" + p + "\n11:memory:" + p + "\n10:devices:" + p + "\n9:pids:" + p +
         "\n4:cpu,cpuacct:" + p + "\n1:name=systemd:" + p + "\n0::/\n";
}

inline std::string ProcCgroupV2(std::string_view path) {
  return "0::" + std::string(path) + "\n";
}

}  // namespace gf::testing

#include "kube/kube_cgroup.h"

#include <string>

#include <gtest/gtest.h>

namespace gf {
namespace {

constexpr std::string_view kUid = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
constexpr std::string_view kUidUnderscores = "0f1e2d3c_4b5a_6978_8796_a5b4c3d2e1f0";
constexpr std::string_view kId = "9a8b7c6d5e4f30211203f4e5d6c7b8a99a8b7c6d5e4f30211203f4e5d6c7b8a9";

std::string Path(std::string_view pattern) {
  // "{uid}", "{uid_}" and "{id}" in a layout below stand for the pod UID (dashed / underscored)
  // and the container id, so each layout reads as the kubelet writes it.
  std::string out(pattern);
  const auto replace = [&out](std::string_view key, std::string_view value) {
    for (std::size_t at = out.find(key); at != std::string::npos; at = out.find(key)) {
      out.replace(at, key.size(), value);
    }
  };
  replace("{uid_}", kUidUnderscores);
  replace("{uid}", kUid);
  replace("{id}", kId);
  return out;
}

// A cgroup v1 /proc/<pid>/cgroup: every controller hierarchy in the same cgroup, as the kubelet
// and runtime place a container's processes, plus the v1 "name=systemd" line and v2's 0:: line
// at the root (a hybrid host).
std::string V1(std::string_view path) {
  const std::string p = Path(path);
  return "12:cpuset:" + p + "\n11:memory:" + p + "\n10:devices:" + p + "\n9:pids:" + p +
         "\n4:cpu,cpuacct:" + p + "\n1:name=systemd:" + p + "\n0::/\n";
}

std::string V2(std::string_view path) {
  return "0::" + Path(path) + "\n";
}

struct Layout {
  std::string_view name;
  std::string_view path;
  std::string_view runtime;
};

// Every layout a kubelet and runtime pair writes, by cgroup driver, QoS class and runtime.
constexpr Layout kLayouts[] = {
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

TEST(KubeCgroupTest, EveryLayoutNamesThePodAndContainerOnCgroupV1AndV2) {
  for (const Layout& layout : kLayouts) {
    for (const std::string& text : {V1(layout.path), V2(layout.path)}) {
      SCOPED_TRACE(std::string(layout.name) + ": " + text);
      const auto found = KubeContainerOfProcCgroup(text);
      ASSERT_TRUE(found);
      EXPECT_EQ(found->pod_uid, kUid);
      EXPECT_EQ(found->container_id, kId);
      EXPECT_EQ(found->runtime, layout.runtime);
    }
  }
}

TEST(KubeCgroupTest, AHybridHostIsReadFromItsV1Lines) {
  // systemd in hybrid mode: the v2 line is the systemd scope, the pod only in v1's hierarchies.
  const std::string text =
      "5:memory:" + Path("/kubepods/burstable/pod{uid}/{id}") + "\n0::/system.slice/x.scope\n";
  const auto found = KubeContainerOfProcCgroup(text);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->container_id, kId);
}

TEST(KubeCgroupTest, ProcessesOutsideAPodContainerHaveNone) {
  const std::string_view not_in_a_container[] = {
      // a login session
      "/user.slice/user-1000.slice/session-3.scope",
      // a Docker container that Kubernetes does not run
      "/system.slice/docker-{id}.scope",
      "/docker/{id}",
      // the kubelet and the runtime themselves
      "/system.slice/kubelet.service",
      "/system.slice/containerd.service",
      // a process in the pod's own cgroup, in no container
      "/kubepods/burstable/pod{uid}",
      "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{uid_}.slice",
      // the QoS level itself
      "/kubepods/besteffort",
      // CRI-O's monitor of the container, beside it in the pod
      "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{uid_}.slice/"
      "crio-conmon-{id}.scope",
      // a name like a pod's outside kubepods (a Podman pod)
      "/machine.slice/libpod_pod_{id}.slice/pod{uid}/{id}",
      // not a container id: too short, upper case
      "/kubepods/burstable/pod{uid}/9a8b7c6d",
      "/kubepods/burstable/pod{uid}/"
      "9A8B7C6D5E4F30211203F4E5D6C7B8A99A8B7C6D5E4F30211203F4E5D6C7B8A9",
      // not a UID
      "/kubepods/burstable/podnot-a-uid/{id}",
      // the root: a process in the reader's own container, seen from its cgroup namespace
      "/",
      // outside the reader's cgroup namespace, not in a pod (the kubelet, from a pod)
      "/../../../../system.slice/kubelet.service",
      "/../../pod{uid}",
  };
  for (const std::string_view path : not_in_a_container) {
    SCOPED_TRACE(path);
    EXPECT_FALSE(KubeContainerOfProcCgroup(V2(path)));
    EXPECT_FALSE(KubeContainerOfProcCgroup(V1(path)));
  }
  EXPECT_FALSE(KubeContainerOfProcCgroup(""));
  EXPECT_FALSE(KubeContainerOfProcCgroup("garbage without colons\n"));
}

TEST(KubeCgroupTest, PodUidsAreDashedAndLowerCase) {
  EXPECT_EQ(NormalizePodUid(kUidUnderscores), kUid);
  EXPECT_EQ(NormalizePodUid("0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0"), kUid);
  EXPECT_FALSE(NormalizePodUid("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f"));   // short
  EXPECT_FALSE(NormalizePodUid("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1fg"));  // not hex
  EXPECT_FALSE(NormalizePodUid("0f1e2d3c-4b5a-6978-8796a-5b4c3d2e1f0"));  // separator moved
}

}  // namespace
}  // namespace gf

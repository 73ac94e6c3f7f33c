#include "kube/kube_cgroup.h"

#include <string>

#include <gtest/gtest.h>

#include "kube/kube_test_layouts.h"

namespace gf {
namespace {

constexpr std::string_view kUid = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
constexpr std::string_view kUidUnderscores = "0f1e2d3c_4b5a_6978_8796_a5b4c3d2e1f0";
constexpr std::string_view kId = "9a8b7c6d5e4f30211203f4e5d6c7b8a99a8b7c6d5e4f30211203f4e5d6c7b8a9";

std::string Path(std::string_view pattern) {
  return testing::CgroupPath(pattern, kUid, kId);
}

std::string V1(std::string_view pattern) {
  return testing::ProcCgroupV1(Path(pattern));
}

std::string V2(std::string_view pattern) {
  return testing::ProcCgroupV2(Path(pattern));
}

TEST(KubeCgroupTest, EveryLayoutNamesThePodAndContainerOnCgroupV1AndV2) {
  for (const testing::CgroupLayout& layout : testing::kCgroupLayouts) {
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
      // CRI-O's monitor of the container, beside it in the pod (one path, cut at the line limit)
      // NOLINTNEXTLINE(bugprone-suspicious-missing-comma)
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

#include "kube/kube_node_pods.h"

#include <gtest/gtest.h>

namespace gf {
namespace {

KubeGpu Gpu(const std::string& device_id) {
  return KubeGpu{.resource = "nvidia.com/gpu",
                 .device_id = device_id,
                 .gpu = std::string(GpuOfDeviceId(device_id))};
}

TEST(KubePodsOfNodeTest, GroupsContainersByPodUnderTheUidOfItsLogFolder) {
  KubeLogIndex logs;
  logs.pods_by_uid["uid-a"] = {.pod_namespace = "ml", .pod_name = "train-0", .pod_uid = "uid-a"};
  logs.pods_by_uid["uid-b"] = {.pod_namespace = "dev", .pod_name = "nb", .pod_uid = "uid-b"};
  const std::vector<KubeContainerGpus> holders{
      {.pod_namespace = "ml",
       .pod_name = "train-0",
       .container = "trainer",
       .gpus = {Gpu("GPU-0"), Gpu("GPU-1")}},
      {.pod_namespace = "dev",
       .pod_name = "nb",
       .container = "jupyter",
       .gpus = {Gpu("GPU-7::0"), Gpu("GPU-7::1")}},  // two replicas of one shared GPU
      {.pod_namespace = "ml", .pod_name = "train-0", .container = "eval", .gpus = {Gpu("GPU-2")}},
      {.pod_namespace = "ml", .pod_name = "new-1", .container = "c", .gpus = {Gpu("GPU-3")}},
      {.pod_namespace = "ml", .pod_name = "train-0", .container = "logs"},  // no GPU
  };
  const KubeNodePods got = KubePodsOfNode(logs, holders);
  ASSERT_EQ(got.pods.size(), 2U);
  EXPECT_EQ(
      got.pods[0],
      (KubePod{.uid = "uid-a",
               .pod_namespace = "ml",
               .name = "train-0",
               .containers = {{.name = "trainer", .gpus = {GpuUuid("GPU-0"), GpuUuid("GPU-1")}},
                              {.name = "eval", .gpus = {GpuUuid("GPU-2")}}}}));
  EXPECT_EQ(got.pods[1].containers,
            (std::vector<KubePodContainer>{{.name = "jupyter", .gpus = {GpuUuid("GPU-7")}}}));
  // No log folder yet: no UID, not reported.
  EXPECT_EQ(got.without_uid, std::vector<std::string>{"ml/new-1"});
}

}  // namespace
}  // namespace gf

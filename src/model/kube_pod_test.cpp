#include "model/kube_pod.h"

#include <gtest/gtest.h>

namespace gf {
namespace {

TEST(KubeJobIdOfPodTest, IsTheFirstTwelveHexDigitsOfTheUid) {
  // 0x0f2c9a4e1b7d = 16684241787773 (decision 0014).
  EXPECT_EQ(KubeJobIdOfPod("0f2c9a4e-1b7d-4c3a-9e8f-5a6b7c8d9e01"), JobId(16684241787773));
  EXPECT_EQ(KubeJobIdOfPod("ffffffff-ffff-4fff-bfff-ffffffffffff"), JobId(0xffffffffffff));
  EXPECT_EQ(KubeJobIdOfPod("00000000-0001-4000-8000-000000000000"), JobId(1));
}

TEST(KubeJobIdOfPodTest, RefusesWhatIsNotAKubeletUid) {
  EXPECT_EQ(KubeJobIdOfPod(""), std::nullopt);
  EXPECT_EQ(KubeJobIdOfPod("0f2c9a4e-1b7"), std::nullopt);                          // too short
  EXPECT_EQ(KubeJobIdOfPod("0F2C9A4E-1B7D-4C3A-9E8F-5A6B7C8D9E01"), std::nullopt);  // upper case
  EXPECT_EQ(KubeJobIdOfPod("train-0-1b7d-4c3a-9e8f-5a6b7c8d9e01"), std::nullopt);
  EXPECT_EQ(KubeJobIdOfPod("00000000-0000-4000-8000-000000000001"), std::nullopt);  // job 0
}

TEST(KubePodJobEnvTest, KeepsThePodOnItsJobAndGivesItBack) {
  const KubePod pod{
      .uid = "0f2c9a4e-1b7d-4c3a-9e8f-5a6b7c8d9e01",
      .pod_namespace = "ml",
      .name = "train-0",
      .containers = {{.name = "trainer", .gpus = {GpuUuid("GPU-a"), GpuUuid("GPU-b")}},
                     {.name = "eval", .gpus = {GpuUuid("GPU-c")}}}};
  const auto env = KubePodJobEnv(pod);
  EXPECT_EQ(env[0], (std::pair<std::string, std::string>{"POD_UID", pod.uid}));
  EXPECT_EQ(env[3].second, "trainer=GPU-a,GPU-b eval=GPU-c");
  EXPECT_EQ(KubePodOfJobEnv(env), pod);
  EXPECT_EQ(KubeContainerOfGpu(pod, GpuUuid("GPU-b")), "trainer");
  EXPECT_EQ(KubeContainerOfGpu(pod, GpuUuid("GPU-c")), "eval");
  EXPECT_EQ(KubeContainerOfGpu(pod, GpuUuid("GPU-z")), "");
  // A job that is not a pod.
  const std::vector<std::pair<std::string, std::string>> plain{{"HOME", "/root"}};
  EXPECT_EQ(KubePodOfJobEnv(plain), std::nullopt);
}

}  // namespace
}  // namespace gf

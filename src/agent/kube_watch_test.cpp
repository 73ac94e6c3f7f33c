#include "agent/kube_watch.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <unistd.h>

namespace gf {
namespace {

namespace fs = std::filesystem;

// A node's log folders with one pod, and a kubelet the test answers for.
class KubeWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("gf-kubewatch-" + std::to_string(getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "pods" / ("ml_train-0_" + uid_));
    fs::create_directories(root_ / "containers");
    std::ofstream(root_ / "containers" / ("train-0_ml_trainer-" + std::string(64, 'a') + ".log"));
  }
  void TearDown() override { fs::remove_all(root_); }

  fs::path root_;
  const std::string uid_ = "0f2c9a4e-1b7d-4c3a-9e8f-5a6b7c8d9e01";
};

TEST_F(KubeWatchTest, AReadingGivesTheViewAndThePodsThatHoldGpus) {
  KubeWatch watch(
      [] {
        return Result<std::vector<KubeContainerGpus>>(std::vector<KubeContainerGpus>{
            {.pod_namespace = "ml",
             .pod_name = "train-0",
             .container = "trainer",
             .gpus = {
                 KubeGpu{.resource = "nvidia.com/gpu", .device_id = "GPU-0", .gpu = "GPU-0"}}}});
      },
      root_);
  const std::optional<KubeReading> reading = watch.Read();
  ASSERT_TRUE(reading.has_value());
  EXPECT_EQ(reading->view.holders.size(), 1U);
  EXPECT_TRUE(reading->view.logs.containers_by_id.contains(std::string(64, 'a')));
  ASSERT_EQ(reading->pods.size(), 1U);
  EXPECT_EQ(reading->pods[0].uid, uid_);
  EXPECT_EQ(reading->pods[0].containers[0].gpus, std::vector<GpuUuid>{GpuUuid("GPU-0")});
}

// A kubelet that does not answer gives no reading (not the last one again), every round, until
// it answers.
TEST_F(KubeWatchTest, AKubeletThatDoesNotAnswerGivesNoReading) {
  bool down = false;
  KubeWatch watch(
      [&down]() -> Result<std::vector<KubeContainerGpus>> {
        if (down) {
          return Unavailable("kubelet pod-resources socket /x: connection refused");
        }
        return std::vector<KubeContainerGpus>{};
      },
      root_);
  EXPECT_TRUE(watch.Read().has_value());
  down = true;
  EXPECT_FALSE(watch.Read().has_value());
  EXPECT_FALSE(watch.Read().has_value());
  down = false;
  EXPECT_TRUE(watch.Read().has_value());
}

}  // namespace
}  // namespace gf

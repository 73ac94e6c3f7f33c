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

  // A kubelet whose List says train-0's container trainer holds `gpus`.
  static ListPodGpus TrainerHolds(std::vector<KubeGpu> gpus) {
    return [gpus = std::move(gpus)] {
      return Result<std::vector<KubeContainerGpus>>(std::vector<KubeContainerGpus>{
          {.pod_namespace = "ml", .pod_name = "train-0", .container = "trainer", .gpus = gpus}});
    };
  }

  fs::path root_;
  const std::string uid_ = "0f2c9a4e-1b7d-4c3a-9e8f-5a6b7c8d9e01";
};

TEST_F(KubeWatchTest, AReadingGivesTheViewAndThePodsThatHoldGpus) {
  KubeWatch watch(
      TrainerHolds({KubeGpu{.resource = "nvidia.com/gpu", .device_id = "GPU-0", .gpu = "GPU-0"}}),
      root_);
  const std::optional<KubeReading> reading = watch.Read();
  ASSERT_TRUE(reading.has_value());
  EXPECT_EQ(reading->view.holders.size(), 1U);
  EXPECT_TRUE(reading->view.logs.containers_by_id.contains(std::string(64, 'a')));
  ASSERT_EQ(reading->pods.size(), 1U);
  EXPECT_EQ(reading->pods[0].uid, uid_);
  EXPECT_EQ(reading->pods[0].containers[0].gpus, std::vector<GpuUuid>{GpuUuid("GPU-0")});
}

// DEVICE_ID_STRATEGY=index: the kubelet names GPUs by NVML index; the reading names them by
// the UUIDs of the node's GPUs with those indexes (a replica as its GPU; a MIG index, or an
// index the node lacks, names none).
TEST_F(KubeWatchTest, GpusNamedByIndexAreReadAsTheNodesUuids) {
  KubeWatch watch(
      TrainerHolds({KubeGpu{.resource = "nvidia.com/gpu", .device_id = "1", .gpu = "1"},
                    KubeGpu{.resource = "nvidia.com/gpu.shared", .device_id = "0::3", .gpu = "0"},
                    KubeGpu{.resource = "nvidia.com/mig-1g.10gb", .device_id = "0:1", .gpu = "0:1"},
                    KubeGpu{.resource = "nvidia.com/gpu", .device_id = "7", .gpu = "7"}}),
      root_);
  std::vector<Gpu> gpus(2);
  gpus[0].index = 0;
  gpus[0].uuid = GpuUuid("GPU-aaaa");
  gpus[1].index = 1;
  gpus[1].uuid = GpuUuid("GPU-bbbb");
  const std::optional<KubeReading> reading = watch.Read(gpus);
  ASSERT_TRUE(reading.has_value());
  ASSERT_EQ(reading->pods.size(), 1U);
  EXPECT_EQ(reading->pods[0].containers[0].gpus,
            (std::vector<GpuUuid>{
                GpuUuid("GPU-bbbb"), GpuUuid("GPU-aaaa"), GpuUuid("0:1"), GpuUuid("7")}));
  EXPECT_EQ(reading->view.holders[0].gpus[0].gpu, "GPU-bbbb");    // what attribution matches
  EXPECT_EQ(reading->view.holders[0].gpus[1].device_id, "0::3");  // as the kubelet gave it
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

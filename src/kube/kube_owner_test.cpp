#include "kube/kube_owner.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kube/fake_kubelet_process.h"
#include "kube/kube_test_layouts.h"
#include "kube/pod_resources_client.h"

namespace gf {
namespace {

namespace fs = std::filesystem;

// A container of the synthetic node: its names, and the ids its cgroup and log names carry.
struct Container {
  std::string pod_namespace;
  std::string pod_name;
  std::string container;
  std::string pod_uid;
  std::string id;
};

// A distinct UID and container id for the n-th container (pods by `pod`, containers by `n`).
std::string Uid(int pod) {
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%08x-1111-4222-8333-%012x", pod, pod);
  return buffer;
}
std::string Id(int n) {
  char buffer[72];
  std::snprintf(buffer, sizeof buffer, "%064x", 0xc0ffee00 + n);
  return buffer;
}

// The kubelet's log names of `containers` under `root` (a node's /var/log).
void WriteLogNames(const fs::path& root, const std::vector<Container>& containers) {
  for (const Container& c : containers) {
    const fs::path pod = root / "pods" / (c.pod_namespace + "_" + c.pod_name + "_" + c.pod_uid);
    fs::create_directories(pod / c.container);
    std::ofstream(pod / c.container / "0.log") << "";
    fs::create_directories(root / "containers");
    fs::create_symlink(
        pod / c.container / "0.log",
        root / "containers" /
            (c.pod_name + "_" + c.pod_namespace + "_" + c.container + "-" + c.id + ".log"));
  }
}

// Every container of tests/fakekubelet/scenarios/node_8gpu.json, the device plugin's included.
std::vector<Container> Node8GpuContainers() {
  return {
      {"research", "llm-pretrain-0", "trainer", Uid(1), Id(1)},
      {"research", "llm-pretrain-0", "metrics-sidecar", Uid(1), Id(2)},
      {"research", "eval-7c5d8-x2k9q", "eval", Uid(2), Id(3)},
      {"serving", "chat-api-6b7f9d-4mz8p", "server", Uid(3), Id(4)},
      {"dev", "notebook-alice", "jupyter", Uid(4), Id(5)},
      {"dev", "notebook-bob", "jupyter", Uid(5), Id(6)},
      {"kube-system",
       "nvidia-device-plugin-daemonset-q7w2r",
       "nvidia-device-plugin-ctr",
       Uid(6),
       Id(7)},
  };
}

// #27's bar on the example node: every process in a pod's container, in every cgroup layout,
// v1 and v2, is attributed to its own pod and container with exactly the GPUs the kubelet says
// that container holds (real gRPC to the stand-in kubelet); none to another; processes outside
// pods to none.
TEST(KubeOwnerTest, EveryProcessOfTheExampleNodeIsItsContainersInEveryLayout) {
  testing::FakeKubeletProcess kubelet;
  std::ifstream in(std::string(GF_FAKEKUBELET_SCENARIOS_DIR) + "/node_8gpu.json");
  kubelet.WriteScenario(std::string(std::istreambuf_iterator<char>(in), {}));
  ASSERT_NO_FATAL_FAILURE(kubelet.Start());
  const auto holders = PodResourcesClient(kubelet.Socket()).List(std::chrono::seconds(5));
  ASSERT_TRUE(holders.ok()) << holders.error().ToString();

  const std::vector<Container> containers = Node8GpuContainers();
  const fs::path logs = kubelet.Dir() / "log";
  WriteLogNames(logs, containers);
  const auto index = ReadKubeLogIndex(logs);
  ASSERT_TRUE(index.ok()) << index.error().ToString();

  int attributed = 0;
  int with_gpus = 0;
  int processes = 0;
  for (const testing::CgroupLayout& layout : testing::kCgroupLayouts) {
    for (const Container& c : containers) {
      const std::string path = testing::CgroupPath(layout.path, c.pod_uid, c.id);
      for (const std::string& text : {testing::ProcCgroupV1(path), testing::ProcCgroupV2(path)}) {
        SCOPED_TRACE(std::string(layout.name) + ": " + c.pod_name + "/" + c.container);
        ++processes;
        std::vector<KubeGpu> expected_gpus;
        for (const KubeContainerGpus& holder : *holders) {
          if (holder.pod_namespace == c.pod_namespace && holder.pod_name == c.pod_name &&
              holder.container == c.container) {
            expected_gpus = holder.gpus;
          }
        }
        const auto owner = KubeOwnerOfProcess(text, *index, *holders);
        ASSERT_TRUE(owner);
        EXPECT_EQ(*owner,
                  (KubeProcessOwner{.pod_uid = c.pod_uid,
                                    .container_id = c.id,
                                    .pod_namespace = c.pod_namespace,
                                    .pod_name = c.pod_name,
                                    .container = c.container,
                                    .gpus = expected_gpus}));
        attributed += *owner == KubeProcessOwner{.pod_uid = c.pod_uid,
                                                 .container_id = c.id,
                                                 .pod_namespace = c.pod_namespace,
                                                 .pod_name = c.pod_name,
                                                 .container = c.container,
                                                 .gpus = expected_gpus};
        with_gpus += !owner->gpus.empty();
      }
    }
  }
  EXPECT_EQ(attributed, processes);  // 100 %, and so 0 misattributed
  // 5 containers hold GPUs (trainer, eval, server, two notebooks), in every layout and form.
  EXPECT_EQ(with_gpus, 5 * 2 * static_cast<int>(std::size(testing::kCgroupLayouts)));

  for (const std::string_view outside : {"0::/user.slice/user-1000.slice/session-3.scope\n",
                                         "0::/system.slice/containerd.service\n"}) {
    EXPECT_FALSE(KubeOwnerOfProcess(outside, *index, *holders)) << outside;
  }
}

TEST(KubeOwnerTest, AContainerWithoutALogLinkKeepsItsPodButGetsNoGpus) {
  // The pod folder is there, the link not (yet): the pod is named, the container is not, and
  // it is not given the GPUs of its pod's other container.
  const fs::path root = fs::temp_directory_path() / ("gf-kube-owner-" + std::to_string(getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "pods" / ("ml_train-0_" + Uid(9)));
  const auto index = ReadKubeLogIndex(root);
  fs::remove_all(root);
  ASSERT_TRUE(index.ok()) << index.error().ToString();
  const std::vector<KubeContainerGpus> holders = {
      {.pod_namespace = "ml",
       .pod_name = "train-0",
       .container = "trainer",
       .gpus = {{.resource = "nvidia.com/gpu", .device_id = "GPU-1", .gpu = "GPU-1"}}}};
  const auto owner =
      KubeOwnerOfProcess("0::/kubepods/pod" + Uid(9) + "/" + Id(1) + "\n", *index, holders);
  ASSERT_TRUE(owner);
  EXPECT_EQ(
      *owner,
      (KubeProcessOwner{
          .pod_uid = Uid(9), .container_id = Id(1), .pod_namespace = "ml", .pod_name = "train-0"}));
}

TEST(KubeOwnerTest, ALinkOfAnotherPodIsNotTaken) {
  KubeLogIndex index;
  index.pods_by_uid[Uid(1)] = {.pod_namespace = "ml", .pod_name = "a", .pod_uid = Uid(1)};
  index.containers_by_id[Id(1)] = {
      .pod_namespace = "ml", .pod_name = "b", .container = "main", .container_id = Id(1)};
  const auto owner =
      KubeOwnerOfProcess("0::/kubepods/pod" + Uid(1) + "/" + Id(1) + "\n", index, {});
  ASSERT_TRUE(owner);
  EXPECT_EQ(owner->pod_name, "a");
  EXPECT_EQ(owner->container, "");
}

TEST(KubeOwnerTest, TheLogIndexSkipsStrangersAndToleratesAMissingFolder) {
  const fs::path root = fs::temp_directory_path() / ("gf-kube-index-" + std::to_string(getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "pods" / "not-a-pod-folder");
  fs::create_directories(root / "pods" / ("ml_a_" + Uid(1)));
  // No containers folder at all.
  auto index = ReadKubeLogIndex(root);
  ASSERT_TRUE(index.ok()) << index.error().ToString();
  EXPECT_EQ(index->pods_by_uid.size(), 1U);
  EXPECT_TRUE(index->containers_by_id.empty());
  // A file where the folder should be: the node is broken, and the error says where.
  std::ofstream(root / "containers") << "";
  index = ReadKubeLogIndex(root);
  fs::remove_all(root);
  ASSERT_FALSE(index.ok());
  EXPECT_EQ(index.error().code, ErrorCode::kIo);
  EXPECT_NE(index.error().message.find("containers"), std::string::npos);
}

}  // namespace
}  // namespace gf

// PodResourcesClient against the stand-in kubelet (tests/fakekubelet): real gRPC over a real
// Unix socket, the fake started by each test and driven by its scenario file.
#include "kube/pod_resources_client.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "kube/fake_kubelet_process.h"

namespace gf {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

constexpr milliseconds kTimeout{5000};
constexpr std::string_view kGpu0 = "GPU-8c4bd2e7-1a5f-4c3e-9d7b-2f6a0e1b3c40";
constexpr std::string_view kGpu1 = "GPU-8c4bd2e7-1a5f-4c3e-9d7b-2f6a0e1b3c41";
constexpr std::string_view kGpu2 = "GPU-8c4bd2e7-1a5f-4c3e-9d7b-2f6a0e1b3c42";
constexpr std::string_view kMig = "MIG-5a6b7c8d-1a5f-4c3e-9d7b-2f6a0e1b3c43";

// A node with: a training pod whose trainer holds two GPUs and whose log sidecar holds none;
// an inference pod on a MIG device (mixed strategy) with an FPGA from another plugin; a pod on
// two replicas of a time-sliced GPU; a pod with no devices at all.
constexpr std::string_view kNode = R"({
  "pods": [
    {"namespace": "ml", "name": "train-0", "containers": [
      {"name": "trainer", "cpu_ids": [0, 1],
       "devices": [{"resource": "nvidia.com/gpu", "ids": ["GPU-8c4bd2e7-1a5f-4c3e-9d7b-2f6a0e1b3c40",
                                                          "GPU-8c4bd2e7-1a5f-4c3e-9d7b-2f6a0e1b3c41"],
                    "numa": 0}]},
      {"name": "logs"}]},
    {"namespace": "serving", "name": "infer-7d9f", "containers": [
      {"name": "server", "devices": [
        {"resource": "example.com/fpga", "ids": ["fpga-0"]},
        {"resource": "nvidia.com/mig-1g.10gb", "ids": ["MIG-5a6b7c8d-1a5f-4c3e-9d7b-2f6a0e1b3c43"]}]}]},
    {"namespace": "dev", "name": "notebook", "containers": [
      {"name": "jupyter", "devices": [{"resource": "nvidia.com/gpu.shared",
        "ids": ["GPU-8c4bd2e7-1a5f-4c3e-9d7b-2f6a0e1b3c42::0",
                "GPU-8c4bd2e7-1a5f-4c3e-9d7b-2f6a0e1b3c42::3"]}]}]},
    {"namespace": "kube-system", "name": "coredns-1", "containers": [{"name": "coredns"}]}
  ],
  "allocatable": [
    {"resource": "nvidia.com/gpu", "ids": ["GPU-8c4bd2e7-1a5f-4c3e-9d7b-2f6a0e1b3c40",
                                           "GPU-8c4bd2e7-1a5f-4c3e-9d7b-2f6a0e1b3c41"]},
    {"resource": "example.com/fpga", "ids": ["fpga-0"]}
  ]
})";

KubeGpu Gpu(std::string_view resource, std::string_view id, std::string_view gpu) {
  return KubeGpu{
      .resource = std::string(resource), .device_id = std::string(id), .gpu = std::string(gpu)};
}

std::vector<KubeContainerGpus> NodeGpus() {
  return {
      {.pod_namespace = "ml",
       .pod_name = "train-0",
       .container = "trainer",
       .gpus = {Gpu("nvidia.com/gpu", kGpu0, kGpu0), Gpu("nvidia.com/gpu", kGpu1, kGpu1)}},
      {.pod_namespace = "serving",
       .pod_name = "infer-7d9f",
       .container = "server",
       .gpus = {Gpu("nvidia.com/mig-1g.10gb", kMig, kMig)}},
      {.pod_namespace = "dev",
       .pod_name = "notebook",
       .container = "jupyter",
       .gpus = {Gpu("nvidia.com/gpu.shared", std::string(kGpu2) + "::0", kGpu2),
                Gpu("nvidia.com/gpu.shared", std::string(kGpu2) + "::3", kGpu2)}},
  };
}

// The fake kubelet of each test, and the paths tests use directly.
class PodResourcesClientTest : public ::testing::Test {
 protected:
  void WriteScenario(std::string_view text) { kubelet_.WriteScenario(text); }
  void Start() { ASSERT_NO_FATAL_FAILURE(kubelet_.Start()); }
  void Stop() { kubelet_.Stop(); }

  testing::FakeKubeletProcess kubelet_;
  const std::string socket_ = kubelet_.Socket();
};

TEST_F(PodResourcesClientTest, ListsTheNvidiaGpusOfEachContainer) {
  WriteScenario(kNode);
  Start();
  PodResourcesClient client(socket_);
  const auto listed = client.List(kTimeout);
  ASSERT_TRUE(listed.ok()) << listed.error().ToString();
  EXPECT_EQ(*listed, NodeGpus());
}

TEST_F(PodResourcesClientTest, SeesWhatTheKubeletSaysNow) {
  WriteScenario(kNode);
  Start();
  PodResourcesClient client(socket_);
  ASSERT_TRUE(client.List(kTimeout).ok());
  // The training pod ended; a new one holds GPU 0.
  WriteScenario(R"({"pods": [{"namespace": "ml", "name": "train-1", "containers": [
      {"name": "trainer", "devices": [{"resource": "nvidia.com/gpu",
                                       "ids": ["GPU-8c4bd2e7-1a5f-4c3e-9d7b-2f6a0e1b3c40"]}]}]}]})");
  const auto listed = client.List(kTimeout);
  ASSERT_TRUE(listed.ok()) << listed.error().ToString();
  ASSERT_EQ(listed->size(), 1U);
  EXPECT_EQ((*listed)[0].pod_name, "train-1");
  EXPECT_EQ((*listed)[0].gpus, std::vector<KubeGpu>{Gpu("nvidia.com/gpu", kGpu0, kGpu0)});
}

TEST_F(PodResourcesClientTest, GetsOnePod) {
  WriteScenario(kNode);
  Start();
  PodResourcesClient client(socket_);
  const auto pod = client.Get("serving", "infer-7d9f", kTimeout);
  ASSERT_TRUE(pod.ok()) << pod.error().ToString();
  EXPECT_EQ(*pod, std::vector<KubeContainerGpus>{NodeGpus()[1]});

  const auto none = client.Get("serving", "gone", kTimeout);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, ErrorCode::kNotFound);
  // A pod that is not there does not break the connection for the next call.
  EXPECT_TRUE(client.Get("ml", "train-0", kTimeout).ok());
}

TEST_F(PodResourcesClientTest, AllocatableGpusAreTheNvidiaOnes) {
  WriteScenario(kNode);
  Start();
  PodResourcesClient client(socket_);
  const auto gpus = client.AllocatableGpus(kTimeout);
  ASSERT_TRUE(gpus.ok()) << gpus.error().ToString();
  EXPECT_EQ(*gpus,
            (std::vector<KubeGpu>{Gpu("nvidia.com/gpu", kGpu0, kGpu0),
                                  Gpu("nvidia.com/gpu", kGpu1, kGpu1)}));
}

TEST_F(PodResourcesClientTest, AKubeletWithoutTheCallSaysWhatIsMissing) {
  WriteScenario(R"({"unimplemented": ["Get"]})");
  Start();
  PodResourcesClient client(socket_);
  EXPECT_TRUE(client.List(kTimeout).ok());
  const auto got = client.Get("ml", "train-0", kTimeout);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(got.error().message.find(socket_), std::string::npos) << got.error().message;
  EXPECT_NE(got.error().message.find("KubeletPodResourcesGet"), std::string::npos);
}

TEST_F(PodResourcesClientTest, ARateLimitedCallSaysToPollLessOften) {
  WriteScenario(R"({"rate_limited": ["List"]})");
  Start();
  PodResourcesClient client(socket_);
  const auto listed = client.List(kTimeout);
  ASSERT_FALSE(listed.ok());
  EXPECT_EQ(listed.error().code, ErrorCode::kResourceExhausted);
  EXPECT_NE(listed.error().message.find("less often"), std::string::npos) << listed.error().message;
  EXPECT_TRUE(client.AllocatableGpus(kTimeout).ok());
}

TEST_F(PodResourcesClientTest, ASlowKubeletTimesOut) {
  WriteScenario(R"({"delay_ms": 1000})");
  Start();
  PodResourcesClient client(socket_);
  const auto listed = client.List(milliseconds(200));
  ASSERT_FALSE(listed.ok());
  EXPECT_EQ(listed.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(listed.error().message.find("within 200 ms"), std::string::npos)
      << listed.error().message;
}

TEST_F(PodResourcesClientTest, ABrokenAnswerIsAnError) {
  WriteScenario("{ not json");
  Start();
  PodResourcesClient client(socket_);
  const auto listed = client.List(kTimeout);
  ASSERT_FALSE(listed.ok());
  EXPECT_EQ(listed.error().code, ErrorCode::kInternal);
  EXPECT_NE(listed.error().message.find("broken scenario"), std::string::npos)
      << listed.error().message;
}

TEST_F(PodResourcesClientTest, NoSocketNamesThePathAndTheMount) {
  PodResourcesClient client(socket_);
  const auto listed = client.List(kTimeout);
  ASSERT_FALSE(listed.ok());
  EXPECT_EQ(listed.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(listed.error().message.find(socket_), std::string::npos) << listed.error().message;
  EXPECT_NE(listed.error().message.find("hostPath"), std::string::npos);
}

TEST_F(PodResourcesClientTest, AFileThatIsNotASocketIsNamed) {
  std::ofstream(socket_) << "x";
  PodResourcesClient client(socket_);
  const auto listed = client.List(kTimeout);
  ASSERT_FALSE(listed.ok());
  EXPECT_EQ(listed.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(listed.error().message.find("not a socket"), std::string::npos);
}

TEST_F(PodResourcesClientTest, ASocketNobodyListensOnIsUnavailable) {
  // What a kubelet that died leaves behind: the socket file, bound once, with no listener.
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  socket_.copy(address.sun_path, sizeof(address.sun_path) - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ::close(fd);
  PodResourcesClient client(socket_);
  const auto listed = client.List(kTimeout);
  ASSERT_FALSE(listed.ok());
  EXPECT_EQ(listed.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(listed.error().message.find("is the kubelet running"), std::string::npos)
      << listed.error().message;
}

TEST_F(PodResourcesClientTest, AKubeletThatRestartsIsSeenAtTheNextCall) {
  WriteScenario(kNode);
  Start();
  PodResourcesClient client(socket_);
  ASSERT_TRUE(client.List(kTimeout).ok());
  // Restarted between two calls: the next call connects to the new socket.
  Stop();
  Start();
  auto listed = client.List(kTimeout);
  ASSERT_TRUE(listed.ok()) << listed.error().ToString();
  // Down during a call, then back: no wait for gRPC's reconnect backoff either.
  Stop();
  EXPECT_EQ(client.List(kTimeout).error().code, ErrorCode::kUnavailable);
  Start();
  listed = client.List(kTimeout);
  ASSERT_TRUE(listed.ok()) << listed.error().ToString();
  EXPECT_EQ(listed->size(), 3U);
}

// The example scenarios of tests/fakekubelet: each is served, and every GPU a container holds
// is one the node offers, so the examples stay valid and consistent.
TEST_F(PodResourcesClientTest, TheExampleScenariosAreConsistent) {
  int files = 0;
  for (const auto& entry : fs::directory_iterator(GF_FAKEKUBELET_SCENARIOS_DIR)) {
    SCOPED_TRACE(entry.path().string());
    std::ifstream in(entry.path());
    WriteScenario(std::string(std::istreambuf_iterator<char>(in), {}));
    Start();
    PodResourcesClient client(socket_);
    const auto listed = client.List(kTimeout);
    const auto offered = client.AllocatableGpus(kTimeout);
    ASSERT_TRUE(listed.ok()) << listed.error().ToString();
    ASSERT_TRUE(offered.ok()) << offered.error().ToString();
    EXPECT_FALSE(listed->empty());
    for (const KubeContainerGpus& container : *listed) {
      for (const KubeGpu& gpu : container.gpus) {
        EXPECT_NE(std::find(offered->begin(), offered->end(), gpu), offered->end())
            << container.pod_name << " holds " << gpu.device_id << ", which is not offered";
      }
    }
    Stop();
    ++files;
  }
  EXPECT_GT(files, 0);
}

TEST_F(PodResourcesClientTest, ASocketThisUserMayNotUseIsPermissionDenied) {
  if (::geteuid() == 0) {
    GTEST_SKIP() << "root may connect to any socket";
  }
  WriteScenario(kNode);
  Start();
  ASSERT_EQ(::chmod(socket_.c_str(), 0), 0);
  PodResourcesClient client(socket_);
  const auto listed = client.List(kTimeout);
  ASSERT_FALSE(listed.ok());
  EXPECT_EQ(listed.error().code, ErrorCode::kPermissionDenied);
  EXPECT_NE(listed.error().message.find("root"), std::string::npos);
}

}  // namespace
}  // namespace gf

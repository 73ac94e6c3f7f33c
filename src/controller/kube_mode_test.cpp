// Kubernetes mode (issue #27): a real Controller fed the pods its agent reports (OnPods). A pod
// is a job under the id of its UID, on the GPUs its containers hold, with its namespace as team;
// it ends when its node's report no longer lists it, and only then; nothing is submitted,
// cancelled or killed here; the idle reaper warns and notifies but reaps nothing; an agent of
// another kind drains its node with the fix.
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "controller/controller_fixture.h"

namespace gf {
namespace {

using std::chrono::seconds;

constexpr const char* kTrainUid = "0f2c9a4e-1b7d-4c3a-9e8f-5a6b7c8d9e01";
constexpr const char* kNotebookUid = "00000000-002a-4000-8000-0000000000aa";
const JobId kTrain(0x0f2c9a4e1b7d);
const JobId kNotebook(0x2a);

KubePod Train() {
  return KubePod{.uid = kTrainUid,
                 .pod_namespace = "research",
                 .name = "train-0",
                 .containers = {{.name = "trainer", .gpus = {GpuUuid("GPU-0"), GpuUuid("GPU-1")}}}};
}

KubePod Notebook() {
  return KubePod{.uid = kNotebookUid,
                 .pod_namespace = "dev",
                 .name = "notebook-alice",
                 .containers = {{.name = "jupyter", .gpus = {GpuUuid("GPU-2")}},
                                {.name = "sidecar", .gpus = {GpuUuid("GPU-9")}}}};  // not here
}

// Class kubernetes: warned after 10 s idle, 5 s grace.
PolicyConfig KubePolicy() {
  PolicyConfig policy;
  PriorityClassPolicy cls;
  cls.name = "kubernetes";
  cls.idle = IdleRule{.after = seconds(10),
                      .interactive_after = seconds(10),
                      .grace = seconds(5),
                      .util_below_pct = 5,
                      .action = IdleAction::kRequeue};
  policy.classes.push_back(cls);
  return policy;
}

class KubeModeTest : public ControllerFixture {
 protected:
  KubeModeTest() {
    kubernetes_ = true;
    policy_ = KubePolicy();
  }

  bool StateIs(JobId id, JobState state) {
    const Result<Job> job = controller_->GetJob(root_, id);
    return job.ok() && job->state == state;
  }
  std::string History(JobId id) { return EventHistory(*controller_, root_, id); }
  bool HasEvent(JobId id, const std::string& kind) {
    return History(id).find(kind + ": ") != std::string::npos;
  }
  // A sample of GPU `gpu` now, with `pids` of `job` on it, then the clock a second on.
  void Sample(int gpu, std::optional<JobId> job, int util, int pids = 1) {
    GpuSample s;
    s.uuid = GpuUuid("GPU-" + std::to_string(gpu));
    s.time = clock_.Now();
    s.memory_total_mib = 81920;
    s.memory_used_mib = 1000;
    s.util_gpu_pct = util;
    for (int i = 0; i < pids; ++i) {
      s.processes.push_back(GpuProcessSample{
          .pid = static_cast<std::uint32_t>(700 + i), .used_memory_mib = 1000, .job = job});
    }
    controller_->OnSamples(NodeId("gpu01"), {s});
    clock_.Advance(seconds(1));
  }
  static void Settle() { std::this_thread::sleep_for(std::chrono::milliseconds(50)); }
};

TEST_F(KubeModeTest, APodIsAJobOnTheGpusItsContainersHold) {
  controller_->OnPods(NodeId("gpu01"), {Train(), Notebook()});
  ASSERT_TRUE(WaitFor([&] { return StateIs(kTrain, JobState::kRunning); }));
  ASSERT_TRUE(WaitFor([&] { return StateIs(kNotebook, JobState::kRunning); }));
  const Job train = Get(kTrain);
  EXPECT_EQ(train.spec.team, "research");
  EXPECT_EQ(train.spec.name, "train-0");
  EXPECT_EQ(train.spec.priority.name, "kubernetes");
  EXPECT_EQ(KubePodOfJobEnv(train.spec.env), Train());
  ASSERT_TRUE(train.allocation);
  EXPECT_EQ(train.allocation->node, NodeId("gpu01"));
  EXPECT_EQ(train.allocation->gpus, (std::vector<GpuUuid>{GpuUuid("GPU-0"), GpuUuid("GPU-1")}));
  // Only the GPUs the node has: GPU-9 is in no agent's inventory.
  EXPECT_EQ(Get(kNotebook).allocation->gpus, std::vector<GpuUuid>{GpuUuid("GPU-2")});
  // The /metrics labels travel with the GPU's assignment.
  ASSERT_TRUE(WaitFor([&] {
    const std::optional<GpuView> gpu = telemetry_->Find(GpuUuid("GPU-1"));
    return gpu && !gpu->assignments.empty();
  }));
  const GpuAssignment a = telemetry_->Find(GpuUuid("GPU-1"))->assignments[0];
  EXPECT_EQ(a.job, kTrain);
  EXPECT_EQ(a.pod_namespace, "research");
  EXPECT_EQ(a.pod, "train-0");
  EXPECT_EQ(a.container, "trainer");
  EXPECT_EQ(a.team, "research");
}

// What the API server says of a pod names its job's user (the service account, as Kubernetes
// names it) and workload, also when it comes after the node's report; it is stored with the job.
TEST_F(KubeModeTest, TheApiServerNamesAPodsServiceAccountAndWorkload) {
  auto facts = std::make_shared<std::map<std::string, KubePodFacts, std::less<>>>();
  auto mu = std::make_shared<std::mutex>();
  kube_pod_facts_ = [facts, mu](std::string_view uid) -> std::optional<KubePodFacts> {
    const std::lock_guard lock(*mu);
    const auto it = facts->find(uid);
    return it == facts->end() ? std::nullopt : std::optional(it->second);
  };
  Boot();
  const auto env = [&](JobId id, const std::string& key) {
    for (const auto& [name, value] : Get(id).spec.env) {
      if (name == key) {
        return value;
      }
    }
    return std::string("(none)");
  };
  controller_->OnPods(NodeId("gpu01"), {Train()});
  ASSERT_TRUE(WaitFor([&] { return StateIs(kTrain, JobState::kRunning); }));
  EXPECT_EQ(Get(kTrain).owner.user, "research");  // not known to the API server yet
  EXPECT_EQ(env(kTrain, "POD_WORKLOAD"), "(none)");
  {
    const std::lock_guard lock(*mu);
    (*facts)[kTrainUid] = KubePodFacts{.pod = KubeApiPod{.uid = kTrainUid,
                                                         .pod_namespace = "research",
                                                         .name = "train-0",
                                                         .service_account = "trainer"},
                                       .workload = KubeWorkload{.kind = "Job", .name = "train"}};
  }
  controller_->OnPods(NodeId("gpu01"), {Train()});  // the node's next report
  ASSERT_TRUE(
      WaitFor([&] { return Get(kTrain).owner.user == "system:serviceaccount:research:trainer"; }));
  EXPECT_EQ(env(kTrain, "POD_WORKLOAD"), "Job/train");
  EXPECT_EQ(env(kTrain, "POD_SERVICE_ACCOUNT"), "trainer");
  EXPECT_EQ(KubePodOfJobEnv(Get(kTrain).spec.env), Train());  // the node's facts stay
  // Stored: a restarted server reads them back before any report or API answer.
  kube_pod_facts_ = nullptr;
  Boot({kTrain});
  EXPECT_EQ(Get(kTrain).owner.user, "system:serviceaccount:research:trainer");
  EXPECT_EQ(env(kTrain, "POD_WORKLOAD"), "Job/train");
}

TEST_F(KubeModeTest, APodEndsOnlyWhenItsNodesReportNoLongerListsIt) {
  controller_->OnPods(NodeId("gpu01"), {Train(), Notebook()});
  ASSERT_TRUE(WaitFor([&] { return StateIs(kNotebook, JobState::kRunning); }));
  // The same report again changes nothing; a silent agent (no report, node down) ends nothing.
  controller_->OnPods(NodeId("gpu01"), {Train(), Notebook()});
  clock_.Advance(seconds(120));
  Settle();
  EXPECT_TRUE(StateIs(kTrain, JobState::kRunning));
  EXPECT_TRUE(StateIs(kNotebook, JobState::kRunning));
  // A report without the notebook ends it, and only it.
  controller_->OnPods(NodeId("gpu01"), {Train()});
  ASSERT_TRUE(WaitFor([&] { return StateIs(kNotebook, JobState::kCompleted); }));
  EXPECT_NE(History(kNotebook).find("no longer on gpu01"), std::string::npos) << History(kNotebook);
  EXPECT_TRUE(StateIs(kTrain, JobState::kRunning));
  EXPECT_TRUE(telemetry_->Find(GpuUuid("GPU-2"))->assignments.empty());
}

TEST_F(KubeModeTest, NothingIsSubmittedCancelledOrKilledHere) {
  JobSpec spec;
  spec.argv = {"true"};
  spec.workdir = "/tmp";
  const Result<Job> submitted = controller_->Submit(alice_, spec);
  ASSERT_FALSE(submitted.ok());
  EXPECT_NE(submitted.error().message.find("follows Kubernetes (--kubernetes): create pods with "
                                           "kubectl"),
            std::string::npos)
      << submitted.error().message;

  controller_->OnPods(NodeId("gpu01"), {Train()});
  ASSERT_TRUE(WaitFor([&] { return StateIs(kTrain, JobState::kRunning); }));
  const Result<Job> cancelled = controller_->CancelJob(root_, kTrain);
  ASSERT_FALSE(cancelled.ok());
  EXPECT_NE(cancelled.error().message.find("kubectl delete pod -n research train-0"),
            std::string::npos)
      << cancelled.error().message;
  // A requeue asks for a stop: it is dropped, with an event, and no agent is told to kill.
  ASSERT_TRUE(controller_->RequeueJob(root_, kTrain).ok());
  ASSERT_TRUE(WaitFor([&] { return HasEvent(kTrain, "kill_dropped"); })) << History(kTrain);
  EXPECT_TRUE(agent_->killed().empty());
}

TEST_F(KubeModeTest, TheIdleReaperWarnsAnIdlePodButStopsNothing) {
  controller_->OnPods(NodeId("gpu01"), {Notebook()});
  ASSERT_TRUE(WaitFor([&] { return StateIs(kNotebook, JobState::kRunning); }));
  for (int s = 0; s < 12; ++s) {
    Sample(2, kNotebook, /*util=*/0);
  }
  ASSERT_TRUE(WaitFor([&] { return HasEvent(kNotebook, "idle_warning"); })) << History(kNotebook);
  EXPECT_NE(History(kNotebook).find("gpufleet stops no Kubernetes pod"), std::string::npos)
      << History(kNotebook);
  // Well past the grace: still running, warned once, never reaped.
  for (int s = 0; s < 20; ++s) {
    Sample(2, kNotebook, /*util=*/0);
  }
  Settle();
  EXPECT_TRUE(StateIs(kNotebook, JobState::kRunning));
  EXPECT_FALSE(HasEvent(kNotebook, "idle_reap")) << History(kNotebook);
  const std::string history = History(kNotebook);
  EXPECT_EQ(history.find("idle_warning: "), history.rfind("idle_warning: ")) << history;
  EXPECT_TRUE(agent_->killed().empty());
}

// An agent without --kubernetes under a Kubernetes server would call every pod's process
// unmanaged, and a Slurm one would follow the wrong scheduler: the node is drained with the fix,
// and the drain lifted when a --kubernetes agent says hello.
TEST_F(KubeModeTest, AnAgentOfAnotherKindDrainsItsNode) {
  auto node = [&] {
    return (*controller_->ListNodes(root_))[0];
  };
  controller_->OnAgentHello(AgentHello{TestNode(gpus_), {}, {}});
  ASSERT_TRUE(WaitFor([&] { return node().state == NodeState::kDrained; }));
  EXPECT_EQ(node().state_reason,
            "its agent runs without --kubernetes but this server follows Kubernetes "
            "(--kubernetes): start the agent with --kubernetes, as a DaemonSet beside the kubelet");
  AgentHello slurm{TestNode(gpus_), {}, {}};
  slurm.jobs_from = "slurm";
  controller_->OnAgentHello(slurm);
  ASSERT_TRUE(WaitFor([&] {
    return node().state_reason.starts_with(
        "its agent runs beside Slurm (--slurm) but this server "
        "follows Kubernetes");
  })) << node().state_reason;
  AgentHello kube{TestNode(gpus_), {}, {}};
  kube.jobs_from = "kubernetes";
  controller_->OnAgentHello(kube);
  ASSERT_TRUE(WaitFor([&] { return node().state == NodeState::kUp; })) << node().state_reason;
}

}  // namespace
}  // namespace gf

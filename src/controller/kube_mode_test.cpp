// Kubernetes mode (issue #27): a real Controller fed the pods its agent reports (OnPods). A pod
// is a job under the id of its UID, on the GPUs its containers hold, with its namespace as team;
// it ends when its node's report no longer lists it, and only then; nothing is submitted,
// cancelled or killed here; the idle reaper warns and notifies, and stops a pod (through the API
// server) only where an admin opted in; an agent of another kind drains its node with the fix.
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

// A pod that holds a MIG device (pod-resources names it by its own UUID) runs on that device:
// its share of the GPU counted as gpufleet's own MIG jobs count it, its profile its request's.
TEST_F(KubeModeTest, APodOnAMigDeviceHoldsItsShareOfTheGpu) {
  Node node = TestNode(4);
  Gpu& gpu = node.gpus[3];
  gpu.mig_enabled = true;
  gpu.mig_profiles = {"1g.10gb", "3g.40gb", "7g.80gb"};
  gpu.mig_instances = {MigInstance{.profile = "3g.40gb",
                                   .uuid = GpuUuid("MIG-3a"),
                                   .gpu_instance_id = 1,
                                   .compute_instance_id = 0,
                                   .slices = 3,
                                   .memory_mib = 40960},
                       MigInstance{.profile = "1g.10gb",
                                   .uuid = GpuUuid("MIG-1b"),
                                   .gpu_instance_id = 9,
                                   .compute_instance_id = 0,
                                   .slices = 1,
                                   .memory_mib = 9856}};
  const GpuUuid parent = gpu.uuid;
  AgentHello hello{node, {}, {}};
  hello.jobs_from = "kubernetes";
  controller_->OnAgentHello(std::move(hello));
  KubePod pod = Notebook();
  pod.containers = {{.name = "jupyter", .gpus = {GpuUuid("MIG-3a")}}};
  controller_->OnPods(NodeId("gpu01"), {pod});
  ASSERT_TRUE(WaitFor([&] { return StateIs(kNotebook, JobState::kRunning); }));
  const Job job = Get(kNotebook);
  ASSERT_TRUE(job.allocation.has_value());
  EXPECT_EQ(job.allocation->gpus, std::vector<GpuUuid>{parent});
  EXPECT_EQ(job.allocation->mig, GpuUuid("MIG-3a"));
  EXPECT_EQ(job.allocation->gpu_milli, 428);  // 3 of the GPU's 7 slices
  EXPECT_EQ(job.allocation->gpu_memory_mib, 40960);
  EXPECT_EQ(job.spec.request.mig_profile, "3g.40gb");
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
  EXPECT_NE(History(kNotebook).find("reported only: gpufleet stops a pod only where idle_action"),
            std::string::npos)
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

// The stops the controller asked of the API server, answered with `answer`.
struct StopRecorder {
  std::mutex mu;
  std::vector<KubePodStop> stops;
  Status answer = OkStatus();
  std::vector<KubePodStop> Stops() {
    const std::lock_guard lock(mu);
    return stops;
  }
};

class KubeReapingTest : public KubeModeTest {
 protected:
  // `dev` opted in with `action`: its idle pods are stopped; other namespaces' only warned.
  void OptIn(IdleAction action) {
    TeamPolicy dev;
    dev.name = "dev";
    dev.idle.action = action;
    policy_.teams.push_back(dev);
    kube_stop_pod_ = [stops = stops_](KubePodStop stop, const std::function<void(Status)>& done) {
      Status answer = OkStatus();
      {
        const std::lock_guard lock(stops->mu);
        stops->stops.push_back(std::move(stop));
        answer = stops->answer;
      }
      done(std::move(answer));
    };
    Boot();
  }
  // `rounds` of samples (three seconds each) with GPU 2 (the notebook's) and GPUs 0 and 1
  // (train's) idle.
  void Idle(int rounds) {
    for (int s = 0; s < rounds; ++s) {
      Sample(2, kNotebook, /*util=*/0);
      Sample(0, kTrain, /*util=*/0);
      Sample(1, kTrain, /*util=*/0);
    }
  }
  std::shared_ptr<StopRecorder> stops_ = std::make_shared<StopRecorder>();
};

// idle_action delete_pod in [team.dev]: dev's idle pod is deleted after its warning's grace, and
// its job ends CANCELLED, with the reaper's cause, when its node no longer lists the pod. The
// research namespace did not opt in: its idle pod is warned, never stopped.
TEST_F(KubeReapingTest, AnIdlePodIsDeletedOnlyWhereItsNamespaceOptedIn) {
  OptIn(IdleAction::kDeletePod);
  controller_->OnPods(NodeId("gpu01"), {Train(), Notebook()});
  ASSERT_TRUE(WaitFor([&] { return StateIs(kNotebook, JobState::kRunning); }));
  Idle(4);  // 12 s: past the threshold (10 s), before the grace's end (5 s later)
  ASSERT_TRUE(WaitFor([&] { return HasEvent(kNotebook, "idle_warning"); })) << History(kNotebook);
  EXPECT_NE(History(kNotebook).find("pod dev/notebook-alice deleted in 5s unless they are used"),
            std::string::npos)
      << History(kNotebook);
  EXPECT_TRUE(stops_->Stops().empty());
  Idle(3);
  ASSERT_TRUE(WaitFor([&] { return HasEvent(kNotebook, "pod_stop"); })) << History(kNotebook);
  ASSERT_EQ(stops_->Stops().size(), 1U);
  EXPECT_EQ(stops_->Stops()[0],
            (KubePodStop{.pod_namespace = "dev",
                         .name = "notebook-alice",
                         .uid = kNotebookUid,
                         .scale_owner = false}));
  EXPECT_NE(History(kNotebook).find("delete pod dev/notebook-alice (idle_action delete_pod)"),
            std::string::npos)
      << History(kNotebook);
  // Running until Kubernetes has removed it: the next report without it ends the job.
  EXPECT_TRUE(StateIs(kNotebook, JobState::kRunning));
  controller_->OnPods(NodeId("gpu01"), {Train()});
  ASSERT_TRUE(WaitFor([&] { return StateIs(kNotebook, JobState::kCancelled); }))
      << History(kNotebook);
  EXPECT_TRUE(Get(kNotebook).reason.starts_with("idle reaping: GPU 2 on gpu01 idle for"))
      << Get(kNotebook).reason;
  // research/train-0 was warned and stays, stopped by nothing.
  EXPECT_TRUE(HasEvent(kTrain, "idle_warning")) << History(kTrain);
  EXPECT_NE(History(kTrain).find("reported only: gpufleet stops a pod only where idle_action is"),
            std::string::npos)
      << History(kTrain);
  EXPECT_TRUE(StateIs(kTrain, JobState::kRunning));
  EXPECT_EQ(stops_->Stops().size(), 1U);
  EXPECT_TRUE(agent_->killed().empty());
}

// scale_owner: the pod's Deployment (as the API server names it) is scaled to 0.
TEST_F(KubeReapingTest, ScaleOwnerScalesThePodsDeployment) {
  kube_pod_facts_ = [](std::string_view uid) -> std::optional<KubePodFacts> {
    if (uid != kNotebookUid) {
      return std::nullopt;
    }
    return KubePodFacts{.pod = KubeApiPod{.uid = kNotebookUid,
                                          .pod_namespace = "dev",
                                          .name = "notebook-alice",
                                          .service_account = "alice"},
                        .workload = KubeWorkload{.kind = "Deployment", .name = "notebooks"}};
  };
  OptIn(IdleAction::kScaleOwner);
  controller_->OnPods(NodeId("gpu01"), {Notebook()});
  ASSERT_TRUE(WaitFor([&] { return StateIs(kNotebook, JobState::kRunning); }));
  for (int round = 0; round < 20 && !HasEvent(kNotebook, "pod_stop"); ++round) {
    Idle(1);
    Settle();
  }
  ASSERT_TRUE(HasEvent(kNotebook, "pod_stop")) << History(kNotebook);
  ASSERT_EQ(stops_->Stops().size(), 1U);
  EXPECT_EQ(stops_->Stops()[0].workload, "Deployment/notebooks");
  EXPECT_TRUE(stops_->Stops()[0].scale_owner);
  const std::string history = History(kNotebook);
  EXPECT_NE(history.find("Deployment/notebooks (namespace dev) scaled to 0 replicas in 5s"),
            std::string::npos)
      << history;
  EXPECT_NE(history.find("scale Deployment/notebooks (namespace dev) to 0 replicas (idle_action "
                         "scale_owner)"),
            std::string::npos)
      << history;
}

// The API server refuses (RBAC not granted): the failure is on the job, which is not being
// stopped any more, and the reaper tries again after a new warning and grace.
TEST_F(KubeReapingTest, AFailedStopIsKeptAndThePodJudgedAfresh) {
  stops_->answer = PermissionDenied("could not delete pod dev/notebook-alice: forbidden");
  OptIn(IdleAction::kDeletePod);
  controller_->OnPods(NodeId("gpu01"), {Notebook()});
  ASSERT_TRUE(WaitFor([&] { return StateIs(kNotebook, JobState::kRunning); }));
  Idle(4);
  ASSERT_TRUE(WaitFor([&] { return HasEvent(kNotebook, "idle_warning"); })) << History(kNotebook);
  Idle(3);
  ASSERT_TRUE(WaitFor([&] { return HasEvent(kNotebook, "pod_stop_failed"); }))
      << History(kNotebook);
  // The clock stands still: nothing is judged again until it moves.
  Settle();
  EXPECT_EQ(Get(kNotebook).reason,
            "idle reaping failed: could not delete pod dev/notebook-alice: forbidden");
  // Warned again at once (idle all along), stopped again after a new grace.
  for (int round = 0; round < 20 && stops_->Stops().size() < 2; ++round) {
    Idle(1);
    Settle();
  }
  ASSERT_EQ(stops_->Stops().size(), 2U) << History(kNotebook);
  const std::string history = History(kNotebook);
  EXPECT_NE(history.find("idle_warning: "), history.rfind("idle_warning: ")) << history;
  EXPECT_TRUE(StateIs(kNotebook, JobState::kRunning));
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

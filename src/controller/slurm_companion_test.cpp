// Companion mode (issue #23): a real Controller following a stand-in Slurm through a real
// SlurmLink. Slurm's jobs appear under their ids on the GPUs of their indices, with user, account
// and partition; they start, requeue and end as Slurm says; a stop gpufleet decides goes to Slurm
// (scancel / scontrol requeue) and the job ends as meant once Slurm shows it ended; nothing is
// submitted or scheduled here, and an agent's hello loses no Slurm job.
#include <mutex>

#include <gtest/gtest.h>

#include "controller/controller_fixture.h"
#include "controller/slurm_link.h"

namespace gf {
namespace {

// Slurm as a list the test edits; the actions asked of it, in order.
class FakeSlurm final : public SlurmControl {
 public:
  struct State {
    std::mutex mu;
    std::vector<SlurmJob> jobs;
    std::vector<std::string> actions;
  };
  explicit FakeSlurm(State& state) : s_(state) {}
  Result<std::vector<SlurmJob>> Jobs() override {
    std::lock_guard<std::mutex> lock(s_.mu);
    return s_.jobs;
  }
  Status Cancel(std::int64_t job) override { return Note("cancel " + std::to_string(job)); }
  Status Requeue(std::int64_t job) override { return Note("requeue " + std::to_string(job)); }
  Status DrainNode(const std::string& node, const std::string& reason) override {
    return Note("drain " + node + " " + reason);
  }
  Status ResumeNode(const std::string& node) override { return Note("resume " + node); }

 private:
  Status Note(std::string action) {
    std::lock_guard<std::mutex> lock(s_.mu);
    s_.actions.push_back(std::move(action));
    return OkStatus();
  }
  State& s_;
};

SlurmJob Running(std::int64_t id, std::vector<int> gpus) {
  return SlurmJob{.id = id,
                  .name = "train",
                  .user = "alice",
                  .uid = 1000,
                  .account = "physics",
                  .partition = "gpu",
                  .state = "RUNNING",
                  .time_limit = std::chrono::seconds(3600),
                  .submit_time = FromUnixMillis(1'699'999'000'000),
                  .start_time = FromUnixMillis(1'699'999'500'000),
                  .work_dir = "/home/alice",
                  .gpus = {SlurmNodeGpus{.node = "gpu01", .gpu_indices = std::move(gpus)}},
                  .nodes = {"gpu01"}};
}

AgentHello SlurmHello(Node node) {
  AgentHello hello{std::move(node), {}, {}};
  hello.jobs_from = "slurm";
  return hello;
}

class SlurmCompanionTest : public ControllerFixture {
 protected:
  void SetUp() override {
    link_ = std::make_unique<SlurmLink>(std::make_unique<FakeSlurm>(state_), Millis(10));
    slurm_ = link_.get();
    ControllerFixture::SetUp();
    link_->Start([this](std::vector<SlurmJob> jobs) { controller_->OnSlurmJobs(std::move(jobs)); });
  }
  void TearDown() override {
    link_->Stop();
    ControllerFixture::TearDown();
  }

  void SetJobs(std::vector<SlurmJob> jobs) {
    std::lock_guard<std::mutex> lock(state_.mu);
    state_.jobs = std::move(jobs);
  }
  bool Asked(const std::string& action) {
    std::lock_guard<std::mutex> lock(state_.mu);
    return std::find(state_.actions.begin(), state_.actions.end(), action) != state_.actions.end();
  }
  bool AskedStartingWith(const std::string& prefix) {
    std::lock_guard<std::mutex> lock(state_.mu);
    return std::any_of(state_.actions.begin(), state_.actions.end(), [&](const std::string& a) {
      return a.starts_with(prefix);
    });
  }
  bool StateIs(std::int64_t id, JobState state) {
    const auto job = controller_->GetJob(root_, JobId(id));
    return job.ok() && job->state == state;
  }

  FakeSlurm::State state_;
  std::unique_ptr<SlurmLink> link_;
};

TEST_F(SlurmCompanionTest, ARunningSlurmJobIsShownOnItsGpus) {
  SetJobs({Running(7, {1, 2})});
  ASSERT_TRUE(WaitFor([&] { return StateIs(7, JobState::kRunning); }));
  const Job job = Get(JobId(7));
  EXPECT_EQ(job.owner.user, "alice");
  EXPECT_EQ(job.owner.uid, 1000U);
  EXPECT_EQ(job.spec.team, "physics");
  EXPECT_EQ(job.spec.priority.name, "gpu");  // the partition: [class.gpu] rules apply
  EXPECT_EQ(job.spec.name, "train");
  EXPECT_EQ(job.spec.time_limit, std::chrono::seconds(3600));
  EXPECT_EQ(job.start_time, FromUnixMillis(1'699'999'500'000));
  ASSERT_TRUE(job.allocation);
  EXPECT_EQ(job.allocation->node, NodeId("gpu01"));
  EXPECT_EQ(job.allocation->gpus, (std::vector<GpuUuid>{GpuUuid("GPU-1"), GpuUuid("GPU-2")}));
  // Held in the GPU view too (gpus, top, the dashboard, /metrics read it).
  const auto gpus = controller_->ListGpus(root_);
  ASSERT_TRUE(gpus.ok());
  int held = 0;
  for (const GpuStatus& g : *gpus) {
    held += g.job == JobId(7) ? 1 : 0;
  }
  EXPECT_EQ(held, 2);
  // The agent's hello (no job of its own) loses nothing: the job is Slurm's.
  controller_->OnAgentHello(SlurmHello(TestNode(gpus_)));
  SetJobs({Running(7, {1, 2}), Running(8, {0})});
  ASSERT_TRUE(WaitFor([&] { return StateIs(8, JobState::kRunning); }));
  EXPECT_EQ(Get(JobId(7)).state, JobState::kRunning);
}

TEST_F(SlurmCompanionTest, NothingIsSubmittedHere) {
  JobSpec spec;
  spec.argv = {"true"};
  spec.workdir = "/";
  const auto submitted = controller_->Submit(alice_, spec);
  ASSERT_FALSE(submitted.ok());
  EXPECT_NE(submitted.error().message.find("sbatch"), std::string::npos);
}

TEST_F(SlurmCompanionTest, PendingStartedRequeuedAndEndedAsSlurmSays) {
  SlurmJob job = Running(9, {0});
  job.state = "PENDING";
  job.reason = "Priority";
  job.gpus.clear();
  job.start_time.reset();
  SetJobs({job});
  ASSERT_TRUE(WaitFor([&] { return StateIs(9, JobState::kPending); }));
  EXPECT_EQ(Get(JobId(9)).reason, "pending in Slurm (Priority)");

  SetJobs({Running(9, {3})});
  ASSERT_TRUE(WaitFor([&] { return StateIs(9, JobState::kRunning); }));
  EXPECT_EQ(Get(JobId(9)).allocation->gpus, std::vector<GpuUuid>{GpuUuid("GPU-3")});

  SetJobs({job});  // Slurm requeued it
  ASSERT_TRUE(WaitFor([&] { return StateIs(9, JobState::kPending); }));
  EXPECT_FALSE(Get(JobId(9)).allocation);

  SlurmJob ended = Running(9, {2});
  SetJobs({ended});
  ASSERT_TRUE(WaitFor([&] { return StateIs(9, JobState::kRunning); }));
  ended.state = "TIMEOUT";
  ended.exit_code = 128 + 15;
  ended.end_time = FromUnixMillis(1'699'999'800'000);  // Slurm's own end, before this reading
  SetJobs({ended});
  ASSERT_TRUE(WaitFor([&] { return StateIs(9, JobState::kTimeout); }));
  EXPECT_EQ(Get(JobId(9)).exit_code, 128 + 15);
  EXPECT_EQ(Get(JobId(9)).end_time, FromUnixMillis(1'699'999'800'000));

  SetJobs({Running(10, {0})});  // 9 gone from Slurm's list: nothing changes for it
  ASSERT_TRUE(WaitFor([&] { return StateIs(10, JobState::kRunning); }));
  SetJobs({});  // 10 no longer listed: it ran to its end
  ASSERT_TRUE(WaitFor([&] { return StateIs(10, JobState::kCompleted); }));
  EXPECT_EQ(Get(JobId(9)).state, JobState::kTimeout);
}

TEST_F(SlurmCompanionTest, StopsGoThroughSlurm) {
  SetJobs({Running(11, {0}), Running(12, {1})});
  ASSERT_TRUE(
      WaitFor([&] { return StateIs(11, JobState::kRunning) && StateIs(12, JobState::kRunning); }));
  // A cancel: scancel, and the job ends CANCELLED once Slurm shows it ended.
  ASSERT_TRUE(controller_->CancelJob(alice_, JobId(11)).ok());
  ASSERT_TRUE(WaitFor([&] { return Asked("cancel 11"); }));
  EXPECT_EQ(Get(JobId(11)).state, JobState::kRunning);  // until Slurm says so
  // A requeue: scontrol requeue; Slurm shows it pending again.
  ASSERT_TRUE(controller_->RequeueJob(root_, JobId(12)).ok());
  ASSERT_TRUE(WaitFor([&] { return Asked("requeue 12"); }));
  SlurmJob cancelled = Running(11, {0});
  cancelled.state = "CANCELLED";
  cancelled.exit_code = 128 + 15;
  SlurmJob requeued = Running(12, {});
  requeued.state = "PENDING";
  requeued.gpus.clear();
  SetJobs({cancelled, requeued});
  ASSERT_TRUE(WaitFor(
      [&] { return StateIs(11, JobState::kCancelled) && StateIs(12, JobState::kPending); }));
  EXPECT_FALSE(Asked("cancel 12"));
  // A pending job cancelled here leaves Slurm's queue too.
  ASSERT_TRUE(controller_->CancelJob(alice_, JobId(12)).ok());
  ASSERT_TRUE(WaitFor([&] { return Asked("cancel 12"); }));
}

// A job on two nodes is one gpufleet job per node, each on its GPUs there; they start, requeue
// and end together, and a stop of either stops the Slurm job.
TEST_F(SlurmCompanionTest, AMultiNodeJobIsAJobPerNode) {
  FakeAgent second;
  controller_->AttachAgent(NodeId("gpu02"), &second);
  controller_->OnAgentHello(SlurmHello(TestNode(4, "gpu02", "b")));
  ASSERT_TRUE(WaitFor([&] { return controller_->ListNodes(root_)->size() == 2; }));
  SlurmJob job = Running(30, {0, 1});
  job.nodes = {"gpu01", "gpu02"};
  job.gpus.push_back(SlurmNodeGpus{.node = "gpu02", .gpu_indices = {2}});
  SetJobs({job});
  const std::int64_t second_id = SlurmNodeJobId(30, 1);
  ASSERT_EQ(second_id, 100'000'030);
  ASSERT_TRUE(WaitFor(
      [&] { return StateIs(30, JobState::kRunning) && StateIs(second_id, JobState::kRunning); }));
  EXPECT_EQ(Get(JobId(30)).allocation->gpus,
            (std::vector<GpuUuid>{GpuUuid("GPU-0"), GpuUuid("GPU-1")}));
  EXPECT_EQ(Get(JobId(second_id)).allocation->node, NodeId("gpu02"));
  EXPECT_EQ(Get(JobId(second_id)).allocation->gpus, std::vector<GpuUuid>{GpuUuid("bGPU-2")});
  EXPECT_EQ(Get(JobId(second_id)).spec.name, "train [node 2/2 of Slurm job 30]");
  EXPECT_EQ(Get(JobId(second_id)).owner.user, "alice");

  // Slurm requeues it: pending on no node, both shares wait.
  SlurmJob pending = job;
  pending.state = "PENDING";
  pending.nodes.clear();
  pending.gpus.clear();
  SetJobs({pending});
  ASSERT_TRUE(WaitFor(
      [&] { return StateIs(30, JobState::kPending) && StateIs(second_id, JobState::kPending); }));
  SetJobs({job});
  ASSERT_TRUE(WaitFor(
      [&] { return StateIs(30, JobState::kRunning) && StateIs(second_id, JobState::kRunning); }));

  // A stop of the second node's share stops the Slurm job.
  ASSERT_TRUE(controller_->CancelJob(alice_, JobId(second_id)).ok());
  ASSERT_TRUE(WaitFor([&] { return Asked("cancel 30"); }));
  SlurmJob ended = job;
  ended.state = "CANCELLED";
  ended.gpus.clear();  // an ended job keeps its NodeList, not its GRES
  SetJobs({ended});
  ASSERT_TRUE(WaitFor([&] {
    return StateIs(30, JobState::kCancelled) && StateIs(second_id, JobState::kCancelled);
  }));
}

// An agent without --slurm under a Slurm server would call every Slurm process unmanaged: its
// node is drained with the fix, and the drain lifted when a --slurm agent says hello.
TEST_F(SlurmCompanionTest, AnAgentOfTheOtherKindDrainsItsNode) {
  auto state = [&] {
    return (*controller_->ListNodes(root_))[0];
  };
  controller_->OnAgentHello(AgentHello{TestNode(gpus_), {}, {}});
  ASSERT_TRUE(WaitFor([&] { return state().state == NodeState::kDrained; }));
  EXPECT_NE(state().state_reason.find("start the agent with --slurm"), std::string::npos)
      << state().state_reason;
  controller_->OnAgentHello(SlurmHello(TestNode(gpus_)));
  ASSERT_TRUE(WaitFor([&] { return state().state == NodeState::kUp; }));
}

// A failed GPU: its job is requeued through Slurm and its node drained there (Slurm drains nodes,
// not GPUs); `gpufleet gpu resume` of the node's only failed GPU resumes the node in Slurm.
TEST_F(SlurmCompanionTest, AFailedGpuDrainsItsNodeInSlurm) {
  SetJobs({Running(21, {1})});
  ASSERT_TRUE(WaitFor([&] { return StateIs(21, JobState::kRunning); }));
  GpuSample lost;
  lost.uuid = GpuUuid("GPU-1");
  lost.time = clock_.Now();
  lost.lost = true;
  lost.health = GpuHealth::kFailed;
  lost.health_cause = "GPU fell off the bus (NVML: GPU is lost)";
  controller_->OnSamples(NodeId("gpu01"), {lost});
  ASSERT_TRUE(WaitFor([&] { return Asked("requeue 21"); }));
  ASSERT_TRUE(WaitFor([&] { return AskedStartingWith("drain gpu01 gpufleet: GPU 1"); }));
  EXPECT_TRUE(AskedStartingWith(
      "drain gpu01 gpufleet: GPU 1 (GPU-1) on gpu01 failed: GPU fell off the bus"));
  EXPECT_FALSE(AskedStartingWith("resume"));
  ASSERT_TRUE(controller_->ResumeGpu(root_, NodeId("gpu01"), "1").ok());
  ASSERT_TRUE(WaitFor([&] { return Asked("resume gpu01"); }));
}

}  // namespace
}  // namespace gf

// The controller's components wired together without the Controller (no state thread, no
// command queue): a turn is a call, the way the controller makes it. Each test drives one
// component through its own interface and checks what it leaves in the job book, the turn's
// outbox and the agents' inboxes.
#include <filesystem>
#include <memory>

#include <gtest/gtest.h>

#include "controller/controller_test_util.h"
#include "controller/dependency_book.h"
#include "controller/gpu_care.h"
#include "controller/job_desk.h"
#include "controller/node_desk.h"
#include "controller/node_registry.h"
#include "controller/run_time_book.h"
#include "controller/scheduling_stage.h"
#include "controller/turn_outbox.h"
#include "controller/usage_book.h"
#include "core/clock.h"
#include "lifecycle/job_book.h"
#include "monitor/telemetry.h"
#include "store/sqlite/sqlite_store.h"

namespace gf {
namespace {

class ComponentsTest : public ::testing::Test, private JobBookListener {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gf_components_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    auto store = OpenSqliteStore(dir_ / "state.db");
    ASSERT_TRUE(store.ok()) << store.error().message;
    store_ = std::move(*store);
    dependencies_ = std::make_unique<DependencyBook>(jobs_.Active(), *store_);
    scheduling_ = std::make_unique<SchedulingStage>(
        policy_,
        PassRules{},
        SchedulingInputs{.nodes = nodes_,
                         .telemetry = telemetry_,
                         .usage = usage_,
                         .dependencies = *dependencies_,
                         .running_spans = [] { return std::vector<RunningSpan>{}; },
                         .full_passes = full_,
                         .incremental_passes = incremental_});
    desk_ = std::make_unique<JobDesk>(
        JobDeskOptions{.policy = policy_, .team_of_user = team_of_user_, .only_uid = {}},
        JobDeskParts{.jobs = jobs_,
                     .store = *store_,
                     .dependencies = *dependencies_,
                     .nodes = nodes_,
                     .runtimes = runtimes_,
                     .scheduling = *scheduling_,
                     .out = out_,
                     .clock = clock_});
    gpus_ = std::make_unique<GpuCare>(SharingConfig{},
                                      GpuCareParts{.nodes = nodes_,
                                                   .telemetry = telemetry_,
                                                   .jobs = jobs_,
                                                   .out = out_,
                                                   .scheduling = *scheduling_,
                                                   .clock = clock_});
    node_desk_ =
        std::make_unique<NodeDesk>(NodeDeskOptions{.policy = policy_,
                                                   .node_timeout = Millis(30'000),
                                                   .liveness_clock = [this] { return steady_now_; },
                                                   .kill_grace = std::chrono::seconds(10)},
                                   NodeDeskParts{.jobs = jobs_,
                                                 .nodes = nodes_,
                                                 .telemetry = telemetry_,
                                                 .gpus = *gpus_,
                                                 .usage = usage_,
                                                 .scheduling = *scheduling_,
                                                 .out = out_,
                                                 .clock = clock_});
    nodes_.AttachAgent(NodeId("gpu01"), &agent_);
    node_desk_->Hello(AgentHello{.node = TestNode(2), .running = {}, .ended = {}});
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // What the controller does with a job's changes at the moments only it can act on.
  void OnReleasing(Job& job) override { node_desk_->ReleaseGpus(job); }
  void OnEnded(const Job& job) override {
    scheduling_->NoteEnd(job);
    desk_->ResolveDependents(job);
  }
  void OnRequeueing(const Job& /*job*/) override { scheduling_->NeedFull(); }

  Job Submit(int gpus, const std::string& user = "ana", std::uint32_t uid = 1000) {
    JobSpec spec;
    spec.argv = {"train.py"};
    spec.workdir = "/tmp";
    spec.request.gpus = gpus;
    Result<Job> job = desk_->Submit(TestCaller(uid, user), spec);
    EXPECT_TRUE(job.ok()) << job.error().message;
    return job.ok() ? *job : Job{};
  }

  // A pass at the clock's now, as the controller's turn runs it.
  PassOutcome Pass() {
    clock_.Advance(Millis(2000));  // past the full-pass interval: the planner owes a pass
    return scheduling_->Run(jobs_, clock_.Now());
  }

  std::vector<std::string> EventsOf(const std::string& kind) {
    std::vector<std::string> out;
    for (const Event& e : jobs_.TakeJournal().events) {
      if (e.kind == kind) {
        out.push_back(e.message);
      }
    }
    return out;
  }

  std::filesystem::path dir_;
  ManualClock clock_;
  std::chrono::steady_clock::time_point steady_now_ = std::chrono::steady_clock::now();
  PolicyConfig policy_;
  std::map<std::string, std::string> team_of_user_;
  JobBook jobs_{JobBookOptions{.policy = policy_, .kill_grace = std::chrono::seconds(10)},
                [this] { return clock_.Now(); },
                *this};
  NodeRegistry nodes_;
  Telemetry telemetry_;
  UsageBook usage_{UsageBookOptions{.policy = policy_, .team_of_user = {}, .energy_price = {}}};
  RunTimeBook runtimes_;
  TurnOutbox out_;
  PassStats full_{.kind = "full"};
  PassStats incremental_{.kind = "incremental"};
  FakeAgent agent_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<DependencyBook> dependencies_;
  std::unique_ptr<SchedulingStage> scheduling_;
  std::unique_ptr<JobDesk> desk_;
  std::unique_ptr<GpuCare> gpus_;
  std::unique_ptr<NodeDesk> node_desk_;
};

TEST_F(ComponentsTest, APassStartsWhatFitsAndGivesTheRestAReason) {
  const Job first = Submit(2);
  const Job second = Submit(1);
  const PassOutcome outcome = Pass();
  EXPECT_EQ(outcome.started, std::vector<JobId>{first.id});
  EXPECT_TRUE(outcome.preempted.empty());
  EXPECT_EQ(jobs_.At(first.id).state, JobState::kStarting);
  EXPECT_EQ(jobs_.At(first.id).allocation->gpus.size(), 2U);
  const Job& waiting = jobs_.At(second.id);
  EXPECT_EQ(waiting.state, JobState::kPending);
  ASSERT_TRUE(waiting.pending_reason.has_value());
  EXPECT_FALSE(waiting.reason.empty());
  EXPECT_EQ(full_.count, 1);
}

TEST_F(ComponentsTest, AFailedGpuRequeuesItsJobWithItsCheckpointSignal) {
  const Job job = Submit(1);
  Pass();
  node_desk_->JobStarted(job.id, 4242, clock_.Now());
  ASSERT_EQ(jobs_.At(job.id).state, JobState::kRunning);
  const GpuUuid uuid = jobs_.At(job.id).allocation->gpus.front();
  jobs_.TakeKills();
  out_ = TurnOutbox{};
  gpus_->ApplyHealth(NodeId("gpu01"),
                     {HealthChange{.node = NodeId("gpu01"),
                                   .index = uuid == GpuUuid("GPU-0") ? 0 : 1,
                                   .uuid = uuid,
                                   .from = GpuHealth::kOk,
                                   .to = GpuHealth::kFailed,
                                   .cause = "Xid 79: fallen off the bus",
                                   .lost = false}});
  // Stopped with its checkpoint signal (the GPU still answers), to be requeued.
  const std::vector<KillOrder> kills = jobs_.TakeKills();
  ASSERT_EQ(kills.size(), 1U);
  EXPECT_EQ(kills[0].job, job.id);
  EXPECT_EQ(kills[0].first_signal, job.spec.checkpoint_signal);
  EXPECT_EQ(out_.batch.nodes.size(), 1U);  // the GPU's health is stored with the turn
  ASSERT_EQ(out_.notifications.size(), 1U);
  EXPECT_EQ(out_.notifications[0].kind, NotifyKind::kGpuFailed);
  // Its processes exit on the signal: back in the queue at its place.
  node_desk_->JobExited(JobExitReport{.job = job.id,
                                      .exit_code = 0,
                                      .signal = std::nullopt,
                                      .end_time = clock_.Now(),
                                      .cause = "exited with status 0",
                                      .node = NodeId("gpu01")});
  EXPECT_EQ(jobs_.At(job.id).state, JobState::kPending);
  EXPECT_EQ(jobs_.At(job.id).submit_time, job.submit_time);
}

TEST_F(ComponentsTest, AModeChangeWaitsForTheGpusJobToEnd) {
  const Job job = Submit(2);
  Pass();
  const Caller admin = TestCaller(0, "root", Role::kAdmin);
  const Result<Gpu> gpu = gpus_->SetMode(admin, NodeId("gpu01"), "0", SharingMode::kShared);
  ASSERT_TRUE(gpu.ok()) << gpu.error().message;
  EXPECT_EQ(gpu->sharing, SharingMode::kExclusive);
  EXPECT_EQ(gpu->sharing_next, SharingMode::kShared);
  EXPECT_NE(EventsOf("gpu_mode").at(0).find("once job(s) " + std::to_string(job.id.value())),
            std::string::npos);
  gpus_->ApplyWaitingModes();
  EXPECT_TRUE(EventsOf("gpu_mode").empty());  // still held
  ASSERT_TRUE(desk_->Cancel(TestCaller(1000, "ana"), job.id).ok());
  node_desk_->JobExited(JobExitReport{.job = job.id,
                                      .exit_code = 143,
                                      .signal = 15,
                                      .end_time = clock_.Now(),
                                      .cause = "killed by signal 15",
                                      .node = NodeId("gpu01")});
  gpus_->ApplyWaitingModes();
  const std::vector<std::string> applied = EventsOf("gpu_mode");
  ASSERT_EQ(applied.size(), 1U);
  EXPECT_NE(applied[0].find("is now shared (was exclusive): its last job ended"),
            std::string::npos);
}

TEST_F(ComponentsTest, ASilentNodeIsDownAndItsJobsAreRequeued) {
  const Job job = Submit(1);
  Pass();
  node_desk_->JobStarted(job.id, 4242, clock_.Now());
  steady_now_ += std::chrono::seconds(31);
  node_desk_->CheckLiveness();
  EXPECT_EQ(nodes_.At(NodeId("gpu01")).node.state, NodeState::kDown);
  EXPECT_EQ(jobs_.At(job.id).state, JobState::kPending);
  EXPECT_NE(jobs_.At(job.id).reason.find("requeued after node failure"), std::string::npos);
}

TEST_F(ComponentsTest, OthersJobsAreInvisibleAndAGangIsQueuedWhole) {
  const Job mine = Submit(1, "ana", 1000);
  const Result<Job> theirs = desk_->Cancel(TestCaller(1001, "bob"), mine.id);
  ASSERT_FALSE(theirs.ok());
  EXPECT_EQ(theirs.error().code, ErrorCode::kNotFound);
  FakeAgent second;
  nodes_.AttachAgent(NodeId("gpu02"), &second);
  node_desk_->Hello(AgentHello{.node = TestNode(2, "gpu02", "b-"), .running = {}, .ended = {}});
  JobSpec spec;
  spec.argv = {"train.py"};
  spec.workdir = "/tmp";
  spec.request.gpus = 2;
  spec.request.nodes = 2;
  const Result<Job> lead = desk_->Submit(TestCaller(1000, "ana"), spec);
  ASSERT_TRUE(lead.ok()) << lead.error().message;
  ASSERT_NE(jobs_.Find(JobId(lead->id.value() + 1)), nullptr);
  EXPECT_EQ(jobs_.At(JobId(lead->id.value() + 1)).spec.gang->rank, 1);
  EXPECT_EQ(desk_->NextId(), lead->id.value() + 2);
}

}  // namespace
}  // namespace gf

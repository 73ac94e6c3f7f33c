#include "controller/controller.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <mutex>
#include <thread>

#include "store/sqlite/sqlite_store.h"

namespace gf {
namespace {

using std::chrono::seconds;

// Records what the controller asks of the node; the test plays the agent's answers.
class FakeAgent final : public NodeAgent {
 public:
  void Launch(const Job& job) override {
    std::lock_guard lock(mu_);
    launched_.push_back(job);
  }
  void Kill(JobId job, seconds /*grace*/, const std::string& cause) override {
    std::lock_guard lock(mu_);
    killed_.emplace_back(job, cause);
  }
  void AcknowledgeExit(JobId job) override {
    std::lock_guard lock(mu_);
    acked_.push_back(job);
  }
  std::string LogPath(JobId job, bool err) const override {
    return "/logs/" + std::to_string(job.value()) + (err ? ".err" : ".out");
  }
  std::vector<Job> launched() {  // NOLINT(readability-identifier-naming): accessor
    std::lock_guard lock(mu_);
    return launched_;
  }
  // NOLINTNEXTLINE(readability-identifier-naming): accessor
  std::vector<std::pair<JobId, std::string>> killed() {
    std::lock_guard lock(mu_);
    return killed_;
  }
  std::vector<JobId> acked() {  // NOLINT(readability-identifier-naming): accessor
    std::lock_guard lock(mu_);
    return acked_;
  }

 private:
  std::mutex mu_;
  std::vector<Job> launched_;
  std::vector<std::pair<JobId, std::string>> killed_;
  std::vector<JobId> acked_;
};

template <typename Pred>
bool WaitFor(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

Node FourGpuNode() {
  Node node;
  node.name = NodeId("gpu01");
  for (int i = 0; i < 4; ++i) {
    node.gpus.push_back(Gpu{i, GpuUuid("GPU-" + std::to_string(i)), "H100-80GB", 81920,
                            GpuHealth::kOk, ""});
  }
  node.gpu_backend = "test";
  return node;
}

Caller User(std::uint32_t uid, std::string name) { return Caller{true, uid, uid, std::move(name)}; }

JobSpec Spec(int gpus, PriorityClass p = PriorityClass::kNormal) {
  JobSpec s;
  s.argv = {"sleep", "100"};
  s.workdir = "/tmp";
  s.request.gpus = gpus;
  s.priority = p;
  return s;
}

class ControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gf-ctl-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    Boot();
  }
  void TearDown() override {
    controller_.reset();
    std::filesystem::remove_all(dir_);
  }

  // (Re)starts a controller over the same database, as a restart of gpufleet up does.
  void Boot(std::vector<JobId> running = {}, std::vector<JobExitReport> ended = {}) {
    controller_.reset();
    agent_ = std::make_unique<FakeAgent>();
    auto store = OpenSqliteStore(dir_ / "state.db");
    ASSERT_TRUE(store.ok()) << store.error().ToString();
    ControllerOptions options;
    options.tick = Millis(10);
    controller_ = std::make_unique<Controller>(std::move(*store), clock_, options);
    ASSERT_TRUE(controller_->Load().ok());
    controller_->AttachAgent(NodeId("gpu01"), agent_.get());
    controller_->Start();
    controller_->OnAgentHello(AgentHello{FourGpuNode(), std::move(running), std::move(ended)});
  }

  Job Get(JobId id) { return *controller_->GetJob(root_, id); }
  bool StateIs(JobId id, JobState s) { return Get(id).state == s; }

  std::filesystem::path dir_;
  ManualClock clock_;
  Caller root_ = User(0, "root");
  Caller alice_ = User(1000, "alice");
  Caller bob_ = User(1001, "bob");
  std::unique_ptr<FakeAgent> agent_;
  std::unique_ptr<Controller> controller_;
};

TEST_F(ControllerTest, JobRunsThroughItsLifecycle) {
  auto job = controller_->Submit(alice_, Spec(2));
  ASSERT_TRUE(job.ok()) << job.error().ToString();
  EXPECT_EQ(job->state, JobState::kPending);
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  Job launched = agent_->launched()[0];
  EXPECT_EQ(launched.id, job->id);
  ASSERT_TRUE(launched.allocation);
  EXPECT_EQ(launched.allocation->gpus, (std::vector<GpuUuid>{GpuUuid("GPU-0"), GpuUuid("GPU-1")}));
  EXPECT_EQ(Get(job->id).state, JobState::kStarting);

  controller_->OnJobStarted(job->id, 4242, clock_.Now());
  ASSERT_TRUE(WaitFor([&] { return StateIs(job->id, JobState::kRunning); }));
  controller_->OnJobExited(JobExitReport{job->id, 0, std::nullopt, clock_.Now(), "exited with 0"});
  ASSERT_TRUE(WaitFor([&] { return StateIs(job->id, JobState::kCompleted); }));
  EXPECT_EQ(Get(job->id).exit_code, 0);
  ASSERT_TRUE(WaitFor([&] { return agent_->acked().size() == 1; }));

  auto events = controller_->JobEvents(alice_, job->id);
  ASSERT_TRUE(events.ok());
  ASSERT_GE(events->size(), 4u);  // submit, starting, running, completed
  EXPECT_EQ((*events)[0].kind, "submit");
}

TEST_F(ControllerTest, NonZeroExitFails) {
  auto job = controller_->Submit(alice_, Spec(1));
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  controller_->OnJobStarted(job->id, 1, clock_.Now());
  controller_->OnJobExited(JobExitReport{job->id, 3, std::nullopt, clock_.Now(), "exited with 3"});
  ASSERT_TRUE(WaitFor([&] { return StateIs(job->id, JobState::kFailed); }));
  EXPECT_EQ(Get(job->id).exit_code, 3);
}

TEST_F(ControllerTest, HighPriorityStartsBeforeEarlierWork) {
  auto blocker = controller_->Submit(alice_, Spec(4));
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  controller_->OnJobStarted(blocker->id, 1, clock_.Now());
  auto normal = controller_->Submit(alice_, Spec(4, PriorityClass::kNormal));
  auto low = controller_->Submit(alice_, Spec(4, PriorityClass::kLow));
  auto high = controller_->Submit(bob_, Spec(4, PriorityClass::kHigh));
  ASSERT_TRUE(WaitFor([&] {
    return Get(normal->id).reason.find("behind job " + std::to_string(high->id.value())) !=
           std::string::npos;
  })) << Get(normal->id).reason;
  EXPECT_NE(Get(high->id).reason.find("needs 4"), std::string::npos) << Get(high->id).reason;
  controller_->OnJobExited(JobExitReport{blocker->id, 0, std::nullopt, clock_.Now(), "done"});
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 2; }));
  EXPECT_EQ(agent_->launched()[1].id, high->id);
  EXPECT_EQ(Get(normal->id).state, JobState::kPending);
  EXPECT_EQ(Get(low->id).state, JobState::kPending);
}

TEST_F(ControllerTest, TimeLimitKillsAndEndsInTimeout) {
  JobSpec spec = Spec(1);
  spec.time_limit = seconds(60);
  auto job = controller_->Submit(alice_, spec);
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  controller_->OnJobStarted(job->id, 1, clock_.Now());
  ASSERT_TRUE(WaitFor([&] { return StateIs(job->id, JobState::kRunning); }));
  clock_.Advance(seconds(59));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(agent_->killed().empty());
  clock_.Advance(seconds(2));
  ASSERT_TRUE(WaitFor([&] { return agent_->killed().size() == 1; }));
  EXPECT_NE(agent_->killed()[0].second.find("time limit 1m reached"), std::string::npos);
  controller_->OnJobExited(JobExitReport{job->id, 143, 15, clock_.Now(), "killed by SIGTERM"});
  ASSERT_TRUE(WaitFor([&] { return StateIs(job->id, JobState::kTimeout); }));
}

TEST_F(ControllerTest, CancelPendingAndRunning) {
  auto running = controller_->Submit(alice_, Spec(4));
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  controller_->OnJobStarted(running->id, 1, clock_.Now());
  auto pending = controller_->Submit(alice_, Spec(1));
  auto c1 = controller_->CancelJob(alice_, pending->id);
  ASSERT_TRUE(c1.ok());
  EXPECT_EQ(c1->state, JobState::kCancelled);
  auto c2 = controller_->CancelJob(alice_, running->id);
  ASSERT_TRUE(c2.ok());
  ASSERT_TRUE(WaitFor([&] { return agent_->killed().size() == 1; }));
  controller_->OnJobExited(JobExitReport{running->id, 137, 9, clock_.Now(), "killed"});
  ASSERT_TRUE(WaitFor([&] { return StateIs(running->id, JobState::kCancelled); }));
  EXPECT_NE(Get(running->id).reason.find("cancelled by alice"), std::string::npos);
  auto again = controller_->CancelJob(alice_, running->id);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, ErrorCode::kFailedPrecondition);
}

TEST_F(ControllerTest, UsersSeeAndTouchOnlyTheirOwnJobs) {
  auto job = controller_->Submit(alice_, Spec(1));
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(controller_->GetJob(bob_, job->id).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(controller_->CancelJob(bob_, job->id).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(controller_->GetJobLogs(bob_, job->id).error().code, ErrorCode::kNotFound);
  EXPECT_TRUE(controller_->ListJobs(bob_, JobFilter{})->empty());
  EXPECT_EQ(controller_->ListJobs(alice_, JobFilter{})->size(), 1u);
  EXPECT_EQ(controller_->ListJobs(bob_, JobFilter{false, "alice", 100}).error().code,
            ErrorCode::kPermissionDenied);
  EXPECT_TRUE(controller_->GetJob(root_, job->id).ok());
  Caller anonymous;
  EXPECT_EQ(controller_->Submit(anonymous, Spec(1)).error().code, ErrorCode::kPermissionDenied);
  EXPECT_TRUE(controller_->CancelJob(root_, job->id).ok());
}

TEST_F(ControllerTest, InfeasibleSubmissionIsRejectedAndNotStored) {
  auto too_many = controller_->Submit(alice_, Spec(5));
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(too_many.error().message.find("gpus"), std::string::npos);
  JobSpec typed = Spec(1);
  typed.request.gpu_type = "V100";
  EXPECT_EQ(controller_->Submit(alice_, typed).error().code, ErrorCode::kInvalidArgument);
  JobSpec empty = Spec(1);
  empty.argv.clear();
  EXPECT_EQ(controller_->Submit(alice_, empty).error().code, ErrorCode::kInvalidArgument);
  JobFilter all;
  all.include_finished = true;
  EXPECT_TRUE(controller_->ListJobs(root_, all)->empty());
}

TEST_F(ControllerTest, RestartReattachesRunningJobsAndFailsLostOnes) {
  auto kept = controller_->Submit(alice_, Spec(1));
  auto lost = controller_->Submit(alice_, Spec(1));
  auto ended = controller_->Submit(alice_, Spec(1));
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 3; }));
  for (auto id : {kept->id, lost->id, ended->id}) {
    controller_->OnJobStarted(id, 1, clock_.Now());
  }
  ASSERT_TRUE(WaitFor([&] { return StateIs(ended->id, JobState::kRunning); }));
  Boot({kept->id}, {JobExitReport{ended->id, 0, std::nullopt, clock_.Now(), "exited with 0"}});
  ASSERT_TRUE(WaitFor([&] { return StateIs(lost->id, JobState::kFailed); }));
  EXPECT_EQ(Get(kept->id).state, JobState::kRunning);
  EXPECT_EQ(Get(ended->id).state, JobState::kCompleted);
  // Job ids keep increasing across the restart.
  auto next = controller_->Submit(alice_, Spec(1));
  EXPECT_GT(next->id.value(), ended->id.value());
}

TEST_F(ControllerTest, ConcurrentSubmissionsGetDistinctDurableIds) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 25;
  std::vector<std::thread> threads;
  std::mutex mu;
  std::set<std::int64_t> ids;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        auto job = controller_->Submit(alice_, Spec(0));
        ASSERT_TRUE(job.ok());
        std::lock_guard lock(mu);
        ids.insert(job->id.value());
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(ids.size(), static_cast<std::size_t>(kThreads * kPerThread));
  Boot();
  JobFilter all;
  all.include_finished = true;
  all.limit = 10'000;
  EXPECT_EQ(controller_->ListJobs(root_, all)->size(), ids.size());
}

}  // namespace
}  // namespace gf

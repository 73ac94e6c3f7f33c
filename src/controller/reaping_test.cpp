// The idle reaper (reaping.cpp): warn → clear, warn → requeue, warn → cancel, the opt-out,
// the interactive threshold and a job whose GPUs have not reported yet. The controller runs
// on a ManualClock; the test plays the agent (FakeAgent) and its GPU samples.
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>
#include <unistd.h>

#include "controller/controller.h"
#include "controller/controller_test_util.h"
#include "store/sqlite/sqlite_store.h"

namespace gf {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

constexpr int kGpus = 2;

// Class normal: warned after 30m idle (2h when interactive), 10m grace, under 5 %. Class
// high lets its jobs opt out; class low reaps nothing.
PolicyConfig ReaperPolicy(IdleAction action) {
  PolicyConfig policy;
  for (PriorityClassPolicy& cls : policy.classes) {
    if (cls.name == PriorityClass::kNormal.name) {
      cls.idle = IdleRule{.after = minutes(30),
                          .interactive_after = minutes(120),
                          .grace = minutes(10),
                          .util_below_pct = 5,
                          .action = action};
    }
    if (cls.name == PriorityClass::kHigh.name) {
      cls.idle_opt_out = true;
    }
  }
  return policy;
}

class ReaperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gf-reap-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override {
    controller_.reset();
    std::filesystem::remove_all(dir_);
  }

  // (Re)starts the controller over the same database, its node running `running`; a restart
  // starts with empty telemetry, as gpufleet up does.
  void Boot(PolicyConfig policy, std::vector<JobId> running = {}) {
    controller_.reset();
    telemetry_ = std::make_unique<Telemetry>();
    auto store = OpenSqliteStore(dir_ / "state.db");
    ASSERT_TRUE(store.ok()) << store.error().ToString();
    ControllerOptions options;
    options.tick = Millis(10);
    options.telemetry = telemetry_.get();
    options.policy = std::move(policy);
    controller_ = std::make_unique<Controller>(std::move(*store), clock_, options);
    ASSERT_TRUE(controller_->Load().ok());
    controller_->AttachAgent(NodeId("gpu01"), &agent_);
    controller_->Start();
    controller_->OnAgentHello(AgentHello{TestNode(kGpus), std::move(running), {}});
  }

  // Submits and starts a job on both GPUs, as alice unless `caller` is given.
  JobId StartJob(JobSpec spec = {}, const Caller* caller = nullptr) {
    spec.argv = {"python", "notebook.py"};
    spec.workdir = "/tmp";
    spec.request.gpus = kGpus;
    const std::size_t launches = agent_.launched().size();
    auto job = controller_->Submit(caller != nullptr ? *caller : alice_, spec);
    EXPECT_TRUE(job.ok()) << job.error().ToString();
    EXPECT_TRUE(WaitFor([&] { return agent_.launched().size() == launches + 1; }))
        << Get(job->id).reason;
    controller_->OnJobStarted(job->id, 4242, clock_.Now());
    EXPECT_TRUE(WaitFor([&] { return Get(job->id).state == JobState::kRunning; }));
    return job->id;
  }

  // One sample of each GPU, taken now with `job`'s process on it, then `step` passes: the
  // reaper judges once per second of the controller's clock, so each step lets it look again.
  void Samples(JobId job, int util, std::int64_t memory_mib, Millis step = seconds(1)) {
    std::vector<GpuSample> samples;
    for (int i = 0; i < kGpus; ++i) {
      GpuSample s;
      s.uuid = GpuUuid("GPU-" + std::to_string(i));
      s.time = clock_.Now();
      s.memory_total_mib = 81920;
      s.memory_used_mib = memory_mib;
      s.util_gpu_pct = util;
      s.processes.push_back(
          GpuProcessSample{.pid = 777, .used_memory_mib = memory_mib, .job = job});
      samples.push_back(std::move(s));
    }
    controller_->OnSamples(NodeId("gpu01"), std::move(samples));
    clock_.Advance(step);
  }
  // Idle samples (3 %, memory unchanged) every minute for `duration`.
  void IdleFor(JobId job, minutes duration) {
    for (minutes m{0}; m < duration; ++m) {
      Samples(job, 3, 2048, minutes(1));
    }
  }

  Job Get(JobId id) { return *controller_->GetJob(root_, id); }
  std::string History(JobId id) { return EventHistory(*controller_, root_, id); }
  int CountEvents(JobId id, const std::string& kind) {
    const std::string history = History(id);
    int count = 0;
    for (std::size_t at = history.find(kind + ": "); at != std::string::npos;
         at = history.find(kind + ": ", at + 1)) {
      ++count;
    }
    return count;
  }
  bool HasEvent(JobId id, const std::string& kind) { return CountEvents(id, kind) > 0; }
  // Lets the state thread run a few turns, for checks that something did not happen.
  static void Settle() { std::this_thread::sleep_for(std::chrono::milliseconds(50)); }

  std::filesystem::path dir_;
  ManualClock clock_;
  FakeAgent agent_;
  std::unique_ptr<Telemetry> telemetry_;
  Caller root_{.authenticated = true, .uid = 0, .gid = 0, .user = "root"};
  Caller alice_{.authenticated = true, .uid = 1000, .gid = 1000, .user = "alice"};
  std::unique_ptr<Controller> controller_;
};

TEST_F(ReaperTest, AnIdleJobIsWarnedAndTheWarningClearsWhenItsGpusAreUsed) {
  Boot(ReaperPolicy(IdleAction::kRequeue));
  const JobId job = StartJob();
  const std::string reason_before = Get(job).reason;
  IdleFor(job, minutes(29));
  Settle();
  EXPECT_FALSE(HasEvent(job, "idle_warning")) << History(job);

  IdleFor(job, minutes(2));
  ASSERT_TRUE(WaitFor([&] { return HasEvent(job, "idle_warning"); })) << History(job);
  EXPECT_NE(History(job).find("idle_warning: GPUs 0,1 on gpu01 idle for 3"), std::string::npos)
      << History(job);
  EXPECT_NE(History(job).find("under 5 % utilisation with no memory change"), std::string::npos);
  EXPECT_NE(History(job).find("requeued in 10m unless they are used"), std::string::npos);
  EXPECT_NE(Get(job).reason.find("idle warning: GPUs 0,1"), std::string::npos) << Get(job).reason;

  // Memory moves at 0 %: a data loader is at work, which counts as use.
  Samples(job, 0, 4096);
  Samples(job, 0, 4096);
  ASSERT_TRUE(WaitFor([&] { return HasEvent(job, "idle_cleared"); })) << History(job);
  EXPECT_EQ(Get(job).reason, reason_before);
  // Past the old deadline nothing happens: the grace ended with the warning.
  Samples(job, 90, 4096, minutes(11));
  Samples(job, 90, 4096);
  Settle();
  EXPECT_TRUE(agent_.killed().empty());
  EXPECT_EQ(Get(job).state, JobState::kRunning);
}

TEST_F(ReaperTest, AJobStillIdleWhenTheGraceEndsIsRequeuedWithItsCheckpointSignal) {
  Boot(ReaperPolicy(IdleAction::kRequeue));
  JobSpec spec;
  spec.checkpoint_signal = 10;  // SIGUSR1
  const JobId job = StartJob(spec);
  IdleFor(job, minutes(31));
  ASSERT_TRUE(WaitFor([&] { return HasEvent(job, "idle_warning"); })) << History(job);
  // Warned at 30 or 31 minutes (whichever the state thread judged): the grace ends at 40 or 41.
  IdleFor(job, minutes(8));
  Settle();
  EXPECT_TRUE(agent_.killed().empty());

  IdleFor(job, minutes(2));
  ASSERT_TRUE(WaitFor([&] { return agent_.killed().size() == 1; })) << History(job);
  EXPECT_EQ(agent_.killed()[0].first, job);
  EXPECT_NE(agent_.killed()[0].second.find("GPUs 0,1 on gpu01 idle for 4"), std::string::npos)
      << agent_.killed()[0].second;
  EXPECT_EQ(agent_.signals()[0], 10);
  EXPECT_NE(History(job).find("idle_reap: idle reaping: GPUs 0,1"), std::string::npos)
      << History(job);
  EXPECT_NE(History(job).find("sending SIGUSR1"), std::string::npos) << History(job);

  controller_->OnJobExited(JobExitReport{job, 138, 10, clock_.Now(), "killed by SIGUSR1"});
  ASSERT_TRUE(WaitFor([&] { return agent_.launched().size() == 2; }));  // back at its place
  EXPECT_NE(History(job).find("PREEMPTED -> PENDING"), std::string::npos) << History(job);
  EXPECT_NE(History(job).find("requeued after idle reaping: GPUs 0,1"), std::string::npos)
      << History(job);
}

TEST_F(ReaperTest, ActionCancelEndsTheJobWithTheCause) {
  Boot(ReaperPolicy(IdleAction::kCancel));
  const JobId job = StartJob();
  IdleFor(job, minutes(31));
  ASSERT_TRUE(WaitFor([&] { return HasEvent(job, "idle_warning"); })) << History(job);
  EXPECT_NE(History(job).find("cancelled in 10m unless they are used"), std::string::npos)
      << History(job);
  IdleFor(job, minutes(11));
  ASSERT_TRUE(WaitFor([&] { return agent_.killed().size() == 1; })) << History(job);
  EXPECT_EQ(agent_.signals()[0], kSigTerm);
  controller_->OnJobExited(JobExitReport{job, 143, 15, clock_.Now(), "killed by SIGTERM"});
  ASSERT_TRUE(WaitFor([&] { return Get(job).state == JobState::kCancelled; }));
  EXPECT_NE(Get(job).reason.find("idle reaping: GPUs 0,1 on gpu01 idle for"), std::string::npos)
      << Get(job).reason;
  EXPECT_EQ(agent_.launched().size(), 1U);
}

TEST_F(ReaperTest, NoReapIsRefusedUnlessTheClassAllowsItAndIsThenLeftAlone) {
  Boot(ReaperPolicy(IdleAction::kRequeue));
  JobSpec spec;
  spec.argv = {"sleep", "1"};
  spec.workdir = "/tmp";
  spec.idle_reap = false;
  auto refused = controller_->Submit(alice_, spec);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.error().message.find("--no-reap: class 'normal' does not let its jobs opt "
                                         "out of idle reaping"),
            std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().message.find("idle_opt_out = true"), std::string::npos);

  // Class high allows it; its rule would not reap anyway, so give high one too.
  PolicyConfig policy = ReaperPolicy(IdleAction::kRequeue);
  for (PriorityClassPolicy& cls : policy.classes) {
    if (cls.name == PriorityClass::kHigh.name) {
      cls.idle = IdleRule{.after = minutes(30), .grace = minutes(0)};
    }
  }
  Boot(policy);
  spec.priority = PriorityClass::kHigh;
  const JobId job = StartJob(spec);
  IdleFor(job, minutes(45));
  Settle();
  EXPECT_FALSE(HasEvent(job, "idle_warning")) << History(job);
  EXPECT_TRUE(agent_.killed().empty());
}

TEST_F(ReaperTest, InteractiveJobsGetTheInteractiveThreshold) {
  Boot(ReaperPolicy(IdleAction::kRequeue));
  JobSpec spec;
  spec.interactive = true;
  const JobId job = StartJob(spec);
  IdleFor(job, minutes(100));
  Settle();
  EXPECT_FALSE(HasEvent(job, "idle_warning")) << History(job);
  IdleFor(job, minutes(21));
  ASSERT_TRUE(WaitFor([&] { return HasEvent(job, "idle_warning"); })) << History(job);
  EXPECT_NE(History(job).find("the threshold is 2h"), std::string::npos) << History(job);
}

TEST_F(ReaperTest, AfterARestartTheFlagsStayAndAStillIdleJobIsWarnedAfresh) {
  Boot(ReaperPolicy(IdleAction::kRequeue));
  JobSpec spec;
  spec.interactive = true;
  const JobId job = StartJob(spec);
  IdleFor(job, minutes(121));
  ASSERT_TRUE(WaitFor([&] { return HasEvent(job, "idle_warning"); })) << History(job);

  Boot(ReaperPolicy(IdleAction::kRequeue), {job});
  EXPECT_TRUE(Get(job).spec.interactive);  // stored with the job
  EXPECT_TRUE(Get(job).spec.idle_reap);
  // The grace of the old warning passes: no action without a warning this controller gave,
  // and the idle time counts from the restart.
  IdleFor(job, minutes(100));
  Settle();
  EXPECT_EQ(CountEvents(job, "idle_warning"), 1) << History(job);
  EXPECT_TRUE(agent_.killed().empty());
  IdleFor(job, minutes(21));
  ASSERT_TRUE(WaitFor([&] { return CountEvents(job, "idle_warning") == 2; })) << History(job);
}

TEST_F(ReaperTest, AJobWhoseGpusHaveNotReportedIsNotJudged) {
  Boot(ReaperPolicy(IdleAction::kRequeue));
  const JobId job = StartJob();
  clock_.Advance(minutes(45));
  Settle();
  EXPECT_FALSE(HasEvent(job, "idle_warning")) << History(job);
  // Its first samples count from when it got the GPUs: it has been idle all along.
  Samples(job, 0, 2048);
  ASSERT_TRUE(WaitFor([&] { return HasEvent(job, "idle_warning"); })) << History(job);
  EXPECT_NE(History(job).find("idle for 45m"), std::string::npos) << History(job);
}

TEST_F(ReaperTest, ATeamRuleOverridesItsClass) {
  PolicyConfig policy = ReaperPolicy(IdleAction::kRequeue);
  policy.teams.push_back(TeamPolicy{.name = "ml", .idle = IdleRule{.after = seconds(0)}});
  policy.teams.push_back(TeamPolicy{.name = "cv", .idle = IdleRule{.after = minutes(5)}});
  Boot(policy);
  JobSpec spec;
  spec.team = "ml";  // reaping off for ml
  // Submitted by root: only an admin may charge a team that is not theirs (alice is in none).
  const JobId ml = StartJob(spec, &root_);
  IdleFor(ml, minutes(45));
  Settle();
  EXPECT_FALSE(HasEvent(ml, "idle_warning")) << History(ml);
  controller_->OnJobExited(JobExitReport{ml, 0, std::nullopt, clock_.Now(), "exited"});
  ASSERT_TRUE(WaitFor([&] { return Get(ml).state == JobState::kCompleted; }));

  spec.team = "cv";  // 5 minutes for cv
  const JobId cv = StartJob(spec, &root_);
  IdleFor(cv, minutes(6));
  ASSERT_TRUE(WaitFor([&] { return HasEvent(cv, "idle_warning"); })) << History(cv);
}

}  // namespace
}  // namespace gf

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
  void Kill(JobId job, seconds /*grace*/, const std::string& cause, int first_signal) override {
    std::lock_guard lock(mu_);
    killed_.emplace_back(job, cause);
    signals_.push_back(first_signal);
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
  std::vector<int> signals() {  // NOLINT(readability-identifier-naming): accessor
    std::lock_guard lock(mu_);
    return signals_;
  }

 private:
  std::mutex mu_;
  std::vector<Job> launched_;
  std::vector<std::pair<JobId, std::string>> killed_;
  std::vector<JobId> acked_;
  std::vector<int> signals_;  // the first signal of each kill, in order
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
    telemetry_ = std::make_unique<Telemetry>();  // a restart starts with empty telemetry
    options.telemetry = telemetry_.get();
    options.team_of_user = team_of_user_;
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
  std::unique_ptr<Telemetry> telemetry_;
  std::map<std::string, std::string> team_of_user_;
  std::unique_ptr<Controller> controller_;
};

// A reading of GPU-<index> of FourGpuNode at `time`, busy with `pids` (attributed to `job`).
GpuSample Reading(int index, Time time, int util, std::int64_t energy_mj,
                  std::optional<JobId> job = std::nullopt) {
  GpuSample s;
  s.uuid = GpuUuid("GPU-" + std::to_string(index));
  s.time = time;
  s.memory_total_mib = 81920;
  s.memory_used_mib = 2048;
  s.memory_free_mib = 81920 - 2048;
  s.util_gpu_pct = util;
  s.energy_mj = energy_mj;
  if (job) {
    GpuProcessSample p;
    p.pid = 777;
    p.used_memory_mib = 2000;
    p.job = job;
    s.processes.push_back(p);
  }
  return s;
}

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

TEST_F(ControllerTest, SamplesGiveLiveAndStoredJobUsage) {
  auto job = controller_->Submit(alice_, Spec(1));
  ASSERT_TRUE(job.ok());
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  controller_->OnJobStarted(job->id, 4242, clock_.Now());
  ASSERT_TRUE(WaitFor([&] { return StateIs(job->id, JobState::kRunning); }));

  const Time t0 = clock_.Now();
  controller_->OnSamples(NodeId("gpu01"), {Reading(0, t0, 40, 1'000, job->id)});
  controller_->OnSamples(NodeId("gpu01"), {Reading(0, t0 + seconds(1), 80, 4'000, job->id)});
  ASSERT_TRUE(WaitFor([&] {
    auto usage = Get(job->id).usage;
    return usage && usage->samples == 2;
  }));
  JobUsage live = *Get(job->id).usage;
  EXPECT_EQ(live.peak_util_pct, 80);
  EXPECT_DOUBLE_EQ(live.mean_util_pct, 60);
  EXPECT_EQ(live.energy_mj, 3'000);

  // The GPU list shows who holds the GPU, with the latest reading.
  auto gpus = controller_->ListGpus(bob_);
  ASSERT_TRUE(gpus.ok());
  ASSERT_EQ(gpus->size(), 4U);
  EXPECT_EQ((*gpus)[0].job, job->id);
  EXPECT_EQ((*gpus)[0].user, "alice");
  EXPECT_EQ((*gpus)[0].team, "default");
  ASSERT_TRUE((*gpus)[0].sample);
  EXPECT_EQ((*gpus)[0].sample->util_gpu_pct, 80);
  EXPECT_FALSE((*gpus)[1].job);

  controller_->OnJobExited(JobExitReport{job->id, 0, std::nullopt, clock_.Now(), "exited"});
  ASSERT_TRUE(WaitFor([&] { return StateIs(job->id, JobState::kCompleted); }));
  // Stored with the job, so it survives a restart.
  Boot();
  ASSERT_TRUE(Get(job->id).usage);
  EXPECT_EQ(Get(job->id).usage->energy_mj, 3'000);
  EXPECT_EQ(Get(job->id).usage->peak_util_pct, 80);
}

TEST_F(ControllerTest, GpuHealthChangesAreRecordedAndPersisted) {
  GpuSample failed = Reading(2, clock_.Now(), 0, 0);
  failed.health = GpuHealth::kFailed;
  failed.health_cause = "XID 79 (GPU has fallen off the bus)";
  controller_->OnSamples(NodeId("gpu01"), {failed});
  auto health_of_gpu2 = [&] {
    auto nodes = controller_->ListNodes(root_);
    return nodes.ok() && !nodes->empty() ? (*nodes)[0].gpus[2].health : GpuHealth::kOk;
  };
  ASSERT_TRUE(WaitFor([&] { return health_of_gpu2() == GpuHealth::kFailed; }));
  auto gpus = controller_->ListGpus(alice_);
  ASSERT_TRUE(gpus.ok());
  EXPECT_EQ((*gpus)[2].gpu.health, GpuHealth::kFailed);
  EXPECT_EQ((*gpus)[2].gpu.health_cause, "XID 79 (GPU has fallen off the bus)");

  // A failed GPU takes no work: a 3-GPU job gets the other three.
  auto job = controller_->Submit(alice_, Spec(3));
  ASSERT_TRUE(job.ok());
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  const Job launched = agent_->launched()[0];
  for (const GpuUuid& uuid : launched.allocation->gpus) {
    EXPECT_NE(uuid, GpuUuid("GPU-2"));
  }

  // The stored node keeps the health until the GPU reports again (here: after a restart the
  // agent's hello carries the fresh inventory, which this fake sends as ok).
  controller_.reset();
  auto store = OpenSqliteStore(dir_ / "state.db");
  ASSERT_TRUE(store.ok());
  auto nodes = (*store)->ListNodes();
  ASSERT_TRUE(nodes.ok());
  ASSERT_EQ(nodes->size(), 1U);
  EXPECT_EQ((*nodes)[0].gpus[2].health, GpuHealth::kFailed);
  auto events = (*store)->ListEvents(std::nullopt, 0, 1000);
  ASSERT_TRUE(events.ok());
  int health_events = 0;
  for (const Event& e : *events) {
    if (e.kind == "gpu_health") {
      ++health_events;
      EXPECT_NE(e.message.find("ok -> failed: XID 79"), std::string::npos) << e.message;
    }
  }
  EXPECT_EQ(health_events, 1);
}

// Issue #4's case on one full node: a high-priority job preempts low-priority work. The victim
// gets its checkpoint signal, goes back to the queue at its place with the cause shown, and
// runs again once the high job ends.
TEST_F(ControllerTest, HighPriorityPreemptsLowWithItsCheckpointSignal) {
  JobSpec low_spec = Spec(4, PriorityClass::kLow);
  low_spec.checkpoint_signal = 10;  // SIGUSR1
  auto low = controller_->Submit(alice_, low_spec);
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  controller_->OnJobStarted(low->id, 1, clock_.Now());
  ASSERT_TRUE(WaitFor([&] { return StateIs(low->id, JobState::kRunning); }));
  clock_.Advance(std::chrono::minutes(11));  // past the default 10-minute minimum run time

  auto high = controller_->Submit(bob_, Spec(2, PriorityClass::kHigh));
  ASSERT_TRUE(WaitFor([&] { return agent_->killed().size() == 1; }));
  EXPECT_EQ(agent_->killed()[0].first, low->id);
  EXPECT_NE(agent_->killed()[0].second.find("high priority beats low"), std::string::npos)
      << agent_->killed()[0].second;
  EXPECT_EQ(agent_->signals()[0], 10);
  // While the victim stops, the high job waits for it, and the victim's owner sees why.
  EXPECT_NE(Get(high->id).reason.find("once these jobs stop"), std::string::npos)
      << Get(high->id).reason;
  EXPECT_NE(Get(low->id).reason.find("high priority beats low"), std::string::npos);
  EXPECT_EQ(agent_->launched().size(), 1U);

  controller_->OnJobExited(JobExitReport{low->id, 0, std::nullopt, clock_.Now(), "USR1, exited"});
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 2; }));
  EXPECT_EQ(agent_->launched()[1].id, high->id);
  const Job requeued = Get(low->id);
  EXPECT_EQ(requeued.state, JobState::kPending);
  EXPECT_FALSE(requeued.allocation);
  EXPECT_FALSE(requeued.start_time);
  EXPECT_EQ(requeued.submit_time, low->submit_time);  // keeps its place in the queue
  EXPECT_NE(requeued.reason.find("requeued after preemption"), std::string::npos)
      << requeued.reason;
  EXPECT_NE(requeued.reason.find("high priority beats low"), std::string::npos);
  auto events = controller_->JobEvents(alice_, low->id);
  ASSERT_TRUE(events.ok());
  std::string history;
  for (const Event& e : *events) {
    history += e.kind + ": " + e.message + "\n";
  }
  EXPECT_NE(history.find("preempt: "), std::string::npos) << history;
  EXPECT_NE(history.find("sending SIGUSR1"), std::string::npos) << history;
  EXPECT_NE(history.find("RUNNING -> PREEMPTED"), std::string::npos) << history;
  EXPECT_NE(history.find("PREEMPTED -> PENDING"), std::string::npos) << history;
  ASSERT_TRUE(WaitFor([&] { return agent_->acked().size() == 1; }));

  controller_->OnJobStarted(high->id, 2, clock_.Now());
  controller_->OnJobExited(JobExitReport{high->id, 0, std::nullopt, clock_.Now(), "exited"});
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 3; }));
  EXPECT_EQ(agent_->launched()[2].id, low->id);
  controller_->OnJobStarted(low->id, 3, clock_.Now());
  ASSERT_TRUE(WaitFor([&] { return StateIs(low->id, JobState::kRunning); }));
  EXPECT_EQ(Get(low->id).reason.find("requeued"), std::string::npos) << Get(low->id).reason;
}

TEST_F(ControllerTest, NoPreemptionBeforeTheMinimumRunTime) {
  auto low = controller_->Submit(alice_, Spec(4, PriorityClass::kLow));
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  controller_->OnJobStarted(low->id, 1, clock_.Now());
  ASSERT_TRUE(WaitFor([&] { return StateIs(low->id, JobState::kRunning); }));
  clock_.Advance(std::chrono::minutes(9));
  auto high = controller_->Submit(bob_, Spec(4, PriorityClass::kHigh));
  ASSERT_TRUE(WaitFor([&] { return Get(high->id).reason.find("needs 4") != std::string::npos; }))
      << Get(high->id).reason;
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(agent_->killed().empty());
  // Once the victim has run 10 minutes a pass preempts it, although nothing else happened.
  clock_.Advance(std::chrono::minutes(1));
  ASSERT_TRUE(WaitFor([&] { return agent_->killed().size() == 1; }));
  EXPECT_EQ(agent_->killed()[0].first, low->id);
  EXPECT_EQ(agent_->signals()[0], 15);  // the default checkpoint signal: SIGTERM
}

TEST_F(ControllerTest, CancellingAJobBeingPreemptedEndsIt) {
  auto low = controller_->Submit(alice_, Spec(4, PriorityClass::kLow));
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  controller_->OnJobStarted(low->id, 1, clock_.Now());
  ASSERT_TRUE(WaitFor([&] { return StateIs(low->id, JobState::kRunning); }));
  clock_.Advance(std::chrono::minutes(11));
  auto high = controller_->Submit(bob_, Spec(4, PriorityClass::kHigh));
  ASSERT_TRUE(WaitFor([&] { return agent_->killed().size() == 1; }));
  ASSERT_TRUE(controller_->CancelJob(alice_, low->id).ok());
  controller_->OnJobExited(JobExitReport{low->id, 143, 15, clock_.Now(), "killed"});
  ASSERT_TRUE(WaitFor([&] { return StateIs(low->id, JobState::kCancelled); }));
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 2; }));
  EXPECT_EQ(agent_->launched()[1].id, high->id);
}

TEST_F(ControllerTest, JobWithoutTeamGoesToItsUsersTeam) {
  team_of_user_ = {{"alice", "ml"}};
  Boot();
  auto defaulted = controller_->Submit(alice_, Spec(1));
  JobSpec named = Spec(1);
  named.team = "vision";
  auto explicit_team = controller_->Submit(alice_, named);
  auto other = controller_->Submit(bob_, Spec(1));
  ASSERT_TRUE(defaulted.ok() && explicit_team.ok() && other.ok());
  EXPECT_EQ(defaulted->spec.team, "ml");
  EXPECT_EQ(explicit_team->spec.team, "vision");
  EXPECT_EQ(other->spec.team, "");  // bob is in no team: the default one
}

TEST_F(ControllerTest, StatsCountJobsQueueAndTeams) {
  auto a = controller_->Submit(alice_, Spec(4));
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  auto b = controller_->Submit(bob_, Spec(1, PriorityClass::kHigh));
  ASSERT_TRUE(a.ok() && b.ok());
  clock_.Advance(seconds(30));
  controller_->OnJobStarted(a->id, 1, clock_.Now());
  ASSERT_TRUE(WaitFor([&] { return StateIs(a->id, JobState::kRunning); }));
  clock_.Advance(seconds(10));

  auto stats = controller_->Stats(Caller{});
  ASSERT_TRUE(stats.ok()) << stats.error().ToString();
  auto count = [&](std::string_view state) {
    for (const auto& [name, n] : stats->jobs_by_state) {
      if (name == state) {
        return n;
      }
    }
    return -1;
  };
  EXPECT_EQ(count("RUNNING"), 1);
  EXPECT_EQ(count("PENDING"), 1);
  EXPECT_EQ(count("COMPLETED"), 0);
  EXPECT_EQ(stats->gpus, 4);
  EXPECT_EQ(stats->gpus_allocated, 4);
  ASSERT_EQ(stats->queue.size(), 3U);
  EXPECT_EQ(stats->queue[0].priority, "high");
  EXPECT_EQ(stats->queue[0].pending, 1);
  EXPECT_DOUBLE_EQ(stats->queue[0].oldest_wait_seconds, 40);
  EXPECT_EQ(stats->wait_count, 1);  // a started at once
  ASSERT_EQ(stats->teams.size(), 1U);
  EXPECT_EQ(stats->teams[0].team, "default");
  EXPECT_EQ(stats->teams[0].allocated_gpus, 4);
  EXPECT_EQ(stats->teams[0].pending_jobs, 1);
  // Started at t=30 (OnJobStarted), now t=40: 10 s x 4 GPUs.
  EXPECT_DOUBLE_EQ(stats->teams[0].gpu_seconds_total, 40);
}

}  // namespace
}  // namespace gf

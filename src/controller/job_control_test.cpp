// Job control through the controller (job_control.cpp, issue #24): hold and release (the
// owner's and an administrator's hold, across a restart), requeue of a running job, cancel by
// filter, and an update of a pending job. The controller runs on a ManualClock over SQLite; the
// test plays the agent (FakeAgent).
#include <filesystem>

#include <gtest/gtest.h>
#include <unistd.h>

#include "controller/controller_fixture.h"
#include "controller/controller_test_util.h"
#include "store/sqlite/sqlite_store.h"

namespace gf {
namespace {

constexpr int kGpus = 2;

JobSpec Spec(int gpus, std::string name = "") {
  JobSpec s;
  s.argv = {"sleep", "100"};
  s.workdir = "/tmp";
  s.request.gpus = gpus;
  s.name = std::move(name);
  return s;
}

class JobControlTest : public ControllerFixture {
 protected:
  JobControlTest() {
    gpus_ = kGpus;
    team_of_user_ = {{"alice", "cv"}, {"bob", "nlp"}};
  }

  JobId Submit(const Caller& caller, JobSpec spec) {
    auto job = controller_->Submit(caller, std::move(spec));
    EXPECT_TRUE(job.ok()) << job.error().ToString();
    return job.ok() ? job->id : JobId(0);
  }
  // A job of `caller` on both GPUs, started and RUNNING.
  JobId Running(const Caller& caller, JobSpec spec = Spec(kGpus)) {
    const std::size_t launches = agent_->launched().size();
    const JobId id = Submit(caller, std::move(spec));
    EXPECT_TRUE(WaitFor([&] { return agent_->launched().size() == launches + 1; }));
    controller_->OnJobStarted(id, 4242, clock_.Now());
    EXPECT_TRUE(WaitFor([&] { return Get(id).state == JobState::kRunning; }));
    return id;
  }
  void EndRun(JobId id) {
    controller_->OnJobExited(JobExitReport{id, 0, std::nullopt, clock_.Now(), "exited with 0"});
  }
};

TEST_F(JobControlTest, AHeldJobStaysPendingWithItsReasonUntilReleased) {
  const JobId blocker = Running(alice_);  // so that what follows waits
  const JobId id = Submit(alice_, Spec(1));
  auto held = controller_->HoldJob(alice_, id);
  ASSERT_TRUE(held.ok()) << held.error().ToString();
  EXPECT_EQ(held->held_by, "alice");
  EXPECT_EQ(held->reason, "held by alice: gpufleet release " + std::to_string(id.value()));
  ASSERT_TRUE(held->pending_reason.has_value());
  EXPECT_EQ(held->pending_reason->code, PendingCode::kHeld);
  // Free GPUs, and passes run: the job after it starts, it stays pending with its reason.
  const JobId other = Submit(alice_, Spec(1));
  EndRun(blocker);
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 2; }));
  EXPECT_EQ(agent_->launched()[1].id, other);
  EXPECT_EQ(Get(id).state, JobState::kPending);
  EXPECT_EQ(Get(id).reason, held->reason);

  auto released = controller_->ReleaseJob(alice_, id);
  ASSERT_TRUE(released.ok()) << released.error().ToString();
  EXPECT_EQ(released->held_by, "");
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 3; }));
  EXPECT_EQ(agent_->launched()[2].id, id);
  const auto events = controller_->JobEvents(alice_, id);
  ASSERT_TRUE(events.ok());
  std::vector<std::string> kinds;
  for (const Event& e : *events) {
    kinds.push_back(e.kind);
  }
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "hold"), kinds.end());
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "release"), kinds.end());
}

TEST_F(JobControlTest, AHoldOutlivesARestart) {
  const JobId blocker = Running(alice_);
  const JobId id = Submit(alice_, Spec(1));
  ASSERT_TRUE(controller_->HoldJob(alice_, id).ok());
  Boot({blocker});
  EXPECT_EQ(Get(id).held_by, "alice");
  // Passes after the restart, on free GPUs, keep it back with its reason.
  EndRun(blocker);
  ASSERT_TRUE(WaitFor([&] { return Get(blocker).state == JobState::kCompleted; }));
  ASSERT_TRUE(WaitFor([&] { return Get(id).pending_reason.has_value(); }));
  EXPECT_EQ(Get(id).pending_reason->code, PendingCode::kHeld);
  EXPECT_TRUE(agent_->launched().empty());
  ASSERT_TRUE(controller_->ReleaseJob(alice_, id).ok());
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
}

TEST_F(JobControlTest, AnAdministratorsHoldIsReleasedOnlyByAnAdministrator) {
  Running(alice_);
  const JobId id = Submit(alice_, Spec(1));
  auto held = controller_->HoldJob(root_, id);
  ASSERT_TRUE(held.ok()) << held.error().ToString();
  EXPECT_EQ(held->held_by, "root");
  auto refused = controller_->ReleaseJob(alice_, id);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kPermissionDenied);
  EXPECT_NE(refused.error().message.find("held by root, an administrator's hold"),
            std::string::npos)
      << refused.error().message;
  // Its owner's own hold does not replace the administrator's.
  ASSERT_TRUE(controller_->HoldJob(alice_, id).ok());
  EXPECT_EQ(Get(id).held_by, "root");
  ASSERT_TRUE(controller_->ReleaseJob(root_, id).ok());
  EXPECT_EQ(Get(id).held_by, "");
}

TEST_F(JobControlTest, OthersJobsAreNotFoundAndANonPendingJobNamesItsState) {
  const JobId running = Running(alice_);
  const JobId id = Submit(alice_, Spec(1));
  for (auto call :
       {&ClusterService::HoldJob, &ClusterService::ReleaseJob, &ClusterService::RequeueJob}) {
    auto r = (controller_.get()->*call)(bob_, id);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  }
  auto update = controller_->UpdateJob(bob_, id, JobUpdate{.name = "mine"});
  ASSERT_FALSE(update.ok());
  EXPECT_EQ(update.error().code, ErrorCode::kNotFound);

  auto hold = controller_->HoldJob(alice_, running);
  ASSERT_FALSE(hold.ok());
  EXPECT_EQ(hold.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(hold.error().message.find("is RUNNING, not PENDING"), std::string::npos)
      << hold.error().message;
  auto release = controller_->ReleaseJob(alice_, id);
  ASSERT_FALSE(release.ok());
  EXPECT_NE(release.error().message.find("is not held"), std::string::npos)
      << release.error().message;
}

TEST_F(JobControlTest, RequeueStopsARunningJobAndQueuesItAgainAtItsPlace) {
  JobSpec spec = Spec(kGpus);
  spec.checkpoint_signal = 10;  // SIGUSR1: it may save its work, as when preempted
  const JobId id = Running(alice_, spec);
  const Time submitted = Get(id).submit_time;
  auto requeued = controller_->RequeueJob(alice_, id);
  ASSERT_TRUE(requeued.ok()) << requeued.error().ToString();
  ASSERT_TRUE(WaitFor([&] { return agent_->killed().size() == 1; }));
  EXPECT_EQ(agent_->killed()[0].first, id);
  EXPECT_EQ(agent_->signals()[0], 10);
  // A second requeue while it stops says so.
  auto again = controller_->RequeueJob(alice_, id);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message.find("already being stopped"), std::string::npos);
  controller_->OnJobExited(JobExitReport{id, 138, 10, clock_.Now(), "killed by SIGUSR1"});
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 2; }));  // started again
  const Job job = Get(id);
  EXPECT_EQ(job.submit_time, submitted);
  EXPECT_EQ(agent_->launched()[1].id, id);
  // A pending job is not requeued.
  auto pending = controller_->RequeueJob(alice_, Submit(alice_, Spec(1)));
  ASSERT_FALSE(pending.ok());
  EXPECT_NE(pending.error().message.find("is PENDING, not RUNNING"), std::string::npos)
      << pending.error().message;
}

TEST_F(JobControlTest, RequeueRefusesANoRequeueJob) {
  JobSpec spec = Spec(kGpus);
  spec.requeue = false;
  const JobId id = Running(alice_, spec);
  auto r = controller_->RequeueJob(alice_, id);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(r.error().message.find("--no-requeue"), std::string::npos) << r.error().message;
  EXPECT_TRUE(agent_->killed().empty());
}

TEST_F(JobControlTest, CancelByFilterCancelsWhatTheCallerMayAndMatches) {
  const JobId running = Running(alice_, Spec(kGpus, "train"));
  const JobId a1 = Submit(alice_, Spec(1, "eval"));
  const JobId a2 = Submit(alice_, Spec(1, "train"));
  const JobId b1 = Submit(bob_, Spec(1, "train"));
  // Bob's job is not alice's to match; her running one is not PENDING.
  auto mine =
      controller_->CancelJobs(alice_, JobSelector{.state = JobState::kPending, .name = "train"});
  ASSERT_TRUE(mine.ok()) << mine.error().ToString();
  ASSERT_EQ(mine->size(), 1U);
  EXPECT_EQ((*mine)[0].id, a2);
  EXPECT_EQ(Get(a2).state, JobState::kCancelled);
  EXPECT_EQ(Get(b1).state, JobState::kPending);
  EXPECT_EQ(Get(a1).state, JobState::kPending);
  EXPECT_EQ(Get(running).state, JobState::kRunning);
  // Alice naming bob matches nothing she may see.
  auto theirs = controller_->CancelJobs(alice_, JobSelector{.user = "bob"});
  ASSERT_TRUE(theirs.ok());
  EXPECT_TRUE(theirs->empty());
  // Root, by team.
  auto team = controller_->CancelJobs(root_, JobSelector{.team = "nlp"});
  ASSERT_TRUE(team.ok());
  ASSERT_EQ(team->size(), 1U);
  EXPECT_EQ((*team)[0].id, b1);
  auto none = controller_->CancelJobs(alice_, JobSelector{});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, ErrorCode::kInvalidArgument);
}

TEST_F(JobControlTest, UpdateChangesAPendingJobAsASubmissionIsChecked) {
  const JobId blocker = Running(alice_);
  const JobId id = Submit(alice_, Spec(1, "small"));
  auto updated = controller_->UpdateJob(alice_,
                                        id,
                                        JobUpdate{.gpus = 2,
                                                  .time_limit = std::chrono::seconds(7200),
                                                  .priority = PriorityClass::kLow,
                                                  .name = "large"});
  ASSERT_TRUE(updated.ok()) << updated.error().ToString();
  EXPECT_EQ(updated->spec.request.gpus, 2);
  EXPECT_EQ(updated->spec.time_limit, std::chrono::seconds(7200));
  EXPECT_EQ(updated->spec.priority, PriorityClass::kLow);
  EXPECT_EQ(updated->spec.name, "large");
  // Stored: a restart reads it back so.
  Boot({blocker});
  EXPECT_EQ(Get(id).spec.request.gpus, 2);
  EXPECT_EQ(Get(id).spec.name, "large");
  // What a submission refuses, an update refuses, naming the field.
  auto too_big = controller_->UpdateJob(alice_, id, JobUpdate{.gpus = 3});
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.error().code, ErrorCode::kInvalidArgument);
  auto no_class =
      controller_->UpdateJob(alice_, id, JobUpdate{.priority = PriorityClass{"urgent"}});
  ASSERT_FALSE(no_class.ok());
  EXPECT_NE(no_class.error().message.find("urgent"), std::string::npos);
  auto other_team = controller_->UpdateJob(alice_, id, JobUpdate{.team = "nlp"});
  ASSERT_FALSE(other_team.ok());
  EXPECT_NE(other_team.error().message.find("team"), std::string::npos);
  auto nothing = controller_->UpdateJob(alice_, id, JobUpdate{});
  ASSERT_FALSE(nothing.ok());
  EXPECT_EQ(nothing.error().code, ErrorCode::kInvalidArgument);
  // A running job is refused, naming its state.
  auto running = controller_->UpdateJob(alice_, blocker, JobUpdate{.name = "x"});
  ASSERT_FALSE(running.ok());
  EXPECT_NE(running.error().message.find("is RUNNING, not PENDING"), std::string::npos)
      << running.error().message;
}

}  // namespace
}  // namespace gf

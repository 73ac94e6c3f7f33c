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

// `gpufleet cancel --signal` (scancel --signal): to a running job's agent, which delivers it;
// the job's state does not change, and an event says who sent what.
TEST_F(JobControlTest, SignalReachesARunningJobsAgentAndLeavesItRunning) {
  const JobId running = Running(alice_, Spec(kGpus, "train"));
  auto sent = controller_->SignalJob(alice_, running, 10);
  ASSERT_TRUE(sent.ok()) << sent.error().ToString();
  EXPECT_EQ(sent->state, JobState::kRunning);
  ASSERT_TRUE(WaitFor([&] { return agent_->delivered().size() == 1; }));
  EXPECT_EQ(agent_->delivered()[0], std::make_pair(running, 10));
  EXPECT_TRUE(agent_->killed().empty());
  const auto events = controller_->JobEvents(alice_, running);
  ASSERT_TRUE(events.ok());
  EXPECT_EQ(events->back().kind, "signal");
  EXPECT_EQ(events->back().message, "SIGUSR1 sent by alice");

  // A pending job is refused, naming its state; another user's job does not exist to bob; KILL
  // is cancel's.
  const JobId pending = Submit(alice_, Spec(1, "train"));
  auto refused = controller_->SignalJob(alice_, pending, 10);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(
      refused.error().message,
      "job " + std::to_string(pending.value()) + " is pending: --signal reaches running jobs only");
  EXPECT_EQ(controller_->SignalJob(bob_, running, 10).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(controller_->SignalJob(alice_, running, 9).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(controller_->SignalJob(root_, running, 12).ok(), true);  // an admin: any job

  // By filter: the running one gets it, the pending one is skipped and named.
  auto matched = controller_->SignalJobs(alice_, JobSelector{.name = "train"}, 12);
  ASSERT_TRUE(matched.ok()) << matched.error().ToString();
  ASSERT_EQ(matched->signalled.size(), 1U);
  EXPECT_EQ(matched->signalled[0].id, running);
  ASSERT_EQ(matched->skipped.size(), 1U);
  EXPECT_EQ(matched->skipped[0].id, pending);
  ASSERT_TRUE(WaitFor([&] { return agent_->delivered().size() == 3; }));
  EXPECT_EQ(agent_->delivered()[2], std::make_pair(running, 12));
  EXPECT_EQ(controller_->SignalJobs(alice_, JobSelector{}, 10).error().code,
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(Get(running).state, JobState::kRunning);
}

// What a run used of its host comes with its exit and is kept with the job; a second run adds.
TEST_F(JobControlTest, HostUsageOfEachRunIsKeptWithTheJob) {
  const JobId id = Running(alice_);
  ASSERT_TRUE(controller_->RequeueJob(alice_, id).ok());
  JobExitReport first{id, 143, 15, clock_.Now(), "preempted"};
  first.host_usage = HostUsage{.cpu_ms = 1500, .peak_memory_kib = 4096};
  controller_->OnJobExited(first);
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 2; }));
  controller_->OnJobStarted(id, 4243, clock_.Now());
  ASSERT_TRUE(WaitFor([&] { return Get(id).state == JobState::kRunning; }));
  JobExitReport second{id, 0, std::nullopt, clock_.Now(), "exited with 0"};
  second.host_usage = HostUsage{.cpu_ms = 500, .peak_memory_kib = 1024};
  controller_->OnJobExited(second);
  ASSERT_TRUE(WaitFor([&] { return Get(id).state == JobState::kCompleted; }));
  EXPECT_EQ(Get(id).host_usage, (HostUsage{.cpu_ms = 2000, .peak_memory_kib = 4096}));
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

#include "lifecycle/apply_decisions.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lifecycle/job_views.h"

namespace gf {
namespace {

class NoShell final : public JobBookListener {
 public:
  void OnReleasing(Job& /*job*/) override {}
  void OnEnded(const Job& /*job*/) override {}
  void OnRequeueing(const Job& /*job*/) override {}
};

Job Pending(std::int64_t id) {
  Job job;
  job.id = JobId(id);
  job.owner = Owner{1000, 1000, "ana"};
  job.spec.argv = {"train.py"};
  job.spec.request.gpus = 1;
  job.spec.team = "vision";
  job.spec.time_limit = std::chrono::hours(2);
  job.submit_time = Time(std::chrono::seconds(100));
  return job;
}

Allocation On(const std::string& node) {
  return Allocation{.node = NodeId(node), .gpus = {GpuUuid("GPU-" + node + "-0")}};
}

class ApplyDecisionsTest : public ::testing::Test {
 protected:
  Time now_ = Time(std::chrono::seconds(1000));
  NoShell shell_;
  JobBook book_{JobBookOptions{.policy = {}, .kill_grace = std::chrono::seconds(10)},
                [this] { return now_; },
                shell_};
  std::function<std::string(const StartDecision&)> cause_ = [](const StartDecision& s) {
    return "starting on " + s.allocation.node.value();
  };
};

TEST_F(ApplyDecisionsTest, PreemptionsStopTheirVictimsAndStartsStartTheirJobs) {
  book_.Add(Pending(1));
  book_.Start(book_.At(JobId(1)), On("n1"), true, "starting on n1");
  book_.Add(Pending(2));
  const AppliedDecisions applied = ApplyDecisions(
      book_,
      {PreemptDecision{.victim = JobId(1), .for_job = JobId(2), .cause = "preempted for job 2"}},
      {StartDecision{.job = JobId(2), .allocation = On("n2"), .preemptible = false}},
      cause_);
  EXPECT_FALSE(applied.stale);
  ASSERT_EQ(applied.preempted.size(), 1U);
  EXPECT_EQ(applied.started, (std::vector<JobId>{JobId(2)}));
  EXPECT_TRUE(book_.Stops().Stopping(JobId(1)));
  EXPECT_EQ(book_.TakeKills().size(), 1U);
  EXPECT_EQ(book_.At(JobId(2)).state, JobState::kStarting);
  EXPECT_EQ(book_.At(JobId(2)).reason, "starting on n2");
}

// Only an incremental pass on a stale copy proposes these: nothing is done twice, and the
// caller is told to decide again with a full pass.
TEST_F(ApplyDecisionsTest, DecisionsTheBookContradictsAreSkippedAndMarkedStale) {
  book_.Add(Pending(1));
  book_.Start(book_.At(JobId(1)), On("n1"), false, "starting on n1");
  const AppliedDecisions applied = ApplyDecisions(
      book_,
      {PreemptDecision{.victim = JobId(7), .for_job = JobId(1), .cause = "gone"}},  // not in book
      {StartDecision{.job = JobId(1), .allocation = On("n2"), .preemptible = false}},
      cause_);
  EXPECT_TRUE(applied.stale);
  EXPECT_TRUE(applied.preempted.empty());
  EXPECT_TRUE(applied.started.empty());
  EXPECT_EQ(applied.stale_starts, (std::vector<JobId>{JobId(1)}));
  EXPECT_EQ(book_.At(JobId(1)).allocation->node, NodeId("n1"));  // not started twice
}

TEST_F(ApplyDecisionsTest, AWaitingJobGetsThePassReasonAfterItsRequeueCause) {
  book_.Add(Pending(1));
  Job& job = book_.At(JobId(1));
  book_.Start(job, On("n1"), false, "starting on n1");
  book_.StopToRequeue(job, JobState::kPreempted, "preemption", "preempted by job 9", kSigTerm);
  book_.Exited(job, 0, "exited with status 0", now_, "agent:n1");
  NotePending(
      book_,
      {PendingDecision{.job = JobId(1),
                       .reason = PendingReason::Of(PendingCode::kNoFreeGpus, "waiting for 1 GPU"),
                       .estimated_start = now_ + std::chrono::minutes(5),
                       .start_estimate = StartEstimate{.earliest = now_ + std::chrono::minutes(2),
                                                       .latest = now_ + std::chrono::minutes(5),
                                                       .basis = StartBasis::kPredictions},
                       .reservation = std::nullopt}});
  EXPECT_EQ(job.reason, "requeued after preemption (preempted by job 9); waiting for 1 GPU");
  EXPECT_EQ(job.estimated_start, now_ + std::chrono::minutes(5));
  ASSERT_TRUE(job.start_estimate.has_value());
  EXPECT_EQ(job.start_estimate->earliest, now_ + std::chrono::minutes(2));
  EXPECT_EQ(job.start_estimate->basis, StartBasis::kPredictions);
}

// What a pass sees of a job is what it was submitted with, its limit capped by its class, and
// whether it is being stopped.
TEST_F(ApplyDecisionsTest, JobViewsCarryWhatThePassJudgesBy) {
  Job job = Pending(3);
  job.prediction = JobPrediction{.expected = std::chrono::minutes(20),
                                 .high = std::chrono::minutes(50),
                                 .basis = "user",
                                 .explanation = {}};
  const QueuedJob queued = AsQueued(book_, job);
  EXPECT_EQ(queued.team, "vision");
  EXPECT_EQ(queued.user, "ana");
  EXPECT_EQ(queued.time_limit, std::chrono::hours(2));
  ASSERT_TRUE(queued.estimate.has_value());
  EXPECT_EQ(queued.estimate->high, std::chrono::minutes(50));
  book_.Add(std::move(job));
  Job& held = book_.At(JobId(3));
  book_.Start(held, On("n1"), true, "starting on n1");
  RunningJob running = AsRunning(book_, held, now_);
  EXPECT_EQ(running.start_time, now_);  // STARTING: as young as a job can be
  EXPECT_TRUE(running.preemptible);
  EXPECT_FALSE(running.stopping);
  book_.RequestKill(held, JobState::kCancelled, "cancelled by ana", kSigTerm);
  EXPECT_TRUE(AsRunning(book_, held, now_).stopping);
}

}  // namespace
}  // namespace gf

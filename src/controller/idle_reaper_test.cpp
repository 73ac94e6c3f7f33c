// IdleReaper alone (idle_reaper.h), on a manual clock: a warning after `after`, withdrawn when
// the GPUs are used again, a reaping at the grace's end (requeue or cancel), one judgment per
// second unless a deadline is due, and warnings dropped for jobs no longer judged.
#include "controller/idle_reaper.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model/kube_pod.h"

namespace gf {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

class IdleReaperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    node_.name = NodeId("gpu01");
    for (int index = 0; index < 2; ++index) {
      Gpu gpu;
      gpu.index = index;
      gpu.uuid = GpuUuid(index == 0 ? "GPU-a" : "GPU-b");
      node_.gpus.push_back(gpu);
    }
    job_.id = JobId(7);
    job_.spec.name = "notebook";
    job_.state = JobState::kRunning;
    job_.reason = "running";
    job_.allocation = Allocation{.node = node_.name, .gpus = {GpuUuid("GPU-a"), GpuUuid("GPU-b")}};
    idle_from_ = clock_.Now();
  }

  // Judges the one job at the clock's now, idle since `since` (nullopt: in use).
  std::vector<IdleVerdict> Judge(std::optional<Time> since) {
    return reaper_.Judge(
        {IdleCandidate{.job = &job_, .node = &node_, .rule = rule_, .idle_since = since}},
        clock_.Now());
  }

  ManualClock clock_;
  IdleReaper reaper_;
  Node node_;
  Job job_;
  IdleReaping rule_{.after = minutes(30), .grace = minutes(10), .util_below_pct = 5};
  Time idle_from_{};
};

TEST_F(IdleReaperTest, WarnsOnceIdlePastItsThreshold) {
  clock_.Advance(minutes(29));
  EXPECT_THAT(Judge(idle_from_), IsEmpty());
  EXPECT_EQ(reaper_.NextAt(), idle_from_ + minutes(30));  // the controller wakes up for it

  clock_.Advance(minutes(1));
  const std::vector<IdleVerdict> verdicts = Judge(idle_from_);
  ASSERT_THAT(verdicts, SizeIs(1));
  const IdleVerdict& warn = verdicts[0];
  EXPECT_EQ(warn.job, JobId(7));
  EXPECT_EQ(warn.step, IdleStep::kWarn);
  EXPECT_EQ(warn.event,
            "GPUs 0,1 on gpu01 idle for 30m (no process, or under 5 % utilisation with no memory "
            "change; the threshold is 30m); requeued in 10m unless they are used");
  EXPECT_EQ(warn.reason, "idle warning: " + warn.event);
  EXPECT_EQ(warn.notify_kind, NotifyKind::kIdleWarning);
  EXPECT_EQ(warn.notify_subject,
            "job 7 (notebook) is idle: requeued in 10m unless its GPUs are used");
  EXPECT_TRUE(reaper_.Warned(job_.id));
  EXPECT_EQ(reaper_.NextAt(), clock_.Now() + minutes(10));  // the grace's end

  clock_.Advance(minutes(1));
  job_.reason = warn.reason;                  // as the controller applies it
  EXPECT_THAT(Judge(idle_from_), IsEmpty());  // warned once, not again
}

TEST_F(IdleReaperTest, WithdrawsTheWarningWhenTheGpusAreUsedAgain) {
  clock_.Advance(minutes(30));
  ASSERT_THAT(Judge(idle_from_), SizeIs(1));
  job_.reason = "idle warning: ...";

  clock_.Advance(minutes(2));
  std::vector<IdleVerdict> verdicts = Judge(std::nullopt);  // in use
  ASSERT_THAT(verdicts, SizeIs(1));
  EXPECT_EQ(verdicts[0].step, IdleStep::kWithdraw);
  EXPECT_EQ(verdicts[0].reason, "running");  // the reason before the warning comes back
  EXPECT_THAT(verdicts[0].event, HasSubstr("withdrawn"));
  EXPECT_TRUE(verdicts[0].notify_subject.empty());
  EXPECT_FALSE(reaper_.Warned(job_.id));

  // Idle again from a later instant: active in between, so the threshold counts afresh.
  job_.reason = "running";
  clock_.Advance(minutes(20));
  EXPECT_THAT(Judge(clock_.Now() - minutes(5)), IsEmpty());
  EXPECT_FALSE(reaper_.Warned(job_.id));
}

TEST_F(IdleReaperTest, AnotherIdleStartWithdrawsAndMayWarnAgainAtOnce) {
  clock_.Advance(minutes(30));
  ASSERT_THAT(Judge(idle_from_), SizeIs(1));
  job_.reason = "idle warning: ...";
  // Used briefly, then idle for more than the threshold again before the next judgment.
  clock_.Advance(minutes(45));
  const std::vector<IdleVerdict> verdicts = Judge(idle_from_ + minutes(40));
  ASSERT_THAT(verdicts, SizeIs(2));
  EXPECT_EQ(verdicts[0].step, IdleStep::kWithdraw);
  EXPECT_EQ(verdicts[1].step, IdleStep::kWarn);
  job_.reason = verdicts[1].reason;
  // The new warning restores the reason from before the first one, not the first warning.
  clock_.Advance(minutes(1));
  const std::vector<IdleVerdict> used = Judge(std::nullopt);
  ASSERT_THAT(used, SizeIs(1));
  EXPECT_EQ(used[0].reason, "running");
}

TEST_F(IdleReaperTest, RequeuesAtTheGracesEnd) {
  clock_.Advance(minutes(30));
  ASSERT_THAT(Judge(idle_from_), SizeIs(1));
  clock_.Advance(minutes(10) - seconds(1));
  EXPECT_THAT(Judge(idle_from_), IsEmpty());

  clock_.Advance(seconds(1));
  const std::vector<IdleVerdict> verdicts = Judge(idle_from_);
  ASSERT_THAT(verdicts, SizeIs(1));
  const IdleVerdict& reap = verdicts[0];
  EXPECT_EQ(reap.step, IdleStep::kReap);
  EXPECT_EQ(reap.action, IdleAction::kRequeue);
  EXPECT_EQ(reap.cause,
            "GPUs 0,1 on gpu01 idle for 40m (no process, or under 5 % utilisation with no memory "
            "change; the threshold is 30m), past the 10m grace after the warning");
  EXPECT_EQ(reap.reason, "idle reaping: " + reap.cause);
  EXPECT_EQ(reap.notify_kind, NotifyKind::kPreempted);
  EXPECT_EQ(reap.notify_subject, "job 7 (notebook) was requeued: its GPUs stayed idle");
  EXPECT_EQ(reap.notify_message, reap.reason);
  EXPECT_FALSE(reaper_.Warned(job_.id));
}

TEST_F(IdleReaperTest, CancelsAtTheGracesEndWithActionCancel) {
  rule_.action = IdleAction::kCancel;
  clock_.Advance(minutes(30));
  const std::vector<IdleVerdict> warned = Judge(idle_from_);
  ASSERT_THAT(warned, SizeIs(1));
  EXPECT_THAT(warned[0].event, HasSubstr("; cancelled in 10m unless they are used"));
  clock_.Advance(minutes(10));
  const std::vector<IdleVerdict> verdicts = Judge(idle_from_);
  ASSERT_THAT(verdicts, SizeIs(1));
  EXPECT_EQ(verdicts[0].step, IdleStep::kReap);
  EXPECT_EQ(verdicts[0].action, IdleAction::kCancel);
  EXPECT_TRUE(verdicts[0].notify_subject.empty());  // its end is notified as such
}

TEST_F(IdleReaperTest, NoRequeueJobIsToldItWillBeCancelled) {
  job_.spec.requeue = false;
  clock_.Advance(minutes(30));
  const std::vector<IdleVerdict> warned = Judge(idle_from_);
  ASSERT_THAT(warned, SizeIs(1));
  EXPECT_THAT(warned[0].event, HasSubstr("; cancelled (--no-requeue) in 10m"));
}

TEST_F(IdleReaperTest, ZeroGraceWarnsAndReapsAtOnce) {
  rule_.grace = seconds(0);
  clock_.Advance(minutes(30));
  const std::vector<IdleVerdict> verdicts = Judge(idle_from_);
  ASSERT_THAT(verdicts, SizeIs(2));
  EXPECT_EQ(verdicts[0].step, IdleStep::kWarn);
  EXPECT_EQ(verdicts[1].step, IdleStep::kReap);
}

TEST_F(IdleReaperTest, JudgesAtMostOnceASecondUnlessADeadlineIsDue) {
  EXPECT_TRUE(reaper_.Due(clock_.Now()));  // never judged
  clock_.Advance(minutes(29) + seconds(59) + Millis(500));
  EXPECT_THAT(Judge(idle_from_), IsEmpty());
  EXPECT_FALSE(reaper_.Due(clock_.Now()));
  clock_.Advance(Millis(400));
  EXPECT_FALSE(reaper_.Due(clock_.Now()));  // 400 ms since, and the threshold 100 ms away
  clock_.Advance(Millis(100));
  EXPECT_TRUE(reaper_.Due(clock_.Now()));  // the threshold is due before the second is up
  ASSERT_THAT(Judge(idle_from_), SizeIs(1));
  EXPECT_FALSE(reaper_.Due(clock_.Now() + Millis(999)));
  EXPECT_TRUE(reaper_.Due(clock_.Now() + IdleReaper::kCheckInterval));
}

TEST_F(IdleReaperTest, UnknownNodeAndOneGpu) {
  job_.allocation->gpus = {GpuUuid("GPU-b")};
  clock_.Advance(minutes(30));
  std::vector<IdleVerdict> verdicts = Judge(idle_from_);
  ASSERT_THAT(verdicts, SizeIs(1));
  EXPECT_THAT(verdicts[0].event, HasSubstr("GPU 1 on gpu01 idle for 30m"));

  IdleReaper other;
  verdicts = other.Judge(
      {IdleCandidate{.job = &job_, .node = nullptr, .rule = rule_, .idle_since = idle_from_}},
      clock_.Now());
  ASSERT_THAT(verdicts, SizeIs(1));
  EXPECT_THAT(verdicts[0].event, HasSubstr("its GPUs on gpu01 idle for 30m"));
}

TEST_F(IdleReaperTest, PruneDropsWarningsOfJobsNoLongerJudged) {
  clock_.Advance(minutes(30));
  ASSERT_THAT(Judge(idle_from_), SizeIs(1));
  reaper_.Prune([](JobId) { return true; });
  EXPECT_TRUE(reaper_.Warned(job_.id));
  reaper_.Prune([](JobId) { return false; });  // e.g. requeued by a preemption
  EXPECT_FALSE(reaper_.Warned(job_.id));
  // Running again, still idle since the same instant: warned afresh, never withdrawn.
  clock_.Advance(seconds(1));
  const std::vector<IdleVerdict> verdicts = Judge(idle_from_);
  ASSERT_THAT(verdicts, SizeIs(1));
  EXPECT_EQ(verdicts[0].step, IdleStep::kWarn);
}

// A Kubernetes server's reaper stops only a pod whose rule says delete_pod or scale_owner (the
// admin's opt-in), saying how in its warning; requeue and cancel only warn there, and the pod
// actions only warn anywhere else.
TEST_F(IdleReaperTest, OnKubernetesOnlyPodActionsReap) {
  job_.spec.env = KubePodJobEnv(KubePod{.uid = "00000000-002a-4000-8000-0000000000aa",
                                        .pod_namespace = "dev",
                                        .name = "notebook-alice"});
  const auto judge = [&](IdleReaper& reaper, IdleAction action) {
    IdleReaping rule = rule_;
    rule.action = action;
    const IdleCandidate c{.job = &job_, .node = &node_, .rule = rule, .idle_since = idle_from_};
    std::vector<IdleVerdict> all = reaper.Judge({c}, idle_from_ + minutes(30));
    for (IdleVerdict& v : reaper.Judge({c}, idle_from_ + minutes(41))) {
      all.push_back(std::move(v));
    }
    return all;
  };
  IdleReaper kubernetes(/*kubernetes=*/true);
  std::vector<IdleVerdict> verdicts = judge(kubernetes, IdleAction::kDeletePod);
  ASSERT_THAT(verdicts, SizeIs(2));
  EXPECT_THAT(verdicts[0].event,
              HasSubstr("; pod dev/notebook-alice deleted in 10m unless they are used"));
  EXPECT_EQ(verdicts[1].step, IdleStep::kReap);
  EXPECT_EQ(verdicts[1].action, IdleAction::kDeletePod);

  job_.id = JobId(8);  // a fresh job for each rule
  verdicts = judge(kubernetes, IdleAction::kRequeue);
  ASSERT_THAT(verdicts, SizeIs(1));
  EXPECT_EQ(verdicts[0].step, IdleStep::kWarn);
  EXPECT_THAT(verdicts[0].event,
              HasSubstr("; reported only: gpufleet stops a pod only where idle_action is"));

  job_.id = JobId(9);
  IdleReaper plain;
  verdicts = judge(plain, IdleAction::kScaleOwner);
  ASSERT_THAT(verdicts, SizeIs(1));
  EXPECT_EQ(verdicts[0].step, IdleStep::kWarn);
}

}  // namespace
}  // namespace gf

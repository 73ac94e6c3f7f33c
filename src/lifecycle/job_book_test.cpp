#include "lifecycle/job_book.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lifecycle/job_views.h"

namespace gf {
namespace {

// Records what the book asks of its shell, in order.
class Calls final : public JobBookListener {
 public:
  void OnReleasing(Job& job) override {
    // The run is still on the job here: a shell accounts its GPU-time from it.
    said.push_back("release " + std::to_string(job.id.value()) +
                   (job.allocation ? " on " + job.allocation->node.value() : " (no allocation)"));
  }
  void OnEnded(const Job& job) override {
    said.push_back("ended " + std::to_string(job.id.value()) + " " +
                   std::string(ToString(job.state)));
  }
  void OnRequeueing(const Job& job) override {
    said.push_back("requeue " + std::to_string(job.id.value()));
  }
  std::vector<std::string> said;
};

Job Pending(std::int64_t id, std::optional<std::chrono::seconds> limit = std::nullopt) {
  Job job;
  job.id = JobId(id);
  job.state = JobState::kPending;
  job.owner = Owner{1000, 1000, "ana"};
  job.spec.argv = {"train.py"};
  job.spec.request.gpus = 1;
  job.spec.time_limit = limit;
  job.submit_time = Time(std::chrono::seconds(100));
  return job;
}

Allocation On(const std::string& node) {
  return Allocation{.node = NodeId(node), .gpus = {GpuUuid("GPU-" + node + "-0")}};
}

class JobBookTest : public ::testing::Test {
 protected:
  Time now_ = Time(std::chrono::seconds(1000));
  Calls calls_;
  JobBook book_{JobBookOptions{.policy = {}, .kill_grace = std::chrono::seconds(10)},
                [this] { return now_; },
                calls_};

  // Job `id` added, started on `node` and running since now.
  Job& Running(std::int64_t id,
               const std::string& node = "n1",
               std::optional<std::chrono::seconds> limit = std::nullopt) {
    book_.Add(Pending(id, limit));
    Job& job = book_.At(JobId(id));
    book_.Start(job, On(node), false, "starting on " + node);
    book_.Started(job, 4242, now_, "agent:" + node);
    return job;
  }

  std::vector<std::string> States() {
    std::vector<std::string> out;
    for (const Event& e : book_.TakeJournal().events) {
      if (e.kind == "state") {
        out.push_back(std::to_string(e.job->value()) + " " + e.message);
      }
    }
    return out;
  }
};

TEST_F(JobBookTest, AStartAndAnExitWriteTheJobOnceAndLogEachChange) {
  Job& job = Running(1);
  EXPECT_EQ(book_.Holding(), (std::set<JobId>{JobId(1)}));
  book_.Exited(job, 0, "exited with status 0", now_ + std::chrono::seconds(5), "agent:n1");
  EXPECT_EQ(job.state, JobState::kCompleted);
  EXPECT_TRUE(book_.Holding().empty());
  const Journal journal = book_.TakeJournal();
  ASSERT_EQ(journal.jobs.size(), 1U);  // added, started, running, completed: written once, last
  EXPECT_EQ(journal.jobs[0].state, JobState::kCompleted);
  ASSERT_EQ(journal.events.size(), 3U);
  EXPECT_EQ(journal.events[0].message, "PENDING -> STARTING: starting on n1");
  EXPECT_EQ(journal.events[2].message, "RUNNING -> COMPLETED: exited with status 0");
  EXPECT_EQ(calls_.said, (std::vector<std::string>{"release 1 on n1", "ended 1 COMPLETED"}));
  // It stays until the turn's commit, then leaves the table.
  EXPECT_NE(book_.Find(JobId(1)), nullptr);
  book_.EraseEnded();
  EXPECT_EQ(book_.Find(JobId(1)), nullptr);
}

TEST_F(JobBookTest, CancellingARunningJobStopsItAndItEndsCancelledWhateverItsExit) {
  Job& job = Running(2, "n3");
  book_.Cancel(job, "ana");
  EXPECT_EQ(job.state, JobState::kRunning);  // it holds its GPUs until its processes exit
  EXPECT_EQ(book_.TakeKills(),
            (std::vector<KillOrder>{KillOrder{.job = JobId(2),
                                              .node = NodeId("n3"),
                                              .cause = "cancelled by ana",
                                              .first_signal = kSigTerm}}));
  book_.Exited(job, 0, "cancelled by ana: exited with status 0", now_, "agent:n3");
  EXPECT_EQ(job.state, JobState::kCancelled);
  // A second cancel of a pending job ends it at once, with no kill.
  book_.Add(Pending(3));
  book_.Cancel(book_.At(JobId(3)), "ana");
  EXPECT_EQ(book_.At(JobId(3)).state, JobState::kCancelled);
  EXPECT_TRUE(book_.TakeKills().empty());
}

TEST_F(JobBookTest, APreemptedJobGoesBackToTheQueueAtItsPlaceWithItsRunForgotten) {
  Job& job = Running(4);
  book_.StopToRequeue(job, JobState::kPreempted, "preemption", "preempted by job 9", 10);
  EXPECT_EQ(book_.TakeKills().at(0).first_signal, 10);
  book_.Exited(job, 0, "exited with status 0", now_, "agent:n1");
  EXPECT_EQ(job.state, JobState::kPending);
  EXPECT_EQ(job.submit_time, Time(std::chrono::seconds(100)));  // its place in the order
  EXPECT_FALSE(job.allocation.has_value());
  EXPECT_FALSE(job.start_time.has_value());
  EXPECT_EQ(calls_.said, (std::vector<std::string>{"release 4 on n1", "requeue 4"}));
  EXPECT_EQ(*book_.Stops().RequeueCause(job.id), "requeued after preemption (preempted by job 9)");
  EXPECT_EQ(States().back(),
            "4 PREEMPTED -> PENDING: requeued after preemption: preempted by job 9");
}

// A requeued job's earlier runs are its attained service (the stock policy's remaining work,
// 2D-LAS' queue): GPUs held x run time of each run that ended, as its usage record counts it.
TEST_F(JobBookTest, ARequeuedJobKeepsTheServiceOfItsEarlierRuns) {
  book_.Add(Pending(4));
  Job& job = book_.At(JobId(4));
  Allocation two = On("n1");
  two.gpus.emplace_back("GPU-n1-1");
  book_.Start(job, two, false, "starting on n1");
  EXPECT_EQ(book_.EarlierRunsGpuSeconds(job.id), 0);
  book_.Started(job, 4242, now_, "agent:n1");
  now_ += std::chrono::seconds(100);
  book_.StopToRequeue(job, JobState::kPreempted, "preemption", "preempted by job 9", 10);
  now_ += std::chrono::seconds(10);  // the kill grace: it ran until it exited
  book_.Exited(job, 0, "exited with status 0", now_, "agent:n1");
  EXPECT_EQ(book_.EarlierRunsGpuSeconds(job.id), 2 * 110.0);
  EXPECT_EQ(AsQueued(book_, job).attained_gpu_seconds, 2 * 110.0);

  // Its second run is lost with its node after 30 s on one GPU: counted until the loss.
  book_.Start(job, On("n2"), false, "starting on n2");
  book_.Started(job, 4243, now_, "agent:n2");
  EXPECT_EQ(AsRunning(book_, job, now_).attained_gpu_seconds, 2 * 110.0);  // earlier runs only
  now_ += std::chrono::seconds(30);
  book_.Lose(job, "node n2 down");
  EXPECT_EQ(job.state, JobState::kPending);
  EXPECT_EQ(book_.EarlierRunsGpuSeconds(job.id), 2 * 110.0 + 30);

  // A run that never started (STARTING, stopped) held its GPUs for no run time.
  book_.Start(job, On("n3"), false, "starting on n3");
  book_.Cancel(job, "ana");
  book_.Lose(job, "node n3 down");
  EXPECT_EQ(job.state, JobState::kCancelled);
  EXPECT_EQ(book_.EarlierRunsGpuSeconds(job.id), 2 * 110.0 + 30);
  book_.EraseEnded();                                   // `job` is gone with it
  EXPECT_EQ(book_.EarlierRunsGpuSeconds(JobId(4)), 0);  // forgotten with the job

  // A restart restores active jobs' earlier runs from their usage records.
  book_.Add(Pending(8));
  book_.RestoreEarlierRuns({{JobId(8), 640.0}, {JobId(99), 1.0}});  // 99 is not active
  EXPECT_EQ(book_.EarlierRunsGpuSeconds(JobId(8)), 640.0);
  EXPECT_EQ(book_.EarlierRunsGpuSeconds(JobId(99)), 0);
}

TEST_F(JobBookTest, AJobThatMustNotRunTwiceEndsInsteadOfBeingRequeued) {
  book_.Add(Pending(5));
  Job& job = book_.At(JobId(5));
  job.spec.requeue = false;
  book_.Start(job, On("n1"), false, "starting");
  book_.Lose(job, "node n1 down");
  EXPECT_EQ(job.state, JobState::kFailed);
  EXPECT_EQ(job.reason, "node n1 down; not requeued (--no-requeue)");
}

TEST_F(JobBookTest, ATimeLimitStopsTheJobOnceAtItsDeadline) {
  Job& job = Running(6, "n1", std::chrono::seconds(60));
  EXPECT_EQ(book_.NextDeadline(), now_ + std::chrono::seconds(60));
  now_ += std::chrono::seconds(59);
  book_.EnforceTimeLimits();
  EXPECT_TRUE(book_.TakeKills().empty());
  now_ += std::chrono::seconds(1);
  book_.EnforceTimeLimits();
  book_.EnforceTimeLimits();  // already being stopped: no second kill
  EXPECT_EQ(book_.TakeKills().size(), 1U);
  EXPECT_FALSE(book_.NextDeadline().has_value());
  book_.Exited(job, 143, "time limit 1m reached: killed by signal 15", now_, "agent:n1");
  EXPECT_EQ(job.state, JobState::kTimeout);
  EXPECT_EQ(job.reason, "time limit 1m reached (killed by signal 15)");
}

// The simulator's deadline event names one job: only it is judged, by the same rule.
TEST_F(JobBookTest, OneJobsTimeLimitIsEnforcedAloneByTheSameRule) {
  Job& late = Running(7, "n1", std::chrono::seconds(60));
  Running(8, "n2", std::chrono::seconds(30));
  now_ += std::chrono::seconds(59);
  book_.EnforceTimeLimit(late);  // not yet at its limit
  EXPECT_TRUE(book_.TakeKills().empty());
  now_ += std::chrono::seconds(1);
  book_.EnforceTimeLimit(late);
  book_.EnforceTimeLimit(late);  // being stopped already
  const std::vector<KillOrder> kills = book_.TakeKills();
  ASSERT_EQ(kills.size(), 1U);  // job 8, past its limit too, was not asked about
  EXPECT_EQ(kills[0].job, JobId(7));
  EXPECT_EQ(kills[0].cause, "time limit 1m reached");
}

// A shell with no store (the simulator) keeps no journal, and the job's life is the same.
TEST(JobBookWithoutJournalTest, WritesAndEventsAreDroppedAndTheLifeIsTheSame) {
  Calls calls;
  const Time now = Time(std::chrono::seconds(1000));
  JobBook book(
      JobBookOptions{.policy = {}, .kill_grace = std::chrono::seconds(10), .journal = false},
      [now] { return now; },
      calls);
  book.Add(Pending(1));
  Job& job = book.At(JobId(1));
  book.Start(job, On("n1"), false, "starting on n1");
  book.Started(job, 4242, now, "agent:n1");
  book.Record(JobId(1), "note", "test", "not kept");
  book.Exited(job, 0, "exited with status 0", now, "agent:n1");
  EXPECT_EQ(job.state, JobState::kCompleted);
  EXPECT_EQ(calls.said, (std::vector<std::string>{"release 1 on n1", "ended 1 COMPLETED"}));
  const Journal journal = book.TakeJournal();
  EXPECT_TRUE(journal.jobs.empty());
  EXPECT_TRUE(journal.events.empty());
}

TEST_F(JobBookTest, AGangMemberThatFailsCancelsTheOthers) {
  for (int rank = 0; rank < 2; ++rank) {
    Job member = Pending(10 + rank);
    member.spec.gang = GangMember{.gang_job = JobId(10), .rank = rank, .size = 2};
    book_.Add(std::move(member));
    book_.Start(book_.At(JobId(10 + rank)), On("n" + std::to_string(rank)), false, "starting");
  }
  book_.TakeKills();
  book_.Exited(book_.At(JobId(10)), 1, "exited with status 1", now_, "agent:n0");
  book_.SettleGangs();
  const std::vector<KillOrder> kills = book_.TakeKills();
  ASSERT_EQ(kills.size(), 1U);
  EXPECT_EQ(kills[0].job, JobId(11));
  EXPECT_EQ(kills[0].node, NodeId("n1"));
  book_.SettleGangs();  // settled: nothing more
  EXPECT_TRUE(book_.TakeKills().empty());
}

}  // namespace
}  // namespace gf

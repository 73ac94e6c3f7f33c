#include "controller/run_time_book.h"

#include <filesystem>

#include <gtest/gtest.h>
#include <unistd.h>

#include "lifecycle/job_views.h"
#include "store/sqlite/sqlite_store.h"

namespace gf {
namespace {

using std::chrono::minutes;

const Time kT0 = FromUnixMillis(1'780'000'000'000);

Job Ended(std::int64_t id, const std::string& user, JobState state, minutes ran) {
  Job job;
  job.id = JobId(id);
  job.owner.user = user;
  job.spec.name = "python3";  // the default name: the program's
  job.spec.argv = {"python3", "/home/" + user + "/train.py"};
  job.spec.request.gpus = 2;
  job.state = state;
  job.start_time = kT0 + minutes(id);
  job.end_time = *job.start_time + ran;
  return job;
}

Job Submitted(std::int64_t id, const std::string& user) {
  Job job = Ended(id, user, JobState::kPending, minutes(0));
  job.start_time.reset();
  job.end_time.reset();
  return job;
}

TEST(RunTimeBookTest, EstimatesFromTheRunsThatEndedBefore) {
  RunTimeBook book;
  EXPECT_FALSE(book.Estimate(Submitted(1, "alice")).has_value());  // nothing has ended yet
  book.RunEnded(Ended(2, "alice", JobState::kCompleted, minutes(30)));
  book.RunEnded(Ended(3, "alice", JobState::kCompleted, minutes(50)));
  Job job = Submitted(4, "alice");
  job.prediction = book.Estimate(job);
  ASSERT_TRUE(job.prediction.has_value());
  // The geometric mean of the last two runs of alice's python3 train.py on 2 GPUs:
  // sqrt(30 * 50) = 38.73 minutes.
  EXPECT_NEAR(std::chrono::duration<double>(job.prediction->expected).count(), 60 * 38.73, 1.0);
  EXPECT_GT(job.prediction->high, job.prediction->expected);
  EXPECT_EQ(job.prediction->basis, "user+family+gpus");
  EXPECT_EQ(job.prediction->explanation,
            "mean of the last 2 of alice's 2 runs of python3 train.py with 2 GPUs");
  const std::optional<RunEstimate> estimate = EstimateOf(job);
  ASSERT_TRUE(estimate.has_value());
  EXPECT_EQ(estimate->expected, job.prediction->expected);
  EXPECT_EQ(estimate->high, job.prediction->high);
}

TEST(RunTimeBookTest, OnlyWholeRunsAreLearned) {
  RunTimeBook book;
  book.RunEnded(Ended(1, "bob", JobState::kCancelled, minutes(5)));  // not a whole run
  book.RunEnded(Ended(2, "bob", JobState::kPending, minutes(5)));    // preempted, requeued
  Job no_start = Ended(3, "bob", JobState::kCompleted, minutes(5));
  no_start.start_time.reset();  // ended before it started: no run
  book.RunEnded(no_start);
  EXPECT_FALSE(book.Estimate(Submitted(4, "bob")).has_value());
  book.RunEnded(Ended(5, "bob", JobState::kTimeout, minutes(60)));
  const std::optional<JobPrediction> p = book.Estimate(Submitted(6, "bob"));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->expected, Millis(minutes(60)));
  EXPECT_FALSE(EstimateOf(Submitted(7, "bob")).has_value());  // a job never estimated
}

TEST(RunTimeBookTest, LoadLearnsTheStoresFinishedJobsOldestFirst) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("gf-run-time-book-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  auto store = OpenSqliteStore(dir / "state.db");
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  StoreBatch batch;
  batch.jobs = {Ended(1, "carol", JobState::kCompleted, minutes(10)),
                Ended(2, "carol", JobState::kCompleted, minutes(20)),
                Ended(3, "carol", JobState::kCompleted, minutes(40)),
                Submitted(4, "carol")};
  ASSERT_TRUE((*store)->Commit(batch).ok());
  RunTimeBook book;
  ASSERT_TRUE(book.Load(**store, 100).ok());
  const std::optional<JobPrediction> p = book.Estimate(Submitted(5, "carol"));
  ASSERT_TRUE(p.has_value());
  // Oldest first: the last two runs are 20 and 40 minutes (the newest, 40, learned last).
  EXPECT_NEAR(std::chrono::duration<double>(p->expected).count(), 60 * 28.28, 1.0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gf

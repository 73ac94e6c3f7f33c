// DependencyBook (dependency_book.h) on its own: no controller. The test holds the active jobs
// as the controller would (every job not in a terminal state, by id; a job that ended this
// turn stays until the turn's end) and a SQLite store for the jobs that ended before.
#include "controller/dependency_book.h"

#include <filesystem>

#include <gtest/gtest.h>
#include <unistd.h>

#include "controller/controller_test_util.h"
#include "store/sqlite/sqlite_store.h"

namespace gf {
namespace {

using Broken = DependencyGraph::Broken;

class DependencyBookTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::remove_all(dir_);
    auto store = OpenSqliteStore(dir_ / "state.db");
    ASSERT_TRUE(store.ok()) << store.error().ToString();
    store_ = std::move(*store);
    book_ = std::make_unique<DependencyBook>(active_, *store_);
  }
  void TearDown() override {
    book_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  // A job of alice's in `state`, waiting for `after`, stored and active.
  Job& Add(std::int64_t id,
           JobState state,
           std::vector<Dependency> after = {},
           std::optional<ArrayTask> array = std::nullopt) {
    Job job;
    job.id = JobId(id);
    job.owner = Owner{1000, 1000, "alice"};
    job.spec.argv = {"train"};
    job.spec.name = "train";
    job.spec.after = std::move(after);
    job.spec.array = array;
    job.state = state;
    EXPECT_TRUE(store_->Commit(StoreBatch{.jobs = {job}}).ok());
    return active_.emplace(job.id, job).first->second;
  }
  // A job of alice's that ended in `state` before this turn: in the store only.
  void Ended(std::int64_t id, JobState state, std::optional<int> exit_code) {
    Job job;
    job.id = JobId(id);
    job.owner = Owner{1000, 1000, "alice"};
    job.spec.argv = {"train"};
    job.spec.name = "train";
    job.state = state;
    job.exit_code = exit_code;
    EXPECT_TRUE(store_->Commit(StoreBatch{.jobs = {job}}).ok());
  }
  // Submits a pending job after `after` as the controller does: checked, added, tracked.
  Status Submit(std::int64_t id, std::vector<Dependency> after) {
    GF_TRY(book_->Check(alice_, after));
    book_->Track(Add(id, JobState::kPending, std::move(after)));
    return OkStatus();
  }
  // The active job `id` ends now, as Transition leaves it for the rest of the turn.
  Job& End(std::int64_t id, JobState state, std::optional<int> exit_code) {
    Job& job = active_.at(JobId(id));
    job.state = state;
    job.exit_code = exit_code;
    return job;
  }

  const std::filesystem::path dir_ =
      std::filesystem::temp_directory_path() / ("gf-dependency-book-" + std::to_string(getpid()));
  const Caller alice_ = TestCaller(1000, "alice");
  std::map<JobId, Job> active_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<DependencyBook> book_;
};

Dependency Ok(std::int64_t job) {
  return Dependency{JobId(job), DependencyKind::kOk};
}
Dependency Any(std::int64_t job) {
  return Dependency{JobId(job), DependencyKind::kAny};
}

TEST_F(DependencyBookTest, ADependencyIsMetWhenItsJobCompletes) {
  Add(1, JobState::kRunning);
  ASSERT_TRUE(Submit(2, {Ok(1)}).ok());
  EXPECT_TRUE(book_->Waiting(JobId(2)));

  const DependencyBook::Resolution resolution = book_->OnEnded(End(1, JobState::kCompleted, 0));
  EXPECT_TRUE(resolution.cancel.empty());
  EXPECT_TRUE(resolution.changed);  // job 2 is a candidate now: the scheduler's view changed
  EXPECT_FALSE(book_->Waiting(JobId(2)));
  // Reporting the end again changes nothing.
  EXPECT_FALSE(book_->OnEnded(active_.at(JobId(1))).changed);
}

TEST_F(DependencyBookTest, ABrokenOkChainIsCancelledDownTheChain) {
  Add(1, JobState::kRunning);
  ASSERT_TRUE(Submit(2, {Ok(1)}).ok());
  ASSERT_TRUE(Submit(3, {Ok(2)}).ok());
  ASSERT_TRUE(Submit(4, {Any(2)}).ok());  // runs after 2 however it ends

  const DependencyBook::Resolution resolution = book_->OnEnded(End(1, JobState::kFailed, 1));
  EXPECT_EQ(resolution.cancel,
            (std::vector<Broken>{{JobId(2), "dependency job 1 failed (exit 1)"},
                                 {JobId(3), "dependency job 2 was cancelled"}}));
  EXPECT_TRUE(resolution.changed);
  EXPECT_FALSE(book_->Waiting(JobId(2)));
  EXPECT_FALSE(book_->Waiting(JobId(3)));
  EXPECT_FALSE(book_->Waiting(JobId(4)));
  // The controller cancels 2 and 3; their ends find nothing left to resolve.
  EXPECT_FALSE(book_->OnEnded(End(2, JobState::kCancelled, std::nullopt)).changed);
}

TEST_F(DependencyBookTest, AnArrayDependencyWaitsForTheLastTask) {
  for (int index = 0; index < 3; ++index) {
    Add(10 + index, JobState::kRunning, {}, ArrayTask{.array_job = JobId(10), .index = index});
  }
  ASSERT_TRUE(Submit(20, {Ok(10)}).ok());   // the array's id: the whole array
  ASSERT_TRUE(Submit(21, {Any(11)}).ok());  // one task by its own id
  EXPECT_TRUE(book_->Waiting(JobId(20)));

  // The first task shares the array's id: its end alone resolves nothing.
  const Job& first = End(10, JobState::kCompleted, 0);
  EXPECT_FALSE(book_->OnEnded(first).changed);
  ASSERT_TRUE(book_->OnArrayTaskEnded(first).ok());
  EXPECT_TRUE(book_->Waiting(JobId(20)));

  const Job& second = End(11, JobState::kFailed, 3);
  EXPECT_TRUE(book_->OnEnded(second).changed);  // job 21 waited for task 11 only
  EXPECT_FALSE(book_->Waiting(JobId(21)));
  Result<DependencyBook::Resolution> unfinished = book_->OnArrayTaskEnded(second);
  ASSERT_TRUE(unfinished.ok()) << unfinished.error().ToString();
  EXPECT_FALSE(unfinished->changed);  // task 12 still runs
  EXPECT_TRUE(book_->Waiting(JobId(20)));

  // The last task completes: the array ended as its first failed task (by index) did.
  const Job& last = End(12, JobState::kCompleted, 0);
  EXPECT_FALSE(book_->OnEnded(last).changed);
  Result<DependencyBook::Resolution> whole = book_->OnArrayTaskEnded(last);
  ASSERT_TRUE(whole.ok()) << whole.error().ToString();
  EXPECT_EQ(whole->cancel, (std::vector<Broken>{{JobId(20), "dependency job 10 failed (exit 3)"}}));
  EXPECT_TRUE(whole->changed);
}

TEST_F(DependencyBookTest, RestoreJudgesWhatEndedWhileDown) {
  Ended(1, JobState::kFailed, 2);
  Ended(2, JobState::kCompleted, 0);
  Add(5, JobState::kRunning);
  const Job& broken = Add(6, JobState::kPending, {Any(2), Ok(1)});
  const Job& waits = Add(7, JobState::kPending, {Ok(2), Ok(5)});
  const Job& gone = Add(8, JobState::kPending, {Ok(4)});  // 4 never stored

  Result<std::optional<std::string>> cause = book_->Restore(broken);
  ASSERT_TRUE(cause.ok()) << cause.error().ToString();
  EXPECT_EQ(*cause, "dependency job 1 failed (exit 2)");
  EXPECT_FALSE(book_->Waiting(JobId(6)));

  cause = book_->Restore(waits);
  ASSERT_TRUE(cause.ok()) << cause.error().ToString();
  EXPECT_EQ(*cause, std::nullopt);
  EXPECT_EQ(book_->Graph().FirstUnmet(JobId(7)), Ok(5));  // 2 completed meanwhile: met

  cause = book_->Restore(gone);
  ASSERT_TRUE(cause.ok()) << cause.error().ToString();
  EXPECT_EQ(*cause, "dependency job 4 was cancelled");

  // Job 7 still runs after 5, as before the restart.
  EXPECT_TRUE(book_->OnEnded(End(5, JobState::kCompleted, 0)).changed);
  EXPECT_FALSE(book_->Waiting(JobId(7)));
}

TEST_F(DependencyBookTest, CheckRefusesWhatCanNeverBeMet) {
  Ended(1, JobState::kFailed, 1);
  Add(2, JobState::kRunning);
  active_.at(JobId(2)).owner = Owner{2000, 2000, "bob"};

  Status unknown = book_->Check(alice_, {Ok(9)});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(unknown.error().message.find("job 9 does not exist"), std::string::npos);
  // Bob's job does not exist for alice either.
  Status hidden = book_->Check(alice_, {Any(2)});
  ASSERT_FALSE(hidden.ok());
  EXPECT_NE(hidden.error().message.find("job 2 does not exist"), std::string::npos);
  Status failed = book_->Check(alice_, {Ok(1)});
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().message.find("already ended FAILED (exit 1)"), std::string::npos)
      << failed.error().message;
  EXPECT_TRUE(book_->Check(alice_, {Any(1)}).ok());  // afterany: met already
}

}  // namespace
}  // namespace gf

// Conformance tests of StoreReader::ListJobHistory (`gpufleet history`, issue #24): every
// backend instantiates them with the rest of the suite (store_conformance_test.h).
#include <cstdint>
#include <vector>

#include <gmock/gmock.h>

#include "store/store_conformance_test.h"
#include "store/store_test_util.h"

namespace gf::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr std::int64_t kBaseMs = 1'800'000'000'000;

// Job `id` of `uid` in team `team`, submitted at base + id minutes; ended `state` at base +
// end_minute minutes when that state is terminal.
Job HistoryJob(std::int64_t id,
               std::uint32_t uid,
               const std::string& team,
               JobState state,
               std::int64_t end_minute) {
  Job job = MinimalJob(id, uid);
  job.spec.team = team;
  job.state = state;
  job.submit_time = FromUnixMillis(kBaseMs + id * 60'000);
  if (IsTerminal(state)) {
    job.start_time = job.submit_time;
    job.end_time = FromUnixMillis(kBaseMs + end_minute * 60'000);
    job.exit_code = state == JobState::kCompleted ? 0 : 1;
  }
  return job;
}

Time Minute(std::int64_t m) {
  return FromUnixMillis(kBaseMs + m * 60'000);
}

std::vector<std::int64_t> HistoryIds(StoreReader& store, const JobHistoryQuery& query) {
  auto jobs = store.ListJobHistory(query);
  EXPECT_TRUE(jobs.ok()) << jobs.error().ToString();
  std::vector<std::int64_t> ids;
  for (const Job& job : jobs.value_or(std::vector<Job>{})) {
    ids.push_back(job.id.value());
  }
  return ids;
}

// Jobs 1..8: uid 1000 (user1000) the odd ones, uid 2000 the even ones; team "cv" ids 1-4,
// "" the rest; 1, 2, 5 COMPLETED, 3 FAILED, 4 CANCELLED, 6 TIMEOUT, 7 RUNNING, 8 PENDING;
// job N ends at minute N + 10.
StoreBatch EightJobs() {
  const std::vector<JobState> states = {JobState::kCompleted,
                                        JobState::kCompleted,
                                        JobState::kFailed,
                                        JobState::kCancelled,
                                        JobState::kCompleted,
                                        JobState::kTimeout,
                                        JobState::kRunning,
                                        JobState::kPending};
  StoreBatch batch;
  for (std::int64_t id = 1; id <= 8; ++id) {
    batch.jobs.push_back(HistoryJob(id,
                                    id % 2 == 1 ? 1000 : 2000,
                                    id <= 4 ? "cv" : "",
                                    states[static_cast<std::size_t>(id - 1)],
                                    id + 10));
  }
  return batch;
}

TEST_P(StoreConformanceTest, JobHistoryListsEveryStateNewestFirst) {
  MustCommit(EightJobs());
  EXPECT_THAT(HistoryIds(*store_, {}), ElementsAre(8, 7, 6, 5, 4, 3, 2, 1));
  auto jobs = store_->ListJobHistory({.limit = 1});
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ(DebugString(jobs->front()), DebugString(EightJobs().jobs.back()));
}

TEST_P(StoreConformanceTest, JobHistoryFiltersByOwnerUserTeamAndState) {
  MustCommit(EightJobs());
  EXPECT_THAT(HistoryIds(*store_, {.uid = 1000}), ElementsAre(7, 5, 3, 1));
  EXPECT_THAT(HistoryIds(*store_, {.user = "user2000"}), ElementsAre(8, 6, 4, 2));
  EXPECT_THAT(HistoryIds(*store_, {.team = "cv"}), ElementsAre(4, 3, 2, 1));
  EXPECT_THAT(HistoryIds(*store_, {.team = ""}), ElementsAre(8, 7, 6, 5));
  EXPECT_THAT(HistoryIds(*store_, {.states = {JobState::kCompleted}}), ElementsAre(5, 2, 1));
  EXPECT_THAT(HistoryIds(*store_, {.states = {JobState::kFailed, JobState::kTimeout}}),
              ElementsAre(6, 3));
  // Every filter must hold.
  EXPECT_THAT(HistoryIds(*store_,
                         {.uid = 1000,
                          .team = "cv",
                          .states = {JobState::kCompleted, JobState::kFailed, JobState::kRunning}}),
              ElementsAre(3, 1));
  EXPECT_THAT(HistoryIds(*store_, {.uid = 1000, .user = "user2000"}), IsEmpty());
  EXPECT_THAT(HistoryIds(*store_, {.team = "nosuch"}), IsEmpty());
}

TEST_P(StoreConformanceTest, JobHistoryWindowKeepsJobsInTheSystemDuringIt) {
  MustCommit(EightJobs());
  // Not ended before minute 15: jobs ending at 15.. (5, 6) and the active ones (7, 8).
  EXPECT_THAT(HistoryIds(*store_, {.since = Minute(15)}), ElementsAre(8, 7, 6, 5));
  // Submitted before minute 3: jobs 1 and 2.
  EXPECT_THAT(HistoryIds(*store_, {.until = Minute(3)}), ElementsAre(2, 1));
  // Both: in the system at minute 12 (job 1 ended at 11).
  EXPECT_THAT(HistoryIds(*store_, {.since = Minute(12), .until = Minute(12)}),
              ElementsAre(8, 7, 6, 5, 4, 3, 2));
  EXPECT_THAT(HistoryIds(*store_, {.since = Minute(100), .until = Minute(100)}), ElementsAre(8, 7));
}

TEST_P(StoreConformanceTest, JobHistoryPagesWithTheCursor) {
  StoreBatch batch;
  for (std::int64_t id = 1; id <= 25; ++id) {
    batch.jobs.push_back(
        HistoryJob(id, id % 5 == 0 ? 2000 : 1000, "", JobState::kCompleted, id + 1));
  }
  MustCommit(batch);
  std::vector<std::int64_t> seen;
  JobHistoryQuery query{.uid = 1000, .limit = 6};
  for (int page = 0; page < 10; ++page) {
    const std::vector<std::int64_t> ids = HistoryIds(*store_, query);
    if (ids.empty()) {
      break;
    }
    EXPECT_LE(ids.size(), 6u);
    seen.insert(seen.end(), ids.begin(), ids.end());
    query.before = JobId(ids.back());
  }
  std::vector<std::int64_t> expected;
  for (std::int64_t id = 25; id >= 1; --id) {
    if (id % 5 != 0) {
      expected.push_back(id);
    }
  }
  EXPECT_EQ(seen, expected);
}

TEST_P(StoreConformanceTest, JobHistoryRefusesABadQuery) {
  auto zero = store_->ListJobHistory({.limit = 0});
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.error().code, ErrorCode::kInvalidArgument);
  auto backwards = store_->ListJobHistory({.since = Minute(10), .until = Minute(5)});
  ASSERT_FALSE(backwards.ok());
  EXPECT_EQ(backwards.error().code, ErrorCode::kInvalidArgument);
}

TEST_P(StoreConformanceTest, JobHistoryIsReadThroughAReader) {
  MustCommit(EightJobs());
  auto reader = store_->OpenReader();
  ASSERT_TRUE(reader.ok()) << reader.error().ToString();
  EXPECT_THAT(HistoryIds(**reader, {.states = {JobState::kCancelled}}), ElementsAre(4));
}

}  // namespace
}  // namespace gf::testing

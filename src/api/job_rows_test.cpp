// JobRowCache (job_rows.h): a row is rendered once per job object and kept while that object
// lives; a new object for the same job (the job changed) gets a new row; rows of objects gone
// are swept.
#include "api/job_rows.h"

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "api/json_mapping.h"

namespace gf {
namespace {

std::shared_ptr<Job> PendingJob(std::int64_t id, const std::string& name) {
  auto job = std::make_shared<Job>();
  job->id = JobId(id);
  job->spec.name = name;
  job->spec.argv = {"python3", "train.py"};
  job->spec.env = {{"SECRET", "s3cr3t"}};
  job->state = JobState::kPending;
  return job;
}

// A row closed again, as the route closes it.
nlohmann::json Closed(const std::string& open_row) {
  return nlohmann::json::parse(open_row + "}");
}

TEST(JobRowCacheTest, ARowIsJobRowToJsonWithoutEnv) {
  JobRowCache cache;
  std::string out;
  cache.AppendRow(PendingJob(5, "train"), out);
  const nlohmann::json row = Closed(out);
  EXPECT_EQ(row, JobRowToJson(*PendingJob(5, "train")));
  EXPECT_FALSE(row.contains("env"));
  EXPECT_EQ(out.find('\n'), std::string::npos) << "compact";
}

TEST(JobRowCacheTest, KeepsTheRowOfTheSameObjectAndRendersANewObjectAgain) {
  JobRowCache cache;
  const std::shared_ptr<Job> job = PendingJob(5, "train");
  std::string first;
  cache.AppendRow(job, first);
  // The same object: its kept row, even though (against the contract, to show it) it changed.
  job->spec.name = "renamed behind the cache's back";
  std::string second;
  cache.AppendRow(job, second);
  EXPECT_EQ(second, first);
  // The controller publishes a new object when a job changes: that one is rendered anew.
  std::string third;
  cache.AppendRow(PendingJob(5, "changed"), third);
  EXPECT_EQ(Closed(third)["name"], "changed");
  EXPECT_EQ(cache.RowCount(), 1u) << "one row per job id";
}

TEST(JobRowCacheTest, SweepsTheRowsOfObjectsNoLongerHeld) {
  JobRowCache cache;
  std::vector<std::shared_ptr<Job>> held;
  std::string out;
  for (std::int64_t id = 1; id <= 5'000; ++id) {  // the first sweep comes at 4,096 rows
    auto job = PendingJob(id, "j");
    cache.AppendRow(job, out);
    if (id % 100 == 0) {
      held.push_back(std::move(job));  // the rest leave, as jobs that end leave the view
    }
    out.clear();
  }
  EXPECT_LT(cache.RowCount(), 1'000u) << "swept as it grew";
  for (const auto& job : held) {
    std::string row;
    cache.AppendRow(job, row);
    EXPECT_EQ(Closed(row)["id"], job->id.value());
  }
}

}  // namespace
}  // namespace gf

#include "controller/job_arrays.h"

#include <gtest/gtest.h>

namespace gf {
namespace {

ArrayMember Task(
    std::int64_t job, std::int64_t array, int index, std::optional<int> limit, bool running) {
  return ArrayMember{
      .job = JobId(job),
      .task = ArrayTask{.array_job = JobId(array), .index = index, .max_running = limit},
      .running = running};
}

TEST(JobArraysTest, ValidateArrayRequest) {
  EXPECT_TRUE(ValidateArrayRequest(ArrayRequest{.indices = {0, 1, 5}, .max_running = 2}).ok());
  EXPECT_TRUE(ValidateArrayRequest(ArrayRequest{.indices = {7}, .max_running = std::nullopt}).ok());
  auto error = [](const ArrayRequest& r) {
    Status s = ValidateArrayRequest(r);
    return s.ok() ? std::string() : s.error().message;
  };
  EXPECT_NE(
      error(ArrayRequest{.indices = {}, .max_running = std::nullopt}).find("array.indices: empty"),
      std::string::npos);
  EXPECT_NE(error(ArrayRequest{.indices = {1, 2, 1}, .max_running = std::nullopt})
                .find("1 is given twice"),
            std::string::npos);
  EXPECT_NE(error(ArrayRequest{.indices = {-1}, .max_running = std::nullopt}).find("out of range"),
            std::string::npos);
  EXPECT_NE(error(ArrayRequest{.indices = {0}, .max_running = 0}).find("array.max_running"),
            std::string::npos);
  ArrayRequest big;
  for (int i = 0; i <= kMaxArrayTasks; ++i) {
    big.indices.push_back(i);
  }
  EXPECT_NE(error(big).find("at most 10000"), std::string::npos);
  big.indices.pop_back();
  EXPECT_TRUE(ValidateArrayRequest(big).ok());
}

TEST(JobArraysTest, ThrottleOffersTheLowestIndicesUpToTheRoomLeft) {
  // Array 40, limit 2: task 0 runs, tasks 1..4 wait (given out of order).
  const auto held = ThrottledTasks({Task(44, 40, 4, 2, false),
                                    Task(40, 40, 0, 2, true),
                                    Task(42, 40, 2, 2, false),
                                    Task(41, 40, 1, 2, false),
                                    Task(43, 40, 3, 2, false)});
  EXPECT_FALSE(held.contains(JobId(41)));  // room for one more: the lowest index
  ASSERT_EQ(held.size(), 3u);
  EXPECT_EQ(held.at(JobId(42)),
            "array 40: at most 2 at once; 1 task running, 1 lower-index task goes first");
  EXPECT_TRUE(held.contains(JobId(43)));
  EXPECT_TRUE(held.contains(JobId(44)));
}

TEST(JobArraysTest, FullArrayHoldsEveryPendingTask) {
  const auto held = ThrottledTasks(
      {Task(40, 40, 0, 2, true), Task(41, 40, 1, 2, true), Task(42, 40, 2, 2, false)});
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held.at(JobId(42)), "array 40: 2 tasks running, limit 2");
}

TEST(JobArraysTest, ArraysAreThrottledApartAndUnlimitedOnesNotAtAll) {
  const auto held = ThrottledTasks({Task(10, 10, 0, 1, false),
                                    Task(11, 10, 1, 1, false),
                                    Task(20, 20, 0, 1, true),
                                    Task(21, 20, 1, 1, false),
                                    Task(30, 30, 0, std::nullopt, false),
                                    Task(31, 30, 1, std::nullopt, false)});
  EXPECT_EQ(held.size(), 2u);
  EXPECT_TRUE(held.contains(JobId(11)));
  EXPECT_TRUE(held.contains(JobId(21)));
}

TEST(JobArraysTest, TaskName) {
  EXPECT_EQ(ArrayTaskName(ArrayTask{.array_job = JobId(40), .index = 3, .max_running = 4}), "40_3");
}

}  // namespace
}  // namespace gf

#include "cli/job_ref.h"

#include <map>

#include <gtest/gtest.h>

namespace gf {
namespace {

TEST(JobRefTest, ParsesIdsAndArrayTasksAsQueuePrintsThem) {
  auto plain = ParseJobRef("17");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->id, 17);
  EXPECT_FALSE(plain->array_index.has_value());
  auto task = ParseJobRef("17_0");
  ASSERT_TRUE(task.ok());
  EXPECT_EQ(task->id, 17);
  EXPECT_EQ(task->array_index, 0);
  for (const char* wrong : {"", "0", "-3", "x", "17_", "_1", "17_x", "17_1_2", "17_-1"}) {
    auto bad = ParseJobRef(wrong);
    ASSERT_FALSE(bad.ok()) << wrong;
    EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
    EXPECT_EQ(bad.error().message.rfind("JOB: '", 0), 0U) << bad.error().message;
    EXPECT_NE(bad.error().message.find("17_1"), std::string::npos) << bad.error().message;
  }
}

TEST(JobRefTest, AnArrayIdIsNoTask) {
  auto array = ParseArrayId("17");
  ASSERT_TRUE(array.ok());
  EXPECT_EQ(*array, 17);
  auto task = ParseArrayId("17_1");
  ASSERT_FALSE(task.ok());
  EXPECT_EQ(task.error().message,
            "JOB: '17_1' is one task of array 17; --array takes the array's id (gpufleet cancel "
            "--array 17), or cancel the task alone: gpufleet cancel 17_1");
}

// Jobs as GET /jobs/ID answers them: array 10 with indices 0-2 (ids 10-12), array 20 with
// indices 1,3,5,7 (ids 20-23), and job 13, no array.
class ArrayTaskTest : public ::testing::Test {
 protected:
  ArrayTaskTest() {
    for (int i = 0; i < 3; ++i) {
      jobs_[10 + i] = {{"id", 10 + i}, {"array_job", 10}, {"array_index", i}};
    }
    jobs_[13] = {{"id", 13}, {"array_job", nullptr}};
    for (int i = 0; i < 4; ++i) {
      jobs_[20 + i] = {{"id", 20 + i}, {"array_job", 20}, {"array_index", 1 + (2 * i)}};
    }
  }

  Result<std::int64_t> Find(const std::string& text) {
    auto ref = ParseJobRef(text);
    EXPECT_TRUE(ref.ok());
    return FindArrayTask(*ref, [this](std::int64_t id) -> Result<nlohmann::json> {
      ++fetches_;
      auto it = jobs_.find(id);
      if (it == jobs_.end()) {
        return NotFound("job " + std::to_string(id) + " not found");
      }
      return it->second;
    });
  }

  std::map<std::int64_t, nlohmann::json> jobs_;
  int fetches_ = 0;
};

TEST_F(ArrayTaskTest, FindsATaskOfAnArrayWithoutGapsAtTheFirstGuess) {
  auto id = Find("10_2");
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_EQ(*id, 12);
  EXPECT_EQ(fetches_, 2);  // the array, then the task
  auto first = Find("10_0");
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(*first, 10);
}

TEST_F(ArrayTaskTest, FindsATaskOfAnArrayWithGaps) {
  for (int index : {1, 3, 5, 7}) {
    auto id = Find("20_" + std::to_string(index));
    ASSERT_TRUE(id.ok()) << index << ": " << id.error().message;
    EXPECT_EQ(*id, 20 + ((index - 1) / 2));
  }
}

TEST_F(ArrayTaskTest, RefusesAMissingTaskOrAJobThatIsNoArray) {
  for (const char* missing : {"20_4", "20_0", "20_9", "10_3"}) {
    auto id = Find(missing);
    ASSERT_FALSE(id.ok()) << missing << " found as " << *id;
    EXPECT_EQ(id.error().code, ErrorCode::kNotFound) << missing;
    EXPECT_NE(id.error().message.find("has no task of index"), std::string::npos);
  }
  auto plain = Find("13_0");
  ASSERT_FALSE(plain.ok());
  EXPECT_EQ(plain.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(plain.error().message.find("job 13 is not a job array"), std::string::npos);
  auto absent = Find("99_0");
  ASSERT_FALSE(absent.ok());
  EXPECT_EQ(absent.error().message, "job 99 not found");
}

}  // namespace
}  // namespace gf

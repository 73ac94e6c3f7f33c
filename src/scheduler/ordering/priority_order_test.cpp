#include "scheduler/ordering/priority_order.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "scheduler/scheduler_test_util.h"

namespace gf {
namespace {

using testing::Ids;

// The stock classes (high / normal / low), for the tables below.
const PolicyConfig kStock;
const ClassTable kClasses(kStock);

QueuedJob MakeJob(std::int64_t id, const PriorityClass& priority, std::int64_t submit_s) {
  QueuedJob job;
  job.id = JobId(id);
  job.priority = priority;
  job.submit_time = FromUnixMillis(submit_s * 1000);
  return job;
}

TEST(SchedulerPriorityOrderTest, EmptyQueueGivesEmptyOrder) {
  EXPECT_TRUE(PriorityOrder(Queue{}, kClasses).empty());
}

TEST(SchedulerPriorityOrderTest, PriorityClassBeatsSubmitTime) {
  Queue queue{{MakeJob(1, PriorityClass::kLow, 0),
               MakeJob(2, PriorityClass::kNormal, 10),
               MakeJob(3, PriorityClass::kHigh, 20)}};
  EXPECT_EQ(Ids(PriorityOrder(queue, kClasses)), (std::vector<std::int64_t>{3, 2, 1}));
}

TEST(SchedulerPriorityOrderTest, SameClassGoesBySubmitTime) {
  Queue queue{{MakeJob(1, PriorityClass::kNormal, 30),
               MakeJob(2, PriorityClass::kNormal, 10),
               MakeJob(3, PriorityClass::kNormal, 20)}};
  EXPECT_EQ(Ids(PriorityOrder(queue, kClasses)), (std::vector<std::int64_t>{2, 3, 1}));
}

TEST(SchedulerPriorityOrderTest, SameSubmitTimeGoesByJobId) {
  Queue queue{{MakeJob(9, PriorityClass::kHigh, 5),
               MakeJob(4, PriorityClass::kHigh, 5),
               MakeJob(7, PriorityClass::kHigh, 5)}};
  EXPECT_EQ(Ids(PriorityOrder(queue, kClasses)), (std::vector<std::int64_t>{4, 7, 9}));
}

TEST(SchedulerPriorityOrderTest, ComesBeforeIsAStrictOrder) {
  const QueuedJob a = MakeJob(1, PriorityClass::kHigh, 5);
  const QueuedJob b = MakeJob(2, PriorityClass::kHigh, 5);
  EXPECT_TRUE(ComesBefore(a, b, kClasses));
  EXPECT_FALSE(ComesBefore(b, a, kClasses));
  EXPECT_FALSE(ComesBefore(a, a, kClasses));
}

TEST(SchedulerPriorityOrderTest, OrderDoesNotDependOnInputOrder) {
  std::vector<QueuedJob> jobs = {MakeJob(1, PriorityClass::kNormal, 0),
                                 MakeJob(2, PriorityClass::kLow, 0),
                                 MakeJob(3, PriorityClass::kHigh, 7),
                                 MakeJob(4, PriorityClass::kNormal, 0),
                                 MakeJob(5, PriorityClass::kHigh, 3)};
  const std::vector<std::int64_t> expected = {5, 3, 1, 4, 2};
  std::sort(
      jobs.begin(), jobs.end(), [](const QueuedJob& a, const QueuedJob& b) { return a.id < b.id; });
  do {
    EXPECT_EQ(Ids(PriorityOrder(Queue{jobs}, kClasses)), expected);
  } while (std::next_permutation(
      jobs.begin(), jobs.end(), [](const auto& a, const auto& b) { return a.id < b.id; }));
}

}  // namespace
}  // namespace gf

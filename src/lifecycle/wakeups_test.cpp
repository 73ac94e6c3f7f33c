#include "lifecycle/wakeups.h"

#include <gtest/gtest.h>

namespace gf {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

Time At(std::chrono::seconds s) {
  return Time(std::chrono::duration_cast<Millis>(s));
}

RunningJob Started(std::int64_t id, Time start) {
  RunningJob job;
  job.id = JobId(id);
  job.start_time = start;
  job.allocation = Allocation{.node = NodeId("n1"), .gpus = {GpuUuid("GPU-" + std::to_string(id))}};
  return job;
}

TEST(WakeupsTest, TheYoungestRunningJobComingOfAgeForPreemption) {
  PolicyConfig policy;
  policy.preemption.min_run_time = minutes(10);
  const Time now = At(seconds(1000));
  const std::vector<RunningJob> running = {
      Started(1, At(seconds(100))),   // old enough already (at 700)
      Started(2, At(seconds(900))),   // at 1500
      Started(3, At(seconds(700)))};  // at 1300
  EXPECT_EQ(NextPassAt(running, policy, now), At(seconds(1300)));
  RunningJob stopping = Started(4, At(seconds(950)));
  stopping.stopping = true;  // leaves anyway
  EXPECT_EQ(NextPassAt({stopping, Started(2, At(seconds(900)))}, policy, now), At(seconds(1500)));
  EXPECT_EQ(NextPassAt({Started(1, At(seconds(100)))}, policy, now), std::nullopt);
  policy.preemption.enabled = false;
  EXPECT_EQ(NextPassAt(running, policy, now), std::nullopt);
}

TEST(WakeupsTest, UnderLasARunningJobMovingToItsNextQueue) {
  PolicyConfig policy;
  policy.preemption.min_run_time = minutes(0);
  policy.ordering.order = QueueOrder::kLas;
  policy.ordering.las_thresholds = {3600};
  const Time now = At(seconds(1000));
  RunningJob job = Started(1, At(seconds(1000)));
  // One GPU from now: the first queue ends after 3600 GPU-seconds.
  EXPECT_EQ(NextPassAt({job}, policy, now), At(seconds(4600)));
}

}  // namespace
}  // namespace gf

// MemoryBreachWatch alone (memory_breach_watch.h), on a manual clock: a kill starts the watch,
// "warn" or an unknown process only tell, a job still over its limit past the grace is to be
// stopped once, a cleared breach or a job gone ends the watch, a job being stopped is kept.
#include "controller/memory_breach_watch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gf {
namespace {

using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

class MemoryBreachWatchTest : public ::testing::Test {
 protected:
  MemoryBreachWatchTest() {
    job_.id = JobId(4);
    breach_.job = job_.id;
    breach_.pid = 4242;
    breach_.kind = "gpu_memory_over_limit";
    breach_.active = true;
    breach_.message = "job 4 uses 9000 MiB of GPU 0, over its 8192 MiB limit";
  }

  static std::function<BreachWatched(JobId)> All(BreachWatched state) {
    return [state](JobId) {
      return state;
    };
  }

  ManualClock clock_;
  Job job_;
  ConditionChange breach_;
  MemoryBreachWatch watch_{SharingConfig{}};  // kill, 30 s grace
};

TEST_F(MemoryBreachWatchTest, KillsTheLargestProcessThenStopsTheJobAfterTheGrace) {
  const BreachResponse response = watch_.OnBreach(job_, breach_, true, clock_.Now());
  EXPECT_TRUE(response.kill);
  EXPECT_EQ(response.event,
            breach_.message +
                "; killed its process 4242 (gpufleet holds shared GPUs to each "
                "job's memory: [sharing] memory_breach)");
  EXPECT_EQ(response.notify_subject, "job 4 is over its GPU memory limit");
  EXPECT_EQ(response.notify_message, response.event);
  EXPECT_FALSE(watch_.Empty());

  clock_.Advance(seconds(10));
  watch_.OnBreach(job_, breach_, true, clock_.Now());  // again: the first kill's time counts
  clock_.Advance(seconds(19));
  EXPECT_THAT(watch_.Overdue(clock_.Now(), All(BreachWatched::kHolding)), IsEmpty());
  clock_.Advance(seconds(1));
  const std::vector<BreachStop> stops = watch_.Overdue(clock_.Now(), All(BreachWatched::kHolding));
  ASSERT_THAT(stops, SizeIs(1));
  EXPECT_EQ(stops[0].job, job_.id);
  EXPECT_EQ(stops[0].cause,
            "still over its GPU memory limit 30s after its largest process was killed "
            "([sharing] memory_breach_grace): stopping the job");
  EXPECT_TRUE(watch_.Empty());  // stopped once
}

TEST_F(MemoryBreachWatchTest, WarnsOnlyUnderWarnOrWithoutAProcessOrAgent) {
  MemoryBreachWatch warn{SharingConfig{.memory_breach = MemoryBreach::kWarn}};
  BreachResponse response = warn.OnBreach(job_, breach_, true, clock_.Now());
  EXPECT_FALSE(response.kill);
  EXPECT_THAT(response.event, HasSubstr("; warned only ([sharing] memory_breach = \"warn\")"));
  EXPECT_TRUE(warn.Empty());

  EXPECT_FALSE(watch_.OnBreach(job_, breach_, false, clock_.Now()).kill);  // no agent
  breach_.pid.reset();
  EXPECT_FALSE(watch_.OnBreach(job_, breach_, true, clock_.Now()).kill);  // no process named
  EXPECT_TRUE(watch_.Empty());
}

TEST_F(MemoryBreachWatchTest, AClearedBreachOrAJobGoneEndsTheWatch) {
  watch_.OnBreach(job_, breach_, true, clock_.Now());
  watch_.OnCleared(job_.id);
  EXPECT_TRUE(watch_.Empty());

  watch_.OnBreach(job_, breach_, true, clock_.Now());
  clock_.Advance(seconds(60));
  EXPECT_THAT(watch_.Overdue(clock_.Now(), All(BreachWatched::kGone)), IsEmpty());
  EXPECT_TRUE(watch_.Empty());
}

TEST_F(MemoryBreachWatchTest, AJobBeingStoppedIsKeptUntilItsExit) {
  watch_.OnBreach(job_, breach_, true, clock_.Now());
  clock_.Advance(seconds(60));
  EXPECT_THAT(watch_.Overdue(clock_.Now(), All(BreachWatched::kStopping)), IsEmpty());
  EXPECT_FALSE(watch_.Empty());
  EXPECT_THAT(watch_.Overdue(clock_.Now(), All(BreachWatched::kHolding)), SizeIs(1));
}

}  // namespace
}  // namespace gf

#include "agent/leftover_watch.h"

#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "executor/process_tree.h"

namespace gf {
namespace {

GpuSample Sample(const std::string& uuid) {
  GpuSample s;
  s.uuid = GpuUuid(uuid);
  return s;
}

class LeftoverWatchTest : public ::testing::Test {
 protected:
  std::set<std::int64_t> alive_;
  LeftoverWatch watch_{[this](const exec::PidRecord& r) {
    return alive_.contains(r.pid);
  }};
};

// The GPUs of the job stay degraded, naming the job and the pids, while a process lives, and are
// ok from the first round after they are gone.
TEST_F(LeftoverWatchTest, HoldsTheJobsGpusUntilItsProcessesEnd) {
  alive_ = {101, 102};
  watch_.Add(JobId(7), {GpuUuid("GPU-a")}, {{101, 1}, {102, 1}});
  std::vector<GpuSample> round{Sample("GPU-a"), Sample("GPU-b")};
  watch_.Apply(round);
  EXPECT_EQ(round[0].health, GpuHealth::kDegraded);
  EXPECT_EQ(round[0].health_cause,
            "held by processes of job 7 that could not be stopped (pid 101, 102); no new work "
            "until they end");
  EXPECT_EQ(round[1].health, GpuHealth::kOk);

  alive_ = {102};
  round = {Sample("GPU-a")};
  watch_.Apply(round);
  EXPECT_EQ(round[0].health_cause,
            "held by processes of job 7 that could not be stopped (pid 102); no new work until "
            "they end");

  alive_.clear();
  round = {Sample("GPU-a")};
  watch_.Apply(round);
  EXPECT_EQ(round[0].health, GpuHealth::kOk);
  EXPECT_EQ(round[0].health_cause, "");
  EXPECT_TRUE(watch_.Empty());
}

// Processes gone before any sample carried the mark: one round still carries it (the controller
// marked the GPUs at the exit and returns them only on a change back to ok); a GPU whose sample
// is missing from a round (its reading failed) keeps the entry until a sample carries it. A
// worse verdict of the health tracker stays; the causes are joined.
TEST_F(LeftoverWatchTest, KeepsAWorseVerdictAndWaitsForASampleOfTheGpu) {
  watch_.Add(JobId(3), {GpuUuid("GPU-a")}, {{55, 9}});  // already gone
  std::vector<GpuSample> none{Sample("GPU-b")};
  watch_.Apply(none);
  EXPECT_EQ(none[0].health, GpuHealth::kOk);
  EXPECT_FALSE(watch_.Empty());

  alive_ = {56};
  watch_.Add(JobId(4), {GpuUuid("GPU-a")}, {{56, 9}});
  GpuSample failed = Sample("GPU-a");
  failed.health = GpuHealth::kFailed;
  failed.health_cause = "XID 79 (GPU has fallen off the bus)";
  std::vector<GpuSample> round{failed};
  watch_.Apply(round);
  EXPECT_EQ(round[0].health, GpuHealth::kFailed);
  EXPECT_EQ(round[0].health_cause,
            "XID 79 (GPU has fallen off the bus); processes of job 3 that could not be stopped "
            "have ended; held by processes of job 4 that could not be stopped (pid 56); no new "
            "work until they end");
}

// The default liveness check is the real one: a live process holds, a reaped one does not.
TEST(LeftoverWatchRealTest, UsesRealLivenessByDefault) {
  LeftoverWatch watch;
  watch.Add(JobId(1), {GpuUuid("GPU-a")}, {exec::SelfRecord()});
  std::vector<GpuSample> round{Sample("GPU-a")};
  watch.Apply(round);
  watch.Apply(round);
  EXPECT_FALSE(watch.Empty());
  EXPECT_NE(round[0].health_cause.find("(pid " + std::to_string(exec::SelfRecord().pid)),
            std::string::npos);
}

}  // namespace
}  // namespace gf

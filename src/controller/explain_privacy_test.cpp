// HideOtherUsersJobs (explain_privacy.h): every place an explanation names a job, for a caller
// who may see only some. The controller's use of it (who may see what) is in
// controller_test.cpp (ExplainHidesOtherUsersJobs...).
#include "controller/explain_privacy.h"

#include <set>

#include <gtest/gtest.h>

namespace gf {
namespace {

const JobId kMine(1);
const JobId kTheirs(2);
const JobId kTheirsToo(3);

Time At(std::int64_t ms) {
  return FromUnixMillis(ms);
}

// An explanation of job 1 that names job 2 and job 3 everywhere it can.
Explanation NamingOthers() {
  Explanation e;
  e.job = kMine;
  e.ahead.resize(2);
  e.ahead[0].id = kTheirs;
  e.ahead[0].from = At(5000);
  e.ahead[1].id = kMine;
  NodeExplanation node;
  node.node = NodeId("n1");
  node.held = {
      GpuHold{.index = 0,
              .kind = "running",
              .job = kTheirsToo,
              .until = At(9000),
              .then_for = kTheirs,
              .then_from = At(9000)},
      GpuHold{.index = 1, .kind = "started", .job = kTheirs, .until = At(7000)},
      GpuHold{.index = 2, .kind = "reserved", .job = kTheirs, .until = At(5000)},
      GpuHold{.index = 3, .kind = "running", .job = kMine, .until = At(8000)},
      GpuHold{.index = 4, .kind = "allocated", .job = std::nullopt, .until = At(6000)},
  };
  node.victims.resize(2);
  node.victims[0].job = kTheirsToo;
  node.victims[0].chosen = true;
  node.victims[1].job = kMine;
  e.nodes = {node};
  e.preempts = {kMine, kTheirsToo};
  return e;
}

TEST(ExplainPrivacyTest, HidesTheIdsAndEndsOfJobsTheCallerMayNotSee) {
  Explanation e = NamingOthers();
  HideOtherUsersJobs(e, [](JobId job) { return job == kMine; });

  EXPECT_FALSE(e.ahead[0].id.has_value());
  EXPECT_EQ(e.ahead[0].from, At(5000));  // when the GPUs are promised away stays
  EXPECT_EQ(e.ahead[1].id, kMine);

  const std::vector<GpuHold>& held = e.nodes[0].held;
  EXPECT_FALSE(held[0].job.has_value());
  EXPECT_TRUE(held[0].other_user);
  EXPECT_FALSE(held[0].until.has_value());  // a running job's end is its owner's
  EXPECT_FALSE(held[0].then_for.has_value());
  EXPECT_TRUE(held[0].then_for_other_user);
  EXPECT_EQ(held[0].then_from, At(9000));
  EXPECT_FALSE(held[1].until.has_value());  // a starting job's end too
  EXPECT_TRUE(held[2].other_user);
  EXPECT_EQ(held[2].until, At(5000));  // a reservation's start is not
  EXPECT_EQ(held[3].job, kMine);
  EXPECT_FALSE(held[3].other_user);
  EXPECT_EQ(held[3].until, At(8000));
  EXPECT_FALSE(held[4].other_user);  // no job there to hide
  EXPECT_EQ(held[4].until, At(6000));

  EXPECT_FALSE(e.nodes[0].victims[0].job.has_value());
  EXPECT_TRUE(e.nodes[0].victims[0].chosen);
  EXPECT_EQ(e.nodes[0].victims[1].job, kMine);
  EXPECT_EQ(e.preempts, std::vector<JobId>{kMine});
  EXPECT_EQ(e.preempts_other_users, 1);
}

TEST(ExplainPrivacyTest, ACallerWhoMaySeeEveryJobGetsItAll) {
  Explanation e = NamingOthers();
  HideOtherUsersJobs(e, [](JobId) { return true; });
  EXPECT_EQ(e.ahead[0].id, kTheirs);
  EXPECT_EQ(e.nodes[0].held[0].job, kTheirsToo);
  EXPECT_EQ(e.nodes[0].held[0].until, At(9000));
  EXPECT_EQ(e.nodes[0].held[0].then_for, kTheirs);
  EXPECT_FALSE(e.nodes[0].held[0].other_user);
  EXPECT_EQ(e.nodes[0].victims[0].job, kTheirsToo);
  EXPECT_EQ(e.preempts, (std::vector<JobId>{kMine, kTheirsToo}));
  EXPECT_EQ(e.preempts_other_users, 0);
}

}  // namespace
}  // namespace gf

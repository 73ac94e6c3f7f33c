#include "slurm/slurm_attribution.h"

#include <string>

#include <gtest/gtest.h>

namespace gf {
namespace {

using namespace std::string_literals;

TEST(SlurmAttributionTest, CgroupV1Layouts) {
  EXPECT_EQ(SlurmJobFromCgroup("12:memory:/slurm/uid_1000/job_123/step_0/task_0\n"
                               "11:devices:/slurm/uid_1000/job_123/step_0\n"),
            123);
  // Several slurmd on one host (multiple-slurmd builds): /slurm_<node>/.
  EXPECT_EQ(SlurmJobFromCgroup("4:cpuset:/slurm_gpu02/uid_0/job_9/step_batch\n"), 9);
}

TEST(SlurmAttributionTest, CgroupV2Layouts) {
  EXPECT_EQ(SlurmJobFromCgroup("0::/system.slice/slurmstepd.scope/job_77/step_0/user/task_0\n"),
            77);
  EXPECT_EQ(SlurmJobFromCgroup("0::/system.slice/gpu03_slurmstepd.scope/job_5/step_batch/user\n"),
            5);
}

TEST(SlurmAttributionTest, OtherCgroupsAreNoJob) {
  EXPECT_FALSE(SlurmJobFromCgroup("0::/user.slice/user-1000.slice/session-3.scope\n"));
  // A job_ component not under Slurm (someone's own cgroup) is not a Slurm job.
  EXPECT_FALSE(SlurmJobFromCgroup("0::/system.slice/job_12/x\n"));
  // The daemon's own cgroup, above every job.
  EXPECT_FALSE(SlurmJobFromCgroup("0::/system.slice/slurmstepd.scope/system\n"));
  EXPECT_FALSE(SlurmJobFromCgroup("0::/system.slice/slurmstepd.scope/job_x/step_0\n"));
  EXPECT_FALSE(SlurmJobFromCgroup(""));
}

TEST(SlurmAttributionTest, Environment) {
  EXPECT_EQ(SlurmJobFromEnviron("PATH=/bin\0SLURM_JOB_ID=4711\0HOME=/root\0"s), 4711);
  EXPECT_FALSE(SlurmJobFromEnviron("PATH=/bin\0SLURM_JOB_IDX=1\0"s));
  EXPECT_FALSE(SlurmJobFromEnviron("SLURM_JOB_ID=\0"s));
  EXPECT_FALSE(SlurmJobFromEnviron("SLURM_JOB_ID=12abc\0"s));
  EXPECT_EQ(EnvironValue("A=1\0SLURMD_NODENAME=gpu01\0"s, "SLURMD_NODENAME"), "gpu01");
  EXPECT_FALSE(EnvironValue("A=1\0"s, "B"));
  EXPECT_EQ(SlurmNodeRankFromEnviron("SLURM_NODEID=3\0"s), 3);
  EXPECT_EQ(SlurmNodeRankFromEnviron("SLURM_NODEID=x\0"s), 0);
  EXPECT_EQ(SlurmNodeRankFromEnviron("A=1\0"s), 0);
}

}  // namespace
}  // namespace gf

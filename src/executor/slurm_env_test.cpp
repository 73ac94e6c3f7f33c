#include "executor/slurm_env.h"

#include <gtest/gtest.h>

namespace gf::exec {
namespace {

LaunchSpec Single() {
  LaunchSpec spec;
  spec.job = JobId(42);
  spec.owner = {1001, 1001, "alice"};
  spec.workdir = "/home/alice/run";
  spec.gpus = {GpuUuid("GPU-a"), GpuUuid("GPU-b")};
  spec.name = "train";
  spec.node = "gpu-a";
  return spec;
}

TEST(SlurmEnvTest, OneNodeJobIsOneTaskOnItsNode) {
  std::map<std::string, std::string> env = {{"SLURM_ARRAY_TASK_ID", "7"}};  // a stale one
  AddSlurmVariables(Single(), env);
  EXPECT_EQ(env["SLURM_JOB_ID"], "42");
  EXPECT_EQ(env["SLURM_JOBID"], "42");
  EXPECT_EQ(env["SLURM_JOB_NAME"], "train");
  EXPECT_EQ(env["SLURM_NTASKS"], "1");
  EXPECT_EQ(env["SLURM_JOB_NUM_NODES"], "1");
  EXPECT_EQ(env["SLURM_PROCID"], "0");
  EXPECT_EQ(env["SLURM_JOB_NODELIST"], "gpu-a");
  EXPECT_EQ(env["SLURM_GPUS_ON_NODE"], "2");
  EXPECT_EQ(env["SLURM_SUBMIT_DIR"], "/home/alice/run");
  EXPECT_EQ(env.count("SLURM_ARRAY_TASK_ID"), 0U);
}

TEST(SlurmEnvTest, ArrayTaskSeesItsArrayAndTheSubmitDirTheClientSent) {
  LaunchSpec spec = Single();
  spec.array = ArrayTask{.array_job = JobId(40), .index = 2, .max_running = std::nullopt};
  std::map<std::string, std::string> env = {{"SLURM_SUBMIT_DIR", "/home/alice"}};
  AddSlurmVariables(spec, env);
  EXPECT_EQ(env["SLURM_JOB_ID"], "42");
  EXPECT_EQ(env["SLURM_ARRAY_JOB_ID"], "40");
  EXPECT_EQ(env["SLURM_ARRAY_TASK_ID"], "2");
  EXPECT_EQ(env["SLURM_SUBMIT_DIR"], "/home/alice");
}

TEST(SlurmEnvTest, GangMemberIsATaskOfOneJobWithItsRank) {
  LaunchSpec spec = Single();
  spec.job = JobId(43);  // rank 1 of the gang whose id is 42
  spec.node = "gpu-b";
  std::map<std::string, std::string> env = {{"GPUFLEET_GANG_ID", "42"},
                                            {"GPUFLEET_NODE_RANK", "1"},
                                            {"GPUFLEET_NUM_NODES", "2"},
                                            {"GPUFLEET_NODELIST", "gpu-a,gpu-b"}};
  AddSlurmVariables(spec, env);
  EXPECT_EQ(env["SLURM_JOB_ID"], "42");
  EXPECT_EQ(env["SLURM_PROCID"], "1");
  EXPECT_EQ(env["SLURM_NODEID"], "1");
  EXPECT_EQ(env["SLURM_NTASKS"], "2");
  EXPECT_EQ(env["SLURM_JOB_NODELIST"], "gpu-a,gpu-b");
  EXPECT_EQ(env["SLURMD_NODENAME"], "gpu-b");
}

}  // namespace
}  // namespace gf::exec

#include "slurm/slurm_jobs.h"

#include <gtest/gtest.h>

#include "slurm/slurm_time.h"

namespace gf {
namespace {

// Lines printed by Debian 12's Slurm 22.05 (`scontrol -d -o show job`) for: a running job on
// GPUs 0-1 of gpu01; an array task; a pending two-node job; the first job once cancelled.
constexpr std::string_view kRunning =
    R"(JobId=1 JobName=train UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=1 Nice=0 Account=physics QOS=(null) JobState=RUNNING Reason=None Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 DerivedExitCode=0:0 RunTime=00:00:01 TimeLimit=00:30:00 TimeMin=N/A SubmitTime=2026-12-07T10:08:41 EligibleTime=2026-12-07T10:08:41 AccrueTime=2026-12-07T10:08:41 StartTime=2026-12-07T10:08:43 EndTime=2026-12-07T10:38:43 Deadline=N/A SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-12-07T10:08:43 Scheduler=Main Partition=gpu AllocNode:Sid=localhost:3252 ReqNodeList=(null) ExcNodeList=(null) NodeList=gpu01 BatchHost=gpu01 NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=1,mem=1000M,node=1,billing=1 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* JOB_GRES=gpu:h100:2   Nodes=gpu01 CPU_IDs=0 Mem=1000 GRES=gpu:h100:2(IDX:0-1) MinCPUsNode=1 MinMemoryCPU=1000M MinTmpDiskNode=0 Features=(null) DelayBoot=00:00:00 OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) Command=(null) WorkDir=/tmp StdErr=/tmp/sl/out-1.txt StdIn=/dev/null StdOut=/tmp/sl/out-1.txt Power= TresPerJob=gres:gpu:2)";
constexpr std::string_view kArrayTask =
    R"(JobId=7 ArrayJobId=3 ArrayTaskId=0 JobName=wrap UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=1 Nice=0 Account=bio QOS=(null) JobState=RUNNING Reason=None Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 DerivedExitCode=0:0 RunTime=00:00:01 TimeLimit=UNLIMITED TimeMin=N/A SubmitTime=2026-12-07T10:08:41 EligibleTime=2026-12-07T10:08:41 AccrueTime=2026-12-07T10:08:41 StartTime=2026-12-07T10:08:43 EndTime=Unknown Deadline=N/A SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-12-07T10:08:43 Scheduler=Main Partition=gpu AllocNode:Sid=localhost:3252 ReqNodeList=(null) ExcNodeList=(null) NodeList=gpu01 BatchHost=gpu01 NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=1,mem=1000M,node=1,billing=1 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* JOB_GRES=gpu:h100:1   Nodes=gpu01 CPU_IDs=2 Mem=1000 GRES=gpu:h100:1(IDX:5) MinCPUsNode=1 MinMemoryCPU=1000M MinTmpDiskNode=0 Features=(null) DelayBoot=00:00:00 OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) Command=(null) WorkDir=/tmp StdErr=/dev/null StdIn=/dev/null StdOut=/dev/null Power= TresPerJob=gres:gpu:1)";
constexpr std::string_view kPending =
    R"(JobId=4 JobName=wrap UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=1 Nice=0 Account=(null) QOS=(null) JobState=PENDING Reason=Resources Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 DerivedExitCode=0:0 RunTime=00:00:00 TimeLimit=UNLIMITED TimeMin=N/A SubmitTime=2026-12-07T10:08:41 EligibleTime=2026-12-07T10:08:41 AccrueTime=2026-12-07T10:08:41 StartTime=Unknown EndTime=Unknown Deadline=N/A SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-12-07T10:08:43 Scheduler=Main Partition=gpu AllocNode:Sid=localhost:3252 ReqNodeList=(null) ExcNodeList=(null) NodeList= NumNodes=2-2 NumCPUs=2 NumTasks=2 CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=2,mem=2000M,node=2,billing=2 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=1 MinMemoryCPU=1000M MinTmpDiskNode=0 Features=(null) DelayBoot=00:00:00 OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) Command=(null) WorkDir=/tmp StdErr=/dev/null StdIn=/dev/null StdOut=/dev/null Power= TresPerNode=gres:gpu:1)";
constexpr std::string_view kCancelled =
    R"(JobId=1 JobName=train UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=1 Nice=0 Account=physics QOS=(null) JobState=CANCELLED Reason=None Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:15 DerivedExitCode=0:0 RunTime=00:00:01 TimeLimit=00:30:00 TimeMin=N/A SubmitTime=2026-12-07T10:08:41 EligibleTime=2026-12-07T10:08:41 AccrueTime=2026-12-07T10:08:41 StartTime=2026-12-07T10:08:43 EndTime=2026-12-07T10:08:44 Deadline=N/A SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-12-07T10:08:43 Scheduler=Main Partition=gpu AllocNode:Sid=localhost:3252 ReqNodeList=(null) ExcNodeList=(null) NodeList=gpu01 BatchHost=gpu01 NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=1,mem=1000M,node=1,billing=1 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* JOB_GRES=gpu:h100:2   Nodes=gpu01 CPU_IDs=0 Mem=1000 GRES= MinCPUsNode=1 MinMemoryCPU=1000M MinTmpDiskNode=0 Features=(null) DelayBoot=00:00:00 OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) Command=(null) WorkDir=/tmp StdErr=/tmp/sl/out-1.txt StdIn=/dev/null StdOut=/tmp/sl/out-1.txt Power= TresPerJob=gres:gpu:2)";

Time At(std::string_view stamp) {
  return ParseSlurmTimestamp(stamp).value();
}

SlurmJob One(std::string_view line) {
  auto jobs = ParseShowJobs(line);
  EXPECT_TRUE(jobs.ok()) << jobs.error().message;
  EXPECT_EQ(jobs->size(), 1U);
  return jobs->front();
}

TEST(SlurmJobsTest, ARunningJobWithItsGpus) {
  const SlurmJob job = One(kRunning);
  EXPECT_EQ(job.id, 1);
  EXPECT_EQ(job.name, "train");
  EXPECT_EQ(job.user, "root");
  EXPECT_EQ(job.uid, 0U);
  EXPECT_EQ(job.account, "physics");
  EXPECT_EQ(job.partition, "gpu");
  EXPECT_EQ(job.qos, "");
  EXPECT_EQ(job.state, "RUNNING");
  EXPECT_EQ(job.reason, "");
  EXPECT_EQ(job.time_limit, std::chrono::seconds(30 * 60));
  EXPECT_EQ(job.submit_time, At("2026-12-07T10:08:41"));
  EXPECT_EQ(job.start_time, At("2026-12-07T10:08:43"));
  EXPECT_EQ(job.exit_code, 0);
  EXPECT_EQ(job.work_dir, "/tmp");
  EXPECT_EQ(job.nodes, std::vector<std::string>{"gpu01"});
  ASSERT_EQ(job.gpus.size(), 1U);
  EXPECT_EQ(job.gpus[0], (SlurmNodeGpus{.node = "gpu01", .gpu_indices = {0, 1}}));
  EXPECT_FALSE(job.array_job_id);
}

TEST(SlurmJobsTest, AnArrayTaskHasItsOwnIdAndItsArrays) {
  const SlurmJob job = One(kArrayTask);
  EXPECT_EQ(job.id, 7);
  EXPECT_EQ(job.array_job_id, 3);
  EXPECT_EQ(job.array_task_id, 0);
  EXPECT_EQ(job.account, "bio");
  EXPECT_FALSE(job.time_limit);  // UNLIMITED
  EXPECT_FALSE(job.end_time);    // Unknown
  ASSERT_EQ(job.gpus.size(), 1U);
  EXPECT_EQ(job.gpus[0].gpu_indices, std::vector<int>{5});
}

TEST(SlurmJobsTest, APendingJobHoldsNoGpus) {
  const SlurmJob job = One(kPending);
  EXPECT_EQ(job.state, "PENDING");
  EXPECT_EQ(job.reason, "Resources");
  EXPECT_TRUE(job.gpus.empty());
  EXPECT_TRUE(job.nodes.empty());
  EXPECT_EQ(JobStateOfSlurm(job.state), JobState::kPending);
}

TEST(SlurmJobsTest, AnEndedJobKeepsItsStateAndExit) {
  const SlurmJob job = One(kCancelled);
  EXPECT_EQ(job.state, "CANCELLED");
  EXPECT_EQ(job.exit_code, 128 + 15);  // ExitCode=0:15: SIGTERM
  EXPECT_TRUE(job.gpus.empty());       // GRES= is empty once it ended
  EXPECT_EQ(job.end_time, At("2026-12-07T10:08:44"));
  EXPECT_EQ(JobStateOfSlurm(job.state), JobState::kCancelled);
}

TEST(SlurmJobsTest, SeveralLinesAndNoise) {
  const std::string text =
      "No jobs in the system\n" + std::string(kRunning) + "\n\n" + std::string(kPending) + "\n";
  const auto jobs = ParseShowJobs(text);
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 2U);
  EXPECT_EQ((*jobs)[0].id, 1);
  EXPECT_EQ((*jobs)[1].id, 4);
  EXPECT_FALSE(ParseShowJobs("JobId=abc JobName=x").ok());
}

TEST(SlurmJobsTest, ValuesWithBlanksAndMultiNodeGroups) {
  const SlurmJob job =
      One("JobId=42 JobName=my big run UserId=alice(1001) Account=(null) JobState=RUNNING "
          "NodeList=gpu[01-02],gpu07 Nodes=gpu[01-02] CPU_IDs=0-3 Mem=0 GRES=gpu:a100:4(IDX:0-3) "
          "Nodes=gpu07 CPU_IDs=0 Mem=0 GRES=gpu:2(IDX:1,3),shard:0 MinCPUsNode=1");
  EXPECT_EQ(job.name, "my big run");
  EXPECT_EQ(job.user, "alice");
  EXPECT_EQ(job.uid, 1001U);
  EXPECT_EQ(job.account, "");
  EXPECT_EQ(job.nodes, (std::vector<std::string>{"gpu01", "gpu02", "gpu07"}));
  EXPECT_EQ(job.gpus,
            (std::vector<SlurmNodeGpus>{
                {"gpu01", {0, 1, 2, 3}}, {"gpu02", {0, 1, 2, 3}}, {"gpu07", {1, 3}}}));
}

TEST(SlurmJobsTest, HostLists) {
  EXPECT_EQ(*ExpandHostList("gpu[01-03,07],login1"),
            (std::vector<std::string>{"gpu01", "gpu02", "gpu03", "gpu07", "login1"}));
  EXPECT_EQ(*ExpandHostList("n[8-10]-ib"), (std::vector<std::string>{"n8-ib", "n9-ib", "n10-ib"}));
  EXPECT_EQ(*ExpandHostList(""), std::vector<std::string>{});
  EXPECT_FALSE(ExpandHostList("gpu[01-03").ok());
  EXPECT_FALSE(ExpandHostList("gpu[3-1]").ok());
}

TEST(SlurmJobsTest, GpuIndicesOfGres) {
  EXPECT_EQ(GpuIndicesOfGres("gpu:h100:2(IDX:0-1)"), (std::vector<int>{0, 1}));
  EXPECT_EQ(GpuIndicesOfGres("gpu(IDX:4)"), (std::vector<int>{4}));
  EXPECT_EQ(GpuIndicesOfGres("shard:2(IDX:0),gpu:1(IDX:6)"), (std::vector<int>{6}));
  EXPECT_EQ(GpuIndicesOfGres("gpu:h100:2"), std::vector<int>{});
  EXPECT_EQ(GpuIndicesOfGres("gpuish:1(IDX:0)"), std::vector<int>{});
  EXPECT_EQ(GpuIndicesOfGres(""), std::vector<int>{});
}

TEST(SlurmJobsTest, Timestamps) {
  EXPECT_FALSE(ParseSlurmTimestamp("Unknown"));
  EXPECT_FALSE(ParseSlurmTimestamp("None"));
  EXPECT_FALSE(ParseSlurmTimestamp("2026-13-01T00:00:00"));
  EXPECT_FALSE(ParseSlurmTimestamp("2026-12-07 10:08:43"));
  // One second apart whatever the zone.
  EXPECT_EQ(At("2026-12-07T10:08:44") - At("2026-12-07T10:08:43"), Millis(1000));
}

TEST(SlurmJobsTest, States) {
  EXPECT_EQ(JobStateOfSlurm("COMPLETING"), JobState::kRunning);
  EXPECT_EQ(JobStateOfSlurm("TIMEOUT"), JobState::kTimeout);
  EXPECT_EQ(JobStateOfSlurm("OUT_OF_MEMORY"), JobState::kFailed);
  EXPECT_EQ(JobStateOfSlurm("NODE_FAIL"), JobState::kNodeFail);
  EXPECT_EQ(JobStateOfSlurm("REQUEUED"), JobState::kPending);
  EXPECT_FALSE(JobStateOfSlurm("SPECIAL_EXIT"));
}

}  // namespace
}  // namespace gf

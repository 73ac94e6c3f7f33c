#include "report/job_efficiency.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "report/report.h"

namespace gf {
namespace {

using ::testing::HasSubstr;

JobEfficiencyInput Ended(double gpus, double util) {
  return JobEfficiencyInput{.held_gpus = gpus,
                            .elapsed_s = 7200,
                            .time_limit_s = 3 * 3600.0,
                            .mean_util_pct = util,
                            .peak_memory_mib = std::int64_t{60} * 1024,
                            .card_memory_mib = std::int64_t{80} * 1024,
                            .running = false};
}

TEST(JobEfficiencyTest, FiguresAreHeldTimesElapsedAndUsedShare) {
  const JobEfficiency eff = ComputeJobEfficiency(Ended(4, 80));
  EXPECT_DOUBLE_EQ(eff.gpu_hours_allocated, 8.0);
  ASSERT_TRUE(eff.gpu_hours_used.has_value());
  EXPECT_DOUBLE_EQ(*eff.gpu_hours_used, 6.4);
  ASSERT_TRUE(eff.memory_pct.has_value());
  EXPECT_DOUBLE_EQ(*eff.memory_pct, 75.0);
  ASSERT_TRUE(eff.time_limit_pct.has_value());
  EXPECT_NEAR(*eff.time_limit_pct, 66.67, 0.01);
  EXPECT_THAT(eff.advice, HasSubstr("well used (80 %"));
}

TEST(JobEfficiencyTest, LowUseAsksForFewerGpusByTheReportsThreshold) {
  const JobEfficiency low = ComputeJobEfficiency(Ended(4, 12));
  EXPECT_THAT(low.advice, HasSubstr("used 12 % of its GPUs"));
  EXPECT_THAT(low.advice, HasSubstr("--gpus 1 would do"));
  // At the report's threshold a job is no longer told so.
  EXPECT_THAT(ComputeJobEfficiency(Ended(4, kLowTeamUsePct)).advice, HasSubstr("well used"));
  EXPECT_THAT(ComputeJobEfficiency(Ended(4, kIdleUtilPct - 1)).advice, HasSubstr("idle"));
}

TEST(JobEfficiencyTest, SmallMemorySuggestsAShareAndShortRunsAShorterLimit) {
  JobEfficiencyInput small = Ended(1, 90);
  small.peak_memory_mib = std::int64_t{8} * 1024;  // 10 % of 80 GiB
  EXPECT_THAT(ComputeJobEfficiency(small).advice, HasSubstr("--gpu-mem 12G"));
  JobEfficiencyInput quick = Ended(1, 90);
  quick.elapsed_s = 600;  // 10 min of a 3 h limit
  EXPECT_THAT(ComputeJobEfficiency(quick).advice, HasSubstr("--time nearer its run (40m)"));
}

TEST(JobEfficiencyTest, ATinyRunIsNotJudgedAsTheReportJudgesNone) {
  JobEfficiencyInput tiny = Ended(1, 0);
  tiny.elapsed_s = 60;  // 0.017 GPU-h
  EXPECT_THAT(ComputeJobEfficiency(tiny).advice, HasSubstr("too short to judge"));
  tiny.elapsed_s = kMinRecommendGpuHours * 3600;
  EXPECT_THAT(ComputeJobEfficiency(tiny).advice, HasSubstr("idle"));
}

TEST(JobEfficiencyTest, RunningAndUnsampledJobsSaySo) {
  JobEfficiencyInput running = Ended(2, 30);
  running.running = true;
  EXPECT_THAT(ComputeJobEfficiency(running).advice, HasSubstr("so far"));
  running.mean_util_pct.reset();
  EXPECT_THAT(ComputeJobEfficiency(running).advice, HasSubstr("no GPU samples yet"));
  EXPECT_THAT(ComputeJobEfficiency(JobEfficiencyInput{}).advice, HasSubstr("held no GPU"));
}

}  // namespace
}  // namespace gf

namespace gf {
namespace {

TEST(JobEfficiencyTest, HostLinesCompareWhatWasUsedWithWhatWasReserved) {
  JobEfficiencyInput in{.elapsed_s = 3600,
                        .cpus = 2,
                        .host_memory_mib = 4096,
                        .cpu_ms = 3'723'000,
                        .peak_host_memory_kib = 1'258'291};
  const JobEfficiency eff = ComputeJobEfficiency(in);
  EXPECT_DOUBLE_EQ(eff.core_seconds, 7200);
  ASSERT_TRUE(eff.cpu_pct.has_value());
  EXPECT_NEAR(*eff.cpu_pct, 51.7, 0.1);
  ASSERT_TRUE(eff.host_memory_pct.has_value());
  EXPECT_NEAR(*eff.host_memory_pct, 30.0, 0.1);
  EXPECT_EQ(CpuEfficiencyText(in, eff), "1h2m3s of 2h core-time (52 %)");
  EXPECT_EQ(HostMemoryText(in, eff), "1.2 GiB of 4 GiB requested (30 %)");

  // Nothing reserved: the measure alone; nothing measured (an older run, or running): so said.
  in.cpus = 0;
  in.host_memory_mib = 0;
  in.cpu_ms = 1'234;
  in.peak_host_memory_kib = 53'248;
  const JobEfficiency bare = ComputeJobEfficiency(in);
  EXPECT_FALSE(bare.cpu_pct.has_value());
  EXPECT_EQ(CpuEfficiencyText(in, bare), "1.2s of CPU (no --cpus to compare with)");
  EXPECT_EQ(HostMemoryText(in, bare), "52.0 MiB (no --mem to compare with)");
  in.cpu_ms.reset();
  in.peak_host_memory_kib.reset();
  in.running = true;
  EXPECT_EQ(CpuEfficiencyText(in, bare), "not measured (measured when the run ends)");
}

}  // namespace
}  // namespace gf

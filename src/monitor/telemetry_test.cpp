#include "monitor/telemetry.h"

#include <atomic>
#include <chrono>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "monitor/series_ring.h"

namespace gf {
namespace {

using std::chrono::seconds;
using ::testing::HasSubstr;

// A minute boundary, so that minute rollups and coarse slots start at kT0.
const Time kT0 = FromUnixMillis(28'333'334LL * 60'000);
const NodeId kNode("n1");

GpuUuid Uuid(const std::string& node, int index) {
  return GpuUuid("GPU-" + node + "-" + std::to_string(index));
}

Node MakeNode(const std::string& name, int gpus) {
  Node node;
  node.name = NodeId(name);
  for (int i = 0; i < gpus; ++i) {
    node.gpus.push_back(Gpu{i, Uuid(name, i), "H100-80GB", 81'920, GpuHealth::kOk, ""});
  }
  return node;
}

GpuProcessSample Process(std::uint32_t pid,
                         std::optional<JobId> job,
                         std::optional<std::int64_t> memory_mib,
                         const std::string& user = "alice") {
  GpuProcessSample p;
  p.pid = pid;
  p.job = job;
  p.used_memory_mib = memory_mib;
  p.user = user;
  p.unmanaged = !job;
  return p;
}

GpuAssignment Holder(std::int64_t job, const std::string& user = "alice") {
  return GpuAssignment{JobId(job), user, "ml"};
}

// The sample's time is the test's clock: every sample is taken "now".
class TelemetryTest : public ::testing::Test {
 protected:
  explicit TelemetryTest(TelemetryOptions options = {}) : telemetry_(options) {
    telemetry_.SetInventory(MakeNode("n1", 2));
  }

  GpuSample Sample(int index, std::optional<int> util = 0, std::int64_t memory_used_mib = 0) {
    GpuSample s;
    s.uuid = Uuid("n1", index);
    s.time = clock_.Now();
    s.memory_total_mib = 81'920;
    s.memory_used_mib = memory_used_mib;
    s.memory_free_mib = s.memory_total_mib - memory_used_mib;
    s.util_gpu_pct = util;
    return s;
  }
  GpuSample Lost(int index) {
    GpuSample s;
    s.uuid = Uuid("n1", index);
    s.time = clock_.Now();
    s.lost = true;
    s.health = GpuHealth::kFailed;
    s.health_cause = "GPU has fallen off the bus";
    return s;
  }
  IngestResult Ingest(std::vector<GpuSample> samples) {
    return telemetry_.Ingest(kNode, std::move(samples));
  }
  std::vector<SeriesPoint> Series(int index, Metric metric, Resolution resolution) {
    return telemetry_.Series(
        Uuid("n1", index), metric, resolution, kT0 - seconds(3600), kT0 + seconds(7 * 86400));
  }

  ManualClock clock_{kT0};
  Telemetry telemetry_;
};

TelemetryOptions FineRing(int slots) {
  TelemetryOptions options;
  options.fine_slots = slots;
  return options;
}

// ---- latest sample, labels, health ----

TEST_F(TelemetryTest, SnapshotShowsLatestSampleWithInventoryAndAssignment) {
  telemetry_.SetInventory(MakeNode("a0", 1));  // sorts before n1
  telemetry_.Assign(Uuid("n1", 1), Holder(7));
  Ingest({Sample(0, 10), Sample(1, 20)});
  clock_.Advance(seconds(1));
  Ingest({Sample(1, 90, 5000)});

  const TelemetrySnapshot snapshot = telemetry_.Snapshot();
  ASSERT_EQ(snapshot.gpus.size(), 3u);
  EXPECT_EQ(snapshot.gpus[0].gpu.uuid, Uuid("a0", 0));
  EXPECT_FALSE(snapshot.gpus[0].sample.has_value());
  EXPECT_EQ(snapshot.gpus[1].gpu.uuid, Uuid("n1", 0));
  EXPECT_TRUE(snapshot.gpus[1].assignments.empty());
  const GpuView& held = snapshot.gpus[2];
  EXPECT_EQ(held.node, kNode);
  EXPECT_EQ(held.gpu.model, "H100-80GB");
  EXPECT_EQ(held.assignments, std::vector{Holder(7)});
  ASSERT_TRUE(held.sample.has_value());
  EXPECT_EQ(held.sample->util_gpu_pct, 90);  // the latest, not the first
  EXPECT_EQ(held.sample->memory_used_mib, 5000);
  EXPECT_EQ(telemetry_.Find(Uuid("n1", 1))->sample, held.sample);
}

TEST_F(TelemetryTest, UnknownGpuAndForeignNodeAreIgnored) {
  GpuSample stranger = Sample(0, 50);
  stranger.uuid = GpuUuid("GPU-nobody");
  GpuSample n1_gpu = Sample(0, 50);
  EXPECT_TRUE(Ingest({stranger}).health.empty());
  // n1's GPU reported by another node's agent: not that node's to report.
  telemetry_.Ingest(NodeId("n2"), {n1_gpu});

  EXPECT_FALSE(telemetry_.Find(GpuUuid("GPU-nobody")).has_value());
  EXPECT_FALSE(telemetry_.Find(Uuid("n1", 0))->sample.has_value());
  EXPECT_TRUE(Series(0, Metric::kUtilGpu, Resolution::kFine).empty());
  EXPECT_TRUE(
      telemetry_
          .Series(
              GpuUuid("GPU-nobody"), Metric::kUtilGpu, Resolution::kFine, kT0, kT0 + seconds(10))
          .empty());
  EXPECT_EQ(telemetry_.Snapshot().gpus.size(), 2u);
}

TEST_F(TelemetryTest, HealthChangeIsReportedOnceAndFollowsTheLatestSample) {
  GpuSample hot = Sample(0);
  hot.health = GpuHealth::kDegraded;
  hot.health_cause = "temperature 92 C";
  IngestResult r = Ingest({hot});
  ASSERT_EQ(r.health.size(), 1u);
  EXPECT_EQ(r.health[0].uuid, Uuid("n1", 0));
  EXPECT_EQ(r.health[0].from, GpuHealth::kOk);
  EXPECT_EQ(r.health[0].to, GpuHealth::kDegraded);
  EXPECT_EQ(r.health[0].cause, "temperature 92 C");
  EXPECT_EQ(telemetry_.Find(Uuid("n1", 0))->gpu.health, GpuHealth::kDegraded);
  EXPECT_EQ(telemetry_.Find(Uuid("n1", 0))->gpu.health_cause, "temperature 92 C");

  clock_.Advance(seconds(1));
  hot.time = clock_.Now();
  EXPECT_TRUE(Ingest({hot}).health.empty());  // unchanged: not reported again

  clock_.Advance(seconds(1));
  r = Ingest({Sample(0)});
  ASSERT_EQ(r.health.size(), 1u);
  EXPECT_EQ(r.health[0].from, GpuHealth::kDegraded);
  EXPECT_EQ(r.health[0].to, GpuHealth::kOk);
  EXPECT_EQ(r.health[0].cause, "");
  EXPECT_EQ(telemetry_.Find(Uuid("n1", 0))->gpu.health, GpuHealth::kOk);
}

TEST_F(TelemetryTest, LastXidOutlivesTheSampleThatCarriedIt) {
  EXPECT_FALSE(telemetry_.Find(Uuid("n1", 0))->last_xid);
  GpuSample with_xid = Sample(0);
  with_xid.xids = {XidEvent{31, clock_.Now()}, XidEvent{79, clock_.Now()}};
  Ingest({with_xid});
  clock_.Advance(seconds(1));
  Ingest({Sample(0)});  // no XID in this one
  const std::optional<GpuView> view = telemetry_.Find(Uuid("n1", 0));
  ASSERT_TRUE(view->last_xid);
  EXPECT_EQ(view->last_xid->xid, 79);
  EXPECT_TRUE(view->sample->xids.empty());
  EXPECT_FALSE(telemetry_.Find(Uuid("n1", 1))->last_xid);
}

TEST_F(TelemetryTest, RepeatedOrLateSampleIsNotCountedTwice) {
  telemetry_.Assign(Uuid("n1", 0), Holder(7));
  GpuSample s = Sample(0, 40);
  Ingest({s});
  Ingest({s});  // the agent retried its report
  s.time -= seconds(1);
  Ingest({s});
  EXPECT_EQ(telemetry_.Usage(JobId(7))->samples, 1);
}

// ---- conditions ----

class ConditionTest : public TelemetryTest {
 protected:
  ConditionTest() : TelemetryTest(Options()) {}
  static TelemetryOptions Options() {
    TelemetryOptions options;
    options.no_process_after = seconds(60);
    return options;
  }
  // Advances the clock by `step` and ingests one sample of GPU 0 with these processes.
  IngestResult Step(seconds step, std::vector<GpuProcessSample> processes = {}) {
    clock_.Advance(step);
    GpuSample s = Sample(0, 0);
    s.processes = std::move(processes);
    return Ingest({s});
  }
};

TEST_F(ConditionTest, AllocatedNoProcessBeginsAfterTheDelayAndClearsOnAProcess) {
  telemetry_.Assign(Uuid("n1", 0), Holder(7));
  EXPECT_TRUE(Step(seconds(0)).conditions.empty());  // idle since kT0
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(Step(seconds(10)).conditions.empty()) << "at +" << (i + 1) * 10 << "s";
  }
  IngestResult r = Step(seconds(10));  // kT0 + 60 s: idle for no_process_after
  ASSERT_EQ(r.conditions.size(), 1u);
  const ConditionChange& begin = r.conditions[0];
  EXPECT_EQ(begin.kind, "allocated_no_process");
  EXPECT_TRUE(begin.active);
  EXPECT_EQ(begin.job, JobId(7));
  EXPECT_EQ(begin.uuid, Uuid("n1", 0));
  EXPECT_THAT(begin.message, HasSubstr("job 7 (alice)"));
  EXPECT_THAT(begin.message, HasSubstr("no process for 1m"));
  EXPECT_EQ(telemetry_.Find(Uuid("n1", 0))->conditions,
            std::vector<std::string>{"allocated_no_process"});

  EXPECT_TRUE(Step(seconds(10)).conditions.empty());  // still idle: reported once

  r = Step(seconds(10), {Process(100, JobId(7), 500)});
  ASSERT_EQ(r.conditions.size(), 1u);
  EXPECT_EQ(r.conditions[0].kind, "allocated_no_process");
  EXPECT_FALSE(r.conditions[0].active);
  EXPECT_EQ(r.conditions[0].job, JobId(7));
  EXPECT_THAT(r.conditions[0].message, HasSubstr("job 7 now runs a process"));
  EXPECT_TRUE(telemetry_.Find(Uuid("n1", 0))->conditions.empty());

  // A process seen restarts the wait: 59 s of idleness later, nothing yet.
  EXPECT_TRUE(Step(seconds(1)).conditions.empty());
  EXPECT_TRUE(Step(seconds(59)).conditions.empty());
  EXPECT_EQ(Step(seconds(1)).conditions.size(), 1u);
}

TEST_F(ConditionTest, AllocatedNoProcessClearsWhenTheAssignmentEnds) {
  telemetry_.Assign(Uuid("n1", 0), Holder(7));
  Step(seconds(0));
  ASSERT_EQ(Step(seconds(60)).conditions.size(), 1u);
  telemetry_.Unassign(Uuid("n1", 0), JobId(7));
  const IngestResult r = Step(seconds(1));
  ASSERT_EQ(r.conditions.size(), 1u);
  EXPECT_FALSE(r.conditions[0].active);
  EXPECT_EQ(r.conditions[0].job, JobId(7));
  EXPECT_THAT(r.conditions[0].message, HasSubstr("job 7 no longer holds it"));
}

TEST_F(ConditionTest, NewHolderGetsTheFullDelay) {
  telemetry_.Assign(Uuid("n1", 0), Holder(7));
  Step(seconds(0));
  Step(seconds(50));
  telemetry_.Unassign(Uuid("n1", 0), JobId(7));
  telemetry_.Assign(Uuid("n1", 0), Holder(8));
  EXPECT_TRUE(Step(seconds(10)).conditions.empty());  // 60 s idle, but only 0 s under job 8
  EXPECT_TRUE(Step(seconds(59)).conditions.empty());
  const IngestResult r = Step(seconds(1));
  ASSERT_EQ(r.conditions.size(), 1u);
  EXPECT_EQ(r.conditions[0].job, JobId(8));
}

TEST_F(ConditionTest, UnallocatedProcessBeginsOnceAndClears) {
  IngestResult r =
      Step(seconds(0),
           {Process(4242, std::nullopt, 100, "bob"), Process(4243, std::nullopt, 100, "carol")});
  ASSERT_EQ(r.conditions.size(), 1u);
  EXPECT_EQ(r.conditions[0].kind, "unallocated_process");
  EXPECT_TRUE(r.conditions[0].active);
  EXPECT_FALSE(r.conditions[0].job.has_value());
  EXPECT_THAT(r.conditions[0].message, HasSubstr("pid 4242 (bob), pid 4243 (carol)"));

  EXPECT_TRUE(Step(seconds(1), {Process(4242, std::nullopt, 100, "bob")}).conditions.empty());

  r = Step(seconds(1));
  ASSERT_EQ(r.conditions.size(), 1u);
  EXPECT_EQ(r.conditions[0].kind, "unallocated_process");
  EXPECT_FALSE(r.conditions[0].active);
  EXPECT_TRUE(Step(seconds(1)).conditions.empty());
}

TEST_F(ConditionTest, LostGpuClearsAndSuppressesConditions) {
  Step(seconds(0), {Process(4242, std::nullopt, 100, "bob")});
  clock_.Advance(seconds(1));
  IngestResult r = Ingest({Lost(0)});
  ASSERT_EQ(r.conditions.size(), 1u);
  EXPECT_FALSE(r.conditions[0].active);
  EXPECT_THAT(r.conditions[0].message, HasSubstr("lost"));

  // Held and silent, but lost: no allocated_no_process, however long.
  telemetry_.Assign(Uuid("n1", 0), Holder(7));
  for (int i = 0; i < 5; ++i) {
    clock_.Advance(seconds(60));
    EXPECT_TRUE(Ingest({Lost(0)}).conditions.empty());
  }
  EXPECT_TRUE(telemetry_.Find(Uuid("n1", 0))->conditions.empty());
  // Back on the bus: the wait starts from its first sample.
  EXPECT_TRUE(Step(seconds(1)).conditions.empty());
  EXPECT_EQ(Step(seconds(60)).conditions.size(), 1u);
}

TEST_F(ConditionTest, GpuLeavingTheInventoryClearsItsConditionsAtTheNextIngest) {
  Step(seconds(0), {Process(4242, std::nullopt, 100, "bob")});
  telemetry_.SetInventory(MakeNode("n1", 0));
  EXPECT_FALSE(telemetry_.Find(Uuid("n1", 0)).has_value());
  const IngestResult r = Ingest({});
  ASSERT_EQ(r.conditions.size(), 1u);
  EXPECT_FALSE(r.conditions[0].active);
  EXPECT_EQ(r.conditions[0].uuid, Uuid("n1", 0));
  EXPECT_TRUE(Ingest({}).conditions.empty());  // delivered once
}

// ---- inventory ----

TEST_F(TelemetryTest, InventoryUpdateKeepsStateOfGpusStillListed) {
  Ingest({Sample(0, 33), Sample(1, 44)});
  Node renumbered = MakeNode("n1", 2);
  std::swap(renumbered.gpus[0].index, renumbered.gpus[1].index);  // NVML order changed
  renumbered.gpus[0].model = "H100-80GB-HBM3";
  telemetry_.SetInventory(renumbered);

  const TelemetrySnapshot snapshot = telemetry_.Snapshot();
  ASSERT_EQ(snapshot.gpus.size(), 2u);
  EXPECT_EQ(snapshot.gpus[0].gpu.uuid, Uuid("n1", 1));  // index 0 now
  EXPECT_EQ(snapshot.gpus[0].sample->util_gpu_pct, 44);
  EXPECT_EQ(snapshot.gpus[1].gpu.uuid, Uuid("n1", 0));
  EXPECT_EQ(snapshot.gpus[1].gpu.index, 1);
  EXPECT_EQ(snapshot.gpus[1].gpu.model, "H100-80GB-HBM3");
  EXPECT_EQ(snapshot.gpus[1].sample->util_gpu_pct, 33);
  EXPECT_EQ(Series(0, Metric::kUtilGpu, Resolution::kFine).size(), 1u);
}

// ---- idle tracking (the idle reaper) ----

class IdleTest : public TelemetryTest {
 protected:
  // Job 7 holds both GPUs from kT0, under 5 %.
  void SetUp() override {
    for (int index : {0, 1}) {
      telemetry_.Assign(Uuid("n1", index),
                        GpuAssignment{.job = JobId(7),
                                      .user = "alice",
                                      .team = "ml",
                                      .idle_util_below_pct = 5,
                                      .since = kT0});
    }
  }
  // A sample of GPU `index` with job 7's process on it.
  GpuSample Busy(int index, int util, std::int64_t memory_mib) {
    GpuSample s = Sample(index, util, memory_mib);
    s.processes.push_back(Process(100, JobId(7), memory_mib));
    return s;
  }
  std::optional<Time> IdleSince() const { return telemetry_.IdleSince(JobId(7)); }
};

TEST_F(IdleTest, NotJudgedUntilEveryGpuHasASample) {
  EXPECT_FALSE(IdleSince());
  clock_.Advance(seconds(5));
  Ingest({Sample(0)});  // no process: idle, but GPU 1 has said nothing yet
  EXPECT_FALSE(IdleSince());
  Ingest({Sample(1)});
  EXPECT_EQ(IdleSince(), kT0);                   // never active: idle since the assignment
  EXPECT_FALSE(telemetry_.IdleSince(JobId(8)));  // holds no GPU
}

TEST_F(IdleTest, UtilisationAtTheThresholdIsActiveAndBelowItIsIdle) {
  Ingest({Busy(0, 5, 1000), Busy(1, 90, 1000)});
  EXPECT_FALSE(IdleSince());
  const Time active_at = clock_.Now();
  clock_.Advance(seconds(1));
  Ingest({Busy(0, 4, 1000), Busy(1, 0, 1000)});  // under 5 %, memory unchanged
  EXPECT_EQ(IdleSince(), active_at);
  clock_.Advance(seconds(1));
  Ingest({Busy(0, 4, 1000), Busy(1, 3, 1000)});
  EXPECT_EQ(IdleSince(), active_at);  // still counted from the last active sample
}

TEST_F(IdleTest, MemoryChangeUnderTheThresholdIsActive) {
  Ingest({Busy(0, 0, 1000), Busy(1, 0, 1000)});
  clock_.Advance(seconds(1));
  Ingest({Busy(0, 0, 1000), Busy(1, 0, 1000)});
  EXPECT_EQ(IdleSince(), kT0);
  clock_.Advance(seconds(1));
  const Time loading = clock_.Now();
  Ingest({Busy(0, 0, 1000), Busy(1, 0, 3000)});  // GPU 1 loads data at 0 %
  EXPECT_FALSE(IdleSince());
  clock_.Advance(seconds(1));
  Ingest({Busy(0, 0, 1000), Busy(1, 0, 3000)});
  EXPECT_EQ(IdleSince(), loading);  // the latest of the GPUs' last active samples
}

TEST_F(IdleTest, NoProcessIsIdleWhateverTheUtilisation) {
  Ingest({Busy(0, 50, 1000), Busy(1, 50, 1000)});
  clock_.Advance(seconds(1));
  Ingest({Sample(0, 80, 2000), Sample(1, 80, 4000)});  // someone else's load: no process
  EXPECT_EQ(IdleSince(), kT0);
}

TEST_F(IdleTest, UnknownUtilisationAndALostGpuAreNotIdle) {
  Ingest({Busy(0, 0, 1000), Busy(1, 0, 1000)});
  clock_.Advance(seconds(1));
  Ingest({Busy(0, 0, 1000), Busy(1, 0, 1000)});
  ASSERT_TRUE(IdleSince());
  clock_.Advance(seconds(1));
  GpuSample unknown = Busy(0, 0, 1000);
  unknown.util_gpu_pct.reset();
  Ingest({unknown});
  EXPECT_FALSE(IdleSince());
  clock_.Advance(seconds(1));
  Ingest({Busy(0, 0, 1000), Lost(1)});
  EXPECT_FALSE(IdleSince());
}

TEST_F(IdleTest, ANewHolderStartsAfresh) {
  Ingest({Sample(0), Sample(1)});
  ASSERT_EQ(IdleSince(), kT0);
  const Time later = kT0 + seconds(100);
  for (int index : {0, 1}) {
    telemetry_.Unassign(Uuid("n1", index), JobId(7));
  }
  EXPECT_FALSE(IdleSince());
  telemetry_.Assign(Uuid("n1", 0), GpuAssignment{.job = JobId(8), .since = later});
  EXPECT_FALSE(telemetry_.IdleSince(JobId(8)));  // no sample under job 8 yet
  clock_.Advance(seconds(100));
  Ingest({Sample(0)});
  EXPECT_EQ(telemetry_.IdleSince(JobId(8)), later);
}

TEST_F(IdleTest, ThresholdZeroCountsOnlyGpusWithoutProcesses) {
  telemetry_.Unassign(Uuid("n1", 0), JobId(7));
  telemetry_.Assign(Uuid("n1", 0), GpuAssignment{.job = JobId(8), .since = kT0});
  telemetry_.Unassign(Uuid("n1", 1), JobId(7));
  Ingest({Busy(0, 0, 1000)});
  clock_.Advance(seconds(1));
  Ingest({Busy(0, 0, 1000)});
  EXPECT_FALSE(telemetry_.IdleSince(JobId(8)));
}

// ---- job usage ----

TEST_F(TelemetryTest, JobUsageIsExactForAHandComputedSequence) {
  const JobId job(7);
  const JobId other(9);
  auto with = [](GpuSample s,
                 std::optional<std::int64_t> energy_mj,
                 std::vector<GpuProcessSample> processes = {}) {
    s.energy_mj = energy_mj;
    s.processes = std::move(processes);
    return s;
  };
  // Before the assignment: neither counted nor a baseline for the job's energy.
  Ingest({with(Sample(0, 90, 70'000), 1000), with(Sample(1, 90, 70'000), 9000)});
  telemetry_.Assign(Uuid("n1", 0), Holder(7));
  telemetry_.Assign(Uuid("n1", 1), Holder(7));

  clock_.Advance(seconds(1));  // baselines: A 2000, B 10000
  Ingest({with(Sample(0, 50, 1000),
               2000,
               {Process(1, job, 600), Process(2, job, 300), Process(3, other, 5000)}),
          with(Sample(1, 70, 4000), 10'000)});  // memory: A 900, B 4000
  clock_.Advance(seconds(1));
  Ingest({with(Sample(0, 30, 1200), 2500, {Process(1, job, std::nullopt)}),  // +500; 1200
          with(Sample(1, std::nullopt, 4100), std::nullopt)});  // no util, no energy; 4100
  clock_.Advance(seconds(1));
  Ingest({with(Sample(0, 100, 800), 300),       // counter reset: +300
          with(Sample(1, 60, 3000), 10'900)});  // +900 since the last reading (10000)

  JobUsage expected;
  expected.samples = 6;
  expected.mean_util_pct = (50 + 70 + 30 + 100 + 60) / 5.0;
  expected.peak_util_pct = 100;
  expected.peak_memory_mib = 4100;
  expected.energy_mj = 500 + 300 + 900;
  EXPECT_EQ(telemetry_.Usage(job), expected);

  // The assignment ends: usage stays as it was until the controller forgets the job.
  telemetry_.Unassign(Uuid("n1", 0), job);
  telemetry_.Unassign(Uuid("n1", 1), job);
  clock_.Advance(seconds(1));
  Ingest({with(Sample(0, 100, 80'000), 99'000), with(Sample(1, 100, 80'000), 99'000)});
  EXPECT_EQ(telemetry_.Usage(job), expected);
  EXPECT_TRUE(telemetry_.Snapshot().jobs.empty());
  telemetry_.ForgetJob(job);
  EXPECT_FALSE(telemetry_.Usage(job).has_value());
  EXPECT_FALSE(telemetry_.Usage(JobId(123)).has_value());
}

TEST_F(TelemetryTest, SnapshotListsLiveJobsWithCurrentFigures) {
  telemetry_.SetInventory(MakeNode("n2", 1));
  telemetry_.Assign(Uuid("n1", 0), Holder(7));
  telemetry_.Assign(Uuid("n1", 1), Holder(7));
  telemetry_.Assign(Uuid("n2", 0), Holder(3, "bob"));
  GpuSample a = Sample(0, 20, 1000);
  a.processes = {Process(1, JobId(7), 700)};
  Ingest({a, Sample(1, 60, 2000)});

  const std::vector<JobLive> jobs = telemetry_.Snapshot().jobs;
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].job, JobId(3));  // ordered by id
  EXPECT_EQ(jobs[0].user, "bob");
  EXPECT_EQ(jobs[0].gpus, 1);
  EXPECT_EQ(jobs[0].usage, JobUsage{});
  EXPECT_EQ(jobs[1].job, JobId(7));
  EXPECT_EQ(jobs[1].team, "ml");
  EXPECT_EQ(jobs[1].gpus, 2);
  EXPECT_DOUBLE_EQ(jobs[1].util_now_pct, 40.0);
  EXPECT_EQ(jobs[1].memory_now_mib, 700 + 2000);
  EXPECT_EQ(jobs[1].usage, telemetry_.Usage(JobId(7)));
  EXPECT_EQ(jobs[1].usage.samples, 2);
}

// ---- minute rollups ----

TEST_F(TelemetryTest, MinuteRollupIsReturnedWhenTheMinuteEnds) {
  auto sample = [&](std::optional<int> util,
                    std::int64_t memory,
                    std::optional<std::int64_t> power_mw,
                    std::int64_t energy_mj) {
    GpuSample s = Sample(0, util, memory);
    s.power_mw = power_mw;
    s.energy_mj = energy_mj;
    return s;
  };
  EXPECT_TRUE(Ingest({sample(10, 100, 100'000, 5000)}).minutes.empty());
  telemetry_.Assign(Uuid("n1", 0), Holder(3));
  clock_.Advance(seconds(20));
  GpuSample hot = sample(30, 300, 200'000, 6000);
  hot.health = GpuHealth::kDegraded;
  hot.health_cause = "temperature 92 C";
  EXPECT_TRUE(Ingest({hot}).minutes.empty());
  clock_.Advance(seconds(20));
  EXPECT_TRUE(Ingest({sample(std::nullopt, 200, std::nullopt, 6500)}).minutes.empty());
  clock_.Advance(seconds(20));  // kT0 + 60 s: the first minute is over
  IngestResult r = Ingest({sample(50, 50, 300'000, 8000)});

  GpuMinute expected;
  expected.node = kNode;
  expected.uuid = Uuid("n1", 0);
  expected.minute = kT0;
  expected.job = JobId(3);  // held at the minute's last sample, not at its first
  expected.user = "alice";
  expected.team = "ml";
  expected.samples = 3;
  expected.allocated_ms = 60'000;  // from the sample after the job's start: 20 + 20 + 20 s
  expected.util_mean_pct = 20;     // (10 + 30) / 2: the sample without a reading is left out
  expected.util_max_pct = 30;
  expected.memory_used_max_mib = 300;
  expected.power_mean_w = 150;
  expected.energy_mj = 1500;               // 6500 - 5000
  expected.health = GpuHealth::kDegraded;  // worst seen, though ok again at the end
  ASSERT_EQ(r.minutes.size(), 1u);
  EXPECT_EQ(r.minutes[0], expected);

  telemetry_.Unassign(Uuid("n1", 0), JobId(3));
  telemetry_.Assign(Uuid("n1", 0), Holder(4, "bob"));  // job 3 ended, job 4 started
  clock_.Advance(seconds(10));
  EXPECT_TRUE(Ingest({sample(70, 10, 100'000, 8200)}).minutes.empty());
  telemetry_.Unassign(Uuid("n1", 0), JobId(4));
  clock_.Advance(seconds(55));  // kT0 + 125 s: skips to the minute after next
  r = Ingest({sample(70, 10, 100'000, 9000)});
  ASSERT_EQ(r.minutes.size(), 1u);
  EXPECT_EQ(r.minutes[0].minute, kT0 + seconds(60));
  EXPECT_EQ(r.minutes[0].samples, 2);
  EXPECT_EQ(r.minutes[0].allocated_ms, 10'000);  // 60 s to 70 s, job 4's; then nobody's
  EXPECT_EQ(r.minutes[0].job, JobId(4));
  EXPECT_EQ(r.minutes[0].user, "bob");
  EXPECT_EQ(r.minutes[0].energy_mj, 1700);  // 8200 - 6500: a delta counts where it is read
  EXPECT_DOUBLE_EQ(r.minutes[0].power_mean_w, 200);
  EXPECT_EQ(r.minutes[0].health, GpuHealth::kOk);
}

// ---- shared GPUs (issue #7) ----

// GPU 0 of n1 shared by fractional jobs; no_process_after 60 s.
class SharedGpuTest : public ConditionTest {
 protected:
  static GpuAssignment Share(std::int64_t job, int milli, std::int64_t memory_limit_mib = 0) {
    return GpuAssignment{.job = JobId(job),
                         .user = "u" + std::to_string(job),
                         .team = "ml",
                         .idle_util_below_pct = 5,
                         .since = kT0,
                         .share_milli = milli,
                         .memory_limit_mib = memory_limit_mib};
  }
  static GpuProcessSample Proc(std::uint32_t pid,
                               std::optional<std::int64_t> job,
                               std::int64_t memory_mib,
                               std::optional<int> sm_util = std::nullopt) {
    GpuProcessSample p =
        Process(pid, job ? std::optional(JobId(*job)) : std::nullopt, memory_mib, "someone");
    p.sm_util_pct = sm_util;
    return p;
  }
  // Advances the clock by `step` and ingests a sample of GPU 0.
  IngestResult At(seconds step,
                  int util,
                  std::vector<GpuProcessSample> processes,
                  std::optional<std::int64_t> energy_mj = std::nullopt) {
    clock_.Advance(step);
    GpuSample s = Sample(0, util, 0);
    for (const GpuProcessSample& p : processes) {
      s.memory_used_mib += p.used_memory_mib.value_or(0);
    }
    s.processes = std::move(processes);
    s.energy_mj = energy_mj;
    return Ingest({s});
  }
  const GpuUuid gpu_ = Uuid("n1", 0);
};

TEST_F(SharedGpuTest, TwoJobsCountTheirOwnMemoryAndUtilisation) {
  telemetry_.Assign(gpu_, Share(12, 500));
  telemetry_.Assign(gpu_, Share(11, 500));
  // Per-process utilisation given: each job its processes' sum; process 3 had no slice of
  // the driver's period and counts 0.
  At(seconds(0), 90, {Proc(1, 11, 1000, 30), Proc(2, 11, 500, 20), Proc(3, 12, 4000)});
  // Not given: each job is charged the GPU's.
  At(seconds(1), 70, {Proc(1, 11, 1200), Proc(3, 12, 3000)});

  const JobUsage eleven = telemetry_.Usage(JobId(11)).value();
  EXPECT_EQ(eleven.samples, 2);
  EXPECT_DOUBLE_EQ(eleven.mean_util_pct, (50 + 70) / 2.0);
  EXPECT_EQ(eleven.peak_util_pct, 70);
  EXPECT_EQ(eleven.peak_memory_mib, 1500);  // 1000 + 500, not the GPU's 5500
  const JobUsage twelve = telemetry_.Usage(JobId(12)).value();
  EXPECT_DOUBLE_EQ(twelve.mean_util_pct, (0 + 70) / 2.0);
  EXPECT_EQ(twelve.peak_memory_mib, 4000);

  const TelemetrySnapshot snapshot = telemetry_.Snapshot();
  ASSERT_EQ(snapshot.gpus[0].assignments.size(), 2u);
  EXPECT_EQ(snapshot.gpus[0].assignments[0], Share(11, 500));  // by job id
  EXPECT_EQ(snapshot.gpus[0].assignments[1], Share(12, 500));
  EXPECT_TRUE(IsShared(snapshot.gpus[0].assignments));
  ASSERT_EQ(snapshot.jobs.size(), 2u);
  EXPECT_EQ(snapshot.jobs[0].gpus, 1);
  EXPECT_DOUBLE_EQ(snapshot.jobs[0].util_now_pct, 70);
  EXPECT_EQ(snapshot.jobs[0].memory_now_mib, 1200);
  EXPECT_EQ(snapshot.jobs[1].memory_now_mib, 3000);
}

TEST_F(SharedGpuTest, OneFractionalHolderIsSharedAndAWholeOneIsNot) {
  EXPECT_FALSE(IsShared({}));
  EXPECT_FALSE(IsShared({Holder(7)}));
  EXPECT_TRUE(IsShared({Share(7, 250)}));
  EXPECT_TRUE(IsShared({Share(7, 1000), Share(8, 1000)}));
  telemetry_.Assign(gpu_, Share(11, 250));
  At(seconds(0), 90, {Proc(1, 11, 1000), Proc(2, std::nullopt, 7000)});
  EXPECT_EQ(telemetry_.Usage(JobId(11))->peak_memory_mib, 1000);  // the stranger's is not its
}

TEST_F(SharedGpuTest, FourJobsSplitTheEnergyByShare) {
  telemetry_.Assign(gpu_, Share(11, 400));
  telemetry_.Assign(gpu_, Share(12, 300));
  telemetry_.Assign(gpu_, Share(13, 200));
  telemetry_.Assign(gpu_, Share(14, 100));
  At(seconds(0), 50, {}, 10'000);  // the baseline
  At(seconds(1), 50, {}, 11'001);  // +1001: 400.4, 300.3, 200.2, 100.1, rounded
  telemetry_.Unassign(gpu_, JobId(14));
  telemetry_.Assign(gpu_, Share(15, 100));
  At(seconds(1), 50, {}, 12'001);  // +1000: job 15 has no baseline under it yet
  At(seconds(1), 50, {}, 13'001);  // +1000

  EXPECT_EQ(telemetry_.Usage(JobId(11))->energy_mj, 400 + 400 + 400);
  EXPECT_EQ(telemetry_.Usage(JobId(12))->energy_mj, 300 + 300 + 300);
  EXPECT_EQ(telemetry_.Usage(JobId(13))->energy_mj, 200 + 200 + 200);
  EXPECT_EQ(telemetry_.Usage(JobId(14))->energy_mj, 100);
  EXPECT_EQ(telemetry_.Usage(JobId(15))->energy_mj, 100);
  const std::vector<JobLive> jobs = telemetry_.Snapshot().jobs;
  ASSERT_EQ(jobs.size(), 4u);  // 11, 12, 13, 15
  EXPECT_EQ(jobs[3].job, JobId(15));
}

TEST_F(SharedGpuTest, EachJobIsIdleOnItsOwn) {
  for (std::int64_t job : {11, 12, 13, 14}) {
    telemetry_.Assign(gpu_, Share(job, 250));
  }
  // The GPU is busy (job 11's work), job 12 sits on steady memory at 2 %, job 13 runs
  // nothing, job 14 loads data at 0 %.
  At(seconds(0),
     95,
     {Proc(1, 11, 1000, 90), Proc(2, 12, 2000, 2), Proc(4, 14, 100, 0), Proc(5, 14, 0, 0)});
  const Time first = clock_.Now();
  At(seconds(1),
     95,
     {Proc(1, 11, 1000, 90), Proc(2, 12, 2000, 2), Proc(4, 14, 900, 0), Proc(5, 14, 0, 0)});
  EXPECT_FALSE(telemetry_.IdleSince(JobId(11)));
  EXPECT_EQ(telemetry_.IdleSince(JobId(12)), kT0);  // never active: since it got the GPU
  EXPECT_EQ(telemetry_.IdleSince(JobId(13)), kT0);
  EXPECT_FALSE(telemetry_.IdleSince(JobId(14)));  // its own memory moved
  At(seconds(1),
     95,
     {Proc(1, 11, 1000, 90), Proc(2, 12, 2000, 2), Proc(4, 14, 900, 0), Proc(5, 14, 0, 0)});
  EXPECT_EQ(telemetry_.IdleSince(JobId(14)), first + seconds(1));
  EXPECT_FALSE(telemetry_.IdleSince(JobId(11)));
}

TEST_F(SharedGpuTest, AllocatedNoProcessIsPerJob) {
  telemetry_.Assign(gpu_, Share(11, 500));
  telemetry_.Assign(gpu_, Share(12, 500));
  At(seconds(0), 50, {Proc(2, 12, 100)});
  EXPECT_TRUE(At(seconds(59), 50, {Proc(2, 12, 100)}).conditions.empty());
  IngestResult r = At(seconds(1), 50, {Proc(2, 12, 100)});
  ASSERT_EQ(r.conditions.size(), 1u);  // job 11 only: job 12's process is not its
  EXPECT_EQ(r.conditions[0].kind, "allocated_no_process");
  EXPECT_TRUE(r.conditions[0].active);
  EXPECT_EQ(r.conditions[0].job, JobId(11));
  EXPECT_THAT(r.conditions[0].message, HasSubstr("job 11 (u11) but has run no process of that"));

  // Job 12's processes end too: its own wait starts now, job 11's goes on.
  EXPECT_TRUE(At(seconds(1), 0, {}).conditions.empty());
  r = At(seconds(60), 0, {});
  ASSERT_EQ(r.conditions.size(), 1u);
  EXPECT_EQ(r.conditions[0].job, JobId(12));
  EXPECT_EQ(telemetry_.Find(gpu_)->conditions, std::vector<std::string>{"allocated_no_process"});

  r = At(seconds(1), 40, {Proc(1, 11, 100)});
  ASSERT_EQ(r.conditions.size(), 1u);
  EXPECT_FALSE(r.conditions[0].active);
  EXPECT_EQ(r.conditions[0].job, JobId(11));
  EXPECT_THAT(r.conditions[0].message, HasSubstr("job 11 now runs a process"));
  telemetry_.Unassign(gpu_, JobId(12));
  r = At(seconds(1), 40, {Proc(1, 11, 100)});
  ASSERT_EQ(r.conditions.size(), 1u);
  EXPECT_EQ(r.conditions[0].job, JobId(12));
  EXPECT_THAT(r.conditions[0].message, HasSubstr("job 12 no longer holds it"));
}

TEST_F(SharedGpuTest, UnallocatedProcessIsOneNoHolderOwns) {
  telemetry_.Assign(gpu_, Share(11, 500));
  telemetry_.Assign(gpu_, Share(12, 500));
  EXPECT_TRUE(At(seconds(0), 50, {Proc(1, 11, 100), Proc(2, 12, 100)}).conditions.empty());
  IngestResult r =
      At(seconds(1), 50, {Proc(1, 11, 100), Proc(3, std::nullopt, 100), Proc(4, 99, 100)});
  ASSERT_EQ(r.conditions.size(), 1u);
  EXPECT_EQ(r.conditions[0].kind, "unallocated_process");
  EXPECT_FALSE(r.conditions[0].job.has_value());
  EXPECT_THAT(r.conditions[0].message,
              HasSubstr("is shared by job 11, job 12 but runs pid 3 (someone), pid 4 (someone) of "
                        "no job holding it"));
  r = At(seconds(1), 50, {Proc(1, 11, 100)});
  ASSERT_EQ(r.conditions.size(), 1u);
  EXPECT_FALSE(r.conditions[0].active);
  EXPECT_THAT(r.conditions[0].message, HasSubstr("every process on it belongs to a job holding"));

  // A whole GPU's holder is not second-guessed: a stranger beside it raises nothing (as before).
  telemetry_.Unassign(gpu_, JobId(11));
  telemetry_.Unassign(gpu_, JobId(12));
  telemetry_.Assign(gpu_, Holder(7));
  EXPECT_TRUE(At(seconds(1), 50, {Proc(1, 7, 100), Proc(3, std::nullopt, 100)}).conditions.empty());
}

TEST_F(SharedGpuTest, MemoryOverLimitBeginsWithTheLargestProcessAndClears) {
  telemetry_.Assign(gpu_, Share(11, 500));
  telemetry_.Assign(gpu_, Share(12, 500, 20'480));
  // At its limit exactly: not over.
  EXPECT_TRUE(At(seconds(0), 50, {Proc(1, 11, 30'000), Proc(4242, 12, 20'480)}).conditions.empty());
  IngestResult r =
      At(seconds(1), 50, {Proc(1, 11, 30'000), Proc(4243, 12, 1504), Proc(4242, 12, 20'000)});
  ASSERT_EQ(r.conditions.size(), 1u);
  const ConditionChange& begin = r.conditions[0];
  EXPECT_EQ(begin.kind, "gpu_memory_over_limit");
  EXPECT_TRUE(begin.active);
  EXPECT_EQ(begin.job, JobId(12));
  EXPECT_EQ(begin.pid, 4242u);
  EXPECT_EQ(begin.uuid, gpu_);
  EXPECT_EQ(begin.message,
            "job 12 uses 21504 MiB on GPU 0 of node n1, over its limit of 20480 MiB (pid 4242 "
            "holds 20000 MiB)");
  EXPECT_EQ(telemetry_.Find(gpu_)->conditions, std::vector<std::string>{"gpu_memory_over_limit"});

  // Still over, another process now the largest: reported once.
  EXPECT_TRUE(At(seconds(1), 50, {Proc(4243, 12, 21'000), Proc(4242, 12, 100)}).conditions.empty());

  r = At(seconds(1), 50, {Proc(4243, 12, 19'000)});
  ASSERT_EQ(r.conditions.size(), 1u);
  EXPECT_EQ(r.conditions[0].kind, "gpu_memory_over_limit");
  EXPECT_FALSE(r.conditions[0].active);
  EXPECT_EQ(r.conditions[0].job, JobId(12));
  EXPECT_FALSE(r.conditions[0].pid.has_value());
  EXPECT_THAT(r.conditions[0].message,
              HasSubstr("job 12 uses 19000 MiB, within its limit of 20480 MiB"));
  EXPECT_TRUE(telemetry_.Find(gpu_)->conditions.empty());

  // Over again, then the job lets go of the GPU (the controller killed it): cleared.
  EXPECT_EQ(At(seconds(1), 50, {Proc(4243, 12, 30'000)}).conditions.size(), 1u);
  telemetry_.Unassign(gpu_, JobId(12));
  r = At(seconds(1), 50, {Proc(1, 11, 100)});
  ASSERT_EQ(r.conditions.size(), 1u);
  EXPECT_FALSE(r.conditions[0].active);
  EXPECT_THAT(r.conditions[0].message, HasSubstr("job 12 no longer holds it"));
}

TEST_F(SharedGpuTest, AssignAgainReplacesAndUnassignOfAStrangerIsANoOp) {
  telemetry_.Assign(gpu_, Share(11, 250));
  At(seconds(0), 0, {});
  telemetry_.Assign(gpu_, Share(11, 500, 1024));  // the same job: replaced, tracking kept
  telemetry_.Unassign(gpu_, JobId(99));
  telemetry_.Unassign(Uuid("n1", 1), JobId(11));
  EXPECT_EQ(telemetry_.Find(gpu_)->assignments, std::vector{Share(11, 500, 1024)});
  EXPECT_EQ(telemetry_.IdleSince(JobId(11)), kT0);
  EXPECT_EQ(At(seconds(60), 0, {}).conditions.size(), 1u);  // 60 s since its first sample
}

TEST_F(SharedGpuTest, MinuteIsRecordedUnderTheLargestShare) {
  telemetry_.Assign(gpu_, Share(11, 250));
  telemetry_.Assign(gpu_, Share(12, 500));
  telemetry_.Assign(gpu_, Share(13, 500));
  At(seconds(0), 50, {}, 1000);
  const IngestResult r = At(seconds(60), 50, {}, 2000);
  ASSERT_EQ(r.minutes.size(), 1u);
  EXPECT_EQ(r.minutes[0].job, JobId(12));  // 500 beats 250; the lower id among equals
  EXPECT_EQ(r.minutes[0].user, "u12");
}

// ---- time series ----

class RingTest : public TelemetryTest {
 protected:
  RingTest() : TelemetryTest(FineRing(4)) {}
  void At(int second, int util) {
    clock_.Set(kT0 + seconds(second));
    Ingest({Sample(0, util)});
  }
  std::vector<SeriesPoint> Fine() { return Series(0, Metric::kUtilGpu, Resolution::kFine); }
};

SeriesPoint Point(int second, double value) {
  return SeriesPoint{kT0 + seconds(second), value};
}

TEST_F(RingTest, WrapAroundDropsTheOldestPoints) {
  for (int s = 0; s < 6; ++s) {
    At(s, 10 + s);
  }
  EXPECT_EQ(Fine(), (std::vector{Point(2, 12), Point(3, 13), Point(4, 14), Point(5, 15)}));
  const std::size_t bytes = telemetry_.RingBytes();

  At(7, 17);  // slot 6 gets no sample: a gap, not the value slot 2 held a lap ago
  EXPECT_EQ(Fine(), (std::vector{Point(4, 14), Point(5, 15), Point(7, 17)}));

  At(100, 1);  // more than a lap later: nothing older survives
  EXPECT_EQ(Fine(), std::vector{Point(100, 1)});
  EXPECT_EQ(telemetry_.RingBytes(), bytes);  // bounded
}

TEST_F(RingTest, SeriesReturnsPointsInAHalfOpenRange) {
  for (int s = 0; s < 4; ++s) {
    At(s, 10 + s);
  }
  const GpuUuid gpu = Uuid("n1", 0);
  auto range = [&](Millis from, Millis to) {
    return telemetry_.Series(gpu, Metric::kUtilGpu, Resolution::kFine, kT0 + from, kT0 + to);
  };
  EXPECT_EQ(range(seconds(1), seconds(3)), (std::vector{Point(1, 11), Point(2, 12)}));
  EXPECT_EQ(range(Millis(1), Millis(3001)),
            (std::vector{Point(1, 11), Point(2, 12), Point(3, 13)}));
  EXPECT_EQ(range(Millis(999), Millis(1000)), std::vector<SeriesPoint>{});
  EXPECT_EQ(range(Millis(1000), Millis(1001)), std::vector{Point(1, 11)});
  EXPECT_TRUE(range(seconds(3), seconds(1)).empty());
  EXPECT_EQ(range(seconds(-100), seconds(100)).size(), 4u);
}

TEST_F(TelemetryTest, SeriesStoresEachMetricInItsUnit) {
  GpuSample s = Sample(0, 55, 12'345);
  s.util_memory_pct = 7;
  s.power_mw = 123'456;  // 123.5 W at 0.1 W resolution
  s.temperature_c = 61;
  Ingest({s});
  clock_.Advance(seconds(1));
  GpuSample bare = Sample(0, std::nullopt, 12'000);
  Ingest({bare});  // no util, power, temperature: gaps in those series only

  EXPECT_EQ(Series(0, Metric::kUtilGpu, Resolution::kFine), std::vector{Point(0, 55)});
  EXPECT_EQ(Series(0, Metric::kUtilMemory, Resolution::kFine), std::vector{Point(0, 7)});
  EXPECT_EQ(Series(0, Metric::kPowerW, Resolution::kFine), std::vector{Point(0, 123.5)});
  EXPECT_EQ(Series(0, Metric::kTemperatureC, Resolution::kFine), std::vector{Point(0, 61)});
  EXPECT_EQ(Series(0, Metric::kMemoryUsedMib, Resolution::kFine),
            (std::vector{Point(0, 12'345), Point(1, 12'000)}));
}

TEST_F(TelemetryTest, CoarseSlotIsTheMeanOfItsSamples) {
  const int utils[] = {10, 20, 41};
  const std::int64_t power_mw[] = {100'000, 101'000, 103'000};
  for (int i = 0; i < 3; ++i) {
    clock_.Set(kT0 + seconds(i * 20));
    GpuSample s = Sample(0, utils[i]);
    s.power_mw = power_mw[i];
    Ingest({s});
    if (i == 1) {  // the minute in progress shows the mean so far
      EXPECT_EQ(Series(0, Metric::kUtilGpu, Resolution::kCoarse), std::vector{Point(0, 15)});
    }
  }
  clock_.Advance(seconds(5));
  Ingest({Lost(0)});  // no reading: leaves the mean alone
  clock_.Set(kT0 + seconds(60));
  Ingest({Sample(0, 90)});

  EXPECT_EQ(Series(0, Metric::kUtilGpu, Resolution::kCoarse),
            (std::vector{Point(0, 24), Point(60, 90)}));  // 71 / 3 = 23.7, rounded
  EXPECT_EQ(Series(0, Metric::kPowerW, Resolution::kCoarse), std::vector{Point(0, 101.3)});
}

TEST(TelemetryMemoryTest, BytesPerGpuMatchesTheLayout) {
  // uint8 util GPU + uint8 util memory + uint32 memory MiB + uint16 power dW + uint8 °C.
  EXPECT_EQ(SeriesRing::kBytesPerSlot, 9u);
  EXPECT_EQ(Telemetry::BytesPerGpu(TelemetryOptions{}), (3600u + 360u) * 9u);
  TelemetryOptions small;
  small.fine_slots = 10;
  small.coarse_slots = 3;
  EXPECT_EQ(Telemetry::BytesPerGpu(small), 13u * 9u);

  Telemetry telemetry(small);
  EXPECT_EQ(telemetry.RingBytes(), 0u);
  telemetry.SetInventory(MakeNode("n1", 3));
  EXPECT_EQ(telemetry.RingBytes(), 3 * Telemetry::BytesPerGpu(small));
  telemetry.SetInventory(MakeNode("n1", 2));
  EXPECT_EQ(telemetry.RingBytes(), 2 * Telemetry::BytesPerGpu(small));
}

TEST(TelemetryOptionsTest, ValidationNamesTheField) {
  EXPECT_TRUE(ValidateTelemetryOptions(TelemetryOptions{}).ok());
  TelemetryOptions options;
  options.coarse_slots = 0;
  Status status = ValidateTelemetryOptions(options);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(status.error().message, HasSubstr("coarse_slots is 0"));
  options = TelemetryOptions{};
  options.fine_step = Millis(0);
  status = ValidateTelemetryOptions(options);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.error().message, HasSubstr("fine_step"));
}

// ---- threads ----

// Readers and writers at once; run under the tsan preset to check the locking.
TEST(TelemetryConcurrencyTest, ReadersAndIngestFromThreads) {
  constexpr int kRounds = 300;
  constexpr int kGpus = 4;
  TelemetryOptions options;
  options.fine_slots = 64;
  options.coarse_slots = 8;
  Telemetry telemetry(options);
  for (const char* node : {"n1", "n2"}) {
    telemetry.SetInventory(MakeNode(node, kGpus));
  }
  for (int i = 0; i < kGpus; ++i) {
    telemetry.Assign(Uuid("n1", i), Holder(1));
  }
  auto writer = [&](const std::string& node) {
    for (int round = 0; round < kRounds; ++round) {
      std::vector<GpuSample> samples;
      for (int i = 0; i < kGpus; ++i) {
        GpuSample s;
        s.uuid = Uuid(node, i);
        s.time = kT0 + seconds(round);
        s.util_gpu_pct = round % 101;
        s.energy_mj = round * 1000;
        samples.push_back(s);
      }
      (void)telemetry.Ingest(NodeId(node), std::move(samples));
    }
  };
  std::atomic<bool> done{false};
  auto reader = [&] {
    while (!done.load()) {
      const TelemetrySnapshot snapshot = telemetry.Snapshot();
      EXPECT_EQ(snapshot.gpus.size(), 2u * kGpus);
      (void)telemetry.Series(
          Uuid("n2", 1), Metric::kUtilGpu, Resolution::kFine, kT0, kT0 + seconds(kRounds));
      (void)telemetry.Usage(JobId(1));
      (void)telemetry.Find(Uuid("n1", 2));
    }
  };
  std::thread r1(reader);
  std::thread r2(reader);
  std::thread w1(writer, "n1");
  std::thread w2(writer, "n2");
  w1.join();
  w2.join();
  done = true;
  r1.join();
  r2.join();

  const JobUsage usage = telemetry.Usage(JobId(1)).value();
  EXPECT_EQ(usage.samples, kRounds * kGpus);
  EXPECT_EQ(usage.energy_mj, (kRounds - 1) * 1000LL * kGpus);
  EXPECT_EQ(
      telemetry
          .Series(Uuid("n2", 1), Metric::kUtilGpu, Resolution::kFine, kT0, kT0 + seconds(kRounds))
          .size(),
      64u);
}

}  // namespace
}  // namespace gf

// The CLI views are fed the JSON the server's own mapping writes (api/json_mapping), so a field
// renamed on one side and not the other fails here.
#include "cli/views.h"

#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "api/json_mapping.h"

namespace gf {
namespace {

using nlohmann::json;

GpuStatus Status(const std::string& node, int index) {
  GpuStatus s;
  s.node = NodeId(node);
  s.gpu = Gpu{index,
              GpuUuid("GPU-" + node + "-" + std::to_string(index)),
              "H100-80GB",
              81920,
              GpuHealth::kOk,
              ""};
  return s;
}

GpuSample BusySample() {
  GpuSample s;
  s.memory_total_mib = 81920;
  s.memory_used_mib = 40000;
  s.util_gpu_pct = 91;
  s.temperature_c = 71;
  s.power_mw = 612'345;
  s.power_limit_mw = 700'000;
  return s;
}

json Answer(const std::vector<GpuStatus>& gpus) {
  json list = json::array();
  for (const auto& g : gpus) {
    list.push_back(GpuStatusToJson(g));
  }
  return json{{"gpus", list}};
}

std::string Table(const std::vector<GpuStatus>& gpus) {
  std::ostringstream out;
  PrintGpuTable(Answer(gpus), out);
  return out.str();
}

std::string Processes(const std::vector<GpuStatus>& gpus) {
  std::ostringstream out;
  PrintGpuProcesses(Answer(gpus), out);
  return out.str();
}

constexpr std::int64_t kNowMs = 1'700'000'000'000;

std::string Show(const Job& job) {
  std::ostringstream out;
  PrintJob(JobToJson(job), kNowMs, out);
  return out.str();
}

TEST(CliViewsTest, GpuTableHasEveryColumn) {
  GpuStatus busy = Status("n1", 0);
  busy.job = JobId(7);
  busy.user = "alice";
  busy.sample = BusySample();
  GpuStatus idle = Status("n1", 1);  // no sample yet: every reading unknown
  EXPECT_EQ(Table({busy, idle}),
            "NODE  GPU  MODEL      UTIL  MEM             TEMP  POWER     HEALTH  JOB  USER\n"
            "n1    0    H100-80GB  91%   40000/81920MiB  71C   612/700W  ok      7    alice\n"
            "n1    1    H100-80GB  -     -/81920MiB      -     -         ok      -    -\n");
}

TEST(CliViewsTest, FailedAndLostGpusStandOut) {
  GpuStatus failed = Status("n1", 0);
  failed.gpu.health = GpuHealth::kFailed;
  failed.gpu.health_cause = "uncorrectable ECC errors: 12 volatile, row remap failed";
  failed.sample = BusySample();
  GpuStatus lost = Status("n1", 1);
  lost.gpu.health = GpuHealth::kFailed;
  lost.gpu.health_cause = "fell off the bus";
  lost.sample = GpuSample{};
  lost.sample->lost = true;
  GpuStatus degraded = Status("n2", 0);
  degraded.gpu.health = GpuHealth::kDegraded;
  degraded.gpu.health_cause = "hot: 92 C";
  const std::string text = Table({failed, lost, degraded});

  // The cause is cut to keep the table narrow; --json has it whole.
  EXPECT_NE(text.find("  FAILED: uncorrectable ECC err...  "), std::string::npos) << text;
  EXPECT_EQ(text.find("row remap failed"), std::string::npos) << text;
  // Lost: no readings, and LOST rather than the health word.
  EXPECT_NE(text.find("n1    1    H100-80GB  -     -/81920MiB      -     -         "
                      "LOST: fell off the bus"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  degraded: hot: 92 C  "), std::string::npos) << text;
  EXPECT_NE(text.find("\n2 of 3 GPUs need attention (failed or lost); full causes: gpufleet "
                      "gpus --json\n"),
            std::string::npos)
      << text;

  // Degraded: shown with its cause, but not counted as needing attention.
  EXPECT_EQ(Table({degraded}).find("attention"), std::string::npos);
}

TEST(CliViewsTest, ConditionsColumnOnlyWhenAGpuHasOne) {
  GpuStatus held = Status("n1", 0);
  held.job = JobId(3);
  held.user = "bob";
  held.conditions = {"allocated_no_process"};
  GpuStatus stray = Status("n1", 1);
  stray.conditions = {"unallocated_process"};
  const std::string text = Table({held, stray, Status("n1", 2)});
  EXPECT_NE(text.find("  USER  CONDITIONS\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  3    bob   allocated, no process\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  -    -     process, not allocated\n"), std::string::npos) << text;
  EXPECT_EQ(Table({Status("n1", 2)}).find("CONDITIONS"), std::string::npos);
}

GpuHolder Holder(std::int64_t job, const std::string& user, int share_milli) {
  return GpuHolder{.job = JobId(job),
                   .user = user,
                   .team = "",
                   .share_milli = share_milli,
                   .memory_limit_mib = 0};
}

// Whole GPUs print as before; a share shows its size, a shared GPU its jobs and their total.
TEST(CliViewsTest, SharedGpusShowTheirJobsAndShares) {
  GpuStatus whole = Status("n1", 0);
  whole.holders = {Holder(7, "alice", 1000)};
  whole.job = JobId(7);
  whole.user = "alice";
  GpuStatus one = Status("n1", 1);
  one.holders = {Holder(12, "bob", 250)};
  one.job = JobId(12);
  one.user = "bob";
  GpuStatus three = Status("n1", 2);
  three.holders = {Holder(13, "bob", 250), Holder(14, "carol", 250), Holder(15, "bob", 250)};
  EXPECT_EQ(
      Table({whole, one, three}),
      "NODE  GPU  MODEL      UTIL  MEM         TEMP  POWER  HEALTH  JOB            USER\n"
      "n1    0    H100-80GB  -     -/81920MiB  -     -      ok      7              alice\n"
      "n1    1    H100-80GB  -     -/81920MiB  -     -      ok      12 (0.25)      bob\n"
      "n1    2    H100-80GB  -     -/81920MiB  -     -      ok      3 jobs (0.75)  bob,carol\n");
  three.conditions = {"gpu_memory_over_limit"};
  EXPECT_NE(Table({three}).find("  bob,carol  a job over its memory limit\n"), std::string::npos);
  EXPECT_EQ(GpuJobText(json{{"job", 9}}), "9");  // a server older than sharing: no holders
  EXPECT_EQ(GpuJobText(json::object()), "-");
  EXPECT_EQ(GpuUserText(json::object()), "-");
}

TEST(CliViewsTest, ProcessesNameTheirJobOrUnmanaged) {
  GpuStatus gpu = Status("n1", 0);
  gpu.sample = BusySample();
  GpuProcessSample managed;
  managed.pid = 4242;
  managed.used_memory_mib = 30000;
  managed.sm_util_pct = 88;
  managed.job = JobId(7);
  managed.uid = 1000;
  managed.user = "alice";
  managed.cpu_pct = 104.4;
  managed.host_memory_mib = 2048;
  managed.command = "python train.py";
  GpuProcessSample stray;  // not started by gpufleet; the driver hides its memory
  stray.pid = 999;
  stray.uid = 1001;
  stray.unmanaged = true;
  gpu.sample->processes = {managed, stray};
  EXPECT_EQ(
      Processes({gpu, Status("n1", 1)}),
      "NODE  GPU  PID   USER      JOB        MEMORY    UTIL  CPU   HOST-MEM  COMMAND\n"
      "n1    0    4242  alice     7          30000MiB  88%   104%  2048MiB   python train.py\n"
      "n1    0    999   uid 1001  unmanaged  -         -     -     -         -\n");
  EXPECT_EQ(Processes({Status("n1", 1)}), "No processes on any GPU.\n");
}

Job RunningJob() {
  Job job;
  job.id = JobId(12);
  job.owner = Owner{1000, 100, "alice"};
  job.spec.name = "train";
  job.spec.argv = {"python", "train.py"};
  job.spec.request.gpus = 2;
  job.state = JobState::kRunning;
  job.usage = JobUsage{120, 63.46, 99, 70000, 7'200'000'000};  // 7.2 MJ = 2 kWh
  return job;
}

// --- GPU sharing (issue #7) ---

TEST(CliViewsTest, ShowPrintsTheShareAskedAndThenHeld) {
  Job job = RunningJob();
  EXPECT_EQ(Show(job).find("GPU share"), std::string::npos);  // whole GPUs: nothing to say
  job.spec.request.gpus = 1;
  job.spec.request.gpu_milli = 250;
  job.spec.request.gpu_memory_mib = 20'480;
  job.state = JobState::kPending;
  EXPECT_NE(Show(job).find("GPU share   0.25 of one shared GPU, asked (20480 MiB limit)\n"),
            std::string::npos)
      << Show(job);
  EXPECT_NE(Show(job).find("Request     0.25 GPU(s)"), std::string::npos) << Show(job);
  job.state = JobState::kRunning;
  job.allocation = Allocation{
      .node = NodeId("n1"), .gpus = {GpuUuid("GPU-x")}, .gpu_milli = 250, .gpu_memory_mib = 20'480};
  EXPECT_NE(Show(job).find("GPU share   0.25 of GPU-x (20480 MiB limit)\n"), std::string::npos)
      << Show(job);
}

TEST(CliViewsTest, ShowPrintsTheMigDeviceAskedAndThenHeld) {
  Job job = RunningJob();
  job.spec.request.gpus = 1;
  job.spec.request.mig_profile = "3g.40gb";
  job.state = JobState::kPending;
  job.allocation.reset();
  EXPECT_NE(Show(job).find("MIG device  3g.40gb, asked\n"), std::string::npos) << Show(job);
  job.state = JobState::kRunning;
  job.allocation = Allocation{.node = NodeId("n1"),
                              .gpus = {GpuUuid("GPU-x")},
                              .gpu_milli = 428,
                              .gpu_memory_mib = 40'192,
                              .mig = GpuUuid("MIG-y")};
  EXPECT_NE(Show(job).find("MIG device  3g.40gb: MIG-y of GPU-x\n"), std::string::npos)
      << Show(job);
  EXPECT_EQ(Show(job).find("GPU share"), std::string::npos);
}

TEST(CliViewsTest, JobListShowsAFractionalJobsShare) {
  Job job = RunningJob();
  EXPECT_EQ(JobGpusText(JobToJson(job)), "2");
  job.spec.request.gpus = 1;
  job.spec.request.gpu_milli = 250;
  EXPECT_EQ(JobGpusText(JobToJson(job)), "0.25");
}

TEST(CliViewsTest, ModeColumnOnlyWhenAGpuIsSharedOrChanging) {
  GpuStatus shared = Status("n1", 0);
  shared.gpu.sharing = SharingMode::kShared;
  GpuStatus changing = Status("n1", 1);
  changing.gpu.sharing = SharingMode::kMps;
  changing.gpu.sharing_next = SharingMode::kExclusive;
  EXPECT_EQ(
      Table({shared, changing, Status("n1", 2)}),
      "NODE  GPU  MODEL      UTIL  MEM         TEMP  POWER  HEALTH  MODE           JOB  USER\n"
      "n1    0    H100-80GB  -     -/81920MiB  -     -      ok      shared         -    -\n"
      "n1    1    H100-80GB  -     -/81920MiB  -     -      ok      mps→exclusive  -    -\n"
      "n1    2    H100-80GB  -     -/81920MiB  -     -      ok      exclusive      -    -\n");
  EXPECT_EQ(Table({Status("n1", 2)}).find("  MODE  "), std::string::npos);
  EXPECT_EQ(GpuModeText(json::object()), "exclusive");  // a server older than sharing
  GpuStatus mig = Status("n1", 3);
  mig.gpu.sharing = SharingMode::kMig;
  mig.gpu.mig_enabled = true;
  mig.gpu.mig_instances = {MigInstance{.profile = "3g.40gb"}, MigInstance{.profile = "1g.10gb"}};
  EXPECT_NE(Table({mig}).find("  mig 3g.40gb,1g.10gb  "), std::string::npos) << Table({mig});
  mig.gpu.mig_layout_next = std::vector<std::string>{"7g.80gb"};
  EXPECT_NE(Table({mig}).find("  mig 3g.40gb,1g.10gb→7g.80gb  "), std::string::npos)
      << Table({mig});
}

TEST(CliViewsTest, ShowPrintsGpuUsage) {
  Job job = RunningJob();
  job.state = JobState::kCompleted;
  job.exit_code = 0;
  const std::string text = Show(job);
  EXPECT_NE(text.find("State       COMPLETED  exit code 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Command     python train.py\n"), std::string::npos) << text;
  EXPECT_NE(text.find("GPU usage   mean 63.5%, peak 99% over 120 GPU samples\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("GPU memory  peak 70000 MiB on one GPU\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Energy      7200000 J (2.000 kWh)\n"), std::string::npos) << text;
}

// Issue #24: what running jobs hold of a node's CPUs and memory, as sinfo's CPUS(A/T); and a
// job's request with its host side.
TEST(CliViewsTest, NodesShowHostCpusAndMemoryHeldOfTotal) {
  Node node;
  node.name = NodeId("n1");
  node.cpus = 4;
  node.memory_mib = 4096;
  node.cpus_in_use = 3;
  node.memory_mib_in_use = 1024;
  std::ostringstream out;
  PrintNodes(json{{"nodes", json::array({NodeToJson(node)})}}, out);
  EXPECT_NE(out.str().find("CPUS(A/T)"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find(" 3/4 "), std::string::npos) << out.str();
  EXPECT_NE(out.str().find(" 1 GiB/4 GiB "), std::string::npos) << out.str();

  Job job = RunningJob();
  job.spec.request.cpus = 8;
  job.spec.request.memory_mib = 65'536;
  EXPECT_NE(Show(job).find("GPU(s), type any, 8 CPUs, 64 GiB memory, time limit"),
            std::string::npos)
      << Show(job);
}

// Issue #24: `node drain --reason` was shown by `nodes --json` alone.
TEST(CliViewsTest, NodesShowWhyANodeIsNotUp) {
  Node up;
  up.name = NodeId("n1");
  Node draining = up;
  draining.name = NodeId("n2");
  draining.state = NodeState::kDraining;
  draining.state_reason = "fan replacement";
  const auto print = [](const std::vector<Node>& nodes) {
    json list = json::array();
    for (const Node& node : nodes) {
      list.push_back(NodeToJson(node));
    }
    std::ostringstream out;
    PrintNodes(json{{"nodes", list}}, out);
    return out.str();
  };
  EXPECT_EQ(print({up}).find("REASON"), std::string::npos) << print({up});
  const std::string text = print({up, draining});
  EXPECT_NE(text.find("REASON"), std::string::npos) << text;
  EXPECT_NE(text.find("draining"), std::string::npos) << text;
  EXPECT_NE(text.find("fan replacement\n"), std::string::npos) << text;
}

// Issue #24: `show` printed "time limit 3600" for --time=1h, and nothing of how long a running
// job has run or has left.
TEST(CliViewsTest, ShowPrintsDurationsAsTypedAndARunningJobsElapsedAndRemainingTime) {
  Job job = RunningJob();
  job.spec.time_limit = std::chrono::seconds(3600);
  job.start_time = FromUnixMillis(kNowMs - 750'000);  // 12m30s ago
  const std::string text = Show(job);
  EXPECT_NE(text.find(", time limit 1h\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Elapsed     12m30s, 47m30s left of its 1h time limit\n"), std::string::npos)
      << text;
  job.state = JobState::kCompleted;
  job.end_time = FromUnixMillis(kNowMs - 570'000);  // ran 3m, ended 9m30s ago
  EXPECT_NE(Show(job).find("Elapsed     3m\n"), std::string::npos) << Show(job);
  job.spec.time_limit.reset();
  job.state = JobState::kPending;
  job.start_time.reset();
  job.end_time.reset();
  EXPECT_NE(Show(job).find(", time limit none\n"), std::string::npos) << Show(job);
  EXPECT_EQ(Show(job).find("Elapsed"), std::string::npos) << Show(job);
}

// Issue #24: a job of no team is "(none)" in show, as in quota, explain, reports and reasons
// (it was "-" here alone).
TEST(CliViewsTest, ShowNamesNoTeamAsEveryOtherViewDoes) {
  Job job = RunningJob();
  job.spec.team.clear();
  EXPECT_NE(Show(job).find("  team (none)\n"), std::string::npos) << Show(job);
  job.spec.team = "cv";
  EXPECT_NE(Show(job).find("  team cv\n"), std::string::npos) << Show(job);
}

// Issue #20: root runs `show` on other users' jobs; their command, workdir, reason and event
// messages are the users' bytes and must not drive root's terminal (an OSC could set its
// title, CSI 2J clear it, a CR rewrite the line).
TEST(CliViewsTest, ShowEscapesControlCharactersOfTheUsersText) {
  Job job = RunningJob();
  job.spec.argv = {"/tmp/x\x1b]0;owned\x07", "--lr\r1"};
  job.spec.workdir = "/home/ana/\x1b[2J";
  job.reason = "waits\x9b";
  const std::string text = Show(job);
  EXPECT_EQ(text.find_first_of("\x1b\x07\r"), std::string::npos) << text;
  EXPECT_NE(text.find("Command     /tmp/x\\x1b]0;owned\\x07 --lr\\x0d1\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("Workdir     /home/ana/\\x1b[2J\n"), std::string::npos) << text;
  std::ostringstream events;
  PrintJobEvents(json{{"events",
                       {{{"time", "t"},
                         {"kind", "submit"},
                         {"actor", "ana"},
                         {"message", "submitted 'x\x1b[31m'"}}}}},
                 events);
  EXPECT_EQ(events.str(), "Events\n  t  submit (ana): submitted 'x\\x1b[31m'\n");
}

TEST(CliViewsTest, ShowMarksLiveUsageAndMissingUsage) {
  EXPECT_NE(Show(RunningJob()).find("over 120 GPU samples (so far, running)\n"), std::string::npos);
  Job pending = RunningJob();
  pending.state = JobState::kPending;
  pending.usage.reset();
  EXPECT_NE(Show(pending).find("GPU usage   -\n"), std::string::npos);
  EXPECT_EQ(Show(pending).find("Energy"), std::string::npos);
  pending.spec.request.gpus = 0;
  EXPECT_NE(Show(pending).find("GPU usage   none (CPU-only job)\n"), std::string::npos);
}

TEST(CliViewsTest, ShowPrintsThePendingReasonsCodeWhenThereIsOne) {
  Job job;
  job.id = JobId(4);
  job.reason = "needs 16 GPUs on one node; the largest up node has 8 usable";
  EXPECT_EQ(Show(job).find("Reason code"), std::string::npos) << Show(job);
  job.pending_reason = PendingReason::Of(PendingCode::kTooLarge, job.reason);
  EXPECT_NE(Show(job).find("Reason      needs 16 GPUs on one node; the largest up node has 8 "
                           "usable\nReason code too_large (stage placement)\n"),
            std::string::npos)
      << Show(job);
}

// EST. START of `gpufleet queue` (issue #22): what the estimate rests on, and a range for a
// predicted one; read from the JSON the server writes.
TEST(CliViewsTest, EstimatedStartSaysWhatItRestsOn) {
  const std::int64_t now_ms = 1'780'000'000'000;
  const auto at = [&](std::int64_t minutes) {
    return FromUnixMillis(now_ms + minutes * 60'000);
  };
  Job job;
  job.id = JobId(4);
  EXPECT_EQ(EstimatedStartText(JobToJson(job), now_ms), "");  // not known
  job.estimated_start = at(25);
  EXPECT_EQ(EstimatedStartText(JobToJson(job), now_ms), "in 25m");  // a server older than ranges
  job.start_estimate =
      StartEstimate{.earliest = at(25), .latest = at(25), .basis = StartBasis::kTimeLimits};
  EXPECT_EQ(EstimatedStartText(JobToJson(job), now_ms), "in 25m (limits)");
  job.start_estimate =
      StartEstimate{.earliest = at(10), .latest = at(25), .basis = StartBasis::kPredictions};
  EXPECT_EQ(EstimatedStartText(JobToJson(job), now_ms), "in 10m-25m (predicted)");
  job.start_estimate->earliest = at(0);
  EXPECT_EQ(EstimatedStartText(JobToJson(job), now_ms), "within 25m (predicted)");
  job.start_estimate->earliest = at(25);
  EXPECT_EQ(EstimatedStartText(JobToJson(job), now_ms), "in 25m (predicted)");
  job.estimated_start = at(0);
  job.start_estimate =
      StartEstimate{.earliest = at(0), .latest = at(0), .basis = StartBasis::kPreemption};
  EXPECT_EQ(EstimatedStartText(JobToJson(job), now_ms), "now (preempting)");
}

TEST(CliViewsTest, ShowMarksPreemptibleWorkAndItsCheckpointSignal) {
  Job job = RunningJob();
  EXPECT_NE(Show(job).find("Priority    normal  checkpoint signal TERM\n"), std::string::npos)
      << Show(job);
  job.preemptible = true;
  job.spec.checkpoint_signal = 10;
  EXPECT_NE(Show(job).find("preemptible (borrowed GPUs)  checkpoint signal USR1\n"),
            std::string::npos)
      << Show(job);
}

TEST(CliViewsTest, ShowMentionsRequeueOnlyWhenTheJobMustNotRunTwice) {
  Job job = RunningJob();
  EXPECT_EQ(Show(job).find("Requeue"), std::string::npos) << Show(job);
  job.spec.requeue = false;
  EXPECT_NE(Show(job).find("Requeue     no (--no-requeue)"), std::string::npos) << Show(job);
}

TEST(CliViewsTest, ShowMentionsTheIdleReaperOnlyForInteractiveOrExemptJobs) {
  Job job = RunningJob();
  EXPECT_EQ(Show(job).find("Idle reaper"), std::string::npos) << Show(job);
  job.spec.interactive = true;
  EXPECT_NE(Show(job).find("Idle reaper interactive (--interactive)"), std::string::npos)
      << Show(job);
  job.spec.idle_reap = false;
  EXPECT_NE(Show(job).find("Idle reaper exempt (--no-reap)"), std::string::npos) << Show(job);
}

TEST(CliViewsTest, JobEventsShowTheLatestOnesOldestFirst) {
  std::ostringstream none;
  PrintJobEvents(nlohmann::json{{"events", nlohmann::json::array()}}, none);
  EXPECT_EQ(none.str(), "");
  nlohmann::json events = nlohmann::json::array();
  for (std::size_t i = 0; i < kShownEvents + 2; ++i) {
    events.push_back({{"time", "2026-01-01T00:00:0" + std::to_string(i % 10) + ".000Z"},
                      {"kind", i + 1 == kShownEvents + 2 ? "idle_warning" : "state"},
                      {"actor", "reaper"},
                      {"message", "event " + std::to_string(i)}});
  }
  std::ostringstream out;
  PrintJobEvents(nlohmann::json{{"events", events}}, out);
  const std::string text = out.str();
  EXPECT_EQ(text.find("Events (latest 20)\n"), 0U) << text;
  EXPECT_EQ(text.find("event 1\n"), std::string::npos) << text;  // the two oldest are left out
  EXPECT_NE(text.find("  2026-01-01T00:00:02.000Z  state (reaper): event 2\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("idle_warning (reaper): event 21\n"), std::string::npos) << text;
}

TEST(CliViewsTest, ReadsDefensively) {
  // An older server: no sample, no conditions, a number where text was expected.
  std::ostringstream out;
  PrintGpuTable(json{{"gpus", {{{"node", "n1"}, {"index", 0}, {"health", 3}}}}}, out);
  EXPECT_NE(out.str().find("n1    0    -      -     -/-MiB  -     -      3"), std::string::npos)
      << out.str();
  std::ostringstream none;
  PrintGpuTable(json::object(), none);
  EXPECT_EQ(none.str(), "NODE  GPU  MODEL  UTIL  MEM  TEMP  POWER  HEALTH  JOB  USER\n");
}

TEST(CliViewsTest, TruncateCutsAtCharacterBoundary) {
  EXPECT_EQ(Truncate("short", 10), "short");
  EXPECT_EQ(Truncate("0123456789", 10), "0123456789");
  EXPECT_EQ(Truncate("0123456789A", 10), "0123456...");
  // "é" is two bytes; cutting inside it would print half a character.
  EXPECT_EQ(Truncate("abcdeé0123", 9), "abcde...");
}

TEST(CliViewsTest, ShowAndLabelsNameArrayTasksAndDependencies) {
  Job job = RunningJob();
  EXPECT_EQ(ArrayTaskLabel(JobToJson(job)), "");
  EXPECT_EQ(Show(job).find("Array"), std::string::npos);
  EXPECT_EQ(Show(job).find("After"), std::string::npos);
  job.spec.array = ArrayTask{.array_job = JobId(40), .index = 3, .max_running = 4};
  job.spec.after = {Dependency{.job = JobId(12), .kind = DependencyKind::kOk},
                    Dependency{.job = JobId(13), .kind = DependencyKind::kAny}};
  EXPECT_EQ(ArrayTaskLabel(JobToJson(job)), "40_3");
  EXPECT_EQ(DependencyText(JobToJson(job)), "12 (ok), 13");
  EXPECT_NE(Show(job).find("Array       task 40_3 of array 40, at most 4 running at once\n"),
            std::string::npos)
      << Show(job);
  EXPECT_NE(Show(job).find("After       12 (ok), 13\n"), std::string::npos) << Show(job);
}

}  // namespace
}  // namespace gf

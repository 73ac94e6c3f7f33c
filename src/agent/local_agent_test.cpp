// LocalAgent with a real Executor (real shims running real commands) over a scripted GPU
// backend: the sampling round (attribution, health, a failing GPU) and the independence of the
// agent thread from a slow driver. Waiting is polling with a deadline, never a fixed sleep.
#include "agent/local_agent.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <pwd.h>
#include <unistd.h>

#include "agent/mps_test_util.h"
#include "executor/gated_shim_test_util.h"

namespace gf {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

constexpr seconds kDeadline{20};

// GPUs whose readings the test scripts: processes, XIDs, failures, and a gate that holds every
// Sample call until opened (a driver that hangs).
class ScriptedBackend final : public GpuBackend {
 public:
  explicit ScriptedBackend(int gpus) : gpus_(static_cast<std::size_t>(gpus)) {}

  std::string Describe() const override { return "scripted"; }

  Result<std::vector<Gpu>> Discover() override {
    std::vector<Gpu> out;
    for (std::size_t i = 0; i < gpus_.size(); ++i) {
      Gpu g;
      g.index = static_cast<int>(i);
      g.uuid = Uuid(g.index);
      g.model = "H100-80GB";
      g.memory_mib = 81559;
      out.push_back(g);
    }
    return out;
  }

  Result<GpuSample> Sample(int index) override {
    std::unique_lock lock(mu_);
    ++blocked_;
    cv_.notify_all();
    cv_.wait(lock, [this] { return open_; });
    --blocked_;
    Script& script = gpus_[static_cast<std::size_t>(index)];
    if (script.fail) {
      return Unavailable("scripted failure of GPU " + std::to_string(index));
    }
    GpuSample s;
    s.uuid = Uuid(index);
    s.time = clock_.Now();
    s.temperature_c = 40;
    for (std::uint32_t pid : script.pids) {
      GpuProcessSample p;
      p.pid = pid;
      s.processes.push_back(p);
    }
    s.xids.swap(script.xids);
    for (const std::string& profile : script.mig) {
      s.mig.push_back(MigSample{.instance = MigInstance{.profile = profile}});
    }
    s.mig_enabled = !script.mig.empty();
    return s;
  }

  static GpuUuid Uuid(int index) { return GpuUuid("GPU-test-" + std::to_string(index)); }

  // A MIG layout: recorded, and shown in the GPU's samples as one MIG device per profile;
  // "bad" is refused as a backend would refuse a profile the card does not offer.
  Status ApplyMigLayout(int index, const std::vector<std::string>& profiles) override {
    std::lock_guard lock(mu_);
    if (std::find(profiles.begin(), profiles.end(), "bad") != profiles.end()) {
      return InvalidArgument("GPU " + std::to_string(index) + ": MIG profile 'bad' is not offered");
    }
    gpus_[static_cast<std::size_t>(index)].mig = profiles;
    return OkStatus();
  }

  void SetPids(int index, std::vector<std::uint32_t> pids) {
    std::lock_guard lock(mu_);
    gpus_[static_cast<std::size_t>(index)].pids = std::move(pids);
  }
  void SetFailing(int index) {
    std::lock_guard lock(mu_);
    gpus_[static_cast<std::size_t>(index)].fail = true;
  }
  void AddXid(int index, int xid) {
    std::lock_guard lock(mu_);
    gpus_[static_cast<std::size_t>(index)].xids.push_back(XidEvent{xid, clock_.Now()});
  }
  void SetOpen(bool open) {
    std::lock_guard lock(mu_);
    open_ = open;
    cv_.notify_all();
  }
  // True once a Sample call waits at the closed gate.
  bool WaitBlocked() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, kDeadline, [this] { return blocked_ > 0; });
  }

 private:
  struct Script {
    std::vector<std::uint32_t> pids;
    std::vector<XidEvent> xids;  // delivered with the next sample
    bool fail = false;
    std::vector<std::string> mig;  // the MIG layout applied
  };
  SystemClock clock_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Script> gpus_;
  bool open_ = true;
  int blocked_ = 0;
};

// Records what the agent reports; Wait polls the record under its lock with a deadline.
class RecordingReports final : public AgentReports {
 public:
  void OnAgentHello(AgentHello hello) override {
    Record([&] { hellos_.push_back(std::move(hello)); });
  }
  void OnJobStarted(JobId job, std::int64_t pid, Time) override {
    Record([&] {
      started_[job] = pid;
      events_.emplace_back('s', job);
    });
  }
  void OnJobExited(JobExitReport report) override {
    Record([&] {
      exited_[report.job] = report;
      events_.emplace_back('e', report.job);
    });
  }
  void OnSamples(NodeId, std::vector<GpuSample> samples) override {
    Record([&] {
      last_round_ = std::move(samples);
      ++rounds_;
    });
  }
  void OnAgentHeartbeat(const NodeId&) override {}

  // Waits until `done(last round)` holds, at least `after` rounds in; returns that round.
  std::optional<std::vector<GpuSample>> WaitRound(
      const std::function<bool(const std::vector<GpuSample>&)>& done, int after = 0) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, kDeadline, [&] {
          return last_round_ && rounds_ > after && done(*last_round_);
        })) {
      return std::nullopt;
    }
    return last_round_;
  }
  int Rounds() {
    std::lock_guard lock(mu_);
    return rounds_;
  }
  bool WaitExited(JobId job) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, kDeadline, [&] { return exited_.count(job) > 0; });
  }
  bool WaitExitedCount(std::size_t n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, kDeadline, [&] { return exited_.size() >= n; });
  }
  std::optional<JobExitReport> Exit(JobId job) {
    std::lock_guard lock(mu_);
    auto it = exited_.find(job);
    return it == exited_.end() ? std::nullopt : std::optional<JobExitReport>(it->second);
  }
  // Where `kind` ('s' started, 'e' exited) of `job` is among the reports; -1 if absent.
  int EventIndex(char kind, JobId job) {
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < events_.size(); ++i) {
      if (events_[i] == std::make_pair(kind, job)) {
        return static_cast<int>(i);
      }
    }
    return -1;
  }
  std::vector<AgentHello> Hellos() {
    std::lock_guard lock(mu_);
    return hellos_;
  }

 private:
  void Record(const std::function<void()>& change) {
    std::lock_guard lock(mu_);
    change();
    cv_.notify_all();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<JobId, std::int64_t> started_;
  std::map<JobId, JobExitReport> exited_;
  std::vector<std::pair<char, JobId>> events_;
  std::vector<AgentHello> hellos_;
  std::optional<std::vector<GpuSample>> last_round_;
  int rounds_ = 0;
};

const GpuSample* Find(const std::vector<GpuSample>& round, int index) {
  for (const GpuSample& s : round) {
    if (s.uuid == ScriptedBackend::Uuid(index)) {
      return &s;
    }
  }
  return nullptr;
}

class LocalAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "gf-agent.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    executor_ = std::make_unique<Executor>(root_ / "run", GF_TEST_SHIM_PATH, clock_);
    executor_->SetCgroupRoot("");  // jobs found by their parent chain; no shared cgroup state
  }
  void TearDown() override {
    agent_.reset();
    for (const RecoveredJob& r : executor_->Recover()) {
      if (r.still_running) {
        (void)executor_->Kill(r.job, seconds(0), "test teardown");
      }
    }
    fs::remove_all(root_);
  }

  // poll_interval: the fallback poll; tests of notifications set it far beyond their deadline.
  void StartAgent(Millis sample_interval = Millis(20), Millis poll_interval = Millis(1000)) {
    LocalAgentOptions options;
    options.name = NodeId("node-a");
    options.sample_interval = sample_interval;
    options.poll_interval = poll_interval;
    options.mps = mps_;
    agent_ = std::make_unique<LocalAgent>(options, backend_, *executor_, reports_, clock_);
    ASSERT_TRUE(agent_->Start().ok());
  }

  Job ShellJob(std::int64_t id, const std::string& script) const {
    Job job;
    job.id = JobId(id);
    job.owner = Owner{::geteuid(), ::getegid(), "tester"};
    job.spec.argv = {"sh", "-c", script};
    job.spec.workdir = root_.string();
    return job;
  }

  // The pid a job wrote to `file`, once it has.
  std::optional<std::uint32_t> WaitPidFile(const fs::path& file) const {
    auto deadline = std::chrono::steady_clock::now() + kDeadline;
    while (std::chrono::steady_clock::now() < deadline) {
      std::uint32_t pid = 0;
      if (std::ifstream(file) >> pid && pid > 0) {
        return pid;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return std::nullopt;
  }

  SystemClock clock_;
  fs::path root_;
  ScriptedBackend backend_{3};
  std::unique_ptr<Executor> executor_;
  RecordingReports reports_;
  MpsOptions mps_{};  // set before StartAgent
  std::unique_ptr<LocalAgent> agent_;
};

// Launches through a shim held at a gate until the test opens it (gated_shim_test_util.h), and
// an agent whose fallback poll never comes within a test: whatever it reports, it learnt from
// notifications.
class GatedLocalAgentTest : public LocalAgentTest {
 protected:
  static constexpr Millis kNever{std::chrono::hours(1)};

  void SetUp() override {
    LocalAgentTest::SetUp();
    gate_.emplace(root_, GF_TEST_SHIM_PATH);
    executor_ = std::make_unique<Executor>(
        root_ / "run", gate_->Path(), clock_, exec_test::kGatedExecutorOptions);
    executor_->SetCgroupRoot("");
  }
  void TearDown() override {
    gate_->Open();
    LocalAgentTest::TearDown();
  }
  bool WaitArrived(int shims) const {
    auto deadline = std::chrono::steady_clock::now() + kDeadline;
    while (gate_->Arrived() < shims) {
      if (std::chrono::steady_clock::now() > deadline) {
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
  }

  std::optional<exec_test::GatedShim> gate_;
};

// Issue #24: what the node offers jobs' --cpus and --mem.
TEST(HostCapacityTest, DetectedOrGivenLessTheReserve) {
  EXPECT_EQ(HostCapacity(64, 262'144, {}), std::make_pair(64, std::int64_t{262'144 - 4096}));
  EXPECT_EQ(HostCapacity(4, 8192, {}), std::make_pair(4, std::int64_t{8192 - 819}));  // a tenth
  HostCapacityOptions given{.cpus = 32, .memory_mib = 65'536, .reserve_cpus = 2, .reserve_mib = 0};
  EXPECT_EQ(HostCapacity(64, 262'144, given), std::make_pair(30, std::int64_t{65'536}));
  HostCapacityOptions too_much{.reserve_cpus = 100, .reserve_mib = 1 << 30};
  EXPECT_EQ(HostCapacity(8, 1024, too_much), std::make_pair(1, std::int64_t{1}));
}

TEST_F(LocalAgentTest, EachRoundAttributesJudgesAndSkipsOnlyTheFailingGpu) {
  backend_.SetFailing(1);
  backend_.SetPids(2, {static_cast<std::uint32_t>(::getpid())});  // not started by gpufleet
  StartAgent();
  agent_->Launch(ShellJob(41, "echo $$ > job.pid.txt; exec sleep 30"));
  std::optional<std::uint32_t> job_pid = WaitPidFile(root_ / "job.pid.txt");
  ASSERT_TRUE(job_pid.has_value());
  backend_.SetPids(0, {*job_pid});

  std::optional<std::vector<GpuSample>> round = reports_.WaitRound([](const auto& r) {
    const GpuSample* gpu0 = Find(r, 0);
    return gpu0 != nullptr && !gpu0->processes.empty() && gpu0->processes[0].job.has_value();
  });
  ASSERT_TRUE(round.has_value()) << "no round attributed the job's process";
  EXPECT_EQ(round->size(), 2u);  // GPU 1 failed; 0 and 2 are reported
  EXPECT_EQ(Find(*round, 1), nullptr);
  const GpuProcessSample& managed = Find(*round, 0)->processes[0];
  EXPECT_EQ(managed.job, JobId(41));
  EXPECT_FALSE(managed.unmanaged);
  EXPECT_EQ(managed.uid, ::getuid());
  const GpuProcessSample& stranger = Find(*round, 2)->processes[0];
  EXPECT_TRUE(stranger.unmanaged);
  EXPECT_EQ(stranger.job, std::nullopt);
  EXPECT_EQ(stranger.uid, ::getuid());

  agent_->Kill(JobId(41), seconds(0), "test", SIGTERM);
  EXPECT_TRUE(reports_.WaitExited(JobId(41)));
}

TEST_F(LocalAgentTest, HealthIsJudgedEachRoundAndResetOnRequest) {
  StartAgent();
  backend_.AddXid(2, 79);
  std::optional<std::vector<GpuSample>> failed = reports_.WaitRound([](const auto& r) {
    const GpuSample* gpu2 = Find(r, 2);
    return gpu2 != nullptr && gpu2->health == GpuHealth::kFailed;
  });
  ASSERT_TRUE(failed.has_value());
  EXPECT_EQ(Find(*failed, 2)->health_cause, "XID 79 (GPU has fallen off the bus)");
  EXPECT_EQ(Find(*failed, 0)->health, GpuHealth::kOk);
  // Sticky: two rounds later (the XID came once) it is still failed, until the reset.
  const int seen = reports_.Rounds();
  std::optional<std::vector<GpuSample>> later =
      reports_.WaitRound([](const auto&) { return true; }, seen + 2);
  ASSERT_TRUE(later.has_value());
  EXPECT_EQ(Find(*later, 2)->health, GpuHealth::kFailed);
  agent_->ResetGpuHealth(ScriptedBackend::Uuid(2));
  std::optional<std::vector<GpuSample>> ok = reports_.WaitRound([](const auto& r) {
    const GpuSample* gpu2 = Find(r, 2);
    return gpu2 != nullptr && gpu2->health == GpuHealth::kOk;
  });
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(Find(*ok, 2)->health_cause, "");
}

TEST_F(LocalAgentTest, MigLayoutIsAppliedBeforeARoundThatShowsItOrItsRefusal) {
  StartAgent();
  agent_->ApplyMigLayout(ScriptedBackend::Uuid(1), {"3g.40gb", "1g.10gb"});
  std::optional<std::vector<GpuSample>> applied = reports_.WaitRound([](const auto& r) {
    const GpuSample* gpu1 = Find(r, 1);
    return gpu1 != nullptr && gpu1->mig.size() == 2;
  });
  ASSERT_TRUE(applied.has_value());
  EXPECT_EQ(Find(*applied, 1)->mig[0].instance.profile, "3g.40gb");
  EXPECT_EQ(Find(*applied, 1)->mig_layout_error, "");
  EXPECT_TRUE(Find(*applied, 0)->mig.empty());

  agent_->ApplyMigLayout(ScriptedBackend::Uuid(1), {"bad"});
  std::optional<std::vector<GpuSample>> refused = reports_.WaitRound([](const auto& r) {
    const GpuSample* gpu1 = Find(r, 1);
    return gpu1 != nullptr && !gpu1->mig_layout_error.empty();
  });
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(Find(*refused, 1)->mig_layout_error, "GPU 1: MIG profile 'bad' is not offered");
  EXPECT_EQ(Find(*refused, 1)->mig.size(), 2u);  // the layout before stays
  // Once: the next round says nothing more.
  const int seen = reports_.Rounds();
  std::optional<std::vector<GpuSample>> later =
      reports_.WaitRound([](const auto&) { return true; }, seen);
  ASSERT_TRUE(later.has_value());
  EXPECT_EQ(Find(*later, 1)->mig_layout_error, "");
}

TEST_F(LocalAgentTest, HungDriverDoesNotHoldUpJobs) {
  backend_.SetOpen(false);
  StartAgent();
  ASSERT_TRUE(backend_.WaitBlocked()) << "the sampler never called the backend";
  // The sampler is stuck inside the driver; the job still starts and its exit is reported.
  agent_->Launch(ShellJob(42, "exit 0"));
  EXPECT_TRUE(reports_.WaitExited(JobId(42)));
  backend_.SetOpen(true);  // lets the sampler finish its round so Stop can join it
}

// Issue #7: a job on an mps GPU runs under that GPU's MPS daemon, started for it; a job
// without MPS on the GPU later (its mode changed) has the daemon quit first.
TEST_F(LocalAgentTest, AJobOnAnMpsGpuRunsUnderItsGpusDaemon) {
  mps_ = MpsOptions{.control = mps_test::WriteFakeControl(root_, root_ / "control.log").string(),
                    .dir = root_ / "mps",
                    .timeout = Millis(10'000)};
  StartAgent(Millis(0));
  const GpuUuid gpu = ScriptedBackend::Uuid(0);
  Job job = ShellJob(51, "echo \"$CUDA_MPS_PIPE_DIRECTORY\" > mps.txt");
  job.allocation = Allocation{.node = NodeId("node-a"), .gpus = {gpu}};
  job.spec.env = {{"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "25"}};
  agent_->Launch(job);
  ASSERT_TRUE(reports_.WaitExited(JobId(51)));
  std::string pipe;
  std::ifstream(root_ / "mps.txt") >> pipe;
  const std::string want = (root_ / "mps" / gpu.value() / "pipe").string();
  EXPECT_EQ(pipe, want);
  Job whole = ShellJob(52, "exit 0");
  whole.allocation = Allocation{.node = NodeId("node-a"), .gpus = {gpu}};
  agent_->Launch(whole);
  ASSERT_TRUE(reports_.WaitExited(JobId(52)));
  std::ostringstream log;
  log << std::ifstream(root_ / "control.log").rdbuf();
  EXPECT_EQ(log.str(),
            "start " + gpu.value() + " " + want + " " +
                (root_ / "mps" / gpu.value() / "log").string() + "\nquit " + gpu.value() + "\n");
}

}  // namespace
}  // namespace gf

namespace gf {
namespace {

TEST_F(GatedLocalAgentTest, ManyLaunchesQueuedAtOnceAllStartAndEachStartPrecedesItsExit) {
  StartAgent(Millis(0), kNever);
  constexpr int kJobs = 12;
  for (int i = 1; i <= kJobs; ++i) {
    agent_->Launch(ShellJob(i, "exit " + std::to_string(i)));
  }
  // The agent thread started every shim without waiting for any job to run.
  ASSERT_TRUE(WaitArrived(kJobs)) << gate_->Arrived() << " shims started";
  gate_->Open();
  ASSERT_TRUE(reports_.WaitExitedCount(kJobs));
  for (int i = 1; i <= kJobs; ++i) {
    const JobId job(i);
    std::optional<JobExitReport> exit = reports_.Exit(job);
    ASSERT_TRUE(exit.has_value());
    EXPECT_EQ(exit->exit_code, i);
    EXPECT_GE(reports_.EventIndex('s', job), 0) << "job " << i << " never reported started";
    EXPECT_LT(reports_.EventIndex('s', job), reports_.EventIndex('e', job)) << "job " << i;
  }
}

TEST_F(GatedLocalAgentTest, ExitIsReportedByNotificationNotByTheFallbackPoll) {
  gate_->Open();
  StartAgent(Millis(0), kNever);
  agent_->Launch(ShellJob(5, "while [ ! -e go ]; do sleep 0.02; done; exit 4"));
  ASSERT_TRUE(WaitPidFile(executor_->JobDir(JobId(5)) / "job.pid").has_value());
  std::ofstream(root_ / "go") << "";
  // The fallback poll is an hour away: only the shim's pidfd can have told the agent.
  ASSERT_TRUE(reports_.WaitExited(JobId(5)));
  EXPECT_EQ(reports_.Exit(JobId(5))->exit_code, 4);
  EXPECT_LT(reports_.EventIndex('s', JobId(5)), reports_.EventIndex('e', JobId(5)));
}

TEST_F(GatedLocalAgentTest, RestartMidLaunchAdoptsTheJob) {
  StartAgent(Millis(0), kNever);
  agent_->Launch(ShellJob(7, "echo adopted; exit 0"));
  ASSERT_TRUE(WaitArrived(1));
  // The agent goes away while the shim has recorded nothing yet; a new one takes over.
  agent_.reset();
  executor_ = std::make_unique<Executor>(
      root_ / "run", gate_->Path(), clock_, exec_test::kGatedExecutorOptions);
  executor_->SetCgroupRoot("");
  StartAgent(Millis(0), kNever);
  std::vector<AgentHello> hellos = reports_.Hellos();
  ASSERT_EQ(hellos.size(), 2u);
  EXPECT_EQ(hellos[1].running, std::vector<JobId>{JobId(7)});
  gate_->Open();
  ASSERT_TRUE(reports_.WaitExited(JobId(7)));
  std::optional<JobExitReport> exit = reports_.Exit(JobId(7));
  EXPECT_EQ(exit->exit_code, 0);
  EXPECT_EQ(exit->cause, "exited with 0");
}

}  // namespace
}  // namespace gf

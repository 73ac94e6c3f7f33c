// Executor tests with real processes: a real shim (gf_test_shim) runs real commands.
// Waiting is always polling with a deadline, never a fixed sleep.
#include "executor/executor.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <gmock/gmock.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "executor/cgroup.h"
#include "executor/gated_shim_test_util.h"
#include "executor/host_limits.h"
#include "executor/job_files.h"
#include "executor/process_tree.h"
#include "executor/terminal_relay.h"

namespace gf {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::StartsWith;

constexpr const char* kShim = GF_TEST_SHIM_PATH;
constexpr std::chrono::seconds kDeadline{20};

// Polls `done` every few ms until it holds or kDeadline passes.
bool WaitUntil(const std::function<bool()>& done, std::chrono::seconds limit = kDeadline) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<pid_t> ReadPids(const fs::path& p) {
  std::vector<pid_t> pids;
  std::ifstream in(p);
  pid_t pid = 0;
  while (in >> pid) {
    pids.push_back(pid);
  }
  return pids;
}

bool PidExists(pid_t pid) {
  return fs::exists("/proc/" + std::to_string(pid));
}

class ExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gf-exec-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    ::chmod(root_.c_str(), 0755);
    run_dir_ = root_ / "run";
    work_ = root_ / "work";
    fs::create_directories(work_);
    executor_ = std::make_unique<Executor>(run_dir_, kShim, clock_);
  }

  void TearDown() override {
    // Leave no process behind, whatever the test did.
    for (const RecoveredJob& r : executor_->Recover()) {
      if (r.still_running) {
        (void)executor_->Kill(r.job, std::chrono::seconds(0), "test teardown");
      }
    }
    for (JobId job : launched_) {
      if (!exits_.count(job)) {
        (void)executor_->Kill(job, std::chrono::seconds(0), "test teardown");
      }
    }
    for (JobId job : launched_) {
      WaitExit(job);
    }
    fs::remove_all(root_);
  }

  LaunchSpec Spec(std::vector<std::string> argv) {
    LaunchSpec s;
    s.job = JobId(next_job_++);
    s.owner = {::geteuid(), ::getegid(), "tester"};
    s.argv = std::move(argv);
    s.workdir = work_.string();
    return s;
  }

  LaunchSpec Shell(const std::string& script) { return Spec({"sh", "-c", script}); }

  std::int64_t LaunchOk(const LaunchSpec& spec) {
    Result<std::int64_t> pid = executor_->Launch(spec);
    EXPECT_TRUE(pid.ok()) << pid.error().ToString();
    launched_.push_back(spec.job);
    return pid.ok() ? *pid : 0;
  }

  // One look for news, as the agent takes it: starts first, then exits; each kept in events_
  // ('s' started, 'e' exited) and every exit in exits_.
  void PollAll() {
    for (const StartedJob& s : executor_->PollStarts()) {
      events_.emplace_back('s', s.job);
    }
    for (JobExit& e : executor_->Poll()) {
      events_.emplace_back('e', e.job);
      exits_[e.job] = e;
    }
  }

  // Where `kind` ('s' or 'e') of `job` is in events_; -1 if absent.
  int EventIndex(char kind, JobId job) const {
    for (std::size_t i = 0; i < events_.size(); ++i) {
      if (events_[i] == std::make_pair(kind, job)) {
        return static_cast<int>(i);
      }
    }
    return -1;
  }

  // Polls the executor until `job` has exited; every exit seen is kept in exits_.
  std::optional<JobExit> WaitExit(JobId job) {
    WaitUntil([&] {
      PollAll();
      return exits_.count(job) > 0;
    });
    auto it = exits_.find(job);
    if (it == exits_.end()) {
      return std::nullopt;
    }
    return it->second;
  }

  JobExit RunToEnd(const LaunchSpec& spec) {
    LaunchOk(spec);
    std::optional<JobExit> e = WaitExit(spec.job);
    EXPECT_TRUE(e.has_value()) << "job " << spec.job.value() << " did not end";
    return e.value_or(JobExit{});
  }

  std::string Stdout(JobId job) { return ReadFile(executor_->Logs(job).stdout_path); }
  std::string Stderr(JobId job) { return ReadFile(executor_->Logs(job).stderr_path); }

  ManualClock clock_;
  fs::path root_;
  fs::path run_dir_;
  fs::path work_;
  std::unique_ptr<Executor> executor_;
  std::vector<JobId> launched_;
  std::map<JobId, JobExit> exits_;
  std::vector<std::pair<char, JobId>> events_;
  std::int64_t next_job_ = 1;
};

// Launches through a shim held at a gate (gated_shim_test_util.h) until the test opens it.
class GatedExecutorTest : public ExecutorTest {
 protected:
  void SetUp() override {
    ExecutorTest::SetUp();
    gate_.emplace(root_, kShim);
    executor_ = std::make_unique<Executor>(
        run_dir_, gate_->Path(), clock_, exec_test::kGatedExecutorOptions);
  }
  void TearDown() override {
    gate_->Open();
    ExecutorTest::TearDown();
  }

  void StartOk(const LaunchSpec& spec) {
    Status s = executor_->StartLaunch(spec);
    ASSERT_TRUE(s.ok()) << s.error().ToString();
    launched_.push_back(spec.job);
  }

  // Waits on the Executor's WatchFd alone (no fallback poll), then looks, until `done` holds.
  // False when the fd stayed quiet for kDeadline: no notification came.
  bool WaitNotified(const std::function<bool()>& done) {
    while (true) {
      PollAll();
      if (done()) {
        return true;
      }
      pollfd pfd{executor_->WatchFd(), POLLIN, 0};
      if (pfd.fd < 0 || ::poll(&pfd, 1, static_cast<int>(kDeadline.count() * 1000)) <= 0) {
        return false;
      }
    }
  }

  std::optional<exec_test::GatedShim> gate_;
};

TEST_F(ExecutorTest, CapturesStdoutAndStderr) {
  LaunchSpec spec = Shell("echo out; echo err >&2");
  JobExit e = RunToEnd(spec);
  EXPECT_EQ(e.exit_code, 0);
  EXPECT_FALSE(e.signal.has_value());
  EXPECT_EQ(e.cause, "exited with 0");
  EXPECT_EQ(Stdout(spec.job), "out\n");
  EXPECT_EQ(Stderr(spec.job), "err\n");
}

TEST_F(ExecutorTest, ReportsExitCodesAndSignals) {
  JobExit three = RunToEnd(Shell("exit 3"));
  EXPECT_EQ(three.exit_code, 3);
  EXPECT_EQ(three.cause, "exited with 3");

  JobExit term = RunToEnd(Shell("kill -TERM $$"));
  EXPECT_EQ(term.exit_code, 128 + SIGTERM);
  EXPECT_EQ(term.signal, SIGTERM);
  EXPECT_EQ(term.cause, "killed by SIGTERM");

  JobExit killed = RunToEnd(Shell("kill -KILL $$"));
  EXPECT_EQ(killed.exit_code, 128 + SIGKILL);
  EXPECT_EQ(killed.signal, SIGKILL);
}

TEST_F(ExecutorTest, SetsCleanEnvironmentGpusAndWorkdir) {
  ::setenv("GF_EXEC_TEST_LEAK", "leaked", 1);  // NOLINT(concurrency-mt-unsafe): one thread
  fs::create_directories(work_ / "sub");
  LaunchSpec spec = Shell(
      "echo \"$GPUFLEET_JOB_ID|$CUDA_VISIBLE_DEVICES|$NVIDIA_VISIBLE_DEVICES|$FOO|$PATH|"
      "${GF_EXEC_TEST_LEAK-unset}\"; pwd");
  spec.workdir = (work_ / "sub").string();
  spec.env = {{"FOO", "bar baz"}, {"CUDA_VISIBLE_DEVICES", "all"}};  // the fence wins
  spec.gpus = {GpuUuid("GPU-1111"), GpuUuid("GPU-2222")};
  EXPECT_EQ(RunToEnd(spec).exit_code, 0);
  EXPECT_EQ(Stdout(spec.job),
            std::to_string(spec.job.value()) +
                "|GPU-1111,GPU-2222|GPU-1111,GPU-2222|bar baz|"
                "/usr/local/bin:/usr/bin:/bin|unset\n" +
                (work_ / "sub").string() + "\n");
  ::unsetenv("GF_EXEC_TEST_LEAK");  // NOLINT(concurrency-mt-unsafe)
}

TEST_F(ExecutorTest, ArrayTaskSeesItsArrayAndIndex) {
  LaunchSpec spec = Shell(
      "echo \"${GPUFLEET_ARRAY_JOB_ID-unset}|${GPUFLEET_ARRAY_TASK_ID-unset}|$GPUFLEET_JOB_ID\"");
  spec.env = {{"GPUFLEET_ARRAY_TASK_ID", "99"}};  // gpufleet's value wins
  spec.array = ArrayTask{.array_job = JobId(40), .index = 3, .max_running = 2};
  EXPECT_EQ(RunToEnd(spec).exit_code, 0);
  EXPECT_EQ(Stdout(spec.job), "40|3|" + std::to_string(spec.job.value()) + "\n");

  LaunchSpec plain =
      Shell("echo \"${GPUFLEET_ARRAY_JOB_ID-unset}|${GPUFLEET_ARRAY_TASK_ID-unset}\"");
  EXPECT_EQ(RunToEnd(plain).exit_code, 0);
  EXPECT_EQ(Stdout(plain.job), "unset|unset\n");
}

TEST_F(ExecutorTest, SlurmVariablesAreSetAndWinOverTheSpec) {
  LaunchSpec spec = Shell("echo \"$SLURM_JOB_ID|$SLURM_NTASKS|$SLURM_PROCID|$SLURM_JOB_NODELIST\"");
  spec.env = {{"SLURM_JOB_ID", "999"}};  // from a submitter inside a Slurm job: gpufleet's wins
  spec.node = "gpu-a";
  EXPECT_EQ(RunToEnd(spec).exit_code, 0);
  EXPECT_EQ(Stdout(spec.job), std::to_string(spec.job.value()) + "|1|0|gpu-a\n");
}

TEST_F(ExecutorTest, OutputPatternsNameTheJobsOwnFilesInItsWorkdir) {
  LaunchSpec both = Shell("echo out; echo err >&2");
  both.name = "train";
  both.env = {{"GPUFLEET_OUTPUT", "slurm-%x-%j.out"}};  // stderr goes along, as with sbatch
  EXPECT_EQ(RunToEnd(both).exit_code, 0);
  const fs::path out = work_ / ("slurm-train-" + std::to_string(both.job.value()) + ".out");
  EXPECT_EQ(ReadFile(out), "out\nerr\n");
  EXPECT_EQ(Stdout(both.job), "");

  LaunchSpec split = Shell("echo out; echo err >&2");
  split.array = ArrayTask{.array_job = JobId(40), .index = 3, .max_running = std::nullopt};
  split.env = {{"GPUFLEET_OUTPUT", "o-%A_%a"}, {"GPUFLEET_ERROR", "e-%A_%a"}};
  EXPECT_EQ(RunToEnd(split).exit_code, 0);
  EXPECT_EQ(ReadFile(work_ / "o-40_3"), "out\n");
  EXPECT_EQ(ReadFile(work_ / "e-40_3"), "err\n");

  LaunchSpec bad = Shell("echo never");
  bad.env = {{"GPUFLEET_OUTPUT", "no-such-dir/%j.out"}};
  const JobExit e = RunToEnd(bad);
  EXPECT_EQ(e.exit_code, 126);
  EXPECT_THAT(e.cause,
              HasSubstr("cannot open the output file no-such-dir/" +
                        std::to_string(bad.job.value()) + ".out (--output)"));
}

TEST_F(ExecutorTest, NoGpusHidesAllGpus) {
  LaunchSpec spec = Shell("echo \"${CUDA_VISIBLE_DEVICES-unset}|$NVIDIA_VISIBLE_DEVICES\"");
  EXPECT_EQ(RunToEnd(spec).exit_code, 0);
  EXPECT_EQ(Stdout(spec.job), "|void\n");
}

TEST_F(ExecutorTest, CommandNotFoundIs127WithCause) {
  LaunchSpec spec = Spec({"gf-no-such-command-xyz", "arg"});
  JobExit e = RunToEnd(spec);
  EXPECT_EQ(e.exit_code, 127);
  EXPECT_EQ(e.cause, "failed to start: gf-no-such-command-xyz: No such file or directory");
}

TEST_F(ExecutorTest, NonExecutableIs126AndBadWorkdirIsReported) {
  fs::path script = work_ / "not-executable.sh";
  std::ofstream(script) << "echo hi\n";
  JobExit denied = RunToEnd(Spec({script.string()}));
  EXPECT_EQ(denied.exit_code, 126);
  EXPECT_THAT(denied.cause, HasSubstr("Permission denied"));

  LaunchSpec spec = Shell("true");
  spec.workdir = "/nonexistent/gf-exec-test";
  JobExit e = RunToEnd(spec);
  EXPECT_EQ(e.exit_code, 126);
  EXPECT_THAT(e.cause, HasSubstr("cannot change to working directory /nonexistent/gf-exec-test"));
}

TEST_F(ExecutorTest, RejectsInvalidSpecsAndUnknownJobs) {
  EXPECT_EQ(executor_->Launch(Spec({})).error().code, ErrorCode::kInvalidArgument);
  LaunchSpec relative = Shell("true");
  relative.workdir = "relative";
  EXPECT_EQ(executor_->Launch(relative).error().code, ErrorCode::kInvalidArgument);
  LaunchSpec bad_env = Shell("true");
  bad_env.env = {{"A=B", "c"}};
  EXPECT_EQ(executor_->Launch(bad_env).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(executor_->Kill(JobId(999), std::chrono::seconds(1), "x").error().code,
            ErrorCode::kNotFound);
}

TEST_F(ExecutorTest, MissingShimBinaryFailsLaunchAndLeavesNoFolder) {
  Executor broken(run_dir_, root_ / "no-such-shim", clock_);
  LaunchSpec spec = Shell("true");
  Result<std::int64_t> pid = broken.Launch(spec);
  ASSERT_FALSE(pid.ok());
  EXPECT_EQ(pid.error().code, ErrorCode::kIo);
  EXPECT_THAT(pid.error().message, HasSubstr("No such file or directory"));
  EXPECT_FALSE(fs::exists(broken.JobDir(spec.job)));
  EXPECT_TRUE(broken.Recover().empty());
}

TEST_F(ExecutorTest, SameJobTwiceWhileRunningIsRefusedAfterwardsRequeueWorks) {
  LaunchSpec spec = Shell("while [ ! -e go ]; do sleep 0.02; done; echo second-ok");
  LaunchOk(spec);
  EXPECT_EQ(executor_->Launch(spec).error().code, ErrorCode::kAlreadyExists);
  std::ofstream(work_ / "go") << "";
  ASSERT_TRUE(WaitExit(spec.job).has_value());
  exits_.erase(spec.job);
  // Requeued: the same id runs again; the earlier folder is kept aside.
  EXPECT_EQ(RunToEnd(spec).exit_code, 0);
  EXPECT_EQ(Stdout(spec.job), "second-ok\n");
}

TEST_F(ExecutorTest, ShimIsDetachedFromTheCaller) {
  // An fd the caller leaks on purpose (no O_CLOEXEC), like an agent's socket.
  fs::path marker = root_ / "inherited-marker";
  int leaked = ::open(marker.c_str(), O_WRONLY | O_CREAT, 0600);
  ASSERT_GE(leaked, 0);
  LaunchSpec spec = Shell("while [ ! -e go ]; do sleep 0.02; done");
  std::int64_t shim = LaunchOk(spec);
  ::close(leaked);
  std::optional<exec::ProcStat> st = exec::ReadProcStat(static_cast<pid_t>(shim));
  ASSERT_TRUE(st.has_value());
  EXPECT_NE(st->ppid, ::getpid());
  EXPECT_NE(::getsid(static_cast<pid_t>(shim)), ::getsid(0));
  Result<exec::PidRecord> main = exec::ReadPidRecord(executor_->JobDir(spec.job) / "job.pid");
  ASSERT_TRUE(main.ok());
  for (std::int64_t pid : {shim, main->pid}) {
    for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
      std::error_code ec;
      EXPECT_NE(fs::read_symlink(e.path(), ec), marker)
          << "pid " << pid << " inherited fd " << e.path();
    }
  }
  std::ofstream(work_ / "go") << "";
  EXPECT_EQ(WaitExit(spec.job)->exit_code, 0);
}

TEST_F(ExecutorTest, KillEndsWholeTreeIncludingSetsidChildren) {
  LaunchSpec spec = Shell("sleep 300 & echo $! > pids; setsid sleep 300 & echo $! >> pids; wait");
  LaunchOk(spec);
  std::vector<pid_t> pids;
  ASSERT_TRUE(WaitUntil([&] {
    pids = ReadPids(work_ / "pids");
    return pids.size() == 2;
  }));
  std::vector<exec::PidRecord> records;
  for (pid_t p : pids) {
    std::optional<exec::PidRecord> r = exec::RecordOf(p);
    ASSERT_TRUE(r.has_value()) << "pid " << p;
    records.push_back(*r);
  }
  ASSERT_TRUE(executor_->Kill(spec.job, std::chrono::seconds(10), "cancelled by alice").ok());
  std::optional<JobExit> e = WaitExit(spec.job);
  ASSERT_TRUE(e.has_value());
  EXPECT_THAT(e->cause, StartsWith("cancelled by alice: SIGTERM, exited within grace"));
  EXPECT_EQ(e->exit_code, 128 + SIGTERM);
  for (const exec::PidRecord& r : records) {
    EXPECT_FALSE(exec::IsAlive(r)) << "pid " << r.pid << " survived the kill";
    EXPECT_FALSE(PidExists(static_cast<pid_t>(r.pid))) << "pid " << r.pid << " left a zombie";
  }
  // Killing an ended job is a no-op.
  EXPECT_TRUE(executor_->Kill(spec.job, std::chrono::seconds(1), "again").ok());
}

TEST_F(ExecutorTest, PreemptionSendsTheCheckpointSignalFirst) {
  // The job saves a checkpoint on USR1 and exits 0; SIGTERM would kill sh with 143 instead.
  LaunchSpec spec = Shell(
      "trap 'echo saved > checkpoint; exit 0' USR1; echo ready > ready; "
      "while :; do sleep 0.05; done");
  LaunchOk(spec);
  ASSERT_TRUE(WaitUntil([&] { return fs::exists(work_ / "ready"); }));
  ASSERT_TRUE(executor_->Kill(spec.job, std::chrono::seconds(10), "preempted", SIGUSR1).ok());
  std::optional<JobExit> e = WaitExit(spec.job);
  ASSERT_TRUE(e.has_value());
  EXPECT_TRUE(fs::exists(work_ / "checkpoint"));
  EXPECT_EQ(e->exit_code, 0);
  EXPECT_THAT(e->cause, StartsWith("preempted: SIGUSR1, exited within grace"));
}

TEST_F(ExecutorTest, SignalReachesTheJobWithoutEndingIt) {
  // USR1 kills the sleep (no trap there) and runs the shell's trap, which counts; the loop goes
  // on, so the job is still running after each delivery.
  LaunchSpec spec = Shell(
      "trap 'echo usr1 >> got' USR1; echo ready > ready; while [ ! -e stop ]; do sleep 0.05; "
      "done; exit 3");
  LaunchOk(spec);
  ASSERT_TRUE(WaitUntil([&] { return fs::exists(work_ / "ready"); }));
  // Two requests in a row are both delivered: they queue, they do not merge.
  ASSERT_TRUE(executor_->Signal(spec.job, SIGUSR1).ok());
  ASSERT_TRUE(WaitUntil([&] { return ReadFile(work_ / "got") == "usr1\n"; }));
  ASSERT_TRUE(executor_->Signal(spec.job, SIGUSR1).ok());
  ASSERT_TRUE(WaitUntil([&] { return ReadFile(work_ / "got") == "usr1\nusr1\n"; }));
  PollAll();
  EXPECT_EQ(exits_.count(spec.job), 0U) << "the signal ended the job";
  std::ofstream(work_ / "stop") << "";
  std::optional<JobExit> e = WaitExit(spec.job);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->exit_code, 3);
  EXPECT_EQ(e->cause, "exited with 3");
  // Once per request: not again through the job's cgroup or process group, as a kill goes.
  EXPECT_EQ(ReadFile(work_ / "got"), "usr1\nusr1\n");
  // An ended job, an unknown one and KILL are refused.
  EXPECT_EQ(executor_->Signal(spec.job, SIGUSR1).error().code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(executor_->Signal(JobId(999), SIGUSR1).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(executor_->Signal(spec.job, SIGKILL).error().code, ErrorCode::kInvalidArgument);
}

TEST_F(ExecutorTest, ExitReportsTheJobsCpuTimeAndPeakMemory) {
  // About a second of CPU and 64 MiB touched (a string of that size, written once).
  LaunchSpec spec = Spec({"python3",
                          "-c",
                          "import time\n"
                          "b = bytearray(64 * 1024 * 1024)\n"
                          "for i in range(0, len(b), 4096): b[i] = 1\n"
                          "t = time.process_time()\n"
                          "while time.process_time() - t < 1.0: pass\n"});
  JobExit e = RunToEnd(spec);
  ASSERT_EQ(e.exit_code, 0) << e.cause << Stderr(spec.job);
  ASSERT_TRUE(e.host_usage.has_value());
  EXPECT_GT(e.host_usage->cpu_ms, 500);
  EXPECT_LT(e.host_usage->cpu_ms, 60'000);
  EXPECT_GT(e.host_usage->peak_memory_kib, 40 * 1024);
  EXPECT_LT(e.host_usage->peak_memory_kib, 4 * 1024 * 1024);
}

TEST_F(ExecutorTest, TermIgnoringJobIsKilledAfterGrace) {
  LaunchSpec spec = Shell("trap '' TERM; echo ready > ready; while :; do sleep 0.05; done");
  LaunchOk(spec);
  ASSERT_TRUE(WaitUntil([&] { return fs::exists(work_ / "ready"); }));
  ASSERT_TRUE(executor_->Kill(spec.job, std::chrono::seconds(1), "cancelled by bob").ok());
  std::optional<JobExit> e = WaitExit(spec.job);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->exit_code, 128 + SIGKILL);
  EXPECT_EQ(e->signal, SIGKILL);
  EXPECT_EQ(e->cause, "cancelled by bob: killed with SIGKILL after 1s grace");
}

TEST_F(ExecutorTest, LeftoverChildrenDieWhenMainExits) {
  LaunchSpec spec = Shell(
      "sleep 300 & echo $! > pids; "
      "setsid sh -c 'sleep 300 & echo $! >> pids' ; "
      "exit 0");
  JobExit e = RunToEnd(spec);
  EXPECT_EQ(e.exit_code, 0);
  EXPECT_THAT(e.cause, StartsWith("exited with 0; "));
  EXPECT_THAT(e.cause, HasSubstr("leftover process"));
  std::vector<pid_t> pids = ReadPids(work_ / "pids");
  ASSERT_EQ(pids.size(), 2u);
  for (pid_t p : pids) {
    EXPECT_FALSE(PidExists(p)) << "pid " << p << " outlived its job";
  }
}

TEST_F(ExecutorTest, JobSurvivesExecutorAndRecoverReportsItsExit) {
  LaunchSpec spec = Shell("while [ ! -e go ]; do sleep 0.02; done; exit 7");
  std::int64_t shim = LaunchOk(spec);
  ASSERT_GT(executor_->ShimServerPid(), 0);  // launched through the fork server
  executor_.reset();
  executor_ = std::make_unique<Executor>(run_dir_, kShim, clock_);
  std::vector<RecoveredJob> rec = executor_->Recover();
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_EQ(rec[0].job, spec.job);
  EXPECT_EQ(rec[0].shim_pid, shim);
  EXPECT_TRUE(rec[0].still_running);
  EXPECT_TRUE(executor_->Poll().empty());
  std::ofstream(work_ / "go") << "";
  std::optional<JobExit> e = WaitExit(spec.job);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->exit_code, 7);
}

TEST_F(ExecutorTest, ShimSurvivesSigkillOfTheCaller) {
  LaunchSpec spec = Shell("while [ ! -e go ]; do sleep 0.02; done; exit 5");
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  pid_t agent = ::fork();
  ASSERT_GE(agent, 0);
  if (agent == 0) {
    // A stand-in agent: launches, tells the test the shim pid, then waits to be SIGKILLed.
    Executor ex(run_dir_, kShim, clock_);
    Result<std::int64_t> pid = ex.Launch(spec);
    std::int64_t value = pid.ok() ? *pid : -1;
    ssize_t ignored = ::write(pipe_fds[1], &value, sizeof value);
    (void)ignored;
    while (true) {
      ::pause();
    }
  }
  ::close(pipe_fds[1]);
  std::int64_t shim = 0;
  ASSERT_EQ(::read(pipe_fds[0], &shim, sizeof shim), static_cast<ssize_t>(sizeof shim));
  ::close(pipe_fds[0]);
  ASSERT_GT(shim, 0);
  ::kill(agent, SIGKILL);
  ::waitpid(agent, nullptr, 0);
  launched_.push_back(spec.job);

  std::vector<RecoveredJob> rec = executor_->Recover();
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_EQ(rec[0].shim_pid, shim);
  EXPECT_TRUE(rec[0].still_running);
  // The new agent's Kill reaches the recovered job.
  ASSERT_TRUE(executor_->Kill(spec.job, std::chrono::seconds(5), "cancelled by dave").ok());
  std::optional<JobExit> e = WaitExit(spec.job);
  ASSERT_TRUE(e.has_value());
  EXPECT_THAT(e->cause, StartsWith("cancelled by dave: SIGTERM, exited within grace"));
}

TEST_F(ExecutorTest, UnacknowledgedExitIsReportedAgainAfterRestart) {
  LaunchSpec spec = Shell("exit 4");
  LaunchOk(spec);
  executor_.reset();  // the job ends while no agent watches
  executor_ = std::make_unique<Executor>(run_dir_, kShim, clock_);
  ASSERT_TRUE(WaitUntil([&] { return fs::exists(run_dir_ / "1" / "exit.json"); }));
  std::vector<RecoveredJob> rec = executor_->Recover();
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_FALSE(rec[0].still_running);
  EXPECT_EQ(WaitExit(spec.job)->exit_code, 4);
  EXPECT_TRUE(executor_->Poll().empty());  // once per Executor

  // Not acknowledged: a restart reports it again.
  executor_ = std::make_unique<Executor>(run_dir_, kShim, clock_);
  ASSERT_EQ(executor_->Recover().size(), 1u);
  ASSERT_EQ(executor_->Poll().size(), 1u);
  ASSERT_TRUE(executor_->Acknowledge(spec.job).ok());

  // Acknowledged: gone from Recover, logs kept.
  executor_ = std::make_unique<Executor>(run_dir_, kShim, clock_);
  EXPECT_TRUE(executor_->Recover().empty());
  EXPECT_TRUE(fs::exists(executor_->Logs(spec.job).stdout_path));
}

TEST_F(ExecutorTest, DeadShimIsReportedAndItsJobKilled) {
  LaunchSpec spec = Shell("sleep 300 & echo $! > pids; exec sleep 300");
  std::int64_t shim = LaunchOk(spec);
  Result<exec::PidRecord> main = exec::ReadPidRecord(run_dir_ / "1" / "job.pid");
  ASSERT_TRUE(main.ok());
  std::vector<exec::PidRecord> job_procs{*main};
  ASSERT_TRUE(WaitUntil([&] { return ReadPids(work_ / "pids").size() == 1; }));
  std::optional<exec::PidRecord> child = exec::RecordOf(ReadPids(work_ / "pids")[0]);
  ASSERT_TRUE(child.has_value());
  job_procs.push_back(*child);
  ::kill(static_cast<pid_t>(shim), SIGKILL);
  std::optional<JobExit> e = WaitExit(spec.job);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->exit_code, kSupervisorDiedExitCode);
  EXPECT_FALSE(e->signal.has_value());
  EXPECT_EQ(e->cause, "supervisor process died");
  for (const exec::PidRecord& r : job_procs) {
    EXPECT_TRUE(WaitUntil([&] { return !exec::IsAlive(r); })) << "pid " << r.pid << " survived";
  }
  EXPECT_TRUE(fs::exists(run_dir_ / "1" / "exit.json"));  // durable like any other exit
}

TEST_F(ExecutorTest, RemoveDeletesTheFolderOfAnEndedJob) {
  LaunchSpec spec = Shell("while [ ! -e go ]; do sleep 0.02; done");
  LaunchOk(spec);
  EXPECT_EQ(executor_->Remove(spec.job).error().code, ErrorCode::kFailedPrecondition);
  std::ofstream(work_ / "go") << "";
  ASSERT_TRUE(WaitExit(spec.job).has_value());
  EXPECT_TRUE(executor_->Remove(spec.job).ok());
  EXPECT_FALSE(fs::exists(executor_->JobDir(spec.job)));
}

// The cgroup2 mount this host offers: /sys/fs/cgroup (unified hosts) or
// /sys/fs/cgroup/unified (hybrid hosts); nullopt when neither is a writable cgroup2.
TEST_F(ExecutorTest, LiveShimsListsJobsUntilTheirExitIsReported) {
  LaunchSpec sleeper = Shell("sleep 30");
  std::int64_t sleeper_shim = LaunchOk(sleeper);
  LaunchSpec quick = Shell("exit 0");
  std::int64_t quick_shim = LaunchOk(quick);
  using Live = std::vector<std::pair<JobId, std::int64_t>>;
  // quick may already have ended, but no Poll has reported it: both are listed.
  EXPECT_EQ(executor_->LiveShims(), (Live{{sleeper.job, sleeper_shim}, {quick.job, quick_shim}}));
  ASSERT_TRUE(WaitExit(quick.job).has_value());
  EXPECT_EQ(executor_->LiveShims(), (Live{{sleeper.job, sleeper_shim}}));
  ASSERT_TRUE(executor_->Kill(sleeper.job, std::chrono::seconds(0), "test").ok());
  ASSERT_TRUE(WaitExit(sleeper.job).has_value());
  EXPECT_EQ(executor_->LiveShims(), Live{});
}

std::optional<fs::path> CgroupRoot() {
  for (const char* root : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
    if (exec::JobCgroup::Available(root)) {
      return fs::path(root);
    }
  }
  return std::nullopt;
}

TEST_F(ExecutorTest, CgroupJobRunsInItsOwnCgroupWhichIsRemovedAfterwards) {
  std::optional<fs::path> root = CgroupRoot();
  if (!root) {
    GTEST_SKIP() << "no writable cgroup v2 mount";
  }
  executor_->SetCgroupRoot(*root);
  LaunchSpec spec = Shell("cat /proc/self/cgroup");
  EXPECT_EQ(RunToEnd(spec).exit_code, 0);
  const fs::path cgroup = exec::JobCgroup::PathFor(spec.job, executor_->JobDir(spec.job), *root);
  EXPECT_THAT(Stdout(spec.job),
              HasSubstr("0::/" + cgroup.lexically_relative(*root).string() + "\n"));
  EXPECT_THAT(cgroup.filename().string(), MatchesRegex("[0-9a-f]{8}-job-[0-9]+"));
  EXPECT_FALSE(fs::exists(cgroup));
}

TEST_F(ExecutorTest, CgroupKillEndsDaemonizedDescendants) {
  std::optional<fs::path> root = CgroupRoot();
  if (!root) {
    GTEST_SKIP() << "no writable cgroup v2 mount";
  }
  executor_->SetCgroupRoot(*root);
  // A double-forked, setsid'd daemon and a TERM-ignoring main: only SIGKILL ends them.
  LaunchSpec spec = Shell(
      "trap '' TERM; setsid sh -c 'trap \"\" TERM; sleep 300 & echo $! >> pids; "
      "while :; do sleep 0.05; done' & echo $! >> pids; "
      "while :; do sleep 0.05; done");
  LaunchOk(spec);
  std::vector<exec::PidRecord> records;
  ASSERT_TRUE(WaitUntil([&] { return ReadPids(work_ / "pids").size() == 2; }));
  for (pid_t p : ReadPids(work_ / "pids")) {
    if (std::optional<exec::PidRecord> r = exec::RecordOf(p)) {
      records.push_back(*r);
    }
  }
  ASSERT_TRUE(executor_->Kill(spec.job, std::chrono::seconds(0), "cancelled by carol").ok());
  std::optional<JobExit> e = WaitExit(spec.job);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->cause, "cancelled by carol: killed with SIGKILL after 0s grace");
  for (const exec::PidRecord& r : records) {
    EXPECT_FALSE(exec::IsAlive(r)) << "pid " << r.pid;
  }
  EXPECT_FALSE(fs::exists(exec::JobCgroup::PathFor(spec.job, executor_->JobDir(spec.job), *root)));
}

// Issue #20: on a hybrid host (cgroup v1 at /sys/fs/cgroup, an empty cgroup v2 at
// /sys/fs/cgroup/unified) jobs got no cgroup, so a setsid'd process outlived a killed shim and
// kept its GPU. The default root now finds the hybrid host's cgroup v2, and what escaped the
// process group is killed through the job's cgroup when the shim is gone.
TEST_F(ExecutorTest, DeadShimsSetsidDescendantIsKilledThroughTheDefaultCgroup) {
  std::optional<fs::path> root = CgroupRoot();
  if (!root) {
    GTEST_SKIP() << "no writable cgroup v2 mount";
  }
  EXPECT_EQ(exec::DefaultCgroupRoot(), *root);
  EXPECT_EQ(executor_->DescribeContainment().mode, "cgroup-v2");
  // The daemon leaves the job's session: the shim's own sweep would find it as its subreaper,
  // but the shim is killed first, and nothing else knows the daemon's session.
  LaunchSpec spec = Shell("setsid sh -c 'echo $$ >> pids; exec sleep 300' & exec sleep 300");
  std::int64_t shim = LaunchOk(spec);
  ASSERT_TRUE(WaitUntil([&] { return ReadPids(work_ / "pids").size() == 1; }));
  std::optional<exec::PidRecord> daemon = exec::RecordOf(ReadPids(work_ / "pids")[0]);
  ASSERT_TRUE(daemon.has_value());
  ::kill(static_cast<pid_t>(shim), SIGKILL);
  std::optional<JobExit> e = WaitExit(spec.job);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->cause, "supervisor process died");
  EXPECT_TRUE(WaitUntil([&] { return !exec::IsAlive(*daemon); }))
      << "the setsid'd daemon " << daemon->pid << " outlived its killed shim";
}

// Issue #20 where no cgroup holds the job (cgroups off here, as on a cgroup v1 host): a process
// that left the job's session and outlived its SIGKILLed shim is found by the job's tag in its
// environment and killed; before, nothing found it and it kept the job's GPUs.
TEST_F(ExecutorTest, WithoutCgroupsADeadShimsSetsidDescendantIsFoundByItsTag) {
  executor_->SetCgroupRoot("");
  EXPECT_EQ(executor_->DescribeContainment().mode, "none");
  LaunchSpec spec = Shell(
      "setsid sh -c 'echo \"$GPUFLEET_JOB_TAG\" > tag; echo $$ >> pids; exec sleep 300' & "
      "exec sleep 300");
  std::int64_t shim = LaunchOk(spec);
  ASSERT_TRUE(WaitUntil([&] { return ReadPids(work_ / "pids").size() == 1; }));
  std::optional<exec::PidRecord> daemon = exec::RecordOf(ReadPids(work_ / "pids")[0]);
  ASSERT_TRUE(daemon.has_value());
  std::ifstream tag(work_ / "tag");
  std::string tag_text;
  std::getline(tag, tag_text);
  EXPECT_EQ(tag_text, exec::JobTag(spec.job, executor_->JobDir(spec.job)));
  ::kill(static_cast<pid_t>(shim), SIGKILL);
  std::optional<JobExit> e = WaitExit(spec.job);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->cause, "supervisor process died");
  EXPECT_TRUE(e->leftovers.empty());
  EXPECT_FALSE(exec::IsAlive(*daemon))
      << "the setsid'd daemon " << daemon->pid << " outlived its killed shim";
}

// Host limits (issue #24), for real: the job runs in cgroup folders with its CPU quota and
// memory limit (v2 where the controllers are there, else the v1 hierarchies of a hybrid host),
// removed at its end. Needs root (or a delegated tree) and some cgroup to write.
TEST_F(ExecutorTest, HostLimitsPutTheJobUnderItsQuotaAndRemoveTheFoldersAfterwards) {
  std::optional<fs::path> root = CgroupRoot();
  if (!root || ::geteuid() != 0) {
    GTEST_SKIP() << "needs root and a writable cgroup v2 mount";
  }
  executor_->SetCgroupRoot(*root);
  LaunchSpec spec = Shell("cat /proc/self/cgroup");
  spec.cpus = 2;
  spec.memory_mib = 256;
  EXPECT_EQ(RunToEnd(spec).exit_code, 0);
  const std::string log = Stderr(spec.job);
  if (log.find("not enforced") != std::string::npos) {
    GTEST_SKIP() << "neither cgroup v2 controllers nor v1 hierarchies here: " << log;
  }
  EXPECT_EQ(log, "");  // held limits leave the job's log alone
  const std::string tag = exec::JobTag(spec.job, executor_->JobDir(spec.job));
  EXPECT_THAT(Stdout(spec.job), HasSubstr("/gpufleet/" + tag + "\n"));
  if (Stdout(spec.job).find(":memory:/gpufleet/") != std::string::npos) {
    // In the v1 memory and cpu hierarchies too (a hybrid host), and the folders are gone with
    // the job.
    EXPECT_THAT(Stdout(spec.job), HasSubstr(":memory:/gpufleet/" + tag + "\n"));
    EXPECT_THAT(Stdout(spec.job),
                MatchesRegex("(.|\n)*:cpu[a-z,]*:/gpufleet/" + tag + "\n(.|\n)*"));
    const exec::V1LimitGroups v1 = exec::V1LimitGroups::For(exec::V1RootFor(*root), tag);
    EXPECT_FALSE(fs::exists(v1.MemoryDir()));
  }
}

TEST_F(ExecutorTest, JobOverItsMemoryLimitIsKilledAndReportedOutOfMemory) {
  std::optional<fs::path> root = CgroupRoot();
  if (!root || ::geteuid() != 0) {
    GTEST_SKIP() << "needs root and a writable cgroup v2 mount";
  }
  executor_->SetCgroupRoot(*root);
  // 256 MiB of string in a job held to 64 MiB.
  LaunchSpec spec = Spec({"perl", "-e", "my $x = 'a' x (256 * 1024 * 1024); print length($x)"});
  spec.memory_mib = 64;
  const JobExit e = RunToEnd(spec);
  if (Stderr(spec.job).find("not enforced") != std::string::npos) {
    GTEST_SKIP() << "no cgroup memory controller here: " << Stderr(spec.job);
  }
  EXPECT_EQ(e.signal, SIGKILL);
  EXPECT_EQ(e.exit_code, 128 + SIGKILL);
  EXPECT_THAT(e.cause,
              StartsWith("OUT_OF_MEMORY: the kernel's OOM killer stopped it at its "
                         "memory limit of 64 MiB (--mem); killed by SIGKILL"));
  EXPECT_EQ(Stdout(spec.job), "");
  // Within its limit the same job runs to its end.
  LaunchSpec small = Spec({"perl", "-e", "my $x = 'a' x (8 * 1024 * 1024); print length($x)"});
  small.memory_mib = 64;
  EXPECT_EQ(RunToEnd(small).cause, "exited with 0");
  EXPECT_EQ(Stdout(small.job), "8388608");
}

TEST_F(ExecutorTest, LimitsWithoutCgroupsRunTheJobAndSaySoInItsLog) {
  executor_->SetCgroupRoot("");
  LaunchSpec spec = Shell("echo ran");
  spec.cpus = 1;
  spec.memory_mib = 512;
  const JobExit e = RunToEnd(spec);
  EXPECT_EQ(e.exit_code, 0);
  EXPECT_EQ(e.cause, "exited with 0; CPU and memory limits were not enforced (no writable cgroup)");
  EXPECT_EQ(Stderr(spec.job),
            "gpufleet: limits 1 CPU, 512 MiB memory not enforced (cgroups turned off)\n");
  EXPECT_EQ(Stdout(spec.job), "ran\n");
}

TEST(ContainmentTest, ModesSayWhyAndWhereToReadMore) {
  const exec::Containment off = exec::DetectContainment("");
  EXPECT_EQ(off.mode, "none");
  EXPECT_THAT(off.detail,
              HasSubstr("cgroups turned off; a process that leaves its session and "
                        "outlives a killed supervisor escapes (docs/cluster.md#"
                        "process-containment)"));
  const exec::Containment plain = exec::DetectContainment(::testing::TempDir());
  EXPECT_EQ(plain.mode, "none");
  EXPECT_THAT(plain.detail, HasSubstr("no cgroup2 mount at "));
  if (std::optional<fs::path> root = CgroupRoot()) {
    const exec::Containment v2 = exec::DetectContainment(*root);
    EXPECT_EQ(v2.mode, "cgroup-v2");
    EXPECT_EQ(v2.detail, "each job in its own cgroup under " + (*root / "gpufleet").string());
  }
  // A hybrid or cgroup v1 host (this test's host may be one): the v1 hierarchy is named.
  if (fs::exists("/sys/fs/cgroup/memory/cgroup.procs")) {
    const exec::Containment v1 = exec::DetectContainment("/sys/fs/cgroup");
    EXPECT_EQ(v1.mode, "cgroup-v1");
    EXPECT_THAT(v1.detail, HasSubstr("systemd.unified_cgroup_hierarchy=1"));
  }
}

// Two agents on one host (their run dirs differ) never share a job's cgroup.
TEST(JobCgroupTest, PathsOfOneJobIdDifferByAgentAndAreStable) {
  const fs::path a = exec::JobCgroup::PathFor(JobId(1), "/var/lib/gpufleet/agent/jobs/1");
  EXPECT_EQ(a, exec::JobCgroup::PathFor(JobId(1), "/var/lib/gpufleet/agent/jobs//1/"));
  EXPECT_NE(a, exec::JobCgroup::PathFor(JobId(1), "/tmp/other/jobs/1"));
  EXPECT_EQ(a.parent_path(), fs::path("/sys/fs/cgroup/gpufleet"));
}

TEST_F(ExecutorTest, CgroupClassKillsEveryMember) {
  std::optional<fs::path> root = CgroupRoot();
  if (!root) {
    GTEST_SKIP() << "no writable cgroup v2 mount";
  }
  Result<exec::JobCgroup> cg =
      exec::JobCgroup::Create(JobId(900000 + ::getpid()), work_ / "jobs" / "1", *root);
  ASSERT_TRUE(cg.ok()) << cg.error().ToString();
  Result<int> procs = cg->OpenProcs();
  ASSERT_TRUE(procs.ok());
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::write(*procs, "0", 1) != 1) {
      ::_exit(1);
    }
    ::execl("/bin/sh", "sh", "-c", "sleep 300 & exec sleep 300", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(*procs);
  EXPECT_TRUE(WaitUntil([&] { return cg->Pids().size() == 2; }));
  cg->Signal(SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_TRUE(WaitUntil([&] { return cg->Pids().empty(); }));  // the orphan went too
  EXPECT_TRUE(WaitUntil([&] { return cg->Remove().ok(); }));
}

// --- privileges (root only) ---

constexpr const char* kTestUser = "gf-exec-test";

struct TestUserIds {
  uid_t pw_uid = 0;
  gid_t pw_gid = 0;
};

// The unprivileged test user, created (no home, system account) when absent. Test code on one
// thread, so the non-reentrant passwd lookup and system() are fine.
// NOLINTBEGIN(concurrency-mt-unsafe)
std::optional<TestUserIds> TestUser() {
  if (::getpwnam(kTestUser) == nullptr) {
    std::string cmd =
        std::string("useradd -M -r -s /usr/sbin/nologin ") + kTestUser + " >/dev/null 2>&1";
    if (std::system(cmd.c_str()) != 0 && ::getpwnam(kTestUser) == nullptr) {
      return std::nullopt;
    }
  }
  passwd* pw = ::getpwnam(kTestUser);
  if (pw == nullptr) {
    return std::nullopt;
  }
  return TestUserIds{pw->pw_uid, pw->pw_gid};
}
// NOLINTEND(concurrency-mt-unsafe)

TEST_F(ExecutorTest, RootRunsJobAsItsOwner) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "needs root";
  }
  std::optional<TestUserIds> user = TestUser();
  if (!user) {
    GTEST_SKIP() << "cannot create user " << kTestUser;
  }
  fs::path secret = root_ / "root-only";
  std::ofstream(secret) << "secret\n";
  ::chmod(secret.c_str(), 0644);
  LaunchSpec spec = Shell("id -u; id -g; echo $USER; (echo hacked >> " + secret.string() +
                          ") 2>/dev/null || echo denied");
  spec.owner = {user->pw_uid, user->pw_gid, kTestUser};
  spec.workdir = "/";
  EXPECT_EQ(RunToEnd(spec).exit_code, 0);
  EXPECT_EQ(Stdout(spec.job),
            std::to_string(user->pw_uid) + "\n" + std::to_string(user->pw_gid) + "\n" + kTestUser +
                "\ndenied\n");
  EXPECT_EQ(ReadFile(secret), "secret\n");
  for (const fs::path& log :
       {executor_->Logs(spec.job).stdout_path, executor_->Logs(spec.job).stderr_path}) {
    struct stat st {};
    ASSERT_EQ(::stat(log.c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, user->pw_uid) << log;
    EXPECT_EQ(st.st_gid, user->pw_gid) << log;
  }
}

TEST_F(ExecutorTest, NonRootShimRefusesAnotherUsersJob) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "needs root to become another user";
  }
  std::optional<TestUserIds> user = TestUser();
  if (!user) {
    GTEST_SKIP() << "cannot create user " << kTestUser;
  }
  // A job folder the unprivileged shim can write, with a job owned by root.
  fs::path dir = root_ / "manual";
  fs::create_directories(dir);
  LaunchSpec spec = Shell("id -u > " + (root_ / "ran").string());
  spec.owner = {0, 0, "root"};
  ASSERT_TRUE(exec::WriteFileAtomic(dir / "spec.json", exec::SpecToJson({spec, ""}), 0644).ok());
  ::chown(dir.c_str(), user->pw_uid, user->pw_gid);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(user->pw_gid) != 0 ||
        ::setuid(user->pw_uid) != 0) {
      ::_exit(90);
    }
    ::execl(kShim, kShim, "shim", "--job-dir", dir.c_str(), static_cast<char*>(nullptr));
    ::_exit(91);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  Result<exec::ExitRecord> exit = exec::ReadExitRecord(dir / "exit.json");
  ASSERT_TRUE(exit.ok()) << exit.error().ToString();
  EXPECT_EQ(exit->exit_code, 126);
  EXPECT_THAT(exit->cause,
              HasSubstr("refused: the supervisor runs as uid " + std::to_string(user->pw_uid)));
  EXPECT_FALSE(fs::exists(root_ / "ran"));
}

}  // namespace
}  // namespace gf

namespace gf {
namespace {

TEST_F(GatedExecutorTest, ManyLaunchesStartSideBySideAndEachStartPrecedesItsExit) {
  std::vector<LaunchSpec> specs;
  for (int i = 0; i < 8; ++i) {
    specs.push_back(Shell("exit " + std::to_string(i)));
    StartOk(specs.back());
  }
  // StartLaunch waited for none of them: all 8 shims are alive at once, held at the gate, and
  // nothing is reported before their shims record anything.
  PollAll();
  EXPECT_TRUE(events_.empty());
  std::vector<std::pair<JobId, std::int64_t>> live = executor_->LiveShims();
  ASSERT_EQ(live.size(), specs.size());
  for (const auto& [job, shim] : live) {
    EXPECT_TRUE(PidExists(static_cast<pid_t>(shim))) << "job " << job.value();
  }
  gate_->Open();
  ASSERT_TRUE(WaitNotified([&] { return exits_.size() == specs.size(); }));
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const JobId job = specs[i].job;
    EXPECT_EQ(exits_[job].exit_code, static_cast<int>(i));
    EXPECT_GE(EventIndex('s', job), 0) << "job " << job.value() << " never reported started";
    EXPECT_LT(EventIndex('s', job), EventIndex('e', job)) << "job " << job.value();
  }
}

TEST_F(GatedExecutorTest, WatchFdTellsWhenAJobStartsAndWhenItEnds) {
  LaunchSpec spec = Shell("while [ ! -e go ]; do sleep 0.02; done; exit 3");
  StartOk(spec);
  gate_->Open();
  ASSERT_TRUE(WaitNotified([&] { return EventIndex('s', spec.job) >= 0; }))
      << "no notification of the start";
  EXPECT_TRUE(exits_.empty());
  std::ofstream(work_ / "go") << "";
  ASSERT_TRUE(WaitNotified([&] { return exits_.count(spec.job) > 0; }))
      << "no notification of the exit";
  EXPECT_EQ(exits_[spec.job].exit_code, 3);
}

TEST_F(GatedExecutorTest, KillOfAStartingJobIsDeliveredOnceItRuns) {
  LaunchSpec spec = Shell("exec sleep 300");
  StartOk(spec);
  ASSERT_TRUE(executor_->Kill(spec.job, std::chrono::seconds(0), "cancelled by test").ok());
  gate_->Open();
  std::optional<JobExit> e = WaitExit(spec.job);
  ASSERT_TRUE(e.has_value());
  EXPECT_THAT(e->cause, StartsWith("cancelled by test: "));
  EXPECT_LT(EventIndex('s', spec.job), EventIndex('e', spec.job));
}

TEST_F(GatedExecutorTest, RestartMidLaunchAdoptsTheJobOnceItsShimRecordsItself) {
  LaunchSpec spec = Shell("echo started; exit 7");
  StartOk(spec);
  // The agent restarts before the shim has recorded anything.
  ASSERT_FALSE(fs::exists(executor_->JobDir(spec.job) / "shim.pid"));
  executor_ =
      std::make_unique<Executor>(run_dir_, gate_->Path(), clock_, exec_test::kGatedExecutorOptions);
  std::vector<RecoveredJob> rec = executor_->Recover();
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_EQ(rec[0].shim_pid, 0);
  EXPECT_TRUE(rec[0].still_running);
  EXPECT_TRUE(executor_->Poll().empty());
  gate_->Open();
  std::optional<JobExit> e = WaitExit(spec.job);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->exit_code, 7);
  EXPECT_EQ(Stdout(spec.job), "started\n");
}

TEST_F(GatedExecutorTest, LaunchWhoseShimNeverRecordedItselfIsFailedAndTheShimObeys) {
  LaunchSpec spec = Shell("echo started");
  StartOk(spec);
  const fs::path dir = executor_->JobDir(spec.job);
  // An agent restarting long after the launch: spec.json is older than the start deadline.
  fs::last_write_time(dir / "spec.json", fs::file_time_type::clock::now() - std::chrono::hours(1));
  executor_ =
      std::make_unique<Executor>(run_dir_, gate_->Path(), clock_, exec_test::kGatedExecutorOptions);
  std::vector<RecoveredJob> rec = executor_->Recover();
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_FALSE(rec[0].still_running);
  std::optional<JobExit> e = WaitExit(spec.job);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->exit_code, kSupervisorDiedExitCode);
  EXPECT_THAT(e->cause, StartsWith("failed to start: the supervisor never recorded itself"));
  // The shim comes through late: it records itself, sees exit.json and ends without the job.
  gate_->Open();
  ASSERT_TRUE(WaitUntil([&] { return fs::exists(dir / "shim.pid"); }));
  Result<exec::PidRecord> shim = exec::ReadPidRecord(dir / "shim.pid");
  ASSERT_TRUE(shim.ok());
  EXPECT_TRUE(WaitUntil([&] { return !exec::IsAlive(*shim); }));
  EXPECT_FALSE(fs::exists(dir / "job.pid"));
  EXPECT_EQ(Stdout(spec.job), "");
  EXPECT_THAT(ReadFile(dir / "shim.log"), HasSubstr("gave up on this launch"));
}

}  // namespace
}  // namespace gf

// The fork server (shim_server.h), on by default: every ExecutorTest above launches through it.
namespace gf {
namespace {

std::string CmdlineOf(std::int64_t pid) {
  std::string line = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
  std::replace(line.begin(), line.end(), '\0', ' ');
  return line;
}

// A shim forked by the server still carries the server's command line; an exec'd one its own.
bool ForkedByServer(std::int64_t shim) {
  return CmdlineOf(shim).find(" shim-server --fd ") != std::string::npos;
}

constexpr const char* kWaitForGo = "while [ ! -e go ]; do sleep 0.02; done";

TEST_F(ExecutorTest, ForkServerForksDetachedShimsWithoutExec) {
  LaunchSpec a = Shell(kWaitForGo);
  LaunchSpec b = Shell(std::string(kWaitForGo) + "; exit 3");
  const std::int64_t shim_a = LaunchOk(a);
  const pid_t server = executor_->ShimServerPid();
  ASSERT_GT(server, 0);
  const std::int64_t shim_b = LaunchOk(b);
  EXPECT_EQ(executor_->ShimServerPid(), server);  // one server for every launch
  for (std::int64_t shim : {shim_a, shim_b}) {
    EXPECT_TRUE(ForkedByServer(shim)) << CmdlineOf(shim);
    EXPECT_EQ(ReadFile("/proc/" + std::to_string(shim) + "/comm"), "gpufleet-shim\n");
    // Detached as an exec'd shim is: neither our child nor the server's, in its own session.
    std::optional<exec::ProcStat> st = exec::ReadProcStat(static_cast<pid_t>(shim));
    ASSERT_TRUE(st.has_value());
    EXPECT_NE(st->ppid, ::getpid());
    EXPECT_NE(st->ppid, server);
    EXPECT_NE(::getsid(static_cast<pid_t>(shim)), ::getsid(0));
    EXPECT_NE(::getsid(static_cast<pid_t>(shim)), ::getsid(server));
  }
  std::ofstream(work_ / "go") << "";
  EXPECT_EQ(WaitExit(a.job)->exit_code, 0);
  EXPECT_EQ(WaitExit(b.job)->exit_code, 3);
}

TEST_F(ExecutorTest, WithoutTheForkServerShimsAreExeced) {
  executor_ =
      std::make_unique<Executor>(run_dir_, kShim, clock_, ExecutorOptions{.fork_server = false});
  LaunchSpec spec = Shell(kWaitForGo);
  const std::int64_t shim = LaunchOk(spec);
  EXPECT_FALSE(ForkedByServer(shim));
  EXPECT_THAT(CmdlineOf(shim), HasSubstr(" shim --job-dir "));
  EXPECT_EQ(executor_->ShimServerPid(), 0);
  std::ofstream(work_ / "go") << "";
  EXPECT_EQ(WaitExit(spec.job)->exit_code, 0);
}

TEST_F(ExecutorTest, DeadForkServerMeansOneExecedLaunchThenAFreshServer) {
  EXPECT_EQ(RunToEnd(Shell("exit 0")).exit_code, 0);
  const pid_t first = executor_->ShimServerPid();
  std::optional<exec::PidRecord> first_record = exec::RecordOf(first);
  ASSERT_TRUE(first_record.has_value());
  ::kill(first, SIGKILL);
  ASSERT_TRUE(WaitUntil([&] { return !exec::IsAlive(*first_record); }));

  LaunchSpec fallback = Shell(kWaitForGo);
  const std::int64_t execed = LaunchOk(fallback);
  EXPECT_FALSE(ForkedByServer(execed)) << CmdlineOf(execed);
  EXPECT_EQ(executor_->ShimServerPid(), 0);

  LaunchSpec later = Shell(kWaitForGo);
  const std::int64_t forked = LaunchOk(later);
  EXPECT_TRUE(ForkedByServer(forked)) << CmdlineOf(forked);
  EXPECT_GT(executor_->ShimServerPid(), 0);
  EXPECT_NE(executor_->ShimServerPid(), first);
  std::ofstream(work_ / "go") << "";
  EXPECT_EQ(WaitExit(fallback.job)->exit_code, 0);
  EXPECT_EQ(WaitExit(later.job)->exit_code, 0);
}

TEST_F(ExecutorTest, ServerLostWithTheRequestNeverStartsTheJobTwice) {
  // A server that takes the request, starts the shim by exec and dies without replying: the
  // Executor cannot tell whether a shim runs, so it must find it from shim.pid, not start
  // another.
  const fs::path server = root_ / "dying-server.sh";
  std::ofstream(server) << "#!/bin/sh\n"
                        << "[ \"$1\" = shim-server ] || exec '" << kShim << "' \"$@\"\n"
                        << "dir=$(dd bs=4096 count=1 <&\"$3\" 2>/dev/null)\n"
                        << "eval \"'" << kShim << "' shim --job-dir '$dir' $3<&- &\"\n";
  ::chmod(server.c_str(), 0755);
  executor_ = std::make_unique<Executor>(run_dir_, server, clock_);
  LaunchSpec spec = Shell("echo ran >> " + (work_ / "runs").string());
  const std::int64_t shim = LaunchOk(spec);
  Result<exec::PidRecord> recorded = exec::ReadPidRecord(executor_->JobDir(spec.job) / "shim.pid");
  ASSERT_TRUE(recorded.ok());
  EXPECT_EQ(shim, recorded->pid);
  EXPECT_EQ(WaitExit(spec.job)->exit_code, 0);
  EXPECT_EQ(ReadFile(work_ / "runs"), "ran\n");
  EXPECT_EQ(executor_->ShimServerPid(), 0);
}

TEST_F(ExecutorTest, JobLaunchedThroughTheServerSeesOnlyStdFds) {
  // `ls` runs in a child of the job's shell and lists the shell's fds.
  LaunchSpec spec = Shell("ls /proc/$$/fd");
  const std::int64_t shim = LaunchOk(spec);
  EXPECT_TRUE(ForkedByServer(shim));
  EXPECT_EQ(WaitExit(spec.job)->exit_code, 0);
  EXPECT_EQ(Stdout(spec.job), "0\n1\n2\n");
}

TEST_F(ExecutorTest, ShimHoldsNoSocketAndTheServerEndsWithTheExecutor) {
  LaunchSpec spec = Shell(kWaitForGo);
  const std::int64_t shim = LaunchOk(spec);
  for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(shim) + "/fd")) {
    std::error_code ec;
    EXPECT_THAT(fs::read_symlink(e.path(), ec).string(), ::testing::Not(StartsWith("socket:")))
        << "the shim holds " << e.path();
  }
  std::optional<exec::PidRecord> server = exec::RecordOf(executor_->ShimServerPid());
  ASSERT_TRUE(server.has_value());
  executor_.reset();
  EXPECT_TRUE(WaitUntil([&] { return !exec::IsAlive(*server); }));
  EXPECT_TRUE(PidExists(static_cast<pid_t>(shim)));  // the job outlives both
  executor_ = std::make_unique<Executor>(run_dir_, kShim, clock_);
  ASSERT_EQ(executor_->Recover().size(), 1u);
  std::ofstream(work_ / "go") << "";
  EXPECT_EQ(WaitExit(spec.job)->exit_code, 0);
}

// ---- a job's terminal (`gpufleet run`, terminal_relay.h) ----

ExecutorOptions OneSecondSessions() {
  ExecutorOptions options;
  options.terminal_timeout = std::chrono::seconds(1);
  return options;
}

LaunchSpec WithTerminal(LaunchSpec spec, const std::string& size = "24x80") {
  spec.env.emplace_back(std::string(kTerminalVariable), size);
  return spec;
}

TEST_F(ExecutorTest, TerminalJobRunsOnAPtyOfItsSizeAndGetsWhatIsTyped) {
  LaunchSpec spec = WithTerminal(
      Shell("stty size; test -t 0 && test -t 1 && test -t 2 && echo all-three-are-a-tty; "
            "read line; echo got:$line; stty size"));
  LaunchOk(spec);
  const fs::path dir = executor_->JobDir(spec.job);
  ASSERT_TRUE(WaitUntil([&] { return Stdout(spec.job).find("all-three") != std::string::npos; }));
  EXPECT_THAT(Stdout(spec.job), HasSubstr("24 80"));
  // The new size first: the shell runs its second `stty size` as soon as it has the line.
  Status resized = exec::SendTerminalInput(dir, spec.job, {.size = TerminalSize{30, 100}});
  ASSERT_TRUE(resized.ok()) << resized.error().ToString();
  Status typed = exec::SendTerminalInput(dir, spec.job, {.data = "hello there\n"});
  ASSERT_TRUE(typed.ok()) << typed.error().ToString();
  std::optional<JobExit> e = WaitExit(spec.job);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->exit_code, 0) << e->cause;
  const std::string out = Stdout(spec.job);
  EXPECT_THAT(out, HasSubstr("got:hello there"));
  EXPECT_THAT(out, HasSubstr("30 100"));
  EXPECT_EQ(Stderr(spec.job), "");  // everything went through the terminal
  EXPECT_FALSE(fs::exists(dir / exec::kTerminalSocketFile));  // gone with the shim
}

TEST_F(ExecutorTest, CtrlCOnTheTerminalInterruptsTheJobsForegroundGroup) {
  LaunchSpec spec = WithTerminal(Shell("echo ready; sleep 30"));
  LaunchOk(spec);
  ASSERT_TRUE(WaitUntil([&] { return Stdout(spec.job).find("ready") != std::string::npos; }));
  // Typed again each few seconds until the job ends, as a user would: the shell (dash) drops a
  // SIGINT that lands while it vforks `sleep` (measured: about 1 run in 15 on a loaded machine,
  // none with `exec sleep`), so a single ^C right after "ready" may be lost by the job itself.
  // A ^C that never reaches the group still fails the test.
  for (int typed = 0; typed < 4 && exits_.count(spec.job) == 0; ++typed) {
    const Status sent =
        exec::SendTerminalInput(executor_->JobDir(spec.job), spec.job, {.data = "\x03"});
    ASSERT_TRUE(sent.ok() || typed > 0) << sent.error().ToString();  // later: it may have ended
    WaitUntil(
        [&] {
          PollAll();
          return exits_.count(spec.job) > 0;
        },
        std::chrono::seconds(5));
  }
  std::optional<JobExit> e = WaitExit(spec.job);
  ASSERT_TRUE(e.has_value());
  // The line discipline turned the byte into SIGINT: the shell died of it (or returned 130).
  EXPECT_TRUE(e->signal == SIGINT || e->exit_code == 128 + SIGINT) << e->cause;
}

TEST_F(ExecutorTest, TerminalJobIsHungUpWhenItsClientFallsSilent) {
  executor_ = std::make_unique<Executor>(run_dir_, kShim, clock_, OneSecondSessions());
  LaunchSpec spec = WithTerminal(Shell("echo ready; sleep 60"));
  LaunchOk(spec);
  const auto started = std::chrono::steady_clock::now();
  std::optional<JobExit> e = WaitExit(spec.job);
  ASSERT_TRUE(e.has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(15));
  EXPECT_THAT(e->cause, HasSubstr("the terminal session ended"));
  EXPECT_THAT(e->cause, HasSubstr("SIGHUP"));
}

TEST_F(ExecutorTest, KeepalivesHoldTheTerminalSessionOpen) {
  executor_ = std::make_unique<Executor>(run_dir_, kShim, clock_, OneSecondSessions());
  LaunchSpec spec = WithTerminal(Shell("sleep 3; echo still-here"));
  LaunchOk(spec);
  const fs::path dir = executor_->JobDir(spec.job);
  ASSERT_TRUE(WaitUntil([&] { return fs::exists(dir / exec::kTerminalSocketFile); }));
  bool ended = false;
  while (!ended) {
    (void)exec::SendTerminalInput(dir, spec.job, {});  // fails once the job has ended
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    PollAll();
    ended = exits_.count(spec.job) > 0;
  }
  EXPECT_EQ(exits_[spec.job].exit_code, 0) << exits_[spec.job].cause;
  EXPECT_THAT(Stdout(spec.job), HasSubstr("still-here"));
}

TEST_F(ExecutorTest, TerminalInputToAJobWithoutOneSaysSo) {
  LaunchSpec spec = Shell("sleep 30");
  LaunchOk(spec);
  Status sent = exec::SendTerminalInput(executor_->JobDir(spec.job), spec.job, {.data = "x"});
  ASSERT_FALSE(sent.ok());
  EXPECT_EQ(sent.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(sent.error().message, HasSubstr("gpufleet run"));
}

TEST_F(ExecutorTest, TerminalOfAJobInADeepFolderIsReachedThroughItsFolder) {
  // Past the 108 bytes of a socket address: the relay and the sender go through the folder.
  const fs::path deep = root_ / std::string(100, 'd');
  executor_ = std::make_unique<Executor>(deep / "run", kShim, clock_);
  LaunchSpec spec = WithTerminal(Shell("read line; echo got:$line"));
  LaunchOk(spec);
  const fs::path dir = executor_->JobDir(spec.job);
  ASSERT_GT((dir / exec::kTerminalSocketFile).string().size(), 108U);
  ASSERT_TRUE(WaitUntil([&] { return fs::exists(dir / exec::kTerminalSocketFile); }));
  Status typed = exec::SendTerminalInput(dir, spec.job, {.data = "deep\n"});
  ASSERT_TRUE(typed.ok()) << typed.error().ToString();
  ASSERT_TRUE(WaitExit(spec.job).has_value());
  EXPECT_THAT(Stdout(spec.job), HasSubstr("got:deep"));
}

}  // namespace
}  // namespace gf

// Unit tests of the job folder files and /proc parsing.
#include "executor/job_files.h"

#include <filesystem>

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "executor/process_tree.h"

namespace gf::exec {
namespace {

namespace fs = std::filesystem;

class ExecutorFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gf-exec-files-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(ExecutorFilesTest, SpecRoundTrips) {
  LaunchSpec spec;
  spec.job = JobId(42);
  spec.owner = {1001, 1002, "alice"};
  spec.argv = {"python", "train.py", "--lr", "0.1 \"quoted\""};
  spec.workdir = "/home/alice";
  spec.env = {{"A", "1"}, {"B", "x=y"}};
  spec.gpus = {GpuUuid("GPU-a"), GpuUuid("GPU-b")};
  spec.name = "train";
  spec.node = "gpu-a";
  Result<ShimSpec> stored = SpecFromJson(SpecToJson({spec, "/sys/fs/cgroup"}));
  ASSERT_TRUE(stored.ok()) << stored.error().ToString();
  EXPECT_EQ(stored->cgroup_root, "/sys/fs/cgroup");
  const LaunchSpec* back = &stored->launch;
  EXPECT_EQ(back->job, spec.job);
  EXPECT_EQ(back->owner.uid, 1001u);
  EXPECT_EQ(back->owner.gid, 1002u);
  EXPECT_EQ(back->owner.user, "alice");
  EXPECT_EQ(back->argv, spec.argv);
  EXPECT_EQ(back->workdir, spec.workdir);
  EXPECT_EQ(back->env, spec.env);
  EXPECT_EQ(back->gpus, spec.gpus);
  EXPECT_EQ(back->name, "train");
  EXPECT_EQ(back->node, "gpu-a");
  EXPECT_FALSE(back->array);

  spec.array = ArrayTask{.array_job = JobId(40), .index = 3, .max_running = std::nullopt};
  stored = SpecFromJson(SpecToJson({spec, ""}));
  ASSERT_TRUE(stored.ok()) << stored.error().ToString();
  EXPECT_EQ(stored->launch.array, spec.array);
}

TEST_F(ExecutorFilesTest, MalformedSpecIsAnError) {
  EXPECT_EQ(SpecFromJson("{").error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(SpecFromJson(R"({"job": "x"})").error().code, ErrorCode::kInvalidArgument);
}

TEST_F(ExecutorFilesTest, RecordsRoundTripAndLeaveNoTemporaries) {
  ASSERT_TRUE(WritePidRecord(dir_ / "p", {123, 456}).ok());
  Result<PidRecord> pid = ReadPidRecord(dir_ / "p");
  ASSERT_TRUE(pid.ok());
  EXPECT_EQ(pid->pid, 123);
  EXPECT_EQ(pid->start_time, 456u);

  ASSERT_TRUE(WriteExitRecord(dir_ / "e", {137, 9, 1700, "killed"}).ok());
  Result<ExitRecord> exit = ReadExitRecord(dir_ / "e");
  ASSERT_TRUE(exit.ok());
  EXPECT_EQ(exit->exit_code, 137);
  EXPECT_EQ(exit->signal, 9);
  EXPECT_EQ(exit->end_ms, 1700);
  EXPECT_EQ(exit->cause, "killed");

  ASSERT_TRUE(WriteKillRequest(dir_ / "k", {std::chrono::seconds(7), "cancelled by bob"}).ok());
  Result<KillRequest> kill = ReadKillRequest(dir_ / "k");
  ASSERT_TRUE(kill.ok());
  EXPECT_EQ(kill->grace, std::chrono::seconds(7));
  EXPECT_EQ(kill->cause, "cancelled by bob");
  EXPECT_EQ(kill->first_signal, SIGTERM);
  ASSERT_TRUE(WriteKillRequest(dir_ / "k", {std::chrono::seconds(7), "preempted", SIGUSR1}).ok());
  EXPECT_EQ(ReadKillRequest(dir_ / "k")->first_signal, SIGUSR1);
  // A kill.json from before checkpoint signals has no "signal": it meant SIGTERM.
  ASSERT_TRUE(WriteFileAtomic(dir_ / "k", R"({"grace_s": 1, "cause": "old"})", 0600).ok());
  EXPECT_EQ(ReadKillRequest(dir_ / "k")->first_signal, SIGTERM);

  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_)) {
    ++files;
  }
  EXPECT_EQ(files, 3);
  EXPECT_EQ(ReadPidRecord(dir_ / "absent").error().code, ErrorCode::kNotFound);
}

TEST(ExecutorProcTest, ParsesStatLineWithAwkwardCommandName) {
  std::string line =
      "4242 (we ird) (name)) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 "
      "1000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
  Result<ProcStat> st = ParseProcStat(line);
  ASSERT_TRUE(st.ok()) << st.error().ToString();
  EXPECT_EQ(st->pid, 4242);
  EXPECT_EQ(st->state, 'S');
  EXPECT_EQ(st->ppid, 1);
  EXPECT_EQ(st->pgrp, 4242);
  EXPECT_EQ(st->session, 4242);
  EXPECT_EQ(st->start_time, 987654u);
  EXPECT_FALSE(ParseProcStat("garbage").ok());
}

TEST(ExecutorProcTest, SelfIsAliveAndStartTimeGuardsReuse) {
  PidRecord self = SelfRecord();
  EXPECT_TRUE(IsAlive(self));
  EXPECT_FALSE(IsAlive({self.pid, self.start_time + 1}));
  EXPECT_EQ(SignalName(SIGTERM), "SIGTERM");
}

TEST(ExecutorProcTest, DescendantsIncludeGrandchildren) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::execl("/bin/sh", "sh", "-c", "sleep 30 & wait", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  bool found_grandchild = false;
  for (int i = 0; i < 2000 && !found_grandchild; ++i) {
    for (const ProcStat& p : Descendants(::getpid())) {
      if (p.ppid == child) {
        found_grandchild = true;
      }
    }
    if (!found_grandchild) {
      ::usleep(1000);  // polling for the shell to fork, bounded
    }
  }
  EXPECT_TRUE(found_grandchild);
  for (const ProcStat& p : Descendants(::getpid())) {
    ::kill(p.pid, SIGKILL);
  }
  ::waitpid(child, nullptr, 0);
}

// The sweep for escaped job processes (Executor, issue #20) matches one whole environment entry:
// another value of the same variable, or a longer one, is someone else's job.
TEST(ExecutorProcTest, ProcessesWithEnvironmentMatchWholeEntries) {
  const std::string tag = "GPUFLEET_JOB_TAG=proc-test-" + std::to_string(::getpid());
  const auto start = [](const std::string& entry) {
    pid_t child = ::fork();
    if (child == 0) {
      const char* env[] = {"A=1", entry.c_str(), "B=2", nullptr};
      ::execle("/bin/sleep", "sleep", "30", static_cast<char*>(nullptr), env);
      ::_exit(127);
    }
    return child;
  };
  const pid_t ours = start(tag);
  const pid_t longer = start(tag + "0");
  ASSERT_GT(ours, 0);
  ASSERT_GT(longer, 0);
  std::vector<pid_t> found;
  for (int i = 0; i < 2000 && found.empty(); ++i) {  // until sleep has exec'd, bounded
    for (const ProcStat& p : ProcessesWithEnvironment(tag)) {
      found.push_back(p.pid);
    }
    if (found.empty()) {
      ::usleep(1000);
    }
  }
  EXPECT_EQ(found, std::vector<pid_t>{ours});
  ::kill(ours, SIGKILL);
  ::kill(longer, SIGKILL);
  ::waitpid(ours, nullptr, 0);
  ::waitpid(longer, nullptr, 0);
  EXPECT_TRUE(ProcessesWithEnvironment(tag).empty()) << "a reaped process is never found";
}

}  // namespace
}  // namespace gf::exec

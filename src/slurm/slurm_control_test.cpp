// SlurmControl's commands, run for real against stand-in scontrol/scancel scripts that record
// their arguments and answer as Slurm does.
#include "slurm/slurm_control.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <sys/stat.h>

namespace gf {
namespace {

namespace fs = std::filesystem;

class SlurmControlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gf-slurm-control-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A stand-in for a Slurm client: appends its arguments (one per line, then "--") to calls.txt
  // and runs `body`.
  std::string Tool(const std::string& name, const std::string& body) {
    const fs::path path = dir_ / name;
    std::ofstream(path) << "#!/bin/sh\nfor a in \"$@\"; do echo \"$a\" >> '" +
                               (dir_ / "calls.txt").string() + "'; done\necho -- >> '" +
                               (dir_ / "calls.txt").string() + "'\n" + body + "\n";
    fs::permissions(path, fs::perms::owner_all);
    return path.string();
  }

  std::string Calls() const {
    std::ifstream in(dir_ / "calls.txt");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  fs::path dir_;
};

TEST_F(SlurmControlTest, ReadsJobsFromScontrol) {
  auto slurm = MakeSlurmCommands(
      {.scontrol = Tool("scontrol",
                        "echo 'JobId=5 JobName=a b UserId=bob(1002) Account=ml JobState=RUNNING "
                        "NodeList=gpu01 Nodes=gpu01 CPU_IDs=0 Mem=0 GRES=gpu:1(IDX:3)'"),
       .scancel = "scancel",
       .timeout = Millis(10000)});
  const auto jobs = slurm->Jobs();
  ASSERT_TRUE(jobs.ok()) << jobs.error().message;
  ASSERT_EQ(jobs->size(), 1U);
  EXPECT_EQ((*jobs)[0].name, "a b");
  EXPECT_EQ((*jobs)[0].gpus[0].gpu_indices, std::vector<int>{3});
  EXPECT_EQ(Calls(), "--details\n--oneliner\nshow\njob\n--\n");
}

TEST_F(SlurmControlTest, ActionsPassTheirArgumentsUntouched) {
  auto slurm = MakeSlurmCommands({.scontrol = Tool("scontrol", "exit 0"),
                                  .scancel = Tool("scancel", "exit 0"),
                                  .timeout = Millis(10000)});
  ASSERT_TRUE(slurm->Cancel(12).ok());
  ASSERT_TRUE(slurm->Requeue(13).ok());
  // A reason with blanks and a shell's special characters is one argument, read by no shell.
  ASSERT_TRUE(slurm->DrainNode("gpu02", "GPU 3 failed; $(reboot)").ok());
  ASSERT_TRUE(slurm->ResumeNode("gpu02").ok());
  EXPECT_EQ(Calls(),
            "12\n--\nrequeue\n13\n--\nupdate\nnodename=gpu02\nstate=drain\n"
            "reason=GPU 3 failed; $(reboot)\n--\nupdate\nnodename=gpu02\nstate=resume\n--\n");
}

TEST_F(SlurmControlTest, AFailureQuotesSlurm) {
  auto slurm = MakeSlurmCommands(
      {.scontrol = Tool("scontrol", "echo 'scontrol: error: Invalid job id specified' >&2; exit 1"),
       .scancel = "scancel",
       .timeout = Millis(10000)});
  const Status s = slurm->Requeue(99);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("requeue 99"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("Invalid job id specified"), std::string::npos)
      << s.error().message;
  EXPECT_FALSE(slurm->Jobs().ok());
}

TEST_F(SlurmControlTest, NoSlurmInstalledIsAClearError) {
  auto slurm = MakeSlurmCommands(
      {.scontrol = (dir_ / "absent").string(), .scancel = "scancel", .timeout = Millis(10000)});
  const auto jobs = slurm->Jobs();
  ASSERT_FALSE(jobs.ok());
  EXPECT_NE(jobs.error().message.find("absent"), std::string::npos) << jobs.error().message;
}

}  // namespace
}  // namespace gf

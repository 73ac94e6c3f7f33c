#include "agent/mps_daemons.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <stdlib.h>

#include "agent/mps_test_util.h"

namespace gf {
namespace {

namespace fs = std::filesystem;

class MpsDaemonsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "gf-mps.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    options_ = MpsOptions{.control = mps_test::WriteFakeControl(root_, Log()).string(),
                          .dir = root_ / "mps",
                          .timeout = Millis(10'000)};
  }
  void TearDown() override { fs::remove_all(root_); }

  fs::path Log() const { return root_ / "control.log"; }
  std::string LogText() const {
    std::ostringstream text;
    text << std::ifstream(Log()).rdbuf();
    return text.str();
  }
  std::string Pipe(const std::string& uuid) const {
    return (root_ / "mps" / uuid / "pipe").string();
  }
  std::string LogDir(const std::string& uuid) const {
    return (root_ / "mps" / uuid / "log").string();
  }

  fs::path root_;
  MpsOptions options_;
};

TEST_F(MpsDaemonsTest, OneDaemonPerGpuStartedAtItsFirstJob) {
  MpsDaemons daemons(options_);
  auto env = daemons.Join(GpuUuid("GPU-a"));
  ASSERT_TRUE(env.ok()) << env.error().ToString();
  EXPECT_EQ(*env,
            (EnvList{{"CUDA_MPS_PIPE_DIRECTORY", Pipe("GPU-a")},
                     {"CUDA_MPS_LOG_DIRECTORY", LogDir("GPU-a")}}));
  ASSERT_TRUE(daemons.Join(GpuUuid("GPU-a")).ok());  // the second job on it: no new daemon
  ASSERT_TRUE(daemons.Join(GpuUuid("GPU-b")).ok());
  EXPECT_EQ(LogText(),
            "start GPU-a " + Pipe("GPU-a") + " " + LogDir("GPU-a") + "\n" + "start GPU-b " +
                Pipe("GPU-b") + " " + LogDir("GPU-b") + "\n");
}

TEST_F(MpsDaemonsTest, ALaterAgentUsesTheDaemonAnEarlierOneStarted) {
  ASSERT_TRUE(MpsDaemons(options_).Join(GpuUuid("GPU-a")).ok());
  MpsDaemons restarted(options_);
  auto env = restarted.Join(GpuUuid("GPU-a"));
  ASSERT_TRUE(env.ok()) << env.error().ToString();
  EXPECT_EQ(env->front().second, Pipe("GPU-a"));
  EXPECT_EQ(LogText(), "start GPU-a " + Pipe("GPU-a") + " " + LogDir("GPU-a") + "\n");
}

TEST_F(MpsDaemonsTest, ALaunchWithoutMpsQuitsItsGpusDaemonOnly) {
  MpsDaemons daemons(options_);
  ASSERT_TRUE(daemons.Join(GpuUuid("GPU-a")).ok());
  daemons.Leave(GpuUuid("GPU-b"));  // none runs there: nothing to quit
  daemons.Leave(GpuUuid("GPU-a"));
  daemons.Leave(GpuUuid("GPU-a"));  // already told
  EXPECT_EQ(LogText(),
            "start GPU-a " + Pipe("GPU-a") + " " + LogDir("GPU-a") + "\n" + "quit GPU-a\n");
  // A daemon an earlier agent left is quit too.
  ASSERT_TRUE(MpsDaemons(options_).Join(GpuUuid("GPU-c")).ok());
  MpsDaemons(options_).Leave(GpuUuid("GPU-c"));
  EXPECT_NE(LogText().find("quit GPU-c\n"), std::string::npos) << LogText();
}

TEST_F(MpsDaemonsTest, AMissingControlProgramFailsTheJobWithTheFix) {
  options_.control = (root_ / "no-such-control").string();
  MpsDaemons daemons(options_);
  auto env = daemons.Join(GpuUuid("GPU-a"));
  ASSERT_FALSE(env.ok());
  EXPECT_EQ(env.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(env.error().message.find("install the CUDA MPS tools"), std::string::npos)
      << env.error().message;
  EXPECT_NE(env.error().message.find("gpufleet gpu mode NODE GPU shared"), std::string::npos);
}

TEST_F(MpsDaemonsTest, WithoutAControlProgramNothingRuns) {
  options_.control = "";
  MpsDaemons daemons(options_);
  auto env = daemons.Join(GpuUuid("GPU-a"));
  ASSERT_TRUE(env.ok());
  EXPECT_TRUE(env->empty());
  daemons.Leave(GpuUuid("GPU-a"));
  EXPECT_FALSE(fs::exists(Log()));
}

TEST(MpsWantedTest, OnlyALaunchWithMpsLimitsWantsADaemon) {
  EXPECT_TRUE(MpsDaemons::Wanted(
      {{"GPUFLEET_GPU_SHARE", "0.25"}, {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "25"}}));
  EXPECT_FALSE(MpsDaemons::Wanted({{"GPUFLEET_GPU_SHARE", "0.25"}}));
}

}  // namespace
}  // namespace gf

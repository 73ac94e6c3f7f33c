#include "agent/gpu_self_test.h"

#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace gf {
namespace {

using std::chrono::seconds;

TEST(RunSelfTestTest, TheCommandSeesItsGpuAndPassesWithExitZero) {
  const ToolOutcome outcome = RunSelfTest(
      "test \"$CUDA_VISIBLE_DEVICES\" = GPU-7 && test \"$GPUFLEET_GPU_UUID\" = GPU-7 && "
      "test \"$GPUFLEET_GPU_INDEX\" = 3 && echo burn-in ok",
      GpuUuid("GPU-7"),
      3,
      Millis(10'000));
  EXPECT_TRUE(outcome.passed) << outcome.detail << ": " << outcome.output;
  EXPECT_EQ(outcome.detail, "exit 0");
  EXPECT_EQ(outcome.output, "burn-in ok\n");
}

TEST(RunSelfTestTest, AFailureKeepsTheExitStatusAndTheOutputTail) {
  const ToolOutcome outcome = RunSelfTest(
      "echo 'ECC page retirement failed' >&2; exit 3", GpuUuid("GPU-1"), 1, Millis(10'000));
  EXPECT_FALSE(outcome.passed);
  EXPECT_EQ(outcome.detail, "exit 3");
  EXPECT_EQ(outcome.output, "ECC page retirement failed\n");
}

TEST(RunSelfTestTest, ATestPastItsTimeoutIsKilledWithWhatItStarted) {
  const auto start = std::chrono::steady_clock::now();
  const ToolOutcome outcome =
      RunSelfTest("sleep 30 & sleep 30; echo never", GpuUuid("GPU-1"), 1, Millis(1000));
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(10));
  EXPECT_FALSE(outcome.passed);
  EXPECT_EQ(outcome.detail, "killed: still running after the timeout (1s)");
}

GpuSample Failed(const std::string& uuid, bool busy = false) {
  GpuSample s;
  s.uuid = GpuUuid(uuid);
  s.health = GpuHealth::kFailed;
  s.health_cause = "XID 79 (GPU has fallen off the bus)";
  if (busy) {
    s.processes.push_back(GpuProcessSample{});
  }
  return s;
}

class GpuSelfTestTest : public ::testing::Test {
 protected:
  std::unique_ptr<GpuSelfTest> Make(const std::string& command) {
    return std::make_unique<GpuSelfTest>(
        GpuSelfTestOptions{.command = command, .interval = Millis(60'000), .timeout = Millis(5000)},
        clock_,
        [this](const GpuUuid& uuid) {
          std::lock_guard lock(mu_);
          passed_.push_back(uuid);
        });
  }
  std::vector<GpuUuid> Passed() {
    std::lock_guard lock(mu_);
    return passed_;
  }
  // Waits (at most 10 s) for `n` passes.
  bool WaitForPasses(std::size_t n) {
    for (int i = 0; i < 1000 && Passed().size() < n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return Passed().size() >= n;
  }

  ManualClock clock_;
  std::mutex mu_;
  std::vector<GpuUuid> passed_;
};

TEST_F(GpuSelfTestTest, AnIdleFailedGpuIsTestedOncePerIntervalAndReturnedOnAPass) {
  auto tester = Make("true");
  GpuSample ok = Failed("GPU-0");
  ok.health = GpuHealth::kOk;
  tester->Observe(ok, 0);                     // healthy: nothing to test
  tester->Observe(Failed("GPU-1", true), 1);  // runs a process: not now
  tester->Observe(Failed("GPU-2"), 2);
  ASSERT_TRUE(WaitForPasses(1));
  tester->Observe(Failed("GPU-2"), 2);  // within the interval: not again
  clock_.Advance(seconds(61));
  tester->Observe(Failed("GPU-2"), 2);
  ASSERT_TRUE(WaitForPasses(2));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(Passed(), (std::vector<GpuUuid>{GpuUuid("GPU-2"), GpuUuid("GPU-2")}));
}

TEST_F(GpuSelfTestTest, AFailingTestLeavesTheGpuFailedAndDestructionStopsARunningOne) {
  {
    auto failing = Make("exit 1");
    failing->Observe(Failed("GPU-3"), 3);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  EXPECT_TRUE(Passed().empty());
  const auto start = std::chrono::steady_clock::now();
  {
    auto slow = Make("sleep 30");
    slow->Observe(Failed("GPU-3"), 3);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }  // the destructor kills the test instead of waiting 30 s
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(10));
  EXPECT_TRUE(Passed().empty());
}

}  // namespace
}  // namespace gf

// Host limits (host_limits.h) against synthetic folder trees: what is written where, and how an
// OOM kill is read. The real cgroups are exercised by executor_test.cpp (as root).
#include "executor/host_limits.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

namespace gf::exec {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class HostLimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gf-limits-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { fs::remove_all(root_); }

  static void Write(const fs::path& file, const std::string& text) {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
  }
  static std::string Read(const fs::path& file) {
    std::ifstream in(file);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  fs::path root_;
};

TEST_F(HostLimitsTest, V2WritesCpuMaxMemoryMaxAndNoSwap) {
  const fs::path job = root_ / "gpufleet" / "job-1";
  for (const char* file : {"cpu.max", "memory.max", "memory.swap.max"}) {
    Write(job / file, "");  // a plain file keeps what a longer old text had past the write
  }
  ASSERT_TRUE(ApplyV2Limits(job, {.cpus = 4, .memory_mib = 2048}).ok());
  EXPECT_EQ(Read(job / "cpu.max"), "400000 100000");
  EXPECT_EQ(Read(job / "memory.max"), "2147483648");
  EXPECT_EQ(Read(job / "memory.swap.max"), "0");
}

TEST_F(HostLimitsTest, V2WritesOnlyWhatIsAskedAndNeedsNoSwapFile) {
  const fs::path job = root_ / "job";
  Write(job / "cpu.max", "max 100000");
  Write(job / "memory.max", "");
  ASSERT_TRUE(ApplyV2Limits(job, {.cpus = 0, .memory_mib = 100}).ok());
  EXPECT_EQ(Read(job / "cpu.max"), "max 100000");
  EXPECT_EQ(Read(job / "memory.max"), "104857600");
  EXPECT_FALSE(fs::exists(job / "memory.swap.max"));
}

TEST_F(HostLimitsTest, V2WithoutTheControllerIsUnavailableNamingTheFile) {
  const fs::path job = root_ / "job";
  fs::create_directories(job);  // a hybrid host's cgroup2: no cpu or memory controller
  const Status s = ApplyV2Limits(job, {.cpus = 1, .memory_mib = 0});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(s.error().message, HasSubstr((job / "cpu.max").string()));
}

TEST_F(HostLimitsTest, V1RootIsTheParentOfAHybridHostsUnifiedMount) {
  EXPECT_EQ(V1RootFor("/sys/fs/cgroup/unified"), fs::path("/sys/fs/cgroup"));
  EXPECT_EQ(V1RootFor("/sys/fs/cgroup/unified/"), fs::path("/sys/fs/cgroup"));
  EXPECT_EQ(V1RootFor("/sys/fs/cgroup"), fs::path("/sys/fs/cgroup"));
  const V1LimitGroups groups = V1LimitGroups::For("/sys/fs/cgroup", "0a0b0c0d-job-7");
  EXPECT_EQ(groups.MemoryDir(), fs::path("/sys/fs/cgroup/memory/gpufleet/0a0b0c0d-job-7"));
}

TEST_F(HostLimitsTest, V1WithoutAHierarchyIsUnavailableAndLeavesNothing) {
  const Result<V1LimitGroups> groups =
      V1LimitGroups::Create(root_, "abc-job-1", {.cpus = 1, .memory_mib = 64});
  ASSERT_FALSE(groups.ok());
  EXPECT_EQ(groups.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(groups.error().message, HasSubstr("no writable cgroup v1 hierarchy"));
  EXPECT_FALSE(fs::exists(root_ / "cpu" / "gpufleet"));
}

TEST_F(HostLimitsTest, OomKillIsReadFromV2EventsAndV1OomControl) {
  Write(root_ / "v2" / "memory.events", "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\n");
  EXPECT_TRUE(OomKilled(root_ / "v2"));
  Write(root_ / "v2ok" / "memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n");
  EXPECT_FALSE(OomKilled(root_ / "v2ok"));
  Write(root_ / "v1" / "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n");
  EXPECT_TRUE(OomKilled(root_ / "v1"));
  // An older v1 kernel without the oom_kill count: the limit's failure count.
  Write(root_ / "old" / "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\n");
  Write(root_ / "old" / "memory.failcnt", "3\n");
  EXPECT_TRUE(OomKilled(root_ / "old"));
  EXPECT_FALSE(OomKilled(""));
  EXPECT_FALSE(OomKilled(root_ / "absent"));
}

TEST_F(HostLimitsTest, UsageIsReadFromV2StatsElseV1Counters) {
  Write(root_ / "v2" / "cpu.stat", "usage_usec 1234567\nuser_usec 1000000\nsystem_usec 234567\n");
  Write(root_ / "v2" / "memory.peak", "73400320\n");
  EXPECT_EQ(CgroupCpuUsec(root_ / "v2"), 1'234'567);
  EXPECT_EQ(CgroupMemoryPeakBytes(root_ / "v2"), 73'400'320);
  Write(root_ / "v1" / "cpuacct.usage", "2500000000\n");  // nanoseconds
  Write(root_ / "v1" / "memory.max_usage_in_bytes", "1048576\n");
  EXPECT_EQ(CgroupCpuUsec(root_ / "v1"), 2'500'000);
  EXPECT_EQ(CgroupMemoryPeakBytes(root_ / "v1"), 1'048'576);
  // A v2 cgroup without the memory controller, a folder without cpuacct, none at all: unknown.
  Write(root_ / "bare" / "cpu.stat", "usage_usec 5\n");
  EXPECT_EQ(CgroupMemoryPeakBytes(root_ / "bare"), std::nullopt);
  EXPECT_EQ(CgroupCpuUsec(root_ / "absent"), std::nullopt);
  EXPECT_EQ(CgroupCpuUsec(""), std::nullopt);
  EXPECT_EQ(CgroupMemoryPeakBytes(""), std::nullopt);
}

TEST_F(HostLimitsTest, DescribesTheLimits) {
  EXPECT_EQ(DescribeLimits({.cpus = 1, .memory_mib = 512}), "1 CPU, 512 MiB memory");
  EXPECT_EQ(DescribeLimits({.cpus = 8, .memory_mib = 65'536}), "8 CPUs, 64 GiB memory");
  EXPECT_EQ(DescribeLimits({.cpus = 0, .memory_mib = 1536}), "1.5 GiB memory");
}

}  // namespace
}  // namespace gf::exec

#include "core/proc_cgroup.h"

#include <gtest/gtest.h>

namespace gf {
namespace {

TEST(ProcCgroupTest, EveryLinesPathInOrder) {
  EXPECT_EQ(
      CgroupPaths("12:memory:/slurm/uid_0/job_9\n"
                  "1:name=systemd:/a:b/c\n"
                  "garbage\n"
                  "0::/system.slice/x.scope\n"),
      (std::vector<std::string_view>{"/slurm/uid_0/job_9", "/a:b/c", "/system.slice/x.scope"}));
  EXPECT_EQ(CgroupPaths("0::/no/newline"), std::vector<std::string_view>{"/no/newline"});
  EXPECT_TRUE(CgroupPaths("").empty());
}

}  // namespace
}  // namespace gf

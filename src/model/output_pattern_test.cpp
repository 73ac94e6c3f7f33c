#include "model/output_pattern.h"

#include <gtest/gtest.h>

namespace gf {
namespace {

OutputNames Task() {
  return OutputNames{.job = 42,
                     .array_job = 40,
                     .array_index = 2,
                     .name = "train",
                     .user = "alice",
                     .node = "gpu-a",
                     .node_rank = 1};
}

TEST(OutputPatternTest, ExpandsSlurmPlaceholders) {
  EXPECT_EQ(ExpandOutputPattern("slurm-%j.out", Task()), "slurm-42.out");
  EXPECT_EQ(ExpandOutputPattern("%x-%A_%a.log", Task()), "train-40_2.log");
  EXPECT_EQ(ExpandOutputPattern("logs/%u/%N.%n.%J", Task()), "logs/alice/gpu-a.1.42");
  EXPECT_EQ(ExpandOutputPattern("%4a-%3j%%", Task()), "0002-042%");
  EXPECT_EQ(ExpandOutputPattern("no placeholder", Task()), "no placeholder");
}

TEST(OutputPatternTest, OutsideAnArrayTheArrayIdIsTheJobsAndTheIndexSlurmsNoValue) {
  OutputNames single = Task();
  single.array_job = 0;
  single.array_index.reset();
  EXPECT_EQ(ExpandOutputPattern("%A_%a", single), "42_4294967294");
}

TEST(OutputPatternTest, RefusesUnknownPlaceholdersNamingTheField) {
  EXPECT_TRUE(ValidateOutputPattern("slurm-%j_%4a.out", "--output").ok());
  for (const char* bad : {"%q.out", "x%", "%12a", ""}) {
    const Status s = ValidateOutputPattern(bad, "--output");
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.error().message.rfind("--output: ", 0), 0U) << s.error().message;
  }
}

}  // namespace
}  // namespace gf

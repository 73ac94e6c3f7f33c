#include "model/team.h"

#include <gtest/gtest.h>

#include "model/slice.h"

namespace gf {
namespace {

TEST(TeamTest, RolesRoundTrip) {
  for (Role r : {Role::kUser, Role::kOperator, Role::kAdmin}) {
    EXPECT_EQ(*ParseRole(ToString(r)), r);
  }
  EXPECT_NE(ParseRole("boss").error().message.find("user, operator or admin"), std::string::npos);
}

TEST(TeamTest, TeamNames) {
  EXPECT_TRUE(ValidateTeamName("vision").ok());
  EXPECT_TRUE(ValidateTeamName("nlp-2.research_x").ok());
  for (const char* bad : {"", "-x", "has space", "a/b", "ümlaut"}) {
    auto s = ValidateTeamName(bad);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.error().message.rfind("team:", 0), 0u);
  }
  EXPECT_FALSE(ValidateTeamName(std::string(65, 'a')).ok());
}

// The one spelling of "no team" a person reads; one no team can take, so it never stands for a
// real team.
TEST(TeamTest, NoTeamHasOneSpellingThatNoTeamNameCanTake) {
  EXPECT_EQ(TeamLabel(""), "(none)");
  EXPECT_EQ(TeamLabel("cv"), "cv");
  EXPECT_FALSE(ValidateTeamName(kNoTeam).ok());
}

TEST(SliceTest, WholeGpus) {
  auto slices = WholeGpuSlices({GpuUuid("GPU-a"), GpuUuid("GPU-b")});
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_TRUE(slices[0].IsWhole());
  EXPECT_EQ(slices[1].gpu, GpuUuid("GPU-b"));
}

}  // namespace
}  // namespace gf

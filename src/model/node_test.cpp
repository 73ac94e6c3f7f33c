#include "model/node.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace gf {
namespace {

TEST(MigLayoutTest, ParsesProfilesAndNamesTheFieldOnBadOnes) {
  EXPECT_EQ(*ParseMigLayout("3g.40gb,1g.10gb+me", "layout"),
            (std::vector<std::string>{"3g.40gb", "1g.10gb+me"}));
  EXPECT_TRUE(ParseMigLayout("none", "layout")->empty());
  EXPECT_TRUE(ParseMigLayout("", "layout")->empty());
  const auto bad = ParseMigLayout("3g.40gb,,1g.10gb", "layout");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(bad.error().message.starts_with("layout")) << bad.error().message;
  std::string many = "1g.10gb";
  for (int i = 0; i < 16; ++i) {
    many += ",1g.10gb";
  }
  EXPECT_NE(ParseMigLayout(many, "layout").error().message.find("17 MIG devices; at most 16"),
            std::string::npos);
  EXPECT_EQ(MigProfileSlices("3g.40gb"), 3);
}

const std::vector<MigProfile> kA100{{.name = "1g.10gb", .slices = 1, .max_count = 7},
                                    {.name = "3g.40gb", .slices = 3, .max_count = 2},
                                    {.name = "7g.80gb", .slices = 7, .max_count = 1}};

TEST(MigLayoutTest, PlanCreatesLargestFirstWithinTheGpusSlices) {
  const auto plan = PlanMigLayout(kA100, "GPU 0", {"1g.10gb", "3g.40gb", "1g.10gb", "1g.10gb"});
  ASSERT_TRUE(plan.ok()) << plan.error().ToString();
  EXPECT_EQ(*plan, (std::vector<std::size_t>{1, 0, 0, 0}));

  const auto too_many = PlanMigLayout(kA100, "GPU 0", {"7g.80gb", "7g.80gb"});
  EXPECT_NE(too_many.error().message.find("GPU 0: the GPU holds at most 1 instances of MIG "
                                          "profile 7g.80gb"),
            std::string::npos)
      << too_many.error().message;
  const auto too_big = PlanMigLayout(kA100, "GPU 0", {"3g.40gb", "3g.40gb", "1g.10gb", "1g.10gb"});
  EXPECT_NE(too_big.error().message.find("needs 8 compute slices; the GPU has 7"),
            std::string::npos);
  const auto unknown = PlanMigLayout(kA100, "layout: gpu01 GPU 0", {"2g.20gb"});
  EXPECT_EQ(unknown.error().message,
            "layout: gpu01 GPU 0: MIG profile '2g.20gb' is not offered by this GPU (it offers "
            "1g.10gb, 3g.40gb, 7g.80gb)");
  EXPECT_NE(PlanMigLayout({}, "GPU 1", {"1g.10gb"}).error().message.find("(it offers none)"),
            std::string::npos);
}

TEST(MigLayoutTest, AnUnknownMaxCountIsNotChecked) {
  // What the controller knows of a GPU: the profile names it reported, not the driver's counts.
  const std::vector<MigProfile> names{{.name = "1g.10gb", .slices = 1},
                                      {.name = "7g.80gb", .slices = 7}};
  EXPECT_TRUE(PlanMigLayout(names, "GPU 0", std::vector<std::string>(7, "1g.10gb")).ok());
  EXPECT_FALSE(PlanMigLayout(names, "GPU 0", std::vector<std::string>(8, "1g.10gb")).ok());
}

}  // namespace
}  // namespace gf

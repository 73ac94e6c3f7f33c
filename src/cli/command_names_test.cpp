#include "cli/command_names.h"

#include <gtest/gtest.h>

namespace gf {
namespace {

TEST(CommandNamesTest, EditDistanceCountsOneCharacterEdits) {
  EXPECT_EQ(EditDistance("", ""), 0U);
  EXPECT_EQ(EditDistance("show", "show"), 0U);
  EXPECT_EQ(EditDistance("shwo", "show"), 2U);
  EXPECT_EQ(EditDistance("quee", "queue"), 1U);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3U);
  EXPECT_EQ(EditDistance("", "logs"), 4U);
}

TEST(CommandNamesTest, NamesTheWordTheClosestCommandAndTheHelp) {
  const std::vector<std::string> known = {"cancel", "explain", "logs", "queue", "show", "submit"};
  EXPECT_EQ(UnknownCommandMessage("sumbit", known),
            "'sumbit' is not a gpufleet command; the closest is 'submit' (gpufleet submit "
            "--help); gpufleet --help lists every command");
  EXPECT_NE(UnknownCommandMessage("hold", known).find("'hold' is not a gpufleet command"),
            std::string::npos);
  EXPECT_EQ(UnknownCommandMessage("x", {}),
            "'x' is not a gpufleet command; gpufleet --help lists every command");
}

}  // namespace
}  // namespace gf

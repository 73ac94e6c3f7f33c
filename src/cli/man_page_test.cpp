#include "cli/man_page.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gf {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(ManPageTest, ListsVisibleCommandsNestedOnesAndTheirOptions) {
  CLI::App app("gpufleet: a GPU manager", "gpufleet");
  std::string socket;
  app.add_option("--socket", socket, "API socket");
  auto* up = app.add_subcommand("up", "run it all");
  std::string gpus = "nvml";
  up->add_option("--gpus", gpus, "which GPUs")->capture_default_str();
  auto* token = app.add_subcommand("token", "API tokens");
  std::string user;
  token->add_subcommand("create", "a new token")->add_option("--user", user, "whose")->required();
  app.add_subcommand("shim", "internal")->group("");

  const std::string page = ManPage(app, "1.2.3");
  EXPECT_THAT(page, HasSubstr(".TH GPUFLEET 1 \"\" \"gpufleet 1.2.3\""));
  EXPECT_THAT(page, HasSubstr("gpufleet \\- a GPU manager"));
  EXPECT_THAT(page, HasSubstr("\\fB\\-\\-socket\\fR \\fITEXT\\fR\nAPI socket\n"));
  EXPECT_THAT(page, HasSubstr(".SS \"gpufleet up\"\nrun it all\n"));
  EXPECT_THAT(page, HasSubstr("which GPUs [default: nvml]"));
  EXPECT_THAT(page, HasSubstr(".SS \"gpufleet token create\""));
  EXPECT_THAT(page, HasSubstr("\\fB\\-\\-user\\fR \\fITEXT\\fR (required)"));
  EXPECT_THAT(page, Not(HasSubstr("shim")));
  EXPECT_THAT(page, Not(HasSubstr("Print this help message")));
  // Commands in order of name, whatever order they were added in.
  EXPECT_LT(page.find(".SS \"gpufleet token"), page.find(".SS \"gpufleet up"));
}

// Text from descriptions never becomes a roff request or escape.
TEST(ManPageTest, EscapesWhatRoffWouldRead) {
  CLI::App app("manager", "gpufleet");
  app.add_subcommand("x", ".br starts a line\\n with a backslash");
  const std::string page = ManPage(app, "1");
  EXPECT_THAT(page, HasSubstr("\n\\&.br starts a line\\en with a backslash\n"));
}

}  // namespace
}  // namespace gf

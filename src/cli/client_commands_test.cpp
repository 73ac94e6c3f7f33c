#include "cli/client_commands.h"

#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

namespace gf {
namespace {

// Issue #24: `submit --help` showed neither of its two forms and printed a negated flag as
// "--requeue,--no-requeue{false}".
TEST(ClientCommandsTest, SubmitHelpShowsBothFormsAndPlainFlagNames) {
  CLI::App app("test", "gpufleet");
  ClientContext ctx;
  AddClientCommands(app, ctx);
  const std::string help = app.get_subcommand("submit")->help("gpufleet");
  EXPECT_NE(help.find("gpufleet submit [OPTIONS] SCRIPT [ARGS...]"), std::string::npos) << help;
  EXPECT_NE(help.find("gpufleet submit [OPTIONS] -- CMD [ARGS...]"), std::string::npos) << help;
  EXPECT_NE(help.find("--requeue,--no-requeue "), std::string::npos) << help;
  EXPECT_EQ(help.find("{false}"), std::string::npos) << help;
  EXPECT_NE(help.find("--gpus N "), std::string::npos) << help;
}

}  // namespace
}  // namespace gf

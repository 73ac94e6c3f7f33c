#include "cli/client_commands.h"

#include <string>
#include <vector>

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

// Issue #24: job control's usage errors are told before any request is sent (exit 2, where a
// request to the missing socket would exit 1): a cancel with neither ids nor filters or with
// both, an update that changes nothing.
TEST(ClientCommandsTest, JobControlUsageErrorsAreRefusedBeforeAnyRequest) {
  const std::vector<std::vector<std::string>> usages = {
      {"cancel"}, {"cancel", "12", "--user", "alice"}, {"update", "12"}};
  for (const std::vector<std::string>& args : usages) {
    CLI::App app("test", "gpufleet");
    ClientContext ctx;
    ctx.flags.socket = "/nonexistent/gpufleet.sock";
    AddClientCommands(app, ctx);
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // as CLI11 takes a vector
    app.parse(reversed);
    EXPECT_EQ(ctx.exit_code, 2) << args[0] << " " << args.size();
  }
  // And a request that is well formed goes out (and fails: no server).
  CLI::App app("test", "gpufleet");
  ClientContext ctx;
  ctx.flags.socket = "/nonexistent/gpufleet.sock";
  AddClientCommands(app, ctx);
  std::vector<std::string> hold = {"12", "hold"};
  app.parse(hold);
  EXPECT_EQ(ctx.exit_code, 1);
}

}  // namespace
}  // namespace gf

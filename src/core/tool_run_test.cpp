#include "core/tool_run.h"

#include <array>
#include <csignal>

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

namespace gf {
namespace {

// A test binary keeps SIGPIPE's default action (end the process), as any caller may: a write to
// a pipe whose reader is gone (a program that failed at once) must only fail, never end it.
TEST(ToolRunTest, AWriteToACommandThatIsGoneFailsWithoutEndingTheCaller) {
  ASSERT_EQ(std::signal(SIGPIPE, SIG_DFL), SIG_DFL);
  std::array<int, 2> fds{};
  ASSERT_EQ(::pipe(fds.data()), 0);
  ::close(fds[0]);  // nobody reads
  EXPECT_FALSE(WriteIgnoringHangUp(fds[1], "quit\n"));
  ::close(fds[1]);
  sigset_t pending;
  sigpending(&pending);
  EXPECT_EQ(sigismember(&pending, SIGPIPE), 0);  // none left to strike later
}

TEST(ToolRunTest, InputReachesTheCommand) {
  const ToolOutcome outcome =
      RunTool(ToolRun{.command = "cat", .env = {}, .input = "quit\n", .timeout = Millis(10000)});
  EXPECT_TRUE(outcome.passed) << outcome.detail;
  EXPECT_EQ(outcome.output, "quit\n");
}

// Arguments that come from elsewhere (an admin's drain reason) reach the program as they are:
// no shell reads them.
TEST(ToolRunTest, ArgvRunsWithoutAShell) {
  const ToolOutcome outcome =
      RunTool(ToolRun{.command = "",
                      .timeout = Millis(10000),
                      .argv = {"printf", "%s|%s", "a b; echo no", "$HOME"}});
  EXPECT_TRUE(outcome.passed) << outcome.detail;
  EXPECT_EQ(outcome.output, "a b; echo no|$HOME");
}

TEST(ToolRunTest, KeepsAsMuchOutputAsAsked) {
  const ToolRun run{.command = "head -c 100000 /dev/zero | tr '\\0' x", .timeout = Millis(10000)};
  EXPECT_EQ(RunTool(run).output.size(), 2048U);  // the default: a log's tail
  ToolRun whole = run;
  whole.keep_output = 1 << 20;
  EXPECT_EQ(RunTool(whole).output, std::string(100000, 'x'));
}

TEST(ToolRunTest, AMissingProgramIsNamed) {
  const ToolOutcome outcome =
      RunTool(ToolRun{.command = "", .timeout = Millis(10000), .argv = {"gf-no-such-program"}});
  EXPECT_FALSE(outcome.passed);
  EXPECT_NE(outcome.detail.find("gf-no-such-program"), std::string::npos) << outcome.detail;
}

}  // namespace
}  // namespace gf
